//! A P4Runtime server that adds roles to a switch whose own server has none (BMv2's
//! `simple_switch_grpc`: PI's server ignores `role` and keeps one primary per device).
//!
//! The gateway is the switch's only controller: it holds one upstream connection, primary for
//! the default role. Controllers connect to the gateway instead and get P4Runtime's role
//! semantics ([`crate::roles`]): one primary per role, chosen by election id among that role's
//! streams; writes, reads and pipeline pushes checked against the role's configuration before
//! anything reaches the switch (a request with one forbidden update is refused whole, naming the
//! update and why); digest lists delivered to the primary of the role that holds the digest
//! (acknowledged by the gateway when that role has no primary, so the switch does not stall).
//! When the switch's connection breaks (a restart), every controller's stream is closed, as the
//! switch's own would be, and the gateway connects again on the next call.
//!
//! It carries what Canary's P4Runtime subset carries (`bfrt_proto/proto/p4/v1`): table, counter,
//! register, digest and multicast entries, arbitration and digests. An update of any other kind
//! decodes without an entity and is refused, never forwarded empty.

mod arbitration;
mod service;
mod upstream;

use arbitration::State;
use bfrt_proto::p4rt::{self, StreamMessageResponse, Uint128};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::Status;

#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// `host:port` of the switch's P4Runtime server.
    pub upstream: String,
    pub device_id: u64,
    /// The gateway's election id on the switch (it must be the switch's primary).
    pub election_id: u128,
    /// Deadline of connecting and of the arbitration reply.
    pub timeout: Duration,
}

/// What an update without an entity is checked as (and refused as).
const NO_ENTITY: p4rt::Entity = p4rt::Entity { entity: None };

/// The gateway's side of one controller's stream.
type Tx = mpsc::Sender<Result<StreamMessageResponse, Status>>;

/// An election id on the wire, and back.
fn uint128(v: u128) -> Uint128 {
    Uint128 {
        high: (v >> 64) as u64,
        low: v as u64,
    }
}

fn from_uint128(v: Option<&Uint128>) -> u128 {
    v.map_or(0, |v| (u128::from(v.high) << 64) | u128::from(v.low))
}

/// The role gateway of one switch.
#[derive(Clone)]
pub struct RoleGateway {
    cfg: Arc<GatewayConfig>,
    state: Arc<Mutex<State>>,
    /// Serialises connecting to the switch.
    connecting: Arc<tokio::sync::Mutex<()>>,
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RoleGateway {
    pub fn new(cfg: GatewayConfig) -> Self {
        Self {
            cfg: Arc::new(cfg),
            state: Arc::default(),
            connecting: Arc::default(),
        }
    }

    /// Serves P4Runtime on `listener` until the task is dropped.
    pub fn serve(&self, listener: tokio::net::TcpListener) -> tokio::task::JoinHandle<()> {
        let svc = p4rt::p4_runtime_server::P4RuntimeServer::new(self.clone())
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(svc)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
                .await;
        })
    }

    /// Digest lists no controller's role claimed so far.
    pub fn digests_unclaimed(&self) -> u64 {
        lock(&self.state).digests_unclaimed
    }
}

fn role_name(role: &str) -> &str {
    if role.is_empty() {
        "(default)"
    } else {
        role
    }
}
