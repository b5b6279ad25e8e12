//! `canary run` inside the fabric namespace: starting it, reading its output and `--json`
//! document, HTTP from inside a namespace, and waiting for a child with a deadline.

use super::FabricLab;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

impl FabricLab {
    /// `canary run` inside the fabric namespace, with its stdout/stderr in files.
    pub fn daemon(&self, args: &[&str]) -> Daemon {
        self.daemon_named("daemon", args)
    }

    /// Another `canary run` (a restart, a standby), its output in `{name}.out` and `.err`.
    pub fn daemon_named(&self, name: &str, args: &[&str]) -> Daemon {
        self.daemon_in_group(name, None, args)
    }

    /// The same, its sockets owned by group `gid` (still root otherwise), so that nftables can
    /// tell its connections from another controller's (`meta skgid`).
    pub fn daemon_in_group(&self, name: &str, gid: Option<u32>, args: &[&str]) -> Daemon {
        let exe = env!("CARGO_BIN_EXE_canary");
        let out = std::fs::File::create(self.path(&format!("{name}.out"))).unwrap();
        let err = std::fs::File::create(self.path(&format!("{name}.err"))).unwrap();
        let mut cmd = match gid {
            Some(g) => {
                let mut c = Command::new("setpriv");
                c.args(["--regid", &g.to_string(), "--clear-groups", "ip"]);
                c
            }
            None => Command::new("ip"),
        };
        cmd.args(["netns", "exec", &self.fab, exe, "run", "--switches"])
            .arg(&self.switches_yaml)
            .arg("--p4")
            .arg(&self.p4dir)
            .args(args)
            .env("RUST_LOG", "canary=info,canary_switch=info")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map(Daemon)
            .unwrap()
    }

    pub fn daemon_output(&self) -> String {
        self.output_of("daemon")
    }

    /// The stdout and stderr of daemon `name`.
    pub fn output_of(&self, name: &str) -> String {
        let read = |ext: &str| {
            std::fs::read_to_string(self.path(&format!("{name}.{ext}"))).unwrap_or_default()
        };
        format!(
            "--- {name} stdout\n{}\n--- {name} stderr\n{}",
            read("out"),
            read("err")
        )
    }
}

/// The daemon process (`ip netns exec` execs it, so this is its PID); killed on drop.
pub struct Daemon(pub Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` from inside namespace `ns`; the body.
pub fn http_get_in_ns(ns: &str, addr: &str, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let (ns, addr, path) = (ns.to_string(), addr.to_string(), path.to_string());
    std::thread::spawn(move || {
        crate::bmv2::enter_netns(&ns);
        let mut s = std::net::TcpStream::connect(&addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
        let mut body = String::new();
        s.read_to_string(&mut body).ok()?;
        Some(body)
    })
    .join()
    .ok()
    .flatten()
}

/// Waits for `child` up to `timeout`; kills it (by PID) when it overstays.
pub fn wait_child(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Reads the daemon's `--json` document.
pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_default()).unwrap_or_default()
}
