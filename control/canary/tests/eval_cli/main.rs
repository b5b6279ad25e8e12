//! `canary eval` end to end: the built binary on a k=4 fat-tree, its JSON checked for shape and
//! for scores that agree with the blamed lists; and a Flock trace exported and read back.

mod json_and_trace;
mod localizer_settings;
mod over_time;
mod sweeps;

use serde_json::Value;
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
