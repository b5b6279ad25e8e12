#![allow(dead_code)]
//! A BMv2 lab for packet tests: network namespaces, veth pairs, `simple_switch_grpc` processes,
//! `simple_switch_CLI` over Thrift, and raw AF_PACKET sockets. Everything it creates carries a
//! per-process tag and is torn down by `Drop` (also when a test panics).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

fn register_reads(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("register_read {n}\n"))
        .collect()
}

fn parse_registers(ns: &str, names: &[&str], text: &str) -> HashMap<String, Vec<u64>> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let line = line.trim_start_matches("RuntimeCmd: ").trim();
        let Some((name, values)) = line.split_once("= ") else {
            continue;
        };
        if !names.contains(&name) {
            continue;
        }
        let v = values
            .split(", ")
            .map(|x| x.trim().parse().unwrap())
            .collect();
        out.insert(name.to_string(), v);
    }
    assert_eq!(
        out.len(),
        names.len(),
        "register_read output in {ns}:\n{text}"
    );
    out
}

fn parse_counter(ns: &str, name: &str, text: &str) -> u64 {
    let packets = text
        .split(" packets)")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok());
    packets.unwrap_or_else(|| panic!("counter_read {name} in {ns}:\n{text}"))
}

const CLI_ERRORS: [&str; 5] = ["Error", "Invalid", "exception", "not found", "Traceback"];
const CLI_PROMPT: &str = "RuntimeCmd: ";

/// One long-lived simple_switch_CLI (a Python process takes ~0.5 s to start on a loaded
/// machine; a session answers a command in milliseconds). Commands go one line at a time; the
/// answer is what the CLI prints before its next prompt. Closed (stdin EOF, then waited for) on
/// drop.
pub struct CliSession {
    ns: String,
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    out: std::process::ChildStdout,
}

impl CliSession {
    pub fn open(ns: &str) -> Self {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "simple_switch_CLI", "--thrift-port"])
            .arg(THRIFT_PORT.to_string())
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let out = child.stdout.take().unwrap();
        let mut s = CliSession {
            ns: ns.to_string(),
            child,
            stdin,
            out,
        };
        let banner = s.read_to_prompt();
        assert!(
            !banner.contains("Could not"),
            "simple_switch_CLI in {ns}: {banner}"
        );
        s
    }

    fn read_to_prompt(&mut self) -> String {
        use std::io::Read;
        let mut text = Vec::new();
        let mut byte = [0u8; 256];
        while !text.ends_with(CLI_PROMPT.as_bytes()) {
            let n = self.out.read(&mut byte).expect("read simple_switch_CLI");
            assert!(
                n > 0,
                "simple_switch_CLI in {} exited: {}",
                self.ns,
                String::from_utf8_lossy(&text)
            );
            text.extend_from_slice(&byte[..n]);
        }
        text.truncate(text.len() - CLI_PROMPT.len());
        String::from_utf8_lossy(&text).into_owned()
    }

    /// Runs `commands` (one per line); panics when the CLI reports an error.
    pub fn run(&mut self, commands: &str) -> String {
        let mut all = String::new();
        for line in commands.lines().filter(|l| !l.trim().is_empty()) {
            let stdin = self.stdin.as_mut().unwrap();
            stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
            stdin.flush().unwrap();
            let text = self.read_to_prompt();
            assert!(
                !CLI_ERRORS.iter().any(|b| text.contains(b)),
                "simple_switch_CLI in {} failed on {line}:\n{text}",
                self.ns
            );
            all += &text;
        }
        all
    }

    pub fn registers(&mut self, names: &[&str]) -> HashMap<String, Vec<u64>> {
        let text = self.run(&register_reads(names));
        parse_registers(&self.ns, names, &text)
    }

    pub fn counter(&mut self, name: &str, index: u32) -> u64 {
        let text = self.run(&format!("counter_read {name} {index}\n"));
        parse_counter(&self.ns, name, &text)
    }
}

impl Drop for CliSession {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The child this session spawned, by its own handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
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

/// Moves the calling thread into namespace `ns` (setns affects only this thread).
pub fn enter_netns(ns: &str) {
    let path = std::ffi::CString::new(format!("/var/run/netns/{ns}")).unwrap();
    // SAFETY: plain open/setns/close on a path we built.
    unsafe {
        let nsfd = libc::open(path.as_ptr(), libc::O_RDONLY);
        assert!(nsfd >= 0, "open netns {ns}");
        assert_eq!(libc::setns(nsfd, libc::CLONE_NEWNET), 0, "setns {ns}");
        libc::close(nsfd);
    }
}

/// A raw AF_PACKET socket bound to one interface of one namespace.
pub struct RawSocket(i32);

impl RawSocket {
    pub fn open(ns: &str, iface: &str) -> Self {
        let (ns, iface) = (ns.to_string(), iface.to_string());
        // setns affects only the calling thread; the socket keeps its namespace afterwards.
        let fd = std::thread::spawn(move || unsafe {
            let path = std::ffi::CString::new(format!("/var/run/netns/{ns}")).unwrap();
            let nsfd = libc::open(path.as_ptr(), libc::O_RDONLY);
            assert!(nsfd >= 0, "open netns {ns}");
            assert_eq!(libc::setns(nsfd, libc::CLONE_NEWNET), 0, "setns {ns}");
            libc::close(nsfd);
            // Protocol 0 receives nothing until bind names the interface: a socket opened
            // with ETH_P_ALL would queue every interface's frames (the controller's loopback
            // gRPC and Thrift among them) until bind, and a test would read one as a stray.
            let proto = (libc::ETH_P_ALL as u16).to_be();
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            assert!(fd >= 0, "AF_PACKET socket");
            let name = std::ffi::CString::new(iface.clone()).unwrap();
            let ifindex = libc::if_nametoindex(name.as_ptr());
            assert!(ifindex > 0, "no interface {iface} in {ns}");
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = ifindex as i32;
            let len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            assert_eq!(
                libc::bind(fd, &sll as *const _ as *const libc::sockaddr, len),
                0
            );
            fd
        })
        .join()
        .unwrap();
        RawSocket(fd)
    }

    pub fn send(&self, frame: &[u8]) {
        // SAFETY: fd is a bound packet socket, the buffer is valid for its length.
        let n = unsafe { libc::send(self.0, frame.as_ptr().cast(), frame.len(), 0) };
        assert_eq!(n, frame.len() as isize, "send");
    }

    /// Incoming frames (not our own outgoing ones) until `pred` accepts one or `timeout`.
    pub fn recv_until(&self, timeout: Duration, pred: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.recv_timeout(left) {
                Some(frame) if pred(&frame) => return Some(frame),
                _ => continue,
            }
        }
        None
    }

    /// The next incoming frame (not our own outgoing ones), or `None` after `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut buf = vec![0u8; 9216];
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let mut pfd = libc::pollfd {
                fd: self.0,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().max(1) as i32) };
            if r <= 0 {
                continue;
            }
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: buffers are valid for the lengths given.
            let n = unsafe {
                libc::recvfrom(
                    self.0,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    0,
                    &mut sll as *mut _ as *mut libc::sockaddr,
                    &mut len,
                )
            };
            if n < 0 || sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            return Some(buf[..n as usize].to_vec());
        }
        None
    }

    /// Sets the kernel receive buffer (SO_RCVBUFFORCE, root) so bursts are not dropped at the
    /// socket while the reader is descheduled.
    pub fn set_recv_buffer(&self, bytes: i32) {
        // SAFETY: setsockopt on the fd this value owns with a valid int.
        let r = unsafe {
            libc::setsockopt(
                self.0,
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&bytes as *const i32).cast(),
                std::mem::size_of::<i32>() as u32,
            )
        };
        assert_eq!(r, 0, "SO_RCVBUFFORCE");
    }
}

impl Drop for RawSocket {
    fn drop(&mut self) {
        // SAFETY: closing the fd this value owns.
        unsafe { libc::close(self.0) };
    }
}
