//! `--sweep`: probes, loss and fault counts.

use crate::{canary, close, link, read_json};
use serde_json::Value;
use std::collections::HashSet;
use std::process::Command;

/// Mean of `metric` of `name` at every point of a `--sweep` JSON document.
fn sweep_means(doc: &Value, name: &str, metric: &str) -> Vec<f64> {
    doc["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["mean"][name][metric].as_f64().expect("mean metric"))
        .collect()
}

#[test]
fn probe_sweep_keeps_the_faults_and_more_probes_find_more() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let svg = dir.path().join("sweep.svg");
    let table = canary(&[
        "--topology",
        "fattree:8",
        "--faults",
        "links:4@0.1",
        "--seeds",
        "1..2",
        "--sweep",
        "probes=2,1000",
        "--localizers",
        "netbouncer,flock,detector",
        "--json",
        json.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(table.starts_with("sweep probes"), "{table}");
    let doc = read_json(&json);
    assert_eq!(doc["axis"], "probes");
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    let values: Vec<f64> = points
        .iter()
        .map(|p| p["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values, vec![2.0, 1000.0]);
    for p in points {
        assert_eq!(p["faults"], "links:4@0.1");
        let runs = p["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        for r in runs {
            // 4 undirected links, both directions, each dropping exactly 10 %.
            let faults = r["faults"].as_array().unwrap();
            assert_eq!(faults.len(), 8);
            assert!(faults
                .iter()
                .all(|f| close(f["loss"].as_f64().unwrap(), 0.1)));
        }
        // Every edge switch bounces off every core: 32 × 16 paths; probes = paths × value.
        let nb = &p["mean"]["netbouncer"];
        assert_eq!(nb["probe_paths"].as_f64(), Some(512.0));
        assert_eq!(
            nb["probes_sent"].as_f64(),
            Some(512.0 * p["value"].as_f64().unwrap())
        );
        assert!(p["mean"]["detector"]["probe_paths"].as_f64().unwrap() > 0.0);
    }
    // The probe count changes the probes, not the fabric: the same faulty links at each point.
    let links = |p: &Value| -> Vec<HashSet<(String, String)>> {
        p["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["faults"].as_array().unwrap().iter().map(link).collect())
            .collect()
    };
    assert_eq!(links(&points[0]), links(&points[1]));
    // With no background loss, 500× more probes can only show more of each lossy path.
    for name in ["netbouncer", "flock", "detector"] {
        let r = sweep_means(&doc, name, "recall");
        assert!(
            r[1] > r[0],
            "{name}: recall {r:?} does not grow with probes"
        );
        let f = sweep_means(&doc, name, "f1");
        assert!(f[1] >= f[0], "{name}: F1 {f:?} falls with probes");
    }
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("netbouncer") && svg.contains("flock"));
}

#[test]
fn loss_and_fault_sweeps_set_the_fault_spec_and_007_reports_per_flow_accuracy() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("faults.json");
    canary(&[
        "--topology",
        "fattree:4",
        "--faults",
        "oneway:1@0.001..0.01",
        "--seed",
        "3",
        "--sweep",
        "faults=1,3",
        "--localizers",
        "007,flock-a2",
        "--json",
        json.to_str().unwrap(),
    ]);
    let doc = read_json(&json);
    for (p, n) in doc["points"].as_array().unwrap().iter().zip([1, 3]) {
        assert_eq!(p["faults"], format!("oneway:{n}@0.001..0.01"));
        let faults = p["runs"][0]["faults"].as_array().unwrap();
        assert_eq!(faults.len(), n);
        assert!(faults.iter().all(|f| {
            let l = f["loss"].as_f64().unwrap();
            (0.001..0.01).contains(&l)
        }));
        let acc = p["mean"]["007"]["per_flow_accuracy"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&acc));
        assert!(p["mean"]["flock-a2"]["f1"].as_f64().is_some());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(["eval", "--faults", "random:10%", "--sweep", "faults=2"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("links:N or oneway:N"));
}
