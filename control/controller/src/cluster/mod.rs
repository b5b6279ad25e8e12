//! The epoch's work over NATS JetStream, for fabrics that outgrow one controller machine.
//!
//! The controller stays one process (the epoch clock, the switches' flips and rules, the
//! sequential decision, flow selection: small, stateful, in order). The work that grows with
//! the fabric runs on workers, each a `canary worker` process, as stages joined by JetStream
//! subjects of one stream per run:
//!
//! ```text
//!  controller ── regs.<h> ──► harvest h ── records.<j> ──► join j ── joined ──► controller
//!  controller ── localize.<l> ──► localizer l ── verdicts ──► controller
//!  controller ── reports ──► reporter (the epoch report file)
//! ```
//!
//! * harvest partition `h` takes the registers of switches `s mod H = h`, reads them into
//!   records and sends each join partition its part (`SwitchRecords::split`);
//! * join partition `j` joins the segments whose upstream switch is `s mod J = j` once every
//!   harvest partition's part of the epoch is in;
//! * localizer partition `l` solves sub-problems `p mod L = l`;
//! * the reporter appends each epoch's report once.
//!
//! Each partition is a durable JetStream consumer: a worker acks its input only after its
//! output is published (with a message ID, so a repeat is dropped by the server), so a worker
//! killed at any point is handed the same input again when it (or its replacement) comes back,
//! and the epoch goes on where it stopped. Nothing here partitions, routes or redelivers by
//! itself: subjects, durable consumers, acks and de-duplication are JetStream's.
//!
//! On a cluster of NATS servers the stream (and with it every consumer) is kept by
//! `stream_replicas` of them, and every client is given all their URLs: when a server dies, its
//! clients reconnect to another, and a publish, a pull or an API call that its death (or the
//! election of a new leader) left unanswered is tried again ([`nats`]). An epoch is then late,
//! and its report says why (`cluster.redelivered`).

mod coordinator;
mod nats;
pub mod wire;
pub mod worker;

pub use coordinator::ClusterStages;

use async_nats::jetstream::stream;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("NATS at {url}: {error}")]
    Connect { url: String, error: String },
    #[error("JetStream: {0}")]
    JetStream(String),
    #[error("{subject}: not a {what}: {error}")]
    Decode {
        subject: String,
        what: String,
        error: String,
    },
    #[error("{0}")]
    Setup(String),
    #[error("{0}")]
    Io(String),
}

pub type Result<T> = std::result::Result<T, ClusterError>;

pub(crate) fn js_err(e: impl std::fmt::Display) -> ClusterError {
    ClusterError::JetStream(e.to_string())
}

/// Where the cluster is and which run this is.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// The NATS servers' URLs, e.g. `nats://127.0.0.1:4222`: a client connects to any of them
    /// (and to the others they announce) and, when its server dies, to another.
    pub servers: Vec<String>,
    /// The run's name: its stream and subjects (letters, digits, `-` and `_`).
    pub run: String,
    /// How long a worker may hold an input before JetStream hands it to another (or to itself
    /// restarted).
    pub ack_wait: Duration,
    /// Servers that keep a copy of the run's stream and its consumers: 1 on one server, 3 on a
    /// cluster of three, which goes on through the death of any one of them.
    pub stream_replicas: usize,
}

impl ClusterConfig {
    /// `servers`: one URL or several, comma separated.
    pub fn new(servers: &str, run: &str) -> Result<Self> {
        if run.is_empty()
            || !run
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ClusterError::Setup(format!(
                "--run {run:?}: a run's name is letters, digits, `-` and `_`"
            )));
        }
        let list: Vec<String> = servers.split(',').map(|u| u.trim().to_string()).collect();
        if list.iter().any(|u| u.is_empty()) {
            return Err(ClusterError::Setup(format!(
                "--cluster {servers:?}: one NATS server URL or several, comma separated"
            )));
        }
        Ok(ClusterConfig {
            servers: list,
            run: run.to_string(),
            ack_wait: Duration::from_secs(3),
            stream_replicas: 1,
        })
    }

    /// With the run's stream kept by `n` servers.
    pub fn with_replicas(self, n: usize) -> Self {
        ClusterConfig {
            stream_replicas: n,
            ..self
        }
    }

    pub fn stream(&self) -> String {
        format!("CANARY_{}", self.run)
    }
    fn subject(&self, what: &str) -> String {
        format!("canary.{}.{what}", self.run)
    }
    pub fn setup_subject(&self) -> String {
        self.subject("setup")
    }
    pub fn regs(&self, h: u32) -> String {
        self.subject(&format!("regs.{h}"))
    }
    pub fn records(&self, j: u32) -> String {
        self.subject(&format!("records.{j}"))
    }
    pub fn joined(&self) -> String {
        self.subject("joined")
    }
    pub fn localize(&self, l: u32) -> String {
        self.subject(&format!("localize.{l}"))
    }
    pub fn harvested(&self) -> String {
        self.subject("harvested")
    }
    pub fn ids(&self, switch: u32) -> String {
        self.subject(&format!("ids.{switch}"))
    }
    pub fn verdicts(&self) -> String {
        self.subject("verdicts")
    }
    pub fn reports(&self) -> String {
        self.subject("reports")
    }

    /// The stream's settings: every subject of the run, kept on disk by `stream_replicas`
    /// servers, repeats within two minutes dropped by message ID.
    fn stream_config(&self) -> stream::Config {
        stream::Config {
            name: self.stream(),
            subjects: vec![self.subject(">")],
            num_replicas: self.stream_replicas,
            storage: stream::StorageType::File,
            retention: stream::RetentionPolicy::Limits,
            duplicate_window: Duration::from_secs(120),
            max_age: Duration::from_secs(24 * 3600),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_is_one_url_or_several_comma_separated() {
        let one = ClusterConfig::new("nats://a:4222", "r").unwrap();
        assert_eq!(one.servers, ["nats://a:4222"]);
        assert_eq!(one.stream_replicas, 1);
        let three = ClusterConfig::new("nats://a:4222, nats://b:4222,nats://c:4222", "r")
            .unwrap()
            .with_replicas(3);
        assert_eq!(
            three.servers,
            ["nats://a:4222", "nats://b:4222", "nats://c:4222"]
        );
        assert_eq!(three.stream_config().num_replicas, 3);
        for bad in ["", "nats://a:4222,", "nats://a:4222,,nats://b:4222"] {
            let e = ClusterConfig::new(bad, "r").unwrap_err().to_string();
            assert!(e.contains("--cluster"), "{bad:?}: {e}");
        }
    }
}
