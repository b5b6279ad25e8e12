//! The testbed's commands where no fabric runs, or where it must not start: `score.py` on
//! documents written here, fault and topology files `testbed/run.sh` rejects before building
//! anything, and `run.sh --clean`. The tool check and helpers are `testbed_kit`'s.

mod testbed_kit;

use std::process::Command;
use std::time::Duration;

use canary_testkit::{repo_root, runnable};
use testbed_kit::*;

/// `score.py --check` on documents written here (no fabric): a run with one 1 % fault on
/// agg0_0->core1, never blamed, whose link lost `link_lost` of its 544 generator frames while
/// Canary's one segment through it counted `seg_lost` of 1000 packets lost.
fn score_written(link_lost: u64, seg_lost: u64) -> (String, serde_json::Value, bool) {
    let dir = tempfile::tempdir().unwrap();
    let run = serde_json::json!({
        "faults": [{"link": ["agg0_0", "core1"], "loss": 0.01}],
        "epochs": [{"epoch": 1, "blamed": [], "segments_total": 100}],
        "summary": {
            "blamed": [], "precision": 1.0, "recall": 0.0, "f1": 0.0,
            "tp": 0, "fp": 0, "fn": 1,
            "coverage": [{"segment": ["edge0_0", "agg0_0", "core1", "agg2_0"],
                          "sent": 1000, "lost": seg_lost}],
        },
    });
    let acct = serde_json::json!({
        "links": {"agg0_0->core1": {"sent": 544, "received": 544 - link_lost,
                                    "lost": link_lost, "injected": 5}},
        "switches": {},
        "load_max": 1.0, "cpus": 2,
    });
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    std::fs::write(dir.path().join("run.json"), run.to_string()).unwrap();
    std::fs::write(dir.path().join("logs/accounting.json"), acct.to_string()).unwrap();
    score(dir.path())
}

/// A fault whose dropper dropped only ARP and ND frames left Canary nothing to find: the check
/// says so and passes (CI once crashed here on an infinite packet count). The same fault with
/// real loss that Canary's own segment counted is still a miss.
#[test]
fn score_tells_a_fault_that_lost_nothing_from_a_miss() {
    let (said, v, passed) = score_written(0, 0);
    assert!(passed, "{said}");
    assert!(
        said.contains("nothing to find: it lost 0 of the generators' 544"),
        "{said}"
    );
    assert_eq!(v["missed"], serde_json::json!([]), "{said}");
    assert_eq!(
        v["too_little_traffic"],
        serde_json::json!(["agg0_0->core1"]),
        "{said}"
    );

    let (said, v, passed) = score_written(60, 100);
    assert!(!passed, "{said}");
    assert_eq!(v["missed"], serde_json::json!(["agg0_0->core1"]), "{said}");
}

#[test]
fn bad_fault_file_is_rejected_naming_the_file_and_field() {
    if !runnable(
        "testbed_cli bad_fault_file_is_rejected_naming_the_file_and_field",
        &missing(),
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let faults = dir.path().join("bad.yaml");
    std::fs::write(&faults, "faults:\n  - {link: [s1, s9], loss: 0.1}\n").unwrap();
    let topo = repo_root().join("topologies/line2.yaml");
    let r = run_testbed(
        &[
            "--topology",
            topo.to_str().unwrap(),
            "--faults",
            faults.to_str().unwrap(),
            "--epochs",
            "2",
        ],
        dir.path(),
        Duration::from_secs(120),
    );
    assert!(!r.status.success());
    assert!(
        r.stderr.contains("faults[0].link") && r.stderr.contains("s9"),
        "{}",
        r.stderr
    );
    // fabric.py stopped before it recorded anything: run.sh must not claim it checked.
    assert!(
        r.stderr
            .contains("testbed: not checked: no pids.tsv and intfs.txt"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("testbed: clean"), "{}", r.stderr);
}

#[test]
fn a_topology_canary_rejects_stops_the_run_before_any_fabric() {
    if !runnable(
        "testbed_cli a_topology_canary_rejects_stops_the_run_before_any_fabric",
        &missing(),
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let topo = dir.path().join("bad.yaml");
    std::fs::write(
        &topo,
        "name: bad\nswitches:\n  - {name: s1, layer: 0, hosts: 1}\n  \
         - {name: s2, layer: 0, hosts: 1}\nlinks:\n  - [s1, s9]\n",
    )
    .unwrap();
    let r = run_testbed(
        &[
            "--topology",
            topo.to_str().unwrap(),
            "--faults",
            "none",
            "--epochs",
            "1",
        ],
        dir.path(),
        Duration::from_secs(120),
    );
    assert!(!r.status.success());
    assert!(r.stderr.contains("links[0]"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("testbed: no fabric was started: nothing to clean"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("testbed: clean"), "{}", r.stderr);
}

#[test]
fn clean_without_records_says_it_checked_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = clean(dir.path());
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("testbed: not checked: no pids.tsv and intfs.txt in"),
        "{stderr}"
    );
    assert!(!stderr.contains("testbed: clean"), "{stderr}");
    // One record but not the other: what is missing is named.
    std::fs::write(dir.path().join("pids.tsv"), "").unwrap();
    let (code, stderr) = clean(dir.path());
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("not checked: no intfs.txt in"), "{stderr}");
}

#[test]
fn clean_kills_what_was_recorded_and_then_says_clean() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let mut leftover = Command::new("sleep").arg("600").spawn().unwrap();
    std::fs::write(
        dir.path().join("pids.tsv"),
        format!("generator\th1\t{}\tsleep\n", leftover.id()),
    )
    .unwrap();
    std::fs::write(dir.path().join("intfs.txt"), "canary-gone-eth1\n").unwrap();
    let (code, stderr) = clean(dir.path());
    assert!(
        stderr.contains(&format!(
            "killing leftover generator h1 (pid {})",
            leftover.id()
        )),
        "{stderr}"
    );
    assert_eq!(leftover.wait().unwrap().signal(), Some(libc::SIGKILL));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("testbed: clean: no switch, host"),
        "{stderr}"
    );
}
