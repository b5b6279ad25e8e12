//! The Thrift client on its own: register writes, reads, resets, pipelining and typed
//! errors.

use crate::bmv2_switch::{free_port, missing, Switch};
use crate::{common, contract, pair, reg};
use canary_switch::bmv2_thrift::{
    Call, RegisterErrorCode, Reply, ThriftClient, ThriftError, Timeouts,
};
use canary_switch::drivers::bmv2::CXT_ID;

#[test]
fn write_read_reset_and_typed_errors() {
    if !common::runnable("bmv2_thrift", &missing()) {
        return;
    }
    let sw = Switch::start(11);
    let mut c = sw.client("s11");
    // Both parities of a row share its registers of 2048 cells: pairs (tag ++ ID) and counts.
    let count0 = reg("upstream_meter.buckets.row0.count_reg");
    let id0 = reg("upstream_meter.buckets.row0.id_reg");
    let count1 = reg("downstream_meter.buckets.row1.count_reg");

    let fresh = c.register_read_all(CXT_ID, &count0).unwrap();
    assert_eq!(fresh, vec![0; 2048]);

    // A count, one at the wrap of its 32 bits, a rule ID with the dirty bit, another register.
    let (dirty, full) = (7, i64::from(u32::MAX));
    c.register_write(CXT_ID, &count0, 0, dirty).unwrap();
    c.register_write(CXT_ID, &count0, 2047, full).unwrap();
    c.register_write(CXT_ID, &id0, 5, pair(2, 0x8000_0063))
        .unwrap();
    c.register_write(CXT_ID, &count1, 9, 42).unwrap();
    let v = c.register_read_all(CXT_ID, &count0).unwrap();
    let mut want = vec![0; 2048];
    want[0] = dirty;
    want[2047] = full;
    assert_eq!(v, want);
    assert_eq!(c.register_read(CXT_ID, &count0, 2047).unwrap(), full);
    assert_eq!(
        c.register_read(CXT_ID, &id0, 5).unwrap(),
        pair(2, 0x8000_0063)
    );
    assert_eq!(c.register_read(CXT_ID, &count1, 9).unwrap(), 42);

    // Reset clears one array and nothing else.
    c.register_reset(CXT_ID, &count0).unwrap();
    assert_eq!(c.register_read_all(CXT_ID, &count0).unwrap(), vec![0; 2048]);
    assert_eq!(
        c.register_read(CXT_ID, &id0, 5).unwrap(),
        pair(2, 0x8000_0063)
    );
    assert_eq!(c.register_read(CXT_ID, &count1, 9).unwrap(), 42);

    // Typed errors naming switch and register; the connection stays usable.
    let e = c
        .register_read_all(CXT_ID, "CanaryIngress.no_such_reg")
        .unwrap_err();
    match &e {
        ThriftError::InvalidRegister {
            switch,
            call,
            register,
            code,
        } => {
            assert_eq!(
                (switch.as_str(), *call, register.as_str(), *code),
                (
                    "s11",
                    "bm_register_read_all",
                    "CanaryIngress.no_such_reg",
                    RegisterErrorCode::InvalidRegisterName
                )
            );
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("CanaryIngress.no_such_reg"), "{e}");
    let e = c.register_write(CXT_ID, &count0, 2048, 1).unwrap_err();
    assert!(
        matches!(&e, ThriftError::InvalidRegister { register, code: RegisterErrorCode::InvalidIndex, .. } if register == &count0),
        "{e}"
    );
    assert!(matches!(
        c.register_reset(CXT_ID, "nope").unwrap_err(),
        ThriftError::InvalidRegister {
            code: RegisterErrorCode::InvalidRegisterName,
            ..
        }
    ));

    // A pipelined batch with a bad call in the middle: every other call is executed, the first
    // error is reported, and the stream stays in step.
    let calls = [
        Call::Write {
            cxt_id: CXT_ID,
            name: &count0,
            index: 3,
            value: 33,
        },
        Call::ReadAll {
            cxt_id: CXT_ID,
            name: "CanaryIngress.missing_reg",
        },
        Call::Write {
            cxt_id: CXT_ID,
            name: &count0,
            index: 4,
            value: 44,
        },
    ];
    let e = c.pipeline(&calls).unwrap_err();
    assert!(
        matches!(&e, ThriftError::InvalidRegister { register, .. } if register == "CanaryIngress.missing_reg"),
        "{e}"
    );
    let r = c
        .pipeline(&[
            Call::Read {
                cxt_id: CXT_ID,
                name: &count0,
                idx: 3,
            },
            Call::Read {
                cxt_id: CXT_ID,
                name: &count0,
                idx: 4,
            },
            Call::Reset {
                cxt_id: CXT_ID,
                name: &count0,
            },
            Call::Read {
                cxt_id: CXT_ID,
                name: &count0,
                idx: 4,
            },
        ])
        .unwrap();
    assert_eq!(
        r,
        vec![
            Reply::Value(33),
            Reply::Value(44),
            Reply::Done,
            Reply::Value(0)
        ]
    );

    // Many calls: more than one pipelining window, replies in order.
    let names: Vec<String> = contract()
        .meters
        .rows()
        .flat_map(|r| [r.id.name.clone(), r.count.name.clone()])
        .collect();
    let writes: Vec<Call> = names
        .iter()
        .enumerate()
        .flat_map(|(i, n)| {
            (0..12).map(move |k| Call::Write {
                cxt_id: CXT_ID,
                name: n,
                index: 100 + k,
                value: ((i as i64 + k as i64) % 2),
            })
        })
        .collect();
    assert!(writes.len() > 128);
    c.pipeline(&writes).unwrap();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let all = c.register_read_all_many(CXT_ID, &refs).unwrap();
    for (i, v) in all.iter().enumerate() {
        let expect: Vec<i64> = (0..12).map(|k| (i as i64 + k) % 2).collect();
        assert_eq!(&v[100..112], expect.as_slice(), "{}", names[i]);
    }

    // Zeroing by write_range (what the harvest does): whole arrays, and a range past the end
    // is the switch's InvalidIndex, naming the register.
    let arrays: Vec<(&str, usize)> = refs.iter().map(|&n| (n, all[0].len())).collect();
    c.register_zero_many(CXT_ID, &arrays).unwrap();
    let zeroed = c.register_read_all_many(CXT_ID, &refs).unwrap();
    assert!(zeroed.iter().flatten().all(|&v| v == 0));
    let e = c
        .register_zero_many(CXT_ID, &[(count0.as_str(), all[0].len() + 1)])
        .unwrap_err();
    assert!(
        matches!(&e, ThriftError::InvalidRegister { register, code: RegisterErrorCode::InvalidIndex, .. } if *register == count0),
        "{e}"
    );

    // A refused connection is a typed error naming the switch.
    let port = free_port();
    let e = ThriftClient::connect("ghost", ("127.0.0.1", port), Timeouts::default())
        .err()
        .expect("nothing listens there");
    assert!(
        matches!(&e, ThriftError::Connect { switch, .. } if switch == "ghost"),
        "{e}"
    );
}
