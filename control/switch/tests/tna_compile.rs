//! Compiles p4src/tna for Tofino 1 with `tofino/build.sh` (the open-source Tofino back end of p4c,
//! `bf-p4c`, found on PATH) and checks what the control plane and the hardware need of it:
//!
//! * the compile succeeds (table placement included: bf-p4c fails when the program does not fit
//!   the pipeline) and writes `bfrt.json` and `pipe/logs/resources.json`;
//! * the program was placed for 12 MAU stages and uses no stage beyond them, with at most 4
//!   stateful ALUs (meter ALUs) per stage;
//! * the program contract resolves against the compiled `bfrt.json` (`Program::from_bfrt_json`),
//!   with the same table and register sizes as the v1model program;
//! * the `bfrt.json` kept as test data (`testdata/tna/bfrt.json`, what the Tofino driver's tests
//!   run against) is this compile's.
//!
//! Prints `SKIP: ...` and passes when `bf-p4c` is not on PATH.

mod common;

use canary_core::capacity::Capacity;
use canary_switch::contract::Program;
use serde_json::Value;
use std::process::Command;

use canary_testkit::repo_root;

/// Per stage: (stage number, stateful ALUs used).
fn stages(resources: &Value) -> Vec<(u64, usize)> {
    resources["resources"]["mau"]["mau_stages"]
        .as_array()
        .expect("resources.json: resources.mau.mau_stages")
        .iter()
        .map(|s| {
            let n = s["stage_number"].as_u64().expect("stage_number");
            let meters = s["meter_alus"]["meters"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|u| has_usage(u)).count());
            (n, meters)
        })
        .collect()
}

/// Totals over all stages in the categories of the paper's Table IV (count of the listed
/// elements of each per-stage array in resources.json).
fn table_iv(resources: &Value) -> Vec<(&'static str, usize)> {
    let cats: [(&str, &str, &str); 8] = [
        ("match crossbar bytes", "xbar_bytes", "bytes"),
        ("gateways", "gateways", "gateways"),
        ("hash bits", "hash_bits", "bits"),
        ("stateful ALUs", "meter_alus", "meters"),
        ("SRAM blocks", "rams", "srams"),
        ("map RAMs", "map_rams", "maprams"),
        ("TCAM blocks", "tcams", "tcams"),
        ("logical table IDs", "logical_tables", "ids"),
    ];
    let stages = resources["resources"]["mau"]["mau_stages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    cats.iter()
        .map(|&(name, outer, inner)| {
            let n = stages
                .iter()
                .map(|s| s[outer][inner].as_array().map_or(0, Vec::len))
                .sum();
            (name, n)
        })
        .collect()
}

/// bfrt.json minus the `pipe.snapshot.*` tables (bf-p4c's debug snapshot; we never use them):
/// bf-p4c lists them, and numbers them, in a different order from one compile to the next.
fn without_snapshot_tables(mut bfrt: Value) -> Value {
    if let Some(tables) = bfrt["tables"].as_array_mut() {
        tables.retain(|t| {
            !t["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("pipe.snapshot."))
        });
    }
    bfrt
}

fn has_usage(unit: &Value) -> bool {
    unit["usages"].as_array().is_some_and(|u| !u.is_empty())
}

#[test]
fn tna_program_compiles_for_tofino1_and_resolves() {
    let lacks = canary_testkit::tools_lacking(
        &["bf-p4c"],
        "the Tofino back end of p4c, built from its public sources, DEVELOPERS.md",
    );
    if !common::runnable("tna_compile", &lacks) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // -g: bf-p4c writes pipe/logs/ (resources.json, table placement) only with it.
    let out = Command::new(repo_root().join("tofino/build.sh"))
        .arg(dir.path())
        .arg("-g")
        .output()
        .expect("run tofino/build.sh");
    assert!(
        out.status.success(),
        "tofino/build.sh failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let logs = dir.path().join("canary.tofino/pipe/logs");
    let resources: Value = serde_json::from_slice(
        &std::fs::read(logs.join("resources.json")).expect("pipe/logs/resources.json"),
    )
    .expect("resources.json is JSON");
    assert_eq!(
        resources["resources"]["mau"]["nStages"].as_u64(),
        Some(12),
        "placed for Tofino 1's 12 stages"
    );
    let st = stages(&resources);
    assert!(!st.is_empty(), "no MAU stage in resources.json");
    for &(n, salus) in &st {
        assert!(n < 12, "stage {n} used");
        assert!(salus <= 4, "stage {n}: {salus} stateful ALUs");
    }
    eprintln!(
        "tna_compile: {} stages, stateful ALUs per stage {:?}",
        st.iter().map(|s| s.0 + 1).max().unwrap_or(0),
        st.iter().map(|s| s.1).collect::<Vec<_>>()
    );

    for (name, n) in table_iv(&resources) {
        eprintln!("tna_compile: {name}: {n}");
    }

    let bfrt = std::fs::read(dir.path().join("bfrt.json")).expect("bfrt.json");
    let prog = Program::from_bfrt_json("bfrt.json", &bfrt).expect("the contract resolves");
    assert_eq!(prog.capacity(), Capacity::of_program(), "sizes as on BMv2");
    let kept = std::fs::read(repo_root().join("control/switch/testdata/tna/bfrt.json"))
        .expect("testdata/tna/bfrt.json");
    let as_json = |b: &[u8]| without_snapshot_tables(serde_json::from_slice::<Value>(b).unwrap());
    assert!(
        as_json(&kept) == as_json(&bfrt),
        "testdata/tna/bfrt.json is stale: copy {} over it",
        dir.path().join("bfrt.json").display()
    );
}
