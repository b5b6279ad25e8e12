//! The `canary` binary installed alone with its config file, run against BMv2.

use crate::{blamed, bmv2, line2_losing_10_percent};
use serde_json::Value;

/// An install as `docs/run.md` describes it: the `canary` binary copied alone into a directory
/// with the compiled program, the topology, the switches file and a config file beside it, run
/// from `/` with nothing but `--config`. It reaches the BMv2 switches, runs its epochs, blames
/// the lossy link, and refers to nothing of the build tree.
#[test]
fn a_binary_copied_alone_runs_from_its_config_file_against_bmv2() {
    let Some((topology, lab)) = line2_losing_10_percent() else {
        return;
    };
    let install = lab.path("install");
    std::fs::create_dir_all(install.join("p4")).unwrap();
    let exe = install.join("canary");
    std::fs::copy(env!("CARGO_BIN_EXE_canary"), &exe).unwrap();
    for f in std::fs::read_dir(&lab.p4dir).unwrap() {
        let f = f.unwrap().path();
        if f.is_file() {
            std::fs::copy(&f, install.join("p4").join(f.file_name().unwrap())).unwrap();
        }
    }
    std::fs::copy(&topology, install.join("topology.yaml")).unwrap();
    std::fs::copy(&lab.switches_yaml, install.join("switches.yaml")).unwrap();
    // The shipped example with its addresses changed (relative paths are taken from the config
    // file's directory), the page and /metrics left out, and the pipeline sized for two switches.
    let example =
        std::fs::read_to_string(bmv2::repo_root().join("deploy/canary.example.yaml")).unwrap();
    let config = [
        ("p4", Some("p4")),
        ("epochs", Some("8")),
        ("report", Some("report.jsonl")),
        ("metrics", None),
        ("serve", None),
        ("alpha", Some("200")),
        ("beta", Some("4")),
        ("eta", Some("4")),
    ]
    .iter()
    .fold(example, |text, (key, value)| set_key(&text, key, *value));
    std::fs::write(install.join("canary.yaml"), config).unwrap();
    let traffic = lab.traffic(200, 8, 200.0, 11);
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &lab.fab])
        .arg(&exe)
        .args(["run", "--config"])
        .arg(install.join("canary.yaml"))
        .current_dir("/")
        .env_remove("CARGO_MANIFEST_DIR")
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    traffic.stop();
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(
        !said.contains(env!("CARGO_MANIFEST_DIR")),
        "the installed binary named its build tree: {said}"
    );
    let lines: Vec<Value> = std::fs::read_to_string(install.join("report.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 8, "{said}");
    let last = lines.last().unwrap();
    assert!(last["packets_counted"].as_u64().unwrap() > 0, "{last}");
    assert_eq!(
        blamed(&last["blamed"]),
        vec![("s1".to_string(), "s2".to_string())],
        "{said}"
    );
}

/// `text` (YAML) with the first line of `key` given `value`, or commented out (`None`).
fn set_key(text: &str, key: &str, value: Option<&str>) -> String {
    let mut done = false;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let indent = &l[..l.len() - l.trim_start().len()];
            if done || !l.trim_start().starts_with(&format!("{key}:")) {
                return l.to_string();
            }
            done = true;
            match value {
                Some(v) => format!("{indent}{key}: {v}"),
                None => format!("{indent}# {key}: off in this test"),
            }
        })
        .collect();
    assert!(done, "the example has no `{key}`");
    lines.join("\n") + "\n"
}
