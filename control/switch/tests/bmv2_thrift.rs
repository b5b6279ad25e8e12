//! The Thrift client and the meter harvest against a real `simple_switch_grpc` running Canary.
//!
//! Each test compiles p4src/v1model once (bmv2/build.sh), starts its own switch without ports on
//! free Thrift and gRPC ports (bmv2/run-switch.sh) and kills it by PID on drop. Registers are
//! written with `bm_register_write` and read back; the harvest test writes the buckets of
//! reference-model meters fed with packets and expects exactly those meters back.
//! Skips (printing `SKIP: ...`) without p4c or simple_switch_grpc.

mod bmv2_switch;
mod common;

use bmv2_switch::{free_port, missing, program, Switch};
use canary_core::fabric::Parity;
use canary_core::sketch::{Dsm, FlowHashes, MeterConfig, Usm};
use canary_core::FlowId;
use canary_switch::bmv2_meters::{self, MeterLayout, CXT_ID};
use canary_switch::bmv2_thrift::{
    Call, RegisterErrorCode, Reply, ThriftClient, ThriftError, Timeouts,
};
use std::sync::OnceLock;

/// The meter layout of the compiled program (from its BMv2 JSON), resolved once.
fn layout() -> &'static MeterLayout {
    static LAYOUT: OnceLock<MeterLayout> = OnceLock::new();
    LAYOUT.get_or_init(|| {
        let json = std::fs::read(program().join("canary.json")).unwrap();
        MeterLayout::from_bmv2_json(&json).unwrap()
    })
}

/// `CanaryIngress.<suffix>` as the BMv2 JSON names it.
fn reg(suffix: &str) -> String {
    let l = layout();
    let all = [
        l.meter_names(Parity::Even),
        l.meter_names(Parity::Odd),
        l.hashpipe_names(),
    ];
    let hits: Vec<&String> = all
        .iter()
        .flat_map(|n| n.iter())
        .filter(|n| n.ends_with(&format!(".{suffix}")))
        .collect();
    assert_eq!(hits.len(), 1, "register *.{suffix}: {hits:?}");
    hits[0].clone()
}

#[test]
fn write_read_reset_and_typed_errors() {
    if let Some(what) = missing() {
        common::skip(&format!("bmv2_thrift: {what} missing from PATH"));
        return;
    }
    let sw = Switch::start(11);
    let mut c = sw.client("s11");
    let count0 = reg("upstream_meter.parity0.row0.count_reg");
    let count1 = reg("upstream_meter.parity1.row0.count_reg");
    let used0 = reg("upstream_meter.parity0.row0.used_reg");

    let fresh = c.register_read_all(CXT_ID, &count0).unwrap();
    assert_eq!(fresh, vec![0; 1024]);

    // A 32-bit counter at its wrap point, a 1-bit flag, and the other parity.
    c.register_write(CXT_ID, &count0, 0, 7).unwrap();
    c.register_write(CXT_ID, &count0, 1023, i64::from(u32::MAX))
        .unwrap();
    c.register_write(CXT_ID, &used0, 5, 1).unwrap();
    c.register_write(CXT_ID, &count1, 9, 42).unwrap();
    let v = c.register_read_all(CXT_ID, &count0).unwrap();
    let mut want = vec![0; 1024];
    want[0] = 7;
    want[1023] = i64::from(u32::MAX);
    assert_eq!(v, want);
    assert_eq!(
        c.register_read(CXT_ID, &count0, 1023).unwrap(),
        4_294_967_295
    );
    assert_eq!(c.register_read(CXT_ID, &used0, 5).unwrap(), 1);
    assert_eq!(c.register_read(CXT_ID, &count1, 9).unwrap(), 42);

    // Reset clears one array and nothing else.
    c.register_reset(CXT_ID, &count0).unwrap();
    assert_eq!(c.register_read_all(CXT_ID, &count0).unwrap(), vec![0; 1024]);
    assert_eq!(c.register_read(CXT_ID, &used0, 5).unwrap(), 1);
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
    let e = c.register_write(CXT_ID, &count0, 1024, 1).unwrap_err();
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
    let names: Vec<String> = layout().meter_names(Parity::Odd).to_vec();
    let writes: Vec<Call> = names
        .iter()
        .enumerate()
        .flat_map(|(i, n)| {
            (0..4).map(move |k| Call::Write {
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
        let expect: Vec<i64> = (0..4).map(|k| (i as i64 + k) % 2).collect();
        assert_eq!(&v[100..104], expect.as_slice(), "{}", names[i]);
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
    FlowId {
        src: 0x0a00_0101,
        dst: 0x0a00_0202,
        proto: 17,
        sport,
        dport: 2000,
    }
}

/// Writes a model meter's non-empty buckets with the data plane's field mapping (as
/// `compare_registers` in control/canary/tests/bmv2_packets.rs reads them).
fn write_meter_calls(
    meter: &str,
    parity: usize,
    buckets: impl Iterator<Item = (usize, usize, FlowId, bool, u32, Option<u32>)>,
    out: &mut Vec<(String, i32, i64)>,
) {
    for (row, col, f, dirty, count, path_bf) in buckets {
        let name = |field: &str| reg(&format!("{meter}.parity{parity}.row{row}.{field}_reg"));
        let ports = i64::from(f.sport) << 16 | i64::from(f.dport);
        let mut cells = vec![
            ("used", 1),
            ("src_addr", i64::from(f.src)),
            ("dst_addr", i64::from(f.dst)),
            ("ports", ports),
            ("protocol", i64::from(f.proto)),
            ("dirty", i64::from(dirty)),
            ("count", i64::from(count)),
        ];
        if let Some(bf) = path_bf {
            cells.push(("path_bf", i64::from(bf)));
        }
        for (field, v) in cells {
            out.push((name(field), col as i32, v));
        }
    }
}

fn usm_cells(m: &Usm) -> impl Iterator<Item = (usize, usize, FlowId, bool, u32, Option<u32>)> + '_ {
    let c = m.config();
    (0..c.rows).flat_map(move |r| {
        (0..c.width).filter_map(move |col| {
            let b = m.bucket(r, col);
            b.flow.map(|f| (r, col, f, b.dirty, b.count, None))
        })
    })
}

fn dsm_cells(m: &Dsm) -> impl Iterator<Item = (usize, usize, FlowId, bool, u32, Option<u32>)> + '_ {
    let c = m.config();
    (0..c.rows).flat_map(move |r| {
        (0..c.width).filter_map(move |col| {
            let b = m.bucket(r, col);
            b.flow
                .map(|f| (r, col, f, b.dirty, b.count, Some(b.path_bf)))
        })
    })
}

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

#[test]
fn harvest_returns_the_model_meters_and_resets_only_its_parity() {
    if let Some(what) = missing() {
        common::skip(&format!("bmv2_thrift: {what} missing from PATH"));
        return;
    }
    let sw = Switch::start(12);
    let mut c = sw.client("s12");
    let layout = layout();
    // The P4Info gives the same layout as the BMv2 JSON.
    let p4info = std::fs::read(program().join("canary.p4info.bin")).unwrap();
    let p4info = <bfrt_proto::p4info::P4Info as prost::Message>::decode(p4info.as_slice()).unwrap();
    assert_eq!(&MeterLayout::from_p4info(&p4info).unwrap(), layout);
    let config = MeterConfig::new(3, 1024).unwrap();
    assert_eq!((layout.usm_config(), layout.dsm_config()), (config, config));

    // Reference meters fed packets of 1500 flows into 1024-wide rows: clean buckets, dirty ones
    // (collisions), counts of many packets, pathBFs of two paths, a count at 2^32 - 1.
    let mut usm = Usm::new(config).unwrap();
    let mut dsm = Dsm::new(config).unwrap();
    for i in 0..6000u32 {
        let f = udp(1000 + (i * 7 % 1500) as u16);
        let h = FlowHashes::of(&f);
        usm.update(&f, h);
        dsm.update(
            &f,
            h,
            if f.sport.is_multiple_of(3) {
                0x0101_0000
            } else {
                0x0000_8080
            },
        );
    }
    let big = FlowId {
        proto: 6,
        sport: 443,
        dport: 51000,
        ..udp(0)
    };
    dsm.update_n(&big, FlowHashes::of(&big), 0xffff_ffff, u32::MAX);
    assert!(usm.dirty_buckets() > 100 && usm.occupied() > 2000);
    assert!(dsm.dirty_buckets() > 100);
    let mut cells = Vec::new();
    write_meter_calls("upstream_meter", 1, usm_cells(&usm), &mut cells);
    write_meter_calls("downstream_meter", 1, dsm_cells(&dsm), &mut cells);
    // The counting parity (0) holds one flow; HashPipe holds an entry.
    let mut counting = Usm::new(config).unwrap();
    let f = udp(7);
    counting.update_n(&f, FlowHashes::of(&f), 5);
    write_meter_calls("upstream_meter", 0, usm_cells(&counting), &mut cells);
    cells.push((reg("hashpipe.stage2.count_reg"), 17, 9));
    write_all(&mut c, &cells);

    let snap = bmv2_meters::harvest(&mut c, layout, 12, Parity::Odd).unwrap();
    assert_eq!(snap.switch, 12);
    assert_eq!(snap.parity, Parity::Odd);
    assert_eq!(snap.usm, usm, "USM parity 1 equals the model");
    assert_eq!(snap.dsm, dsm, "DSM parity 1 equals the model");

    // The harvested parity and HashPipe are zero; the counting parity is untouched.
    let odd = bmv2_meters::read_meters(&mut c, layout, 12, Parity::Odd).unwrap();
    assert_eq!(odd.usm, Usm::new(config).unwrap());
    assert_eq!(odd.dsm, Dsm::new(config).unwrap());
    let even = bmv2_meters::read_meters(&mut c, layout, 12, Parity::Even).unwrap();
    assert_eq!(even.usm, counting);
    assert_eq!(even.dsm, Dsm::new(config).unwrap());
    let hp: Vec<&str> = layout.hashpipe_names().iter().map(String::as_str).collect();
    for (name, v) in hp
        .iter()
        .zip(c.register_read_all_many(CXT_ID, &hp).unwrap())
    {
        assert!(v.iter().all(|&x| x == 0), "{name} reset");
    }
}
