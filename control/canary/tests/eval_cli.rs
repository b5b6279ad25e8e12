//! `canary eval` end to end: the built binary on a k=4 fat-tree, its JSON checked for shape and
//! for scores that agree with the blamed lists; and a Flock trace exported and read back.

use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

fn canary(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_canary"))
        .arg("eval")
        .args(args)
        .output()
        .expect("canary runs");
    assert!(
        out.status.success(),
        "canary eval {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn link(v: &Value) -> (String, String) {
    let l = v["link"].as_array().expect("link is an array");
    assert_eq!(l.len(), 2);
    (
        l[0].as_str().unwrap().to_string(),
        l[1].as_str().unwrap().to_string(),
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

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
        assert!(r["inference_ms"].as_f64().unwrap() >= 0.0);
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

/// `--nb-lambda` reaches NetBouncer's CD: faults losing 1 % per direction on k = 8 sit under the
/// λ = 1 floor (a round-trip loss of 1/k) and are missed; with λ = 0.01 they are found.
#[test]
fn nb_lambda_sets_netbouncers_regulariser() {
    let dir = tempfile::tempdir().unwrap();
    let tp = |lambda: &str| {
        let json = dir.path().join(format!("nb{lambda}.json"));
        let lambda_arg = format!("--nb-lambda={lambda}");
        canary(&[
            "--topology",
            "fattree:8",
            "--faults",
            "links:4@0.01",
            "--seed",
            "3",
            "--localizers",
            "netbouncer",
            &lambda_arg,
            "--json",
            json.to_str().unwrap(),
        ]);
        let doc = read_json(&json);
        let faults: Vec<(String, String)> =
            doc["faults"].as_array().unwrap().iter().map(link).collect();
        doc["localizers"]["netbouncer"]["blamed"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| faults.contains(&link(b)))
            .count()
    };
    assert_eq!(tp("1"), 0, "λ = 1 misses 1 % faults on k = 8");
    assert_eq!(tp("0.01"), 8, "λ = 0.01 finds all 8 faulty directed links");
    let out = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(["eval", "--topology", "fattree:4", "--nb-lambda=-1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--nb-lambda must be"));
}

/// `--calibrate`: Flock(A2) on 007's traced retransmitting flows at noise 1e-4. With Canary's
/// fixed p_g 2.5e-4, p_b 1e-3, ρ 2e-2 (p_b/p_g = 4, a weak prior) a healthy link crossed by a few
/// flows that each lost one noise packet already outweighs the prior, so Flock(A2) blames many
/// healthy links (precision well under 0.5). Calibration on disjoint seeds of the same setting
/// keeps only settings whose training precision is above P (98 %, or lower in 5 % steps), so on
/// the test seeds it must not be less precise, and it still finds faults. The chosen parameters,
/// the P used and the training seeds are in every run's JSON.
#[test]
fn calibrated_flock_a2_is_at_least_as_precise_and_records_its_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let run = |calibrate: bool| {
        let json = dir.path().join(format!("cal{calibrate}.json"));
        let mut args = vec![
            "--topology",
            "fattree:8",
            "--noise",
            "0.0001",
            "--faults",
            "links:2@0.005..0.02",
            "--seeds",
            "1..2",
            "--localizers",
            "flock-a2",
            "--json",
            json.to_str().unwrap(),
        ];
        if calibrate {
            args.extend(["--calibrate", "11..14"]);
        }
        let table = canary(&args);
        (table, read_json(&json))
    };
    let (_, plain) = run(false);
    let (table, cal) = run(true);
    assert!(table.contains("calibrated"), "{table}");
    assert!(table.contains("flock-a2"), "{table}");
    let runs = |doc: &Value| doc["runs"].as_array().unwrap().clone();
    let metric = |r: &Value, m: &str| r["localizers"]["flock-a2"][m].as_f64().unwrap();
    for r in runs(&plain) {
        assert!(
            r.get("calibration").is_none(),
            "no calibration without the flag"
        );
        assert!(metric(&r, "precision") < 0.5, "the premise: {r}");
    }
    for (p, c) in runs(&plain).iter().zip(runs(&cal)) {
        assert_eq!(p["seed"], c["seed"]);
        assert_eq!(p["faults"], c["faults"], "the same test fabric");
        assert!(metric(&c, "precision") >= metric(p, "precision"));
        assert!(
            metric(&c, "recall") > 0.0,
            "calibrated Flock(A2) still finds faults"
        );
        let k = &c["calibration"];
        assert_eq!(k["seeds"], serde_json::json!([11, 12, 13, 14]));
        assert_eq!(k["faults"], "links:2@0.005..0.02");
        let l = &k["localizers"][0];
        assert_eq!(l["localizer"], "flock-a2");
        let (pg, pb, rho) = (
            l["params"]["p_g"].as_f64().unwrap(),
            l["params"]["p_b"].as_f64().unwrap(),
            l["params"]["rho"].as_f64().unwrap(),
        );
        assert!(pg < pb && rho > 0.0 && rho < 1.0);
        // P is 98 % or 5 % steps below it.
        let steps = (0.98 - l["min_precision"].as_f64().unwrap()) / 0.05;
        assert!(steps > -1e-9 && (steps - steps.round()).abs() < 1e-9, "{l}");
        assert!(l["precision"].as_f64().unwrap() > l["min_precision"].as_f64().unwrap());
    }
    let mean = |doc: &Value| {
        let v = runs(doc);
        v.iter().map(|r| metric(r, "precision")).sum::<f64>() / v.len() as f64
    };
    assert!(mean(&cal) > mean(&plain));

    // Training seeds that are also test seeds are refused.
    let out = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(["eval", "--topology", "fattree:4", "--seeds", "1..3"])
        .args(["--localizers", "flock", "--calibrate", "3..5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("disjoint"));
}

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
