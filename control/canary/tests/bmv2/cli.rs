//! `simple_switch_CLI`: parsing its register and counter output, and [`CliSession`], one
//! long-lived CLI process per switch.

use super::THRIFT_PORT;
use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(super) fn register_reads(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("register_read {n}\n"))
        .collect()
}

pub(super) fn parse_registers(ns: &str, names: &[&str], text: &str) -> HashMap<String, Vec<u64>> {
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

pub(super) fn parse_counter(ns: &str, name: &str, text: &str) -> u64 {
    let packets = text
        .split(" packets)")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok());
    packets.unwrap_or_else(|| panic!("counter_read {name} in {ns}:\n{text}"))
}

pub(super) const CLI_ERRORS: [&str; 5] =
    ["Error", "Invalid", "exception", "not found", "Traceback"];
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
