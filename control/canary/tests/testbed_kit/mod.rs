//! What the testbed's tests share: the tool check, a run directory kept on failure, running
//! `testbed/run.sh` and `score.py`, and the testbed's accounting of lost frames.

#![allow(dead_code)] // each test binary uses its own part

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use canary_testkit::{repo_root, root_lacking, tools_lacking, Lack};

/// What the testbed needs that this machine lacks.
pub fn missing() -> Vec<Lack> {
    let mut lacks: Vec<Lack> = root_lacking("network namespaces, veths, tc")
        .into_iter()
        .collect();
    lacks.extend(tools_lacking(
        &["p4c", "simple_switch_grpc"],
        "p4c and BMv2, built from their public sources, DEVELOPERS.md",
    ));
    lacks.extend(tools_lacking(
        &["ip", "tc", "ethtool", "mnexec", "flock", "setsid"],
        "testbed/install.sh",
    ));
    let py = Command::new("/usr/bin/python3")
        .args(["-c", "import mininet.net, yaml"])
        .stderr(Stdio::null())
        .status();
    if !py.is_ok_and(|s| s.success()) {
        lacks.push(Lack::new(
            "python3:mininet",
            "mininet and yaml for /usr/bin/python3: testbed/install.sh",
        ));
    }
    lacks
}

/// A test's run directory (the testbed's logs, the run's JSON), removed when the test passes
/// and kept when it fails, so that a failure in CI leaves its evidence on the machine.
pub struct RunDir(tempfile::TempDir);

impl RunDir {
    pub fn new() -> Self {
        RunDir(
            tempfile::Builder::new()
                .prefix("canary-testbed-")
                .tempdir()
                .unwrap(),
        )
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.disable_cleanup(true);
            eprintln!(
                "testbed: the failed test's run kept in {}",
                self.0.path().display()
            );
        }
    }
}

pub struct Run {
    pub status: std::process::ExitStatus,
    pub stderr: String,
    pub json: serde_json::Value,
}

/// Runs testbed/run.sh with a time limit; on timeout it is sent SIGTERM (its trap tears down).
pub fn run_testbed(args: &[&str], dir: &Path, limit: Duration) -> Run {
    let json = dir.join("run.json");
    let mut child = Command::new(repo_root().join("testbed/run.sh"))
        .args(args)
        .arg("--json")
        .arg(&json)
        .arg("--canary")
        .arg(env!("CARGO_BIN_EXE_canary"))
        .arg("--keep-logs")
        .arg(dir.join("logs"))
        .env("CANARY_TESTBED_LOCK_WAIT", "600")
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start testbed/run.sh");
    let mut err_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            // SAFETY: kill(2) of the child we started, by its PID.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let s = child.wait().unwrap();
            let stderr = reader.join().unwrap();
            panic!("testbed/run.sh took longer than {limit:?} (exit {s}):\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let stderr = reader.join().unwrap();
    eprintln!("{stderr}");
    let json = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    Run {
        status,
        stderr,
        json,
    }
}

pub fn read(dir: &Path, name: &str) -> serde_json::Value {
    let path = dir.join("logs").join(name);
    serde_json::from_slice(
        &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[derive(Debug)]
pub struct Counted {
    pub sent: u64,
    pub lost: u64,
}

/// The testbed's count of where the generators' frames were lost (`accounting.json`), against
/// what the hosts lost end to end.
#[derive(Debug)]
pub struct Accounting {
    pub links: std::collections::BTreeMap<String, Counted>,
    pub switches: std::collections::BTreeMap<String, u64>,
    /// Lost between a host and its edge switch, either way (no Canary monitor sees these).
    pub hosts: std::collections::BTreeMap<String, u64>,
    pub end_to_end: u64,
    /// The highest 1-minute load average seen while the fabric ran.
    pub load_max: f64,
    /// Times the whole machine stood still under the fabric (paused or not scheduled), as
    /// `testbed/canary_testbed/stalls.py` records them: BMv2 overflows when it resumes.
    pub stalls: Vec<serde_json::Value>,
}

impl Accounting {
    pub fn read(dir: &Path, traffic: &serde_json::Value) -> Accounting {
        let a = read(dir, "accounting.json");
        let links = a["links"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let (sent, got) = (v["sent"].as_u64().unwrap(), v["received"].as_u64().unwrap());
                assert!(got <= sent, "{k}: received {got} of {sent} sent");
                (
                    k.clone(),
                    Counted {
                        sent,
                        lost: sent - got,
                    },
                )
            })
            .collect();
        let switches = a["switches"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let (took, gave) = (v["in"].as_u64().unwrap(), v["out"].as_u64().unwrap());
                assert!(gave <= took, "{k}: sent {gave} of {took} taken in");
                (k.clone(), took - gave)
            })
            .collect();
        let hosts = a["hosts"]
            .as_object()
            .expect("accounting.json: the hosts' own links")
            .iter()
            .map(|(k, v)| {
                let (out, into) = (
                    v["lost_on_the_way_out"].as_u64().unwrap(),
                    v["lost_on_the_way_in"].as_u64().unwrap(),
                );
                (k.clone(), out + into)
            })
            .collect();
        Accounting {
            links,
            switches,
            hosts,
            end_to_end: traffic["lost"].as_u64().unwrap(),
            load_max: a["load_max"].as_f64().unwrap_or(0.0),
            stalls: a["stalls"].as_array().cloned().unwrap_or_default(),
        }
    }

    /// What the hosts lost end to end is exactly what the links, the switches and the hosts'
    /// own links lost.
    pub fn balances(&self) {
        let on_links: u64 = self.links.values().map(|c| c.lost).sum();
        let in_switches: u64 = self.switches.values().sum();
        let at_hosts: u64 = self.hosts.values().sum();
        let nonzero = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter()
                .filter(|(_, &n)| n > 0)
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
        };
        eprintln!(
            "lost end to end {}: on links {on_links}, inside switches {in_switches} {:?}, on \
             the hosts' own links {at_hosts} {:?}",
            self.end_to_end,
            nonzero(&self.switches),
            nonzero(&self.hosts),
        );
        assert_eq!(
            self.end_to_end,
            on_links + in_switches + at_hosts,
            "frames lost end to end but on no link, in no switch and on no host's link"
        );
    }
}

pub fn blamed(v: &serde_json::Value) -> Vec<String> {
    v["summary"]["blamed"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|b| format!("{}->{}", b["link"][0], b["link"][1]).replace('"', ""))
                .collect()
        })
        .unwrap_or_default()
}

/// testbed/run.sh on the k=4 fat-tree with a fault file, for `epochs` epochs of run.sh's length
/// (2 s); fails the test unless it succeeded.
pub fn run_fattree4(faults: &Path, epochs: u32, dir: &Path) -> Run {
    run_fattree4_with(faults, epochs, dir, &[])
}

/// [`run_fattree4`] with more of run.sh's arguments (`extra`, such as `--flows N`).
pub fn run_fattree4_with(faults: &Path, epochs: u32, dir: &Path, extra: &[&str]) -> Run {
    let epochs = epochs.to_string();
    let mut args = vec![
        "--topology",
        "fattree:4",
        "--faults",
        faults.to_str().unwrap(),
        "--epochs",
        &epochs,
    ];
    args.extend_from_slice(extra);
    let r = run_testbed(&args, dir, Duration::from_secs(400));
    assert!(r.status.success(), "testbed/run.sh failed: {}", r.stderr);
    r
}

/// `score.py --check` on a finished run: what it printed and its verdict document. Fails the
/// test unless every blame is an injected fault or measured loss.
pub fn score_check(dir: &Path, r: &Run) -> (String, serde_json::Value) {
    let (said, v, passed) = score(dir);
    assert!(passed, "{said}\n{}", r.stderr);
    (said, v)
}

/// `score.py --check` on a finished run: what it printed, its verdict, and whether it passed.
pub fn score(dir: &Path) -> (String, serde_json::Value, bool) {
    let verdict = dir.join("verdict.json");
    let check = Command::new("/usr/bin/python3")
        .arg(repo_root().join("testbed/score.py"))
        .arg(dir.join("run.json"))
        .arg("--accounting")
        .arg(dir.join("logs/accounting.json"))
        .arg("--traffic")
        .arg(dir.join("logs/traffic/summary.json"))
        .arg("--json")
        .arg(&verdict)
        .arg("--check")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout).to_string();
    let v = serde_json::from_slice(&std::fs::read(&verdict).unwrap()).unwrap();
    (said, v, check.status.success())
}

/// `run.sh --clean DIR`: the teardown's last resort on its own, from what a run recorded in DIR.
/// Needs no root, Mininet or BMv2 while nothing recorded is an interface that exists.
pub fn clean(dir: &Path) -> (Option<i32>, String) {
    let out = Command::new(repo_root().join("testbed/run.sh"))
        .arg("--clean")
        .arg(dir)
        .output()
        .expect("run testbed/run.sh --clean");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
