//! Harvest time per switch against a real `simple_switch_grpc` (BMv2's Thrift server), the
//! cost that decides how many switches one controller harvests within an epoch:
//!
//! * `bmv2_harvest/read_decode`: what the fabric's harvest reads per switch: the 12 meter
//!   registers (2 048 pairs each, both parities) in one pipelined window, through the BMv2
//!   driver, and the decode of one epoch. Meters are never cleared (epoch tags).
//! * `bmv2_harvest/clear_hashpipe`: zeroing HashPipe, the one clear each epoch needs.
//! * `bmv2_harvest/decode`: decoding registers already read (no I/O).
//!
//! Run: `cargo bench -p canary-switch --bench bmv2_harvest -- --warm-up-time 1 --measurement-time 3`.
//! Without p4c or simple_switch_grpc on PATH it prints `SKIP: ...` and measures nothing.

#[path = "../tests/bmv2_switch/mod.rs"]
#[allow(dead_code)] // shared with tests/bmv2_thrift/, which uses all of it
mod bmv2_switch;
#[path = "../tests/common/mod.rs"]
mod common;

use bmv2_switch::{missing, program, Switch};
use canary_core::model::epoch_tag;
use canary_switch::driver::SwitchDriver;
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Options, Bmv2Program};
use canary_switch::meters;
use canary_switch::p4info::P4InfoFile;
use canary_switch::rule_ids::RuleIds;
use canary_switch::switches::{BoundSwitch, SwitchEndpoint};
use criterion::{criterion_group, criterion_main, Criterion};
use std::sync::Arc;

fn harvest(c: &mut Criterion) {
    if !common::runnable("bmv2_harvest", &missing()) {
        return;
    }
    let p4info = P4InfoFile::load(&program().join("canary.p4info.bin")).unwrap();
    let json = std::fs::read(program().join("canary.json")).expect("read canary.json");
    let prog = Arc::new(Bmv2Program::new(p4info, json).unwrap());
    let sw = Switch::start(13);
    let _ = sw.client("s13");
    let bound = BoundSwitch {
        ix: 0,
        name: "s13".into(),
        endpoint: SwitchEndpoint {
            grpc: "127.0.0.1:1".into(),
            device_id: 0,
            thrift: Some(format!("127.0.0.1:{}", sw.thrift_port())),
            ports: Default::default(),
            tls: None,
        },
        ports: Default::default(),
    };
    let mut d = Bmv2Driver::new(bound, true, prog.clone(), Bmv2Options::default());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ids = RuleIds::default();
    let layout = prog.program.meters.clone();
    let cells = rt.block_on(d.read_meters()).unwrap();

    let mut g = c.benchmark_group("bmv2_harvest");
    g.bench_function("read_decode", |b| {
        b.iter(|| {
            let cells = rt.block_on(d.read_meters()).unwrap();
            meters::decode(&layout, &cells[0], epoch_tag(4), &ids, "s13").unwrap()
        })
    });
    g.bench_function("clear_hashpipe", |b| {
        b.iter(|| rt.block_on(d.clear_hashpipe()).unwrap())
    });
    g.bench_function("decode", |b| {
        b.iter(|| meters::decode(&layout, &cells[0], epoch_tag(4), &ids, "s13").unwrap())
    });
    g.finish();
}

criterion_group!(benches, harvest);
criterion_main!(benches);
