//! The Thrift client and the BMv2 driver's register harvest against a real `simple_switch_grpc`
//! running Canary.
//!
//! Each test compiles p4src/v1model once (bmv2/build.sh), starts its own switch without ports on
//! free Thrift and gRPC ports (bmv2/run-switch.sh) and kills it by PID on drop. Registers are
//! written with `bm_register_write` and read back; the harvest test writes the registers of
//! reference-model meters (`meters::encode`) and expects exactly those meters back through the
//! driver and the one decoder. Skips (printing `SKIP: ...`) without p4c or simple_switch_grpc.

mod bmv2_switch;
mod common;

use bmv2_switch::{free_port, missing, program, Switch};
use canary_core::model::epoch_tag;
use canary_core::sketch::{Dsm, FlowHashes, MeterConfig, Usm};
use canary_core::FlowId;
use canary_switch::bmv2_thrift::{
    Call, RegisterErrorCode, Reply, ThriftClient, ThriftError, Timeouts,
};
use canary_switch::contract::Program;
use canary_switch::driver::SwitchDriver;
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Options, Bmv2Program, CXT_ID};
use canary_switch::meters::{self, Cell};
use canary_switch::p4info::P4InfoFile;
use canary_switch::rule_ids::{RuleIds, RuleKey};
use canary_switch::switches::{BoundSwitch, SwitchEndpoint};
use std::sync::{Arc, OnceLock};

/// The compiled program, resolved once.
fn compiled() -> &'static Arc<Bmv2Program> {
    static PROG: OnceLock<Arc<Bmv2Program>> = OnceLock::new();
    PROG.get_or_init(|| {
        let p4info = P4InfoFile::load(&program().join("canary.p4info.bin")).unwrap();
        let json = std::fs::read(program().join("canary.json")).unwrap();
        Arc::new(Bmv2Program::new(p4info, json).unwrap())
    })
}

fn contract() -> &'static Program {
    &compiled().program
}

/// The register whose full name ends in `suffix`.
fn reg(suffix: &str) -> String {
    let p = contract();
    let names: Vec<&String> = p
        .meters
        .rows()
        .flat_map(|r| [&r.id.name, &r.count.name])
        .chain(p.hashpipe.iter().map(|r| &r.name))
        .filter(|n| n.ends_with(&format!(".{suffix}")))
        .collect();
    assert_eq!(names.len(), 1, "register *.{suffix}: {names:?}");
    names[0].clone()
}

/// A 64-bit pair as BMv2's Thrift server reads and writes it (an i64).
fn pair(hi: u32, lo: u32) -> i64 {
    (u64::from(hi) << 32 | u64::from(lo)) as i64
}

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

fn udp(sport: u16) -> FlowId {
    FlowId::v4(0x0a00_0101, 0x0a00_0202, 17, sport, 2000)
}

/// Writes `cells` (register, index, value), pipelined.
fn write_all(c: &mut ThriftClient, cells: &[(String, i32, i64)]) {
    let calls: Vec<Call> = cells
        .iter()
        .map(|(name, index, value)| Call::Write {
            cxt_id: CXT_ID,
            name,
            index: *index,
            value: *value,
        })
        .collect();
    c.pipeline(&calls).unwrap();
}

fn driver(sw: &Switch, name: &str) -> Bmv2Driver {
    let bound = BoundSwitch {
        ix: 0,
        name: name.into(),
        endpoint: SwitchEndpoint {
            grpc: "127.0.0.1:1".into(),
            device_id: 0,
            thrift: Some(format!("127.0.0.1:{}", sw.thrift_port())),
            ports: Default::default(),
            tls: None,
        },
        ports: Default::default(),
    };
    Bmv2Driver::new(bound, true, compiled().clone(), Bmv2Options::default())
}

/// Reference meters in a switch's registers (epoch 7's USM and DSM in one parity, epoch 8's
/// USM in the other, a stale cell and HashPipe) come back through the driver and the decoder
/// exactly; HashPipe and the stale cell are then zeroed, nothing else.
#[test]
fn the_driver_reads_the_model_meters_back_epoch_by_epoch() {
    if !common::runnable("bmv2_thrift", &missing()) {
        return;
    }
    let sw = Switch::start(12);
    let mut c = sw.client("s12");
    let config = MeterConfig::new(3, 1024).unwrap();
    assert_eq!(contract().meters.config(), config);

    // 1500 flows into 1024-wide rows: clean buckets, dirty ones (collisions), counts of many
    // packets, pathBFs of two paths, a count at 2^32 - 1.
    let mut ids = RuleIds::default();
    let mut usm = Usm::new(config).unwrap();
    let mut dsm = Dsm::new(config).unwrap();
    for i in 0..6000u32 {
        let f = udp(1000 + (i * 7 % 1500) as u16);
        let h = FlowHashes::of(&f);
        let bf = if f.sport.is_multiple_of(3) {
            0x0101_0000
        } else {
            0x0000_8080
        };
        ids.install(RuleKey::Usm(f)).unwrap();
        ids.install(RuleKey::Dsm(f, bf)).unwrap();
        usm.update(&f, h);
        dsm.update(&f, h, bf);
    }
    let big = FlowId::v4(0x0a00_0101, 0x0a00_0202, 6, 443, 51000);
    ids.install(RuleKey::Dsm(big, 0xffff_ffff)).unwrap();
    dsm.update_n(&big, FlowHashes::of(&big), 0xffff_ffff, u32::MAX);
    assert!(usm.dirty_buckets() > 100 && usm.occupied() > 2000);
    let mut next = Usm::new(config).unwrap();
    let f = udp(7);
    ids.install(RuleKey::Usm(f)).unwrap();
    next.update_n(&f, FlowHashes::of(&f), 5);
    let empty = Dsm::new(config).unwrap();
    let (t7, t8) = (epoch_tag(7), epoch_tag(8));
    let cells = meters::encode(1024, &[(t7, &usm, &dsm), (t8, &next, &empty)], |k| {
        ids.id_of(&k)
    });
    let mut writes = Vec::new();
    for (rows, regs) in [
        (&cells.usm, &contract().meters.usm),
        (&cells.dsm, &contract().meters.dsm),
    ] {
        for (row, r) in rows.iter().zip(regs) {
            for i in 0..2048 {
                if row.id_tag[i] != 0 {
                    writes.push((r.id.name.clone(), i as i32, pair(row.id_tag[i], row.id[i])));
                    writes.push((r.count.name.clone(), i as i32, i64::from(row.count[i])));
                }
            }
        }
    }
    // A stale cell: epoch 7's parity, a tag more than half a wrap older.
    let tags = canary_core::model::EPOCH_TAGS;
    let stale_tag = epoch_tag(7 + tags - tags / 2 - 1);
    let free = (0..1024)
        .find(|&col| cells.dsm[2].id_tag[(t7 as usize & 1) * 1024 + col] == 0)
        .unwrap();
    let stale_index = (t7 as usize & 1) * 1024 + free;
    writes.push((
        reg("downstream_meter.buckets.row2.id_reg"),
        stale_index as i32,
        pair(u32::from(stale_tag), 1),
    ));
    writes.push((reg("hashpipe.stage2.count_reg"), 17, pair(0xabcd_0001, 9)));
    write_all(&mut c, &writes);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut d = driver(&sw, "s12");
    let pipes = rt.block_on(d.read_meters()).unwrap();
    assert_eq!(pipes.len(), 1, "BMv2 has one pipe");
    let layout = &contract().meters;
    let got7 = meters::decode(layout, &pipes[0], t7, &ids, "s12").unwrap();
    assert_eq!(got7.usm, usm, "USM of epoch 7 equals the model");
    assert_eq!(got7.dsm, dsm, "DSM of epoch 7 equals the model");
    assert_eq!(
        got7.stale,
        [Cell {
            dsm: true,
            row: 2,
            index: stale_index
        }]
    );
    let got8 = meters::decode(layout, &pipes[0], t8, &ids, "s12").unwrap();
    assert_eq!(got8.usm, next);
    assert_eq!(got8.dsm, empty);

    rt.block_on(d.clear_cells(&got7.stale)).unwrap();
    rt.block_on(d.clear_hashpipe()).unwrap();
    let after = rt.block_on(d.read_meters()).unwrap();
    assert_eq!(
        after[0].dsm[2].id_tag[stale_index], 0,
        "the stale cell is zeroed"
    );
    let again = meters::decode(layout, &after[0], t7, &ids, "s12").unwrap();
    assert_eq!((again.usm, again.dsm), (usm, dsm), "and nothing else");
    let hp: Vec<&str> = contract()
        .hashpipe
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    for (name, v) in hp
        .iter()
        .zip(c.register_read_all_many(CXT_ID, &hp).unwrap())
    {
        assert!(v.iter().all(|&x| x == 0), "{name} zeroed");
    }
}
