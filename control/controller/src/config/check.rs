//! Every value of a configuration checked, and every conflict named, before anything runs.
//! A problem names its setting as the operator gave it: the flag (`--alpha 0`), or the file,
//! the key and its line (`canary.yaml: pipeline.alpha (line 9)`).

use super::{Cluster, Decision, Pipeline, RunConfig};
use crate::daemon::Target;
use crate::error::Error;
use std::collections::HashSet;
use std::path::PathBuf;

/// One setting that cannot be used, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    /// The file's section (`pipeline`, `cluster`), if any.
    pub section: Option<&'static str>,
    /// The key: the flag without its dashes, with `_` for `-`.
    pub key: &'static str,
    /// The value as given.
    pub value: String,
    pub why: String,
}

impl Invalid {
    fn pipeline(key: &'static str, value: impl ToString, why: impl Into<String>) -> Self {
        Self {
            section: Some("pipeline"),
            key,
            value: value.to_string(),
            why: why.into(),
        }
    }

    fn run(key: &'static str, value: impl ToString, why: impl Into<String>) -> Self {
        Self {
            section: None,
            key,
            value: value.to_string(),
            why: why.into(),
        }
    }
}

/// How to name a setting: the flag when it was given on the command line (or there is no
/// file), otherwise the file, the key and its line.
#[derive(Clone, Debug, Default)]
pub struct Names {
    pub file: Option<PathBuf>,
    /// The file's text, to find a key's line.
    pub text: Option<String>,
    /// Settings given on the command line (their keys).
    pub given: HashSet<String>,
}

impl Names {
    /// Names for flags alone (`canary simulate`).
    pub fn flags() -> Self {
        Self::default()
    }

    pub fn name(&self, section: Option<&str>, key: &str, value: &str) -> String {
        let flag = || {
            let f = format!("--{}", key.replace('_', "-"));
            if value.is_empty() {
                f
            } else {
                format!("{f} {value}")
            }
        };
        match (&self.file, &self.text) {
            (Some(file), Some(text)) if !self.given.contains(key) => {
                let path = match section {
                    Some(s) => format!("{s}.{key}"),
                    None => key.to_string(),
                };
                match key_line(text, section, key) {
                    Some(line) => format!("{}: {path} (line {line})", file.display()),
                    None => format!("{}: {path}", file.display()),
                }
            }
            _ => flag(),
        }
    }

    /// The problems as the crate's error: the first as its subject, the others one per line.
    pub fn error(&self, problems: &[Invalid]) -> Option<Error> {
        let (first, rest) = problems.split_first()?;
        let mut why = first.why.clone();
        for p in rest {
            why.push_str(&format!(
                "\n{}: {}",
                self.name(p.section, p.key, &p.value),
                p.why
            ));
        }
        Some(Error::given(
            self.name(first.section, first.key, &first.value),
            why,
        ))
    }
}

/// The line (from 1) of `key` in a YAML text, inside `section` when given: good enough for the
/// files people write (one key per line), and only a hint when it is not.
fn key_line(text: &str, section: Option<&str>, key: &str) -> Option<usize> {
    let is_key = |line: &str, k: &str| {
        let t = line.trim_start();
        t.strip_prefix(k)
            .is_some_and(|r| r.trim_start().starts_with(':'))
    };
    let mut in_section = section.is_none();
    for (i, line) in text.lines().enumerate() {
        let top = !line.starts_with(' ') && !line.starts_with('\t');
        if let Some(s) = section {
            if top && !line.trim().is_empty() && !line.trim_start().starts_with('#') {
                in_section = is_key(line, s);
                continue;
            }
        } else if !top {
            continue;
        }
        if in_section && is_key(line, key) {
            return Some(i + 1);
        }
    }
    None
}

fn at_least_one(out: &mut Vec<Invalid>, key: &'static str, v: u64) {
    if v == 0 {
        out.push(Invalid::pipeline(key, v, "must be at least 1"));
    }
}

fn probability(out: &mut Vec<Invalid>, key: &'static str, v: Option<f64>, open_low: bool) {
    let Some(v) = v else { return };
    let ok = v.is_finite() && v < 1.0 && if open_low { v > 0.0 } else { v >= 0.0 };
    if !ok {
        let range = if open_low { "(0, 1)" } else { "[0, 1)" };
        out.push(Invalid::pipeline(
            key,
            v,
            format!("a loss rate per packet, in {range}"),
        ));
    }
}

impl Pipeline {
    /// Every value out of range and every setting the chosen decision does not use.
    pub fn check(&self) -> Vec<Invalid> {
        let mut out = Vec::new();
        at_least_one(&mut out, "alpha", self.alpha);
        at_least_one(&mut out, "beta", u64::from(self.beta));
        at_least_one(&mut out, "delta", u64::from(self.delta));
        at_least_one(&mut out, "eta", u64::from(self.eta));
        at_least_one(&mut out, "groups", self.groups as u64);
        at_least_one(&mut out, "window", self.window as u64);
        at_least_one(
            &mut out,
            "min_lossy_epochs",
            u64::from(self.min_lossy_epochs),
        );
        if self.window > 0 && self.min_lossy_epochs as usize > self.window {
            out.push(Invalid::pipeline(
                "min_lossy_epochs",
                self.min_lossy_epochs,
                format!("more than the window of {} epochs", self.window),
            ));
        }
        if let Some(r) = self.watch_round_epochs {
            at_least_one(&mut out, "watch_round_epochs", u64::from(r));
        }
        probability(&mut out, "floor", self.floor, false);
        probability(&mut out, "background", self.background, true);
        if let Some(f) = self.false_alarms {
            if !(f.is_finite() && f > 0.0) {
                out.push(Invalid::pipeline(
                    "false_alarms",
                    f,
                    "expected false alarms per epoch: a number above 0",
                ));
            }
        }
        let unused = |key: &'static str, v: Option<f64>, with: &str| {
            v.map(|v| {
                Invalid::pipeline(
                    key,
                    v,
                    format!("only used with --decision {with} (`decision: {with}`), and this run's decision is not {with}"),
                )
            })
        };
        match self.decision {
            Decision::Floor => out.extend(
                [
                    unused("background", self.background, "sequential"),
                    unused("false_alarms", self.false_alarms, "sequential"),
                ]
                .into_iter()
                .flatten(),
            ),
            Decision::Sequential => out.extend(unused("floor", self.floor, "floor")),
        }
        out
    }
}

impl Cluster {
    /// Every value out of range.
    pub fn check(&self) -> Vec<Invalid> {
        let mut out = Vec::new();
        if !(1..=5).contains(&self.stream_replicas) {
            out.push(Invalid {
                section: Some("cluster"),
                key: "stream_replicas",
                value: self.stream_replicas.to_string(),
                why: "JetStream keeps 1 to 5 copies of a stream (one per server)".into(),
            });
        }
        out
    }
}

impl RunConfig {
    /// Every value out of range, every required setting missing and every conflict.
    pub fn check(&self) -> Vec<Invalid> {
        let mut out = self.pipeline.check();
        out.extend(self.cluster.check());
        let required = "required: give the flag, or the key in the --config file";
        if self.topology.is_none() {
            out.push(Invalid::run("topology", "", required));
        }
        if self.switches.is_none() {
            out.push(Invalid::run("switches", "", required));
        }
        if self.epoch_ms == 0 {
            out.push(Invalid::run("epoch_ms", 0, "an epoch lasts at least 1 ms"));
        }
        if self.harvest_deadline_ms == Some(0) {
            out.push(Invalid::run(
                "harvest_deadline_ms",
                0,
                "must be at least 1 ms",
            ));
        }
        for (key, addr) in [("metrics", &self.metrics), ("serve", &self.serve)] {
            if let Some(a) = addr {
                if let Err(why) = listen_address(a) {
                    out.push(Invalid::run(key, a, why));
                }
            }
        }
        if let (Some(f), false) = (&self.out_of_service, self.role.is_empty()) {
            out.push(Invalid::run(
                "out_of_service",
                f.display(),
                "needs Canary to own the forwarding: with a --role, the controller that owns it \
                 takes links out of service",
            ));
        }
        match self.target {
            Target::Tofino => {
                if let Some(p4) = &self.p4 {
                    out.push(Invalid::run(
                        "p4",
                        p4.display(),
                        "only for --target bmv2: on Tofino, bf_switchd loads the program and \
                         Canary reads it from the switch",
                    ));
                }
                if !self.role.is_empty() {
                    out.push(Invalid::run(
                        "role",
                        &self.role,
                        "a P4Runtime role, and BF Runtime has none: on Tofino, Canary binds to \
                         the program bf_switchd loaded and configures the switch itself",
                    ));
                }
            }
            Target::Bmv2 => {
                if self.p4.is_none() {
                    out.push(Invalid::run(
                        "p4",
                        "",
                        "required with --target bmv2: the compiled program's directory, with \
                         canary.json and canary.p4info.bin (`bmv2/build.sh DIR` writes them; \
                         docs/run.md)",
                    ));
                }
            }
        }
        out
    }
}

/// `HOST:PORT` to listen on: an IP address (IPv6 in brackets) or a host name, and a port.
pub fn listen_address(a: &str) -> Result<(), String> {
    if a.parse::<std::net::SocketAddr>().is_ok() {
        return Ok(());
    }
    let Some((host, port)) = a.rsplit_once(':') else {
        return Err("not HOST:PORT (e.g. 127.0.0.1:9464)".into());
    };
    port.parse::<u16>()
        .map_err(|_| format!("port `{port}` is not a number in 0..=65535"))?;
    let name_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    if !name_ok {
        return Err(format!("`{host}` is neither an IP address nor a host name"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_found_in_its_section_only() {
        let text = "topology: fattree:4\nwindow: 3\npipeline:\n  alpha: 0\n  # window: 9\n  window: 0\ncluster:\n  run: x\n";
        assert_eq!(key_line(text, Some("pipeline"), "window"), Some(6));
        assert_eq!(key_line(text, Some("pipeline"), "alpha"), Some(4));
        assert_eq!(key_line(text, None, "window"), Some(2));
        assert_eq!(key_line(text, Some("cluster"), "alpha"), None);
    }

    #[test]
    fn listen_addresses_need_a_host_and_a_port_that_fits() {
        assert!(listen_address("127.0.0.1:9464").is_ok());
        assert!(listen_address("[::1]:0").is_ok());
        assert!(listen_address("localhost:8080").is_ok());
        assert!(listen_address("127.0.0.1:99999")
            .unwrap_err()
            .contains("99999"));
        assert!(listen_address("not an address").is_err());
        assert!(listen_address(":80").is_err());
    }

    #[test]
    fn a_stream_is_kept_by_one_to_five_servers() {
        assert_eq!(Cluster::default().check(), vec![]);
        for (n, ok) in [(0, false), (1, true), (3, true), (5, true), (6, false)] {
            let c = Cluster {
                stream_replicas: n,
                ..Default::default()
            };
            let keys: Vec<&str> = c.check().iter().map(|p| p.key).collect();
            assert_eq!(keys.is_empty(), ok, "{n}: {keys:?}");
        }
    }

    #[test]
    fn the_defaults_pass_and_each_bad_value_is_named() {
        assert_eq!(Pipeline::default().check(), vec![]);
        let bad = Pipeline {
            alpha: 0,
            window: 2,
            min_lossy_epochs: 3,
            decision: Decision::Floor,
            background: Some(0.1),
            ..Default::default()
        };
        let keys: Vec<&str> = bad.check().iter().map(|p| p.key).collect();
        assert_eq!(keys, ["alpha", "min_lossy_epochs", "background"]);
    }
}
