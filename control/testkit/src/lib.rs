//! What the integration tests of every crate share (a dev-dependency only).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `tool` is an executable file in a directory of `PATH`.
pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Something a test needs that this machine lacks.
#[derive(Clone, Debug, PartialEq)]
pub struct Lack {
    /// What `CANARY_TEST_REQUIRE` calls it: a tool's name on PATH, `root`, or `python3:MODULE`.
    pub name: String,
    /// Where it comes from.
    pub hint: String,
}

impl Lack {
    pub fn new(name: impl Into<String>, hint: impl Into<String>) -> Self {
        Lack {
            name: name.into(),
            hint: hint.into(),
        }
    }
}

/// Each of `tools` that is not on PATH, with where it comes from.
pub fn tools_lacking(tools: &[&str], hint: &str) -> Vec<Lack> {
    tools
        .iter()
        .filter(|t| !on_path(t))
        .map(|t| Lack::new(*t, hint))
        .collect()
}

/// Root, when the test does not have it (`why`: what it needs root for).
pub fn root_lacking(why: &str) -> Option<Lack> {
    // SAFETY: geteuid has no preconditions.
    (unsafe { libc::geteuid() } != 0).then(|| Lack::new("root", why))
}

/// Whether a test can run here. Where nothing is lacking, true. Otherwise it prints
/// `SKIP: TEST: <what> missing` where `cargo test` shows it and returns false, so that a
/// newcomer's machine without, say, BMv2 still passes, and never silently. Unless
/// `CANARY_TEST_REQUIRE` requires one of the lacks (`.ci/run` sets it): then the test fails,
/// naming it. See [`required`].
pub fn runnable(test: &str, lacks: &[Lack]) -> bool {
    if lacks.is_empty() {
        return true;
    }
    let require = std::env::var("CANARY_TEST_REQUIRE").ok();
    let allow = std::env::var("CANARY_TEST_ALLOW_MISSING").ok();
    let listed: Vec<String> = lacks
        .iter()
        .map(|l| format!("{} missing ({})", l.name, l.hint))
        .collect();
    let must: Vec<&str> = lacks
        .iter()
        .filter(|l| required(&l.name, require.as_deref(), allow.as_deref()))
        .map(|l| l.name.as_str())
        .collect();
    assert!(
        must.is_empty(),
        "{test}: CANARY_TEST_REQUIRE={} requires {}: {}",
        require.as_deref().unwrap_or_default(),
        must.join(", "),
        listed.join("; ")
    );
    skip(&format!("{test}: {}", listed.join("; ")));
    false
}

/// Whether a test lacking `name` must fail instead of being skipped: `require` is `all` (every
/// tool) or a comma-separated list of names; `allow` lists names `all` leaves out (the tools no
/// package registry has, which `.ci/run` cannot install).
pub fn required(name: &str, require: Option<&str>, allow: Option<&str>) -> bool {
    let listed =
        |list: Option<&str>| list.is_some_and(|l| l.split(',').map(str::trim).any(|x| x == name));
    match require.map(str::trim) {
        None | Some("") => false,
        Some("all") => !listed(allow),
        Some(_) => listed(require),
    }
}

/// Prints `SKIP: <what>` where `cargo test` shows it: straight to stderr, since libtest keeps
/// what `eprintln!` prints from a passing test to itself, and a skip must never pass silently.
fn skip(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIP: {what}");
}

/// Compiles `p4src/v1model` with `bmv2/build.sh` into `dir` (BMv2 JSON and P4Info); returns the
/// BMv2 JSON's path. Panics with the compiler's output when it fails.
pub fn build_bmv2(dir: &Path) -> PathBuf {
    let script = repo_root().join("bmv2/build.sh");
    let out = Command::new(&script)
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed: {}{}",
        script.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("canary.json")
}

/// A data-driven golden test, in the way of raft-rs's `datadriven`: every `*.txt` file in `dir`
/// holds an input, a `----` line and the output `run(file, input)` must give. A file whose output
/// differs fails the test with the lines that differ; with `CANARY_REWRITE_GOLDEN` set, the
/// expected outputs are rewritten instead (review them with `git diff`).
pub fn golden(dir: &Path, min_files: usize, run: impl Fn(&Path, &str) -> String) {
    let rewrite = std::env::var_os("CANARY_REWRITE_GOLDEN").is_some();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    assert!(
        files.len() >= min_files,
        "{}: {} case files, expected at least {min_files}",
        dir.display(),
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let (input, expected) = text
            .split_once("\n----\n")
            .unwrap_or_else(|| panic!("{}: no `----` line after the input", file.display()));
        let got = run(file, input);
        if rewrite {
            std::fs::write(file, format!("{input}\n----\n{got}")).unwrap();
        } else if got != expected {
            failures.push(format!(
                "{} (expected -, got +):\n{}",
                file.display(),
                line_diff(expected, &got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "golden output changed; if intended, run with CANARY_REWRITE_GOLDEN=1 and review {}:\n{}",
        dir.display(),
        failures.join("\n")
    );
}

/// The lines of `want` and `got` that differ, marked `-` and `+`, with their line numbers.
pub fn line_diff(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let mut out = String::new();
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i), g.get(i));
        if a != b {
            if let Some(a) = a {
                out.push_str(&format!("{:4} - {a}\n", i + 1));
            }
            if let Some(b) = b {
                out.push_str(&format!("{:4} + {b}\n", i + 1));
            }
        }
    }
    out
}

/// Runs `cmd` to its end and requires that it succeeded (its stderr in the failure); its output.
pub fn succeeded(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A port on 127.0.0.1 nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` from 127.0.0.1:`port` over HTTP/1.0; the body, or `None` when nothing answers
/// within 5 s. Enough for a test to read a local server's API (Prometheus, nats-server's
/// monitoring, `canary view`).
pub fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// Whether something accepts connections on 127.0.0.1:`port` (of the calling thread's network
/// namespace) within `limit`, polling.
pub fn wait_listening(port: u16, limit: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A child process killed (and reaped) when this is dropped, so a failing test leaves none.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A real Prometheus (Debian `prometheus`) on `127.0.0.1:web`, scraping Canary's `/metrics` on
/// `metrics` every second with `deploy/`'s alert rules evaluated every second, and sending its
/// alerts to the Alertmanager on `alertmanager` if one is given. Its config and data go in `dir`.
pub fn prometheus(dir: &Path, web: u16, metrics: u16, alertmanager: Option<u16>) -> KillOnDrop {
    let rules = repo_root().join("deploy/prometheus/canary-alerts.yml");
    let alerting = alertmanager.map_or(String::new(), |am| {
        format!(
            "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [\"127.0.0.1:{am}\"]\n"
        )
    });
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\n\
             {alerting}scrape_configs:\n  - job_name: canary\n    static_configs:\n      \
             - targets: [\"127.0.0.1:{metrics}\"]\n",
            rules.display()
        ),
    )
    .unwrap();
    KillOnDrop(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{web}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// The links of a report's blamed list (`summary.blamed` of `--json`, or an epoch's `blamed`),
/// each as `from->to`, in the report's order. A list of another shape fails the test.
pub fn blamed_links(blamed: &serde_json::Value) -> Vec<String> {
    let list = blamed.as_array().expect("a blamed list is an array");
    list.iter()
        .map(|b| {
            let end = |i: usize| b["link"][i].as_str().expect("a link is two switch names");
            format!("{}->{}", end(0), end(1))
        })
        .collect()
}

/// A classic pcap file (little-endian, microsecond times, Ethernet) of `frames`, each with its
/// time in microseconds.
pub fn classic_pcap(frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(0xa1b2_c3d4u32.to_le_bytes()); // magic: little-endian, microseconds
    b.extend(2u16.to_le_bytes()); // version 2.4
    b.extend(4u16.to_le_bytes());
    b.extend([0u8; 8]); // time zone, accuracy
    b.extend(65535u32.to_le_bytes()); // snap length
    b.extend(1u32.to_le_bytes()); // link type: Ethernet
    for (usec, f) in frames {
        b.extend(((usec / 1_000_000) as u32).to_le_bytes());
        b.extend(((usec % 1_000_000) as u32).to_le_bytes());
        b.extend((f.len() as u32).to_le_bytes());
        b.extend((f.len() as u32).to_le_bytes());
        b.extend(f);
    }
    b
}

/// An Ethernet frame of a 40-byte IPv4 TCP packet from `src:sport` to `dst:dport`.
pub fn eth_ipv4_tcp(src: u32, dst: u32, sport: u16, dport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f.extend(0x0800u16.to_be_bytes());
    f.extend([0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0]);
    f.extend(src.to_be_bytes());
    f.extend(dst.to_be_bytes());
    f.extend(sport.to_be_bytes());
    f.extend(dport.to_be_bytes());
    f.extend([0u8; 16]);
    f
}

#[cfg(test)]
mod tests {
    use super::required;

    #[test]
    fn require_all_fails_every_lack_but_the_allowed_and_a_list_only_its_own() {
        assert!(!required("p4c", None, None), "a newcomer's machine skips");
        assert!(!required("p4c", Some(""), None));
        assert!(required("nats-server", Some("all"), Some("p4c,bf-p4c")));
        assert!(!required("bf-p4c", Some("all"), Some("p4c, bf-p4c")));
        assert!(required("root", Some("all"), None));
        assert!(required("chromium", Some("prometheus,chromium"), None));
        assert!(!required("p4c", Some("prometheus,chromium"), None));
    }
}
