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

mod coordinator;
pub mod wire;
pub mod worker;

pub use coordinator::ClusterStages;

use async_nats::jetstream::{self, stream};
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
    /// NATS server URL, e.g. `nats://127.0.0.1:4222`.
    pub url: String,
    /// The run's name: its stream and subjects (letters, digits, `-` and `_`).
    pub run: String,
    /// How long a worker may hold an input before JetStream hands it to another (or to itself
    /// restarted).
    pub ack_wait: Duration,
}

impl ClusterConfig {
    pub fn new(url: &str, run: &str) -> Result<Self> {
        if run.is_empty()
            || !run
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ClusterError::Setup(format!(
                "--run {run:?}: a run's name is letters, digits, `-` and `_`"
            )));
        }
        Ok(ClusterConfig {
            url: url.to_string(),
            run: run.to_string(),
            ack_wait: Duration::from_secs(3),
        })
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
    pub fn verdicts(&self) -> String {
        self.subject("verdicts")
    }
    pub fn reports(&self) -> String {
        self.subject("reports")
    }

    /// The stream's settings: every subject of the run, kept on disk, repeats within two
    /// minutes dropped by message ID.
    fn stream_config(&self) -> stream::Config {
        stream::Config {
            name: self.stream(),
            subjects: vec![self.subject(">")],
            storage: stream::StorageType::File,
            retention: stream::RetentionPolicy::Limits,
            duplicate_window: Duration::from_secs(120),
            max_age: Duration::from_secs(24 * 3600),
            ..Default::default()
        }
    }
}

/// A JetStream context on the server at `url`, trying for `patience` while it starts.
pub(crate) async fn connect(url: &str, patience: Duration) -> Result<jetstream::Context> {
    let started = std::time::Instant::now();
    loop {
        match async_nats::connect(url).await {
            Ok(client) => return Ok(jetstream::new(client)),
            Err(e) if started.elapsed() >= patience => {
                return Err(ClusterError::Connect {
                    url: url.to_string(),
                    error: e.to_string(),
                })
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Publishes `payload` on `subject` with message ID `id` and waits for the server to store it
/// (a repeat of the ID within the duplicate window is stored once).
pub(crate) async fn publish(
    js: &jetstream::Context,
    subject: String,
    id: String,
    payload: Vec<u8>,
) -> Result<()> {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(async_nats::header::NATS_MESSAGE_ID, id.as_str());
    js.publish_with_headers(subject, headers, payload.into())
        .await
        .map_err(js_err)?
        .await
        .map_err(js_err)?;
    Ok(())
}
