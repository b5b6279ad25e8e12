//! The fabrics, programs and rule IDs the targets decode against, built once per process: the
//! same ones the seeds in `tests/seeds/` are written for.

use canary_core::topo::{fattree::fattree, yaml, MonitorPlacement, Topology};
use canary_core::FlowId;
use canary_switch::contract::Program;
use canary_switch::p4info::P4InfoFile;
use canary_switch::rule_ids::{RuleIds, RuleKey};
use std::sync::OnceLock;

/// The k = 4 fat-tree (top and bottom monitors): faults, Flock traces and pathBFs refer to it.
pub fn fattree4() -> &'static Topology {
    static T: OnceLock<Topology> = OnceLock::new();
    T.get_or_init(|| fattree(4, MonitorPlacement::TopAndBottom).expect("k = 4 is valid"))
}

/// `topologies/line2.yaml`: the switches files are bound to it (two switches, two hosts).
pub fn line2() -> &'static Topology {
    static T: OnceLock<Topology> = OnceLock::new();
    T.get_or_init(|| {
        let text = include_str!("../../../topologies/line2.yaml");
        yaml::parse("topologies/line2.yaml", text).expect("the repository's file parses")
    })
}

/// The v1model program's contract, resolved from the P4Info p4c compiled.
pub fn v1model() -> &'static Program {
    static P: OnceLock<Program> = OnceLock::new();
    P.get_or_init(|| {
        let bytes = include_bytes!("../../switch/testdata/v1model/canary.p4info.bin");
        let idx = P4InfoFile::decode("canary.p4info.bin", bytes.to_vec()).expect("P4Info");
        Program::from_p4info(&idx.path, &idx.info).expect("the contract resolves")
    })
}

/// The TNA program's contract, resolved from the `bfrt.json` bf-p4c wrote.
pub fn tna() -> &'static Program {
    static P: OnceLock<Program> = OnceLock::new();
    P.get_or_init(|| {
        let json = include_bytes!("../../switch/testdata/tna/bfrt.json");
        Program::from_bfrt_json("bfrt.json", json).expect("the contract resolves")
    })
}

/// Rule IDs a controller assigned: USM flows get IDs 1, 3, …, DSM rules 2, 4, ….
pub fn rule_ids() -> &'static RuleIds {
    static R: OnceLock<RuleIds> = OnceLock::new();
    R.get_or_init(|| {
        let mut ids = RuleIds::default();
        for i in 0..16u32 {
            let f = FlowId::v4(0x0a00_0002 + i, 0x0a01_0002, 6, 1000 + i as u16, 80);
            ids.install(RuleKey::Usm(f)).expect("IDs are free");
            ids.install(RuleKey::Dsm(f, 0x1234_5678 ^ i))
                .expect("IDs are free");
        }
        ids
    })
}
