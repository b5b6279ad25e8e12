//! Localizer settings from the command line: `--nb-lambda` and `--calibrate`.

use crate::{canary, link, read_json};
use serde_json::Value;
use std::process::Command;

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
