//! One run's JSON: its documented shape and scores that agree with the blamed lists; a
//! Flock trace exported and read back.

use crate::{canary, close, link, read_json};
use std::collections::HashSet;
use std::process::Command;

#[test]
fn eval_json_has_the_documented_shape_and_consistent_scores() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("eval.json");
    let svg = dir.path().join("eval.svg");
    let names = ["canary", "netbouncer", "flock", "007", "detector"];
    let table = canary(&[
        "--topology",
        "fattree:4",
        "--faults",
        "random:10%",
        "--seed",
        "1",
        "--epochs",
        "4",
        "--localizers",
        "canary,netbouncer,flock,007,detector",
        "--json",
        json.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    for n in names {
        assert!(table.contains(n), "table lacks {n}:\n{table}");
    }
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let v = read_json(&json);
    assert_eq!(v["topology"], "fattree:4");
    assert_eq!(v["seed"], 1);
    let faults: HashSet<(String, String)> = v["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert!(f["loss"].as_f64().unwrap() > 0.0);
            link(f)
        })
        .collect();
    assert!(!faults.is_empty());
    let locs = v["localizers"].as_object().unwrap();
    assert_eq!(locs.len(), names.len());
    for n in names {
        let r = &locs[n];
        let blamed: HashSet<(String, String)> =
            r["blamed"].as_array().unwrap().iter().map(link).collect();
        let tp = blamed.intersection(&faults).count() as f64;
        let want_p = if blamed.is_empty() {
            1.0
        } else {
            tp / blamed.len() as f64
        };
        let want_r = tp / faults.len() as f64;
        let (p, rc, f1) = (
            r["precision"].as_f64().unwrap(),
            r["recall"].as_f64().unwrap(),
            r["f1"].as_f64().unwrap(),
        );
        for x in [p, rc, f1] {
            assert!((0.0..=1.0).contains(&x), "{n}: {x}");
        }
        assert!(close(p, want_p), "{n}: precision {p} vs {want_p}");
        assert!(close(rc, want_r), "{n}: recall {rc} vs {want_r}");
        let want_f1 = if p + rc == 0.0 {
            0.0
        } else {
            2.0 * p * rc / (p + rc)
        };
        assert!(close(f1, want_f1), "{n}: f1 {f1} vs {want_f1}");
        // Each localizer ran and was timed (a nanosecond clock: never 0 for a real run).
        let ms = r["inference_ms"].as_f64().unwrap();
        assert!(ms.is_finite() && ms > 0.0, "{n}: inference_ms {ms}");
        let stages = r["stages"].as_array().unwrap();
        assert!(!stages.is_empty(), "{n}: no stages");
        for s in stages {
            for k in ["precision", "recall", "f1"] {
                let x = s[k].as_f64().unwrap();
                assert!((0.0..=1.0).contains(&x), "{n}: stage {k} {x}");
            }
        }
        // The last stage's cumulative verdict is the verdict.
        assert!(close(stages.last().unwrap()["f1"].as_f64().unwrap(), f1));
    }
    assert_eq!(locs["canary"]["stages"].as_array().unwrap().len(), 5);
}

#[test]
fn flock_trace_exported_and_read_back_gives_the_same_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("probes.trace");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let common = [
        "--topology",
        "fattree:4",
        "--faults",
        "random:10%",
        "--seed",
        "2",
        "--localizers",
        "flock,netbouncer",
    ];
    let mut first = common.to_vec();
    first.extend(["--json", a.to_str().unwrap()]);
    first.extend(["--export-flock-trace", trace.to_str().unwrap()]);
    canary(&first);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.starts_with("Failing_link "));
    for op in ["FP ", "FID ", "FPT ", "SS "] {
        assert!(text.contains(op), "trace lacks {op}");
    }
    // The companion topology file: one `a b` line per undirected link (k = 4: 32).
    let topo = std::fs::read_to_string(dir.path().join("probes.trace.topo")).unwrap();
    assert_eq!(topo.lines().count(), 32);
    assert!(topo
        .lines()
        .all(|l| l.split(' ').filter_map(|x| x.parse::<u32>().ok()).count() == 2));
    let mut second = common.to_vec();
    second.extend(["--json", b.to_str().unwrap()]);
    second.extend(["--flock-trace", trace.to_str().unwrap()]);
    canary(&second);
    let (a, b) = (read_json(&a), read_json(&b));
    for n in ["flock", "netbouncer"] {
        assert_eq!(
            a["localizers"][n]["blamed"], b["localizers"][n]["blamed"],
            "{n}"
        );
        assert_eq!(a["localizers"][n]["f1"], b["localizers"][n]["f1"], "{n}");
    }

    // A broken trace is reported with its file and line.
    let bad = dir.path().join("bad.trace");
    std::fs::write(&bad, "FID 1 1 1 1 1500 0.0\nFPT 0 1 2\nSS 0 1 0 0\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(["eval", "--topology", "fattree:4", "--localizers", "flock"])
        .arg("--flock-trace")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}: line 2:", bad.display())),
        "{err}"
    );
}
