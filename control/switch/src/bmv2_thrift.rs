//! A minimal client for BMv2's Thrift runtime: the register calls of the `standard` service.
//!
//! BMv2's P4Runtime server does not implement register reads (p4lang/PI #376), so Canary
//! harvests its meters over the Thrift runtime that `simple_switch_CLI` uses. The wire format is
//! the one BMv2's server speaks (`bm_runtime/server.cpp`): a `TMultiplexedProcessor` (method
//! names prefixed with `standard:`), the strict binary protocol, a buffered TCP transport. The
//! call and reply structs are written by hand with the field ids of `thrift_src/standard.thrift`;
//! no Thrift compiler is involved.
//!
//! The client is **synchronous**: the `thrift` crate's protocols work over `std::io`, a harvest
//! is a short burst of request/reply on one connection, and the daemon runs one harvest per
//! switch on tokio's blocking pool (`spawn_blocking`), so an async wrapper would add nothing but
//! a second I/O stack. Every socket operation has a timeout.
//!
//! Speed comes from **pipelining** ([`ThriftClient::pipeline`]): BMv2 serves a connection's
//! requests one after another, in order, so a batch of calls is written in one go and the
//! replies are read afterwards, one round trip per batch instead of one per register.

mod client;
mod codec;

pub use client::{ThriftClient, WireBytes};
pub use codec::{decode_reply, Call, Outcome, Reply};

use std::io;
use std::time::Duration;

/// The service name BMv2 registers its standard runtime under.
pub const SERVICE: &str = "standard";

/// Bytes of the client's read buffer.
const READ_BUFFER: usize = 64 * 1024;

/// `RegisterOperationErrorCode` of standard.thrift.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterErrorCode {
    InvalidRegisterName,
    InvalidIndex,
    Error,
    /// A code this client does not know (a newer BMv2).
    Other(i32),
}

impl RegisterErrorCode {
    fn from_wire(code: i32) -> Self {
        match code {
            1 => Self::InvalidRegisterName,
            2 => Self::InvalidIndex,
            3 => Self::Error,
            c => Self::Other(c),
        }
    }
}

impl std::fmt::Display for RegisterErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidRegisterName => f.write_str("no such register"),
            Self::InvalidIndex => f.write_str("index out of range"),
            Self::Error => f.write_str("register operation failed"),
            Self::Other(c) => write!(f, "register error code {c}"),
        }
    }
}

/// Why a Thrift call failed. Every variant names the switch; calls name the register.
#[derive(Debug, thiserror::Error)]
pub enum ThriftError {
    #[error("switch {switch}: cannot connect to the BMv2 Thrift server at {addr}: {source}")]
    Connect {
        switch: String,
        addr: String,
        source: io::Error,
    },
    /// BMv2 answered with `InvalidRegisterOperation`: the program has no such register, or the
    /// index is out of range. The connection stays usable.
    #[error("switch {switch}: {call} {register}: {code}")]
    InvalidRegister {
        switch: String,
        call: &'static str,
        register: String,
        code: RegisterErrorCode,
    },
    /// BMv2 answered with a Thrift application exception (e.g. an unknown method).
    #[error("switch {switch}: {call} {register}: server exception: {message}")]
    Application {
        switch: String,
        call: &'static str,
        register: String,
        message: String,
    },
    /// I/O or protocol failure (including timeouts); the connection is dropped and the next
    /// call reconnects.
    #[error("switch {switch} ({addr}): {call} {register}: {}", describe(.source))]
    Transport {
        switch: String,
        addr: String,
        call: &'static str,
        register: String,
        source: Box<thrift::Error>,
    },
}

pub type Result<T, E = ThriftError> = std::result::Result<T, E>;

/// A thrift error with its message: the thrift crate's own `Display` shows only the kind
/// ("bad data"), not what was wrong.
pub fn describe(e: &thrift::Error) -> String {
    let (kind, message) = match e {
        thrift::Error::Transport(t) => (t.to_string(), t.message.as_str()),
        thrift::Error::Protocol(p) => (p.to_string(), p.message.as_str()),
        thrift::Error::Application(a) => (a.to_string(), a.message.as_str()),
        thrift::Error::User(u) => return u.to_string(),
    };
    if message.is_empty() || message == kind {
        kind
    } else {
        format!("{kind}: {message}")
    }
}

/// A reply [`decode_reply`] could not decode.
#[derive(Debug, thiserror::Error)]
#[error("{}", describe(.0))]
pub struct ReplyError(#[source] pub thrift::Error);

/// Socket timeouts. Every wait of the client is bounded by one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    /// Per socket read or write (not per call): a stalled switch fails within this.
    pub io: Duration,
}

impl Default for Timeouts {
    /// 1 s to connect, 2 s per read or write: well above a healthy switch's milliseconds,
    /// below the controller's patience for one epoch.
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(1),
            io: Duration::from_secs(2),
        }
    }
}
