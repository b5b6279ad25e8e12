//! A fault schedule: every localizer's time to detect and time to clear.

use crate::{canary, read_json};

/// Every localizer on one fault schedule (10 % on one link from epoch 5 to 15): each epoch on
/// its own telemetry, with time to detect and time to clear in the table and the JSON.
#[test]
fn eval_on_a_schedule_gives_every_localizer_time_to_detect_and_to_clear() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("eval.json");
    let faults = canary_testkit::repo_root().join("testbed/faults/k4-from-5-until-15.yaml");
    let table = canary(&[
        "--topology",
        "fattree:4",
        "--faults",
        faults.to_str().unwrap(),
        "--epochs",
        "25",
        "--localizers",
        "canary,canary-cd1,netbouncer,flock,007,detector",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(table.contains("mean detect"), "{table}");
    let v = read_json(&json);
    for name in ["canary", "netbouncer", "flock", "007", "detector"] {
        let t = &v["localizers"][name]["over_time"];
        assert_eq!(t["episodes"], 1, "{name}: {t}");
        // A repair counts for the episodes it detected: only those have an all-clear.
        assert_eq!(t["repairs"], t["detected"], "{name}: {t}");
    }
    // canary-cd1 localizes the whole run's observations only: no timing, and the table says so.
    assert!(v["localizers"]["canary-cd1"].get("over_time").is_none());
    assert!(
        table.contains("canary-cd1        (runs on Canary's whole-run observations)"),
        "{table}"
    );
    // Canary finds it within two epochs and clears it within three.
    let c = &v["localizers"]["canary"]["over_time"];
    assert_eq!(
        (c["detected"].as_u64(), c["cleared"].as_u64()),
        (Some(1), Some(1)),
        "{c}"
    );
    assert!(c["mean_detect"].as_f64().unwrap() <= 2.0, "{c}");
    assert!(c["mean_clear"].as_f64().unwrap() <= 3.0, "{c}");
    assert_eq!(c["false_positive_link_epochs"], 0, "{c}");
    // Its time to detect against the information limit (a 10 % loss: about one epoch's
    // packets), in the JSON and on Canary's line of the table; the other localizers have none.
    let (mean, worst) = (
        c["mean_ratio_to_bound"].as_f64().expect("a ratio"),
        c["worst_ratio_to_bound"].as_f64().expect("a ratio"),
    );
    assert!(mean <= 1.5 && worst >= mean, "{c}");
    let line = table.lines().rfind(|l| l.starts_with("canary ")).unwrap();
    assert!(
        line.ends_with(&format!("{mean:.2}×, {worst:.2}×")),
        "{table}"
    );
    assert!(v["localizers"]["netbouncer"]["over_time"]
        .get("mean_ratio_to_bound")
        .is_none());
}
