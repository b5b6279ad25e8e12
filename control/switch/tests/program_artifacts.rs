//! The compiled v1model program against what the repository keeps and what the contract needs:
//! `testdata/v1model/canary.p4info.bin` (which the unit tests resolve) is what p4c makes of
//! p4src/v1model today, and the contract resolves it with the sizes of `defines.p4`.
//! Prints `SKIP: ...` and passes when p4c is not on PATH.

mod common;

use bfrt_proto::p4info::P4Info;
use canary_core::capacity::Capacity;
use canary_switch::contract::Program;
use prost::Message;
use std::path::Path;

#[test]
fn the_kept_p4info_is_the_compilers_and_resolves() {
    let lacks = canary_testkit::tools_lacking(
        &["p4c"],
        "p4c and BMv2, built from their public sources, DEVELOPERS.md",
    );
    if !common::runnable("program_artifacts", &lacks) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    canary_testkit::build_bmv2(dir.path());
    let fresh = std::fs::read(dir.path().join("canary.p4info.bin")).unwrap();
    let kept = std::fs::read(root.join("testdata/v1model/canary.p4info.bin")).unwrap();
    let (fresh, kept) = (
        P4Info::decode(fresh.as_slice()).unwrap(),
        P4Info::decode(kept.as_slice()).unwrap(),
    );
    assert!(
        fresh == kept,
        "testdata/v1model/canary.p4info.bin is stale: bmv2/build.sh DIR and copy DIR/canary.p4info.bin over it"
    );
    let prog = Program::from_p4info("canary.p4info.bin", &fresh).unwrap();
    assert_eq!(prog.capacity(), Capacity::of_program());
}
