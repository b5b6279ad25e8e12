//! `canary simulate --watch-rounds`: the controller watching segments in rounds on the packet
//! simulator, at the program's meter size (3 x 1024: at k = 8 a switch starts and ends 32
//! segments, its meters keep 12 segments' β flows clean).

use serde_json::Value;
use std::collections::HashSet;
use std::process::Command;

fn run(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let out = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(args)
        .args(["--json", path.to_str().unwrap(), "--quiet"])
        .output()
        .expect("runs canary");
    assert!(
        out.status.success(),
        "canary {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn links(v: &Value) -> HashSet<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["link"][0].as_str().unwrap().to_string(),
                x["link"][1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn fattree8_in_rounds_blames_only_faults_once_every_round_had_its_turn() {
    let v = run(&[
        "simulate",
        "--topology",
        "fattree:8",
        "--faults",
        "random:10%",
        "--epochs",
        "12",
        "--seed",
        "1",
        "--watch-rounds",
        "3",
    ]);
    let truth = links(&v["faults"]);
    let epochs = v["epochs"].as_array().unwrap();
    let segments = epochs[0]["segments_total"].as_u64().unwrap();
    for e in epochs {
        let n = e["epoch"].as_u64().unwrap();
        let w = &e["watch"];
        assert_eq!(w["rounds"], 3, "epoch {n}");
        assert_eq!(w["dwell"], 3);
        assert_eq!(w["round"].as_u64().unwrap(), (n / 3) % 3);
        let blamed = links(&e["blamed"]);
        if n < 8 {
            assert_eq!(w["first_sweep_until"], 8, "epoch {n}");
            assert!(blamed.is_empty(), "epoch {n} blamed before the first sweep");
        } else {
            assert!(w.get("first_sweep_until").is_none());
            // Every round counted: most segments have evidence, none older than two periods.
            let ev = &w["evidence"];
            assert!(ev["never_seen"].as_u64().unwrap() * 10 < segments, "{ev}");
            let wrong: Vec<_> = blamed.difference(&truth).collect();
            assert!(wrong.is_empty(), "epoch {n} blamed healthy links {wrong:?}");
            assert!(
                blamed.len() * 10 >= truth.len() * 9,
                "epoch {n}: {} of {} faults",
                blamed.len(),
                truth.len()
            );
        }
        // A lossy segment says how old its counts are.
        for s in e["lossy_segments"].as_array().unwrap() {
            assert!(s["age"].is_u64(), "{s}");
        }
    }
}

#[test]
fn fattree4_fits_the_meters_and_is_watched_whole() {
    // k = 4: no switch starts or ends more than 12 segments, so --watch-rounds changes nothing.
    let with = run(&["simulate", "--epochs", "3", "--watch-rounds", "3"]);
    let without = run(&["simulate", "--epochs", "3"]);
    for (a, b) in with["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(without["epochs"].as_array().unwrap())
    {
        assert!(a.get("watch").is_none());
        assert_eq!(a["blamed"], b["blamed"]);
        assert_eq!(a["packets_counted"], b["packets_counted"]);
    }
}

/// `--synth-meters --watch-plan adaptive` localizes from the first epochs, where the fixed
/// rounds blame nothing until their first sweep ends (11 epochs at k = 16): faults present from
/// the start are found during what would be the first sweep, and what is blamed is mostly them.
#[test]
fn fattree16_adaptive_watching_blames_faults_before_the_first_sweep_would_end() {
    let args = |plan: &'static str| {
        vec![
            "simulate",
            "--synth-meters",
            "--topology",
            "fattree:16",
            "--epochs",
            "8",
            "--seed",
            "1",
            "--watch-plan",
            plan,
        ]
    };
    let rounds = run(&args("rounds"));
    assert_eq!(rounds["synthesized"]["setup"]["period"], 11);
    assert!(rounds["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["blamed"].as_array().unwrap().is_empty()));

    let adaptive = run(&args("adaptive"));
    let m = &adaptive["synthesized"];
    assert_eq!(m["setup"]["adaptive"], true);
    let faults = m["faults"].as_array().unwrap();
    let found = faults
        .iter()
        .filter(|f| f["time_to_detect"].as_u64().is_some())
        .count();
    assert!(
        found * 10 >= faults.len() * 9,
        "{found} of {}",
        faults.len()
    );
    for e in m["epochs"].as_array().unwrap() {
        let p = e["score"]["precision"].as_f64().unwrap();
        assert!(p >= 0.9, "epoch {}: precision {p}", e["epoch"]);
    }
}
