//! A P4Runtime client for one switch: arbitration, pipeline push, writes, reads and digests.
//!
//! One client owns one StreamChannel. The server tells it whether it is the primary (highest
//! election id for its role); only the primary may write. Digests arrive on the stream; a
//! background task acknowledges every list (so the switch's duplicate filter is released),
//! rate-limits them, and queues them in a bounded channel. What does not fit is counted, never
//! silently lost.

mod calls;
mod connect;
mod error;
mod stream;

pub use error::P4RtError;

use bfrt_proto::p4rt::{p4_runtime_client::P4RuntimeClient, DigestList, Uint128};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::transport::Channel;

/// TLS material for a switch's gRPC server (all PEM files).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// CA that signed the server's certificate.
    pub ca: PathBuf,
    /// Client certificate and key, for servers that require mutual TLS.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// Name to verify in the server's certificate (default: the endpoint's host).
    pub domain: Option<String>,
}

#[derive(Clone, Debug)]
pub struct P4RtConfig {
    /// Switch name, for errors and logs.
    pub name: String,
    /// `host:port` of the P4Runtime server.
    pub endpoint: String,
    pub device_id: u64,
    pub election_id: u128,
    /// P4Runtime role; empty = the default role (full access).
    pub role: String,
    /// The role's configuration, sent in arbitration (a packed `P4RoleConfig`).
    pub role_config: Option<prost_types::Any>,
    pub tls: Option<TlsFiles>,
    /// Deadline of every unary call, and of connecting.
    pub timeout: Duration,
    /// Deadline of a pipeline push (the switch parses and loads the whole program).
    pub pipeline_timeout: Duration,
    /// Digest lists queued before further ones are dropped (and counted).
    pub digest_queue: usize,
    /// Digest messages accepted per second; the excess is dropped and counted.
    pub digest_rate: u32,
}

impl P4RtConfig {
    pub fn new(name: &str, endpoint: &str, device_id: u64) -> Self {
        Self {
            name: name.to_string(),
            endpoint: endpoint.to_string(),
            device_id,
            election_id: 1,
            role: String::new(),
            role_config: None,
            tls: None,
            timeout: Duration::from_secs(2),
            pipeline_timeout: Duration::from_secs(30),
            digest_queue: 1024,
            digest_rate: 20_000,
        }
    }
}

/// Counters of the stream task, shared with the client.
#[derive(Debug, Default)]
pub struct StreamStats {
    pub digest_lists: AtomicU64,
    pub digests: AtomicU64,
    /// Digest messages dropped: queue full or over the rate limit.
    pub digests_dropped: AtomicU64,
    pub closed: AtomicBool,
    /// Set when a later arbitration update says we are no longer primary.
    pub demoted: AtomicBool,
}

pub struct P4RtClient {
    pub cfg: P4RtConfig,
    client: P4RuntimeClient<Channel>,
    digests: mpsc::Receiver<DigestList>,
    pub stats: Arc<StreamStats>,
    /// Whether arbitration made this client the primary.
    pub primary: bool,
    /// What the arbitration reply said.
    pub arbitration: String,
    /// The primary's election id in the arbitration reply (ours when we won).
    pub primary_id: Option<u128>,
    /// The stream reader; it holds the request side open, so it must end with the client.
    stream_task: tokio::task::JoinHandle<()>,
}

impl Drop for P4RtClient {
    /// Ends the stream channel, so the switch frees this election id at once.
    fn drop(&mut self) {
        self.stream_task.abort();
    }
}

/// An election id on the wire.
fn uint128(x: u128) -> Uint128 {
    Uint128 {
        high: (x >> 64) as u64,
        low: x as u64,
    }
}
