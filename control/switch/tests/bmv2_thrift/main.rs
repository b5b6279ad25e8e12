//! The Thrift client and the BMv2 driver's register harvest against a real `simple_switch_grpc`
//! running Canary.
//!
//! Each test compiles p4src/v1model once (bmv2/build.sh), starts its own switch without ports on
//! free Thrift and gRPC ports (bmv2/run-switch.sh) and kills it by PID on drop. Registers are
//! written with `bm_register_write` and read back; the harvest test writes the registers of
//! reference-model meters (`meters::encode`) and expects exactly those meters back through the
//! driver and the one decoder. Skips (printing `SKIP: ...`) without p4c or simple_switch_grpc.

#[path = "../bmv2_switch/mod.rs"]
mod bmv2_switch;
#[path = "../common/mod.rs"]
mod common;

mod driver_harvest;
mod thrift_client;

use bmv2_switch::program;
use canary_switch::contract::Program;
use canary_switch::drivers::bmv2::Bmv2Program;
use canary_switch::p4info::P4InfoFile;
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
