//! `canary run --config` and the checks of every command's settings, as an operator meets
//! them: the file's errors name the file, the key and the line; a flag's name the flag; the
//! exit status says what happened (0 done, 1 error, 2 bad command line, 3 stopped before the
//! first epoch). No switch is needed: these stop before connecting, or wait for switches that
//! never answer.

use canary_testkit::{free_port, repo_root, KillOnDrop};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn canary(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("runs canary")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn status(out: &Output) -> Option<i32> {
    out.status.code()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A two-switch line whose switches answer at `port` and `port + 1` (nothing listens there).
fn line2(dir: &Path, port: u16) -> (String, PathBuf) {
    let topo = repo_root().join("topologies/line2.yaml");
    let switches = write(
        dir,
        "switches.yaml",
        &format!(
            "switches:\n  s1: {{grpc: 127.0.0.1:{port}, device_id: 1, thrift: 127.0.0.1:{port}, ports: {{h1: 1, s2: 2}}}}\n  s2: {{grpc: 127.0.0.1:{}, device_id: 2, thrift: 127.0.0.1:{}, ports: {{h2: 1, s1: 2}}}}\n",
            port + 1,
            port + 1
        ),
    );
    (topo.display().to_string(), switches)
}

/// A compiled-program directory with the real P4Info and a stand-in BMv2 JSON (the switch that
/// would take it never answers).
fn p4_dir(dir: &Path) -> PathBuf {
    let p4 = dir.join("p4");
    std::fs::create_dir_all(&p4).unwrap();
    std::fs::copy(
        repo_root().join("control/switch/testdata/v1model/canary.p4info.bin"),
        p4.join("canary.p4info.bin"),
    )
    .unwrap();
    std::fs::write(p4.join("canary.json"), "{}").unwrap();
    p4
}

#[test]
fn the_shipped_example_loads() {
    let example = repo_root().join("deploy/canary.example.yaml");
    let out = canary(&[
        "run",
        "--config",
        example.to_str().unwrap(),
        "--print-config",
    ]);
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("epoch_ms: 1000"), "{text}");
    assert!(text.contains("metrics: 127.0.0.1:9464"), "{text}");
    // Relative paths are taken from the file's directory.
    let deploy = repo_root().join("deploy");
    assert!(
        text.contains(&format!("switches: {}/switches.yaml", deploy.display())),
        "{text}"
    );
    // The example with one key misspelt, as an operator might edit it: the file, the key and
    // its line are named, and nothing runs.
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::fs::read_to_string(&example).unwrap();
    let edited = shipped.replace("epoch_ms: 1000", "epoch_msec: 1000");
    let line = 1 + edited
        .lines()
        .position(|l| l.starts_with("epoch_msec"))
        .unwrap();
    let bad = write(dir.path(), "canary.yaml", &edited);
    let out = canary(&["run", "--config", bad.to_str().unwrap(), "--print-config"]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains(&format!("{}: epoch_msec (line {line})", bad.display())),
        "{e}"
    );
}

/// The page is `serve` (as `simulate --serve`); the old `--http` flag and `http:` key still
/// load, as `serve`.
#[test]
fn the_page_is_serve_and_its_old_name_http_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let base = "topology: fattree:4\nswitches: /s.yaml\np4: /p4\n";
    for (text, flag) in [
        (format!("{base}serve: 127.0.0.1:8080\n"), None),
        (format!("{base}http: 127.0.0.1:8080\n"), None),
        (base.to_string(), Some("--http")),
        (base.to_string(), Some("--serve")),
    ] {
        let cfg = write(dir.path(), "c.yaml", &text);
        let mut args = vec!["run", "--config", cfg.to_str().unwrap(), "--print-config"];
        if let Some(f) = flag {
            args.extend([f, "127.0.0.1:8080"]);
        }
        let out = canary(&args);
        assert_eq!(status(&out), Some(0), "{text} {flag:?}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("serve: 127.0.0.1:8080"),
            "{text} {flag:?}: {}",
            stdout(&out)
        );
    }
}

#[test]
fn flags_override_the_file_and_the_rest_comes_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "c.yaml",
        "topology: fattree:4\nswitches: /s.yaml\np4: /p4\nepoch_ms: 500\npipeline:\n  alpha: 300\n",
    );
    let out = canary(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--epoch-ms",
        "250",
        "--print-config",
    ]);
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("epoch_ms: 250"), "the flag wins: {text}");
    assert!(
        text.contains("  alpha: 300"),
        "the file's value stays: {text}"
    );
}

#[test]
fn a_bad_key_is_named_with_the_file_and_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "c.yaml",
        "topology: fattree:4\npipeline:\n  alfa: 3\n",
    );
    let out = canary(&["run", "--config", cfg.to_str().unwrap(), "--print-config"]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains(&format!(
            "{}: pipeline.alfa (line 3): unknown field `alfa`",
            cfg.display()
        )),
        "{e}"
    );
    assert_eq!(e.matches("alfa").count(), 2, "the key said once: {e}");
}

#[test]
fn a_bad_value_in_the_file_is_named_by_its_key_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "c.yaml",
        "topology: fattree:4\nswitches: s.yaml\np4: p4\nmetrics: 127.0.0.1:99999\npipeline:\n  window: 0\n",
    );
    let out = canary(&["run", "--config", cfg.to_str().unwrap()]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains(&format!(
            "{}: pipeline.window (line 6): must be at least 1",
            cfg.display()
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "{}: metrics (line 4): port `99999`",
            cfg.display()
        )),
        "every problem is listed: {e}"
    );
    // The same value from a flag is named by the flag.
    let out = canary(&["run", "--config", cfg.to_str().unwrap(), "--window", "0"]);
    assert!(
        stderr(&out).contains("--window 0: must be at least 1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn run_without_the_compiled_program_says_what_is_missing() {
    let out = canary(&["run", "--topology", "fattree:4", "--switches", "s"]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--p4: required with --target bmv2"),
        "{}",
        stderr(&out)
    );
    let dir = tempfile::tempdir().unwrap();
    let (topo, switches) = line2(dir.path(), free_port());
    let p4 = p4_dir(dir.path());
    std::fs::remove_file(p4.join("canary.json")).unwrap();
    let out = canary(&[
        "run",
        "--topology",
        &topo,
        "--switches",
        switches.to_str().unwrap(),
        "--p4",
        p4.to_str().unwrap(),
    ]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no canary.json in it"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("build.sh:"),
        "nothing is compiled: {}",
        stderr(&out)
    );
}

#[test]
fn a_bad_switch_address_fails_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let (topo, switches) = line2(dir.path(), 40000);
    let text = std::fs::read_to_string(&switches)
        .unwrap()
        .replace("127.0.0.1:40001,", "127.0.0.1:99999,");
    std::fs::write(&switches, text).unwrap();
    let p4 = p4_dir(dir.path());
    let out = canary(&[
        "run",
        "--topology",
        &topo,
        "--switches",
        switches.to_str().unwrap(),
        "--p4",
        p4.to_str().unwrap(),
    ]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("switches.s2.grpc: `127.0.0.1:99999`: port `99999`"),
        "{e}"
    );
    assert!(
        !e.contains("waiting for switch"),
        "nothing was contacted: {e}"
    );
}

#[test]
fn a_daemon_that_never_reaches_its_switches_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let (topo, switches) = line2(dir.path(), free_port());
    let p4 = p4_dir(dir.path());
    let out = canary(&[
        "run",
        "--topology",
        &topo,
        "--switches",
        switches.to_str().unwrap(),
        "--p4",
        p4.to_str().unwrap(),
        "--connect-timeout-s",
        "1",
    ]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("waiting for switch"),
        "start-up is logged at the default level: {e}"
    );
    assert!(e.contains("s1"), "the switch is named: {e}");
    assert!(!stdout(&out).contains("precision"), "{}", stdout(&out));
}

#[test]
fn sigterm_before_the_first_epoch_exits_3_with_json_logs() {
    let dir = tempfile::tempdir().unwrap();
    let (topo, switches) = line2(dir.path(), free_port());
    let p4 = p4_dir(dir.path());
    let child = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args([
            "run",
            "--topology",
            &topo,
            "--switches",
            switches.to_str().unwrap(),
            "--p4",
            p4.to_str().unwrap(),
            "--connect-timeout-s",
            "600",
            "--log-format",
            "json",
        ])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let first = lines.next().expect("a log line").unwrap();
    let v: serde_json::Value = serde_json::from_str(&first).expect("a JSON log line");
    assert!(
        v["fields"]["message"]
            .as_str()
            .unwrap()
            .contains("waiting for switch"),
        "{first}"
    );
    assert!(
        !first.contains('\u{1b}'),
        "no colour off a terminal: {first}"
    );
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    let limit = Instant::now() + Duration::from_secs(60);
    let code = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s.code();
        }
        assert!(Instant::now() < limit, "the daemon stops on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let rest: Vec<String> = lines.map_while(|l| l.ok()).collect();
    assert_eq!(code, Some(3), "{rest:?}");
    assert!(
        rest.iter()
            .any(|l| l.contains("stopped before the first epoch")),
        "{rest:?}"
    );
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.0.stdout.take().unwrap(), &mut out).unwrap();
    assert!(!out.contains("precision"), "no score of nothing: {out}");
}
