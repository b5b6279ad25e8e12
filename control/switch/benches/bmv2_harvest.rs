//! Harvest time per switch against a real `simple_switch_grpc` (BMv2's Thrift server), the
//! cost that decides how many switches one controller harvests within an epoch:
//!
//! * `bmv2_harvest/pipelined`: what `Fabric::harvest` does per switch: read the finished
//!   parity's 45 meter arrays in one pipelined window, decode, zero them and HashPipe's 15.
//! * `bmv2_harvest/read_decode`: the read and decode alone (nothing zeroed).
//! * `bmv2_harvest/decode`: decoding 45 arrays already read (no I/O).
//! * `bmv2_harvest/one_by_one`: the same harvest with one round trip per call.
//!
//! Run: `cargo bench -p canary-switch --bench bmv2_harvest -- --warm-up-time 1 --measurement-time 3`.
//! Without p4c or simple_switch_grpc on PATH it prints `SKIP: ...` and measures nothing.

#[path = "../tests/bmv2_switch/mod.rs"]
#[allow(dead_code)] // shared with tests/bmv2_thrift.rs, which uses all of it
mod bmv2_switch;
#[path = "../tests/common/mod.rs"]
mod common;

use bmv2_switch::{missing, program, Switch};
use canary_core::fabric::Parity;
use canary_switch::bmv2_meters::{self, MeterLayout, CXT_ID};
use criterion::{criterion_group, criterion_main, Criterion};

fn harvest(c: &mut Criterion) {
    if let Some(what) = missing() {
        common::skip(&format!("bmv2_harvest: {what} missing from PATH"));
        return;
    }
    let json = std::fs::read(program().join("canary.json")).expect("read canary.json");
    let layout = MeterLayout::from_bmv2_json(&json).expect("meter layout of canary.json");
    let sw = Switch::start(13);
    let mut client = sw.client("s13");
    let names: Vec<&str> = layout
        .meter_names(Parity::Even)
        .iter()
        .map(String::as_str)
        .collect();
    let clear = layout.arrays_to_clear(Parity::Even);
    let arrays = client.register_read_all_many(CXT_ID, &names).unwrap();

    let mut g = c.benchmark_group("bmv2_harvest");
    g.bench_function("pipelined", |b| {
        b.iter(|| bmv2_meters::harvest(&mut client, &layout, 13, Parity::Even).unwrap())
    });
    g.bench_function("read_decode", |b| {
        b.iter(|| bmv2_meters::read_meters(&mut client, &layout, 13, Parity::Even).unwrap())
    });
    g.bench_function("decode", |b| {
        b.iter(|| layout.decode("s13", 13, Parity::Even, &arrays).unwrap())
    });
    g.bench_function("one_by_one", |b| {
        b.iter(|| {
            let arrays: Vec<Vec<i64>> = names
                .iter()
                .map(|n| client.register_read_all(CXT_ID, n).unwrap())
                .collect();
            let snapshot = layout.decode("s13", 13, Parity::Even, &arrays).unwrap();
            for &(n, size) in &clear {
                client.register_zero_many(CXT_ID, &[(n, size)]).unwrap();
            }
            snapshot
        })
    });
    g.finish();
}

criterion_group!(benches, harvest);
criterion_main!(benches);
