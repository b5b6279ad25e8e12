#![allow(dead_code)]
//! A BMv2 lab for packet tests: network namespaces, veth pairs, `simple_switch_grpc` processes,
//! `simple_switch_CLI` over Thrift, and raw AF_PACKET sockets. Everything it creates carries a
//! per-process tag and is torn down by `Drop` (also when a test panics).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod cli;
mod raw_socket;

// Each test binary uses a part of the lab.
#[allow(unused_imports)]
pub use cli::CliSession;
use cli::{parse_counter, parse_registers, register_reads, CLI_ERRORS};
#[allow(unused_imports)]
pub use raw_socket::{enter_netns, RawSocket};

pub const THRIFT_PORT: u16 = 9090;

static LABS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Why the lab cannot run here, or `None` when it can.
pub fn missing() -> Vec<Lack> {
    let mut lacks = tools_lacking(
        &["p4c", "simple_switch_grpc", "simple_switch_CLI"],
        "p4c and BMv2, built from their public sources, DEVELOPERS.md",
    );
    lacks.extend(tools_lacking(&["ip"], "Debian iproute2"));
    lacks.extend(root_lacking("network namespaces"));
    lacks
}

/// What the tests that put loss on a veth need besides: `tc` and nftables (the kernel may
/// lack netem).
pub fn loss_missing() -> Vec<Lack> {
    let mut lacks = missing();
    lacks.extend(tools_lacking(&["tc"], "Debian iproute2"));
    lacks.extend(tools_lacking(&["nft"], "Debian nftables"));
    lacks
}

pub use canary_testkit::{repo_root, runnable};
use canary_testkit::{root_lacking, tools_lacking, Lack};

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Compiles p4src/v1model with bmv2/build.sh into `dir`; returns the BMv2 JSON path.
pub fn build(dir: &Path) -> PathBuf {
    canary_testkit::build_bmv2(dir)
}

/// Fully qualified names in the BMv2 JSON, resolved by their unique suffix.
pub struct Names(Vec<String>);

impl Names {
    pub fn load(json: &Path) -> Self {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(json).expect("read BMv2 JSON")).unwrap();
        let mut names = Vec::new();
        for key in ["register_arrays", "counter_arrays", "actions"] {
            for e in v[key].as_array().into_iter().flatten() {
                names.push(e["name"].as_str().unwrap().to_string());
            }
        }
        for p in v["pipelines"].as_array().into_iter().flatten() {
            for t in p["tables"].as_array().into_iter().flatten() {
                names.push(t["name"].as_str().unwrap().to_string());
            }
        }
        Names(names)
    }

    /// The one name equal to `suffix` or ending in `.suffix`; panics when none or several.
    pub fn get(&self, suffix: &str) -> &str {
        let dotted = format!(".{suffix}");
        let hits: Vec<&String> = self
            .0
            .iter()
            .filter(|n| *n == suffix || n.ends_with(&dotted))
            .collect();
        match hits.as_slice() {
            [one] => one,
            _ => panic!("P4 name *{suffix}: {} matches {hits:?}", hits.len()),
        }
    }
}

/// The namespaces, switches and sockets of one test; removed on drop.
pub struct Lab {
    pub tag: String,
    namespaces: Vec<String>,
    pids: Vec<i32>,
    pub dir: tempfile::TempDir,
}

impl Lab {
    pub fn new() -> Self {
        Lab {
            // Unique per lab: tests of one binary run in parallel, each with its own lab.
            tag: format!(
                "cn{}x{}",
                std::process::id() % 100000,
                LABS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ),
            namespaces: Vec::new(),
            pids: Vec::new(),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Kills `pid` (SIGTERM) when the lab is dropped.
    pub fn track_pid(&mut self, pid: i32) {
        self.pids.push(pid);
    }

    /// A new namespace `{tag}{name}` with IPv6 off (no router solicitations on the links).
    pub fn netns(&mut self, name: &str) -> String {
        let ns = format!("{}{name}", self.tag);
        run(Command::new("ip").args(["netns", "add", &ns]));
        self.namespaces.push(ns.clone());
        for key in ["all", "default"] {
            run(Command::new("ip")
                .args(["netns", "exec", &ns, "sysctl", "-qw"])
                .arg(format!("net.ipv6.conf.{key}.disable_ipv6=1")));
        }
        run(Command::new("ip").args(["-n", &ns, "link", "set", "lo", "up"]));
        ns
    }

    /// A new namespace `{tag}{name}` as a host's: IPv6 on.
    pub fn netns_v6(&mut self, name: &str) -> String {
        let ns = format!("{}{name}", self.tag);
        run(Command::new("ip").args(["netns", "add", &ns]));
        self.namespaces.push(ns.clone());
        run(Command::new("ip").args(["-n", &ns, "link", "set", "lo", "up"]));
        ns
    }

    /// A veth pair `a` in `ns_a` and `b` in `ns_b`, both up.
    pub fn veth(&self, ns_a: &str, a: &str, ns_b: &str, b: &str) {
        run(Command::new("ip").args([
            "link", "add", a, "netns", ns_a, "type", "veth", "peer", "name", b, "netns", ns_b,
        ]));
        for (ns, i) in [(ns_a, a), (ns_b, b)] {
            run(Command::new("ip").args(["-n", ns, "link", "set", i, "up"]));
        }
    }

    /// Sets the MTU of interface `iface` in `ns`.
    pub fn mtu(&self, ns: &str, iface: &str, mtu: u32) {
        run(Command::new("ip")
            .args(["-n", ns, "link", "set", "dev", iface, "mtu"])
            .arg(mtu.to_string()));
    }

    /// Starts simple_switch_grpc in `ns` with bmv2/run-switch.sh and waits for its Thrift port.
    pub fn switch(&mut self, ns: &str, json: &Path, device: u32, ports: &[(u32, &str)]) {
        let log = self.dir.path().join(format!("{ns}.log"));
        let mut cmd = Command::new(repo_root().join("bmv2/run-switch.sh"));
        cmd.arg(json)
            .arg(device.to_string())
            .arg("50051")
            .arg(THRIFT_PORT.to_string());
        cmd.arg(&log).args(["-n", ns]);
        for (n, i) in ports {
            cmd.arg(format!("{n}@{i}"));
        }
        let pid: i32 = run(&mut cmd)
            .trim()
            .parse()
            .expect("run-switch.sh prints a PID");
        self.pids.push(pid);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = Command::new("ip")
                .args(["netns", "exec", ns, "simple_switch_CLI", "--thrift-port"])
                .arg(THRIFT_PORT.to_string())
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|o| {
                    let all = [o.stdout, o.stderr].concat();
                    o.status.success() && !String::from_utf8_lossy(&all).contains("Could not")
                });
            if ok {
                return;
            }
            let log_text =
                std::fs::read_to_string(log.with_extension("log.stdout")).unwrap_or_default();
            assert!(
                Instant::now() < deadline,
                "switch in {ns} did not come up: {log_text}"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Runs simple_switch_CLI commands (one per line) against the switch in `ns`.
    pub fn cli(&self, ns: &str, commands: &str) -> String {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "simple_switch_CLI", "--thrift-port"])
            .arg(THRIFT_PORT.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(commands.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success() && !CLI_ERRORS.iter().any(|b| text.contains(b)),
            "simple_switch_CLI in {ns} failed on\n{commands}\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }

    /// Whole register arrays: name -> values.
    pub fn registers(&self, ns: &str, names: &[&str]) -> HashMap<String, Vec<u64>> {
        let text = self.cli(ns, &register_reads(names));
        parse_registers(ns, names, &text)
    }

    /// Packets counted by an indirect counter at `index` (CLI: `name[i]= (B bytes, P packets)`).
    pub fn counter(&self, ns: &str, name: &str, index: u32) -> u64 {
        let text = self.cli(ns, &format!("counter_read {name} {index}\n"));
        parse_counter(ns, name, &text)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for &pid in &self.pids {
            // SAFETY: plain kill(2) of a process this lab started, by its PID.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        if !self.pids.is_empty() {
            std::thread::sleep(Duration::from_millis(300));
        }
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}
