//! What the testbed's Python reads from `canary` instead of computing it again: `canary faults`
//! (a fault file resolved per directed link, with each epoch's active faults) and `canary
//! decision` (the decision's statistics on given counts).

use canary_testkit::repo_root;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn canary(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs canary");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn faults(text: &str, epochs: u32) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("faults.yaml");
    std::fs::write(&file, text).unwrap();
    let topo = repo_root().join("topologies/line3.yaml");
    canary(
        &[
            "faults",
            "--topology",
            topo.to_str().unwrap(),
            "--faults",
            file.to_str().unwrap(),
            "--epochs",
            &epochs.to_string(),
            "--json",
        ],
        "",
    )
}

#[test]
fn faults_resolves_every_entry_per_directed_link_with_its_epochs() {
    let text = "faults:\n\
        - {link: [s1, m], loss: 0.1, both_directions: true, from_epoch: 1, until_epoch: 5}\n\
        - {device: s2, loss: 0.02, period: 4, duty: 0.5, flows: 0.5}\n\
        - {link: [m, s2], out_of_service: true, from_epoch: 2, until_epoch: 3}\n";
    let v = json_of(&faults(text, 6));
    let f = v["faults"].as_array().unwrap();
    assert_eq!(f.len(), 3, "{v:#}");
    assert_eq!(f[0]["link"], json!(["s1", "m"]));
    assert_eq!(f[1]["link"], json!(["m", "s1"]));
    assert_eq!(
        f[0]["when"],
        json!({"from": 1, "until": 5, "flap": null}),
        "{v:#}"
    );
    assert_eq!(f[2]["link"], json!(["s2", "m"]));
    assert_eq!(f[2]["device"], json!("s2"));
    assert_eq!(f[2]["flows"], json!(0.5));
    assert_eq!(f[2]["when"]["flap"], json!({"period": 4, "on": 2}));
    assert_eq!(v["scheduled"], json!(true));
    // Epochs 0..=6, each with the faults When::active lets drop.
    let active: Vec<Value> = v["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["active"].clone())
        .collect();
    assert_eq!(
        active,
        vec![
            json!([2]),
            json!([0, 1, 2]),
            json!([0, 1]),
            json!([0, 1]),
            json!([0, 1, 2]),
            json!([2]),
            json!([]),
        ],
        "{v:#}"
    );
    assert_eq!(
        v["out_of_service"].as_array().unwrap().len(),
        2,
        "both directions: {v:#}"
    );
    assert_eq!(
        v["epochs"][2]["out_of_service"],
        json!([["m", "s2"], ["s2", "m"]])
    );
    assert_eq!(v["epochs"][3]["out_of_service"], json!([]));
    assert_eq!(v["decision"]["background"], json!(1e-4));
    assert_eq!(v["decision"]["false_alarms"], json!(1e-6));
}

#[test]
fn faults_rejects_a_bad_file_naming_the_file_and_field() {
    let out = faults("faults:\n  - {link: [s1, s9], loss: 0.1}\n", 0);
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("faults.yaml: faults[0].link: unknown switch `s9`"),
        "{e}"
    );
}

#[test]
fn decision_answers_with_the_controllers_statistics() {
    let q = json!({
        "segments": 100,
        "declares": [{"sent": 1000, "lost": 0, "links": 3}, {"sent": 1000, "lost": 100, "links": 3},
                     {"sent": 628, "lost": 7, "links": 2}],
        "needed": [{"loss": 0.01, "links": 2}, {"loss": 1e-4, "links": 2}],
        "p0": [1, 2],
    });
    let v = json_of(&canary(&["decision", "--query", "-"], &q.to_string()));
    assert_eq!(v["declares"], json!([false, true, true]), "{v:#}");
    // ln(100 / 1e-6) / KL(0.01 ‖ 1 − (1 − 1e-4)²) = 627.2: the smallest count is 628.
    assert_eq!(v["needed"], json!([628, null]), "{v:#}");
    assert!((v["threshold"].as_f64().unwrap() - (100.0f64 / 1e-6).ln()).abs() < 1e-9);
    assert!((v["p0"][1].as_f64().unwrap() - (1.0 - 0.9999f64.powi(2))).abs() < 1e-15);
    // Flags move the parameters.
    let v = json_of(&canary(&["decision", "--background", "0.001"], ""));
    assert_eq!(v["background"], json!(0.001));
    let out = canary(&["decision", "--query", "-"], "{\"declares\": 3}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn decision_tests_a_links_segments_together() {
    // 100 segments and 64 links, each link watched at 6 rates (4e-4 × 4ⁱ below ½): 484 tests.
    let seg = |sent: u64, lost: u64| json!({"sent": sent, "lost": lost, "links": 2});
    let q = json!({
        "segments": 100,
        "links": 64,
        "declares": [seg(400, 5)],
        "pooled": [[seg(400, 5), seg(400, 5)], [seg(400, 5)], [seg(1000, 0), seg(1000, 0)]],
    });
    let v = json_of(&canary(&["decision", "--query", "-"], &q.to_string()));
    assert_eq!(v["tests"], json!(484), "{v:#}");
    assert!((v["threshold"].as_f64().unwrap() - (484.0f64 / 1e-6).ln()).abs() < 1e-9);
    // 5 of 400 is not beyond the background on one segment (400·KL = 15.8 < 20.0), but two
    // such segments of one link are (their ratio at the 0.64 % rate sums to 29.9); one alone
    // (14.9) and two loss-free ones are not.
    assert_eq!(v["declares"], json!([false]), "{v:#}");
    assert_eq!(v["pooled"], json!([true, false, false]), "{v:#}");
    let out = canary(&["decision", "--query", "-"], "{\"pooled\": [3]}");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pooled"));
}
