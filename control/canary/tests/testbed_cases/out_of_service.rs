//! A link taken out of service on the testbed: `canary run --out-of-service` rewrites the real
//! switches' routes and ECMP groups around it mid-run, and puts it back.

use super::*;

/// agg1_0 — core0 is drained at epoch 4 and put back at epoch 9
/// (`testbed/faults/k4-out-of-service.yaml`; fabric.py hands it to `canary run
/// --out-of-service`). No frame is dropped on a link, nothing is blamed in any epoch, the
/// reports list the link as out of service while it is, and the link's evidence only ages while
/// it is drained (no monitored flow crosses it on the real switches) and is fresh again at the
/// end. About 60 s.
#[test]
fn fattree4_a_link_taken_out_of_service_blames_nothing() {
    if !runnable(
        "testbed fattree4_a_link_taken_out_of_service_blames_nothing",
        &missing(),
    ) {
        return;
    }
    let dir = RunDir::new();
    let faults = repo_root().join("testbed/faults/k4-out-of-service.yaml");
    let r = run_fattree4(&faults, 14, dir.path());
    let traffic = read(dir.path(), "traffic/summary.json");
    let acct = Accounting::read(dir.path(), &traffic);
    acct.balances();
    for (link, c) in &acct.links {
        assert_eq!(c.lost, 0, "{link} lost frames: nothing drops in this run");
    }
    let epochs = r.json["epochs"].as_array().unwrap();
    assert_eq!(epochs.len(), 14);
    let drained = serde_json::json!(["agg1_0", "core0"]);
    let named = |e: &serde_json::Value| {
        e["out_of_service"]
            .as_array()
            .is_some_and(|l| l.contains(&drained))
    };
    let out: Vec<u64> = epochs
        .iter()
        .filter(|e| named(e))
        .map(|e| e["epoch"].as_u64().unwrap())
        .collect();
    assert_eq!(out, (4..9).collect::<Vec<u64>>(), "{}", r.stderr);
    let blamed: Vec<_> = epochs
        .iter()
        .filter(|e| !e["blamed"].as_array().unwrap().is_empty())
        .map(|e| (e["epoch"].clone(), e["blamed"].clone()))
        .collect();
    assert!(blamed.is_empty(), "blamed: {blamed:?}\n{}", r.stderr);
    // Scored against the file, the run has no fault to find and no false positive.
    let (said, v) = score_check(dir.path(), &r);
    assert_eq!(v["false_positives"], serde_json::json!([]), "{said}");
    assert_eq!(r.json["faults"], serde_json::json!([]), "{said}");
    let age = |e: &serde_json::Value| {
        e["evidence_map"]["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["link"] == drained)
            .map(|l| l["age_epochs"].as_u64().unwrap_or(0))
    };
    // Drained at the start of epoch 4: from epoch 5 no segment through it counts a packet. Its
    // evidence only ages (or, if nothing had counted it before the drain, it stays unwatched).
    let ages: Vec<Option<u64>> = epochs[5..9].iter().map(age).collect();
    assert!(
        ages.iter().all(|a| *a != Some(0))
            && ages.windows(2).all(|w| match w {
                [Some(a), b] => *b == Some(a + 1),
                _ => true,
            }),
        "the drained link's evidence in epochs 5..=8: {ages:?}"
    );
    // Back at epoch 9; its switches sit out epochs 9 and 10 (flows moved), and flows through it
    // are selected again.
    assert_eq!(age(&epochs[13]), Some(0), "counted again once back");
}
