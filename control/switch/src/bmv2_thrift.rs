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

use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TFieldIdentifier, TInputProtocol,
    TMessageIdentifier, TMessageType, TMultiplexedOutputProtocol, TOutputProtocol,
    TStructIdentifier, TType,
};
use thrift::transport::{TBufferedReadTransport, TBufferedWriteTransport};
use thrift::TConfiguration;

/// The service name BMv2 registers its standard runtime under.
pub const SERVICE: &str = "standard";

/// Calls per pipelined window. Requests are ~100 bytes, so a window stays far below any socket
/// buffer: the client never blocks writing while BMv2 blocks writing replies nobody reads yet.
const WINDOW_CALLS: usize = 128;
/// Request bytes per pipelined window (long register names count too).
const WINDOW_BYTES: usize = 32 * 1024;
/// Bytes of the client's read buffer.
const READ_BUFFER: usize = 64 * 1024;
/// Register values made room for before they arrive: what one read buffer holds. A reply's list
/// size is only a claim; beyond this, room grows with the values actually read.
const PREALLOC_VALUES: usize = READ_BUFFER / 8;
/// The longest string a reply may hold (method names, exception messages): the thrift crate
/// would otherwise allocate up to 100 MiB for a string before reading a byte of it.
const MAX_REPLY_STRING: usize = 64 * 1024;

/// The limits replies are read with.
fn reply_config() -> TConfiguration {
    TConfiguration::builder()
        .max_string_size(Some(MAX_REPLY_STRING))
        .build()
        .unwrap_or_default()
}

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

/// One register call, for [`ThriftClient::pipeline`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call<'a> {
    /// `bm_register_read_all(cxt_id, name)`.
    ReadAll { cxt_id: i32, name: &'a str },
    /// `bm_register_read(cxt_id, name, idx)`.
    Read {
        cxt_id: i32,
        name: &'a str,
        idx: i32,
    },
    /// `bm_register_write(cxt_id, name, index, value)`.
    Write {
        cxt_id: i32,
        name: &'a str,
        index: i32,
        value: i64,
    },
    /// `bm_register_write_range(cxt_id, name, start_index, end_index, value)`: cells
    /// `start..end` (end exclusive) set to `value`, under the array's lock.
    WriteRange {
        cxt_id: i32,
        name: &'a str,
        start: i32,
        end: i32,
        value: i64,
    },
    /// `bm_register_reset(cxt_id, name)`. BMv2 1.15 swaps in the zeroed array without taking
    /// the array's lock (`RegisterArray::reset_state`), so a reset can race packet processing
    /// and other Thrift calls and crash the switch; the harvest clears with [`Call::WriteRange`].
    Reset { cxt_id: i32, name: &'a str },
}

impl<'a> Call<'a> {
    /// The Thrift method name (without the service prefix).
    pub fn method(&self) -> &'static str {
        match self {
            Call::ReadAll { .. } => "bm_register_read_all",
            Call::Read { .. } => "bm_register_read",
            Call::Write { .. } => "bm_register_write",
            Call::WriteRange { .. } => "bm_register_write_range",
            Call::Reset { .. } => "bm_register_reset",
        }
    }

    /// The register array the call is about.
    pub fn register(&self) -> &'a str {
        match *self {
            Call::ReadAll { name, .. }
            | Call::Read { name, .. }
            | Call::Write { name, .. }
            | Call::WriteRange { name, .. }
            | Call::Reset { name, .. } => name,
        }
    }

    /// Approximate encoded size, for pipelining windows.
    fn wire_len(&self) -> usize {
        64 + SERVICE.len() + self.method().len() + self.register().len()
    }

    /// Writes the `<method>_args` struct (field ids of standard.thrift).
    fn write_args(&self, o: &mut dyn TOutputProtocol) -> thrift::Result<()> {
        o.write_struct_begin(&TStructIdentifier::new(format!("{}_args", self.method())))?;
        let (cxt_id, name) = match *self {
            Call::ReadAll { cxt_id, name }
            | Call::Read { cxt_id, name, .. }
            | Call::Write { cxt_id, name, .. }
            | Call::WriteRange { cxt_id, name, .. }
            | Call::Reset { cxt_id, name } => (cxt_id, name),
        };
        o.write_field_begin(&TFieldIdentifier::new("cxt_id", TType::I32, 1))?;
        o.write_i32(cxt_id)?;
        o.write_field_end()?;
        o.write_field_begin(&TFieldIdentifier::new(
            "register_array_name",
            TType::String,
            2,
        ))?;
        o.write_string(name)?;
        o.write_field_end()?;
        match *self {
            Call::Read { idx, .. } => {
                o.write_field_begin(&TFieldIdentifier::new("idx", TType::I32, 3))?;
                o.write_i32(idx)?;
                o.write_field_end()?;
            }
            Call::Write { index, value, .. } => {
                o.write_field_begin(&TFieldIdentifier::new("index", TType::I32, 3))?;
                o.write_i32(index)?;
                o.write_field_end()?;
                o.write_field_begin(&TFieldIdentifier::new("value", TType::I64, 4))?;
                o.write_i64(value)?;
                o.write_field_end()?;
            }
            Call::WriteRange {
                start, end, value, ..
            } => {
                o.write_field_begin(&TFieldIdentifier::new("start_index", TType::I32, 3))?;
                o.write_i32(start)?;
                o.write_field_end()?;
                o.write_field_begin(&TFieldIdentifier::new("end_index", TType::I32, 4))?;
                o.write_i32(end)?;
                o.write_field_end()?;
                o.write_field_begin(&TFieldIdentifier::new("value", TType::I64, 5))?;
                o.write_i64(value)?;
                o.write_field_end()?;
            }
            Call::ReadAll { .. } | Call::Reset { .. } => {}
        }
        o.write_field_stop()?;
        o.write_struct_end()
    }
}

/// The successful answer to one [`Call`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `ReadAll`: the whole array.
    Values(Vec<i64>),
    /// `Read`: one cell.
    Value(i64),
    /// `Write`, `WriteRange` and `Reset`.
    Done,
}

/// What a reply held: the call's result, or an exception the server sent (after which the
/// stream is still in step).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok(Reply),
    Invalid(RegisterErrorCode),
    /// A Thrift application exception (its kind and message).
    Exception(String),
}

type Input = TBinaryInputProtocol<TBufferedReadTransport<TcpStream>>;
type Output = TMultiplexedOutputProtocol<TBinaryOutputProtocol<TBufferedWriteTransport<TcpStream>>>;

struct Conn {
    input: Input,
    output: Output,
}

/// A connection to one BMv2 switch's Thrift server.
///
/// After a transport error the connection is dropped; the next call reconnects, so a switch
/// that restarted is picked up again without the caller rebuilding the client.
pub struct ThriftClient {
    switch: String,
    addr: SocketAddr,
    timeouts: Timeouts,
    conn: Option<Conn>,
    seq: i32,
}

impl ThriftClient {
    /// Connects to `addr` (e.g. `127.0.0.1:9090`). `switch` names the switch in every error.
    pub fn connect(
        switch: impl Into<String>,
        addr: impl ToSocketAddrs,
        timeouts: Timeouts,
    ) -> Result<Self> {
        let switch = switch.into();
        let addr = addr
            .to_socket_addrs()
            .and_then(|mut a| {
                a.next().ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "address resolves to nothing")
                })
            })
            .map_err(|source| ThriftError::Connect {
                switch: switch.clone(),
                addr: "(unresolved)".into(),
                source,
            })?;
        let mut client = ThriftClient {
            switch,
            addr,
            timeouts,
            conn: None,
            seq: 0,
        };
        client.conn()?;
        Ok(client)
    }

    /// The switch name given at connect.
    pub fn switch(&self) -> &str {
        &self.switch
    }

    /// The server address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn conn(&mut self) -> Result<&mut Conn> {
        if self.conn.is_none() {
            let connect_err = |source| ThriftError::Connect {
                switch: self.switch.clone(),
                addr: self.addr.to_string(),
                source,
            };
            let stream = TcpStream::connect_timeout(&self.addr, self.timeouts.connect)
                .map_err(connect_err)?;
            stream.set_nodelay(true).map_err(connect_err)?;
            stream
                .set_read_timeout(Some(self.timeouts.io))
                .map_err(connect_err)?;
            stream
                .set_write_timeout(Some(self.timeouts.io))
                .map_err(connect_err)?;
            let reader = stream.try_clone().map_err(connect_err)?;
            // Replies of whole arrays are ~9 KiB per 1024 cells: read in large chunks.
            let input = TBinaryInputProtocol::with_config(
                TBufferedReadTransport::with_capacity(READ_BUFFER, reader),
                true,
                reply_config(),
            );
            let output = TMultiplexedOutputProtocol::new(
                SERVICE,
                TBinaryOutputProtocol::new(
                    TBufferedWriteTransport::with_capacity(WINDOW_BYTES + 4096, stream),
                    true,
                ),
            );
            self.conn = Some(Conn { input, output });
        }
        Ok(self.conn.as_mut().expect("connected above"))
    }

    /// `bm_register_read_all`: the whole array.
    pub fn register_read_all(&mut self, cxt_id: i32, name: &str) -> Result<Vec<i64>> {
        match self.call_one(Call::ReadAll { cxt_id, name })? {
            Reply::Values(v) => Ok(v),
            other => unreachable!("read_all decoded as {other:?}"),
        }
    }

    /// `bm_register_read`: one cell.
    pub fn register_read(&mut self, cxt_id: i32, name: &str, idx: i32) -> Result<i64> {
        match self.call_one(Call::Read { cxt_id, name, idx })? {
            Reply::Value(v) => Ok(v),
            other => unreachable!("read decoded as {other:?}"),
        }
    }

    /// `bm_register_write`: one cell (BMv2 truncates the value to the register's width).
    pub fn register_write(
        &mut self,
        cxt_id: i32,
        name: &str,
        index: i32,
        value: i64,
    ) -> Result<()> {
        self.call_one(Call::Write {
            cxt_id,
            name,
            index,
            value,
        })
        .map(drop)
    }

    /// `bm_register_reset`: zeroes the whole array.
    pub fn register_reset(&mut self, cxt_id: i32, name: &str) -> Result<()> {
        self.call_one(Call::Reset { cxt_id, name }).map(drop)
    }

    /// Whole arrays, pipelined; in the order of `names`.
    pub fn register_read_all_many(&mut self, cxt_id: i32, names: &[&str]) -> Result<Vec<Vec<i64>>> {
        let calls: Vec<Call> = names
            .iter()
            .map(|&name| Call::ReadAll { cxt_id, name })
            .collect();
        Ok(self
            .pipeline(&calls)?
            .into_iter()
            .map(|r| match r {
                Reply::Values(v) => v,
                other => unreachable!("read_all decoded as {other:?}"),
            })
            .collect())
    }

    /// Zeroes every `(name, size)` array with `bm_register_write_range`, pipelined: unlike
    /// `bm_register_reset` it holds the array's lock in BMv2, so it is safe while packets flow.
    pub fn register_zero_many(&mut self, cxt_id: i32, arrays: &[(&str, usize)]) -> Result<()> {
        let calls: Vec<Call> = arrays
            .iter()
            .map(|&(name, size)| Call::WriteRange {
                cxt_id,
                name,
                start: 0,
                end: i32::try_from(size).unwrap_or(i32::MAX),
                value: 0,
            })
            .collect();
        self.pipeline(&calls).map(drop)
    }

    /// Resets every array in `names`, pipelined (see [`Call::Reset`] for why the harvest does not).
    pub fn register_reset_many(&mut self, cxt_id: i32, names: &[&str]) -> Result<()> {
        let calls: Vec<Call> = names
            .iter()
            .map(|&name| Call::Reset { cxt_id, name })
            .collect();
        self.pipeline(&calls).map(drop)
    }

    fn call_one(&mut self, call: Call<'_>) -> Result<Reply> {
        Ok(self
            .pipeline(std::slice::from_ref(&call))?
            .pop()
            .expect("one reply per call"))
    }

    /// Sends `calls` in windows of many requests and reads their replies in order.
    ///
    /// All calls are executed even when some fail with [`ThriftError::InvalidRegister`] (BMv2
    /// has no transactions); the first such error is returned after every reply was read, so
    /// the connection stays in step. A transport error aborts the batch and drops the
    /// connection.
    pub fn pipeline(&mut self, calls: &[Call<'_>]) -> Result<Vec<Reply>> {
        let mut replies = Vec::with_capacity(calls.len());
        let mut first_err = None;
        let mut start = 0;
        while start < calls.len() {
            let mut end = start;
            let mut bytes = 0;
            while end < calls.len() && end - start < WINDOW_CALLS && bytes < WINDOW_BYTES {
                bytes += calls[end].wire_len();
                end += 1;
            }
            let window = &calls[start..end];
            let first_seq = self.seq;
            self.seq = self.seq.wrapping_add(window.len() as i32);
            match self.window(window, first_seq) {
                Ok(outcomes) => {
                    for (call, outcome) in window.iter().zip(outcomes) {
                        match outcome {
                            Outcome::Ok(r) => replies.push(r),
                            Outcome::Invalid(code) => {
                                first_err.get_or_insert(ThriftError::InvalidRegister {
                                    switch: self.switch.clone(),
                                    call: call.method(),
                                    register: call.register().to_string(),
                                    code,
                                });
                            }
                            Outcome::Exception(message) => {
                                first_err.get_or_insert(ThriftError::Application {
                                    switch: self.switch.clone(),
                                    call: call.method(),
                                    register: call.register().to_string(),
                                    message,
                                });
                            }
                        }
                    }
                }
                Err(e) => {
                    self.conn = None;
                    return Err(e);
                }
            }
            start = end;
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(replies),
        }
    }

    /// One window: write every request, flush once, read every reply.
    fn window(&mut self, window: &[Call<'_>], first_seq: i32) -> Result<Vec<Outcome>> {
        let switch = self.switch.clone();
        let addr = self.addr.to_string();
        let transport = |call: &Call<'_>, source: thrift::Error| ThriftError::Transport {
            switch: switch.clone(),
            addr: addr.clone(),
            call: call.method(),
            register: call.register().to_string(),
            source: Box::new(source),
        };
        let conn = self.conn()?;
        for (i, call) in window.iter().enumerate() {
            let seq = first_seq.wrapping_add(i as i32);
            write_call(&mut conn.output, call, seq).map_err(|e| transport(call, e))?;
        }
        conn.output.flush().map_err(|e| transport(&window[0], e))?;
        let mut out = Vec::with_capacity(window.len());
        for (i, call) in window.iter().enumerate() {
            let seq = first_seq.wrapping_add(i as i32);
            out.push(read_reply(&mut conn.input, call, seq).map_err(|e| transport(call, e))?);
        }
        Ok(out)
    }
}

fn write_call(o: &mut Output, call: &Call<'_>, seq: i32) -> thrift::Result<()> {
    o.write_message_begin(&TMessageIdentifier::new(
        call.method(),
        TMessageType::Call,
        seq,
    ))?;
    call.write_args(o)?;
    o.write_message_end()
}

/// Decodes one reply to `call` (sent with sequence number `seq`) from the bytes BMv2 wrote: what
/// the client does with each reply it reads, without a socket (tests and fuzzing).
pub fn decode_reply(
    call: &Call<'_>,
    seq: i32,
    mut bytes: &[u8],
) -> std::result::Result<Outcome, ReplyError> {
    let mut input = TBinaryInputProtocol::with_config(&mut bytes, true, reply_config());
    read_reply(&mut input, call, seq).map_err(ReplyError)
}

/// Reads one reply. Exceptions the server sends (register or application) are outcomes, not
/// errors: the stream is still in step after them.
fn read_reply(i: &mut dyn TInputProtocol, call: &Call<'_>, seq: i32) -> thrift::Result<Outcome> {
    let ident = i.read_message_begin()?;
    let name = ident
        .name
        .strip_prefix(&format!("{SERVICE}:"))
        .unwrap_or(&ident.name);
    if ident.sequence_number != seq || name != call.method() {
        return Err(thrift::new_application_error(
            thrift::ApplicationErrorKind::BadSequenceId,
            format!(
                "reply {} #{} does not answer {} #{seq}",
                ident.name,
                ident.sequence_number,
                call.method()
            ),
        ));
    }
    match ident.message_type {
        TMessageType::Reply => {}
        TMessageType::Exception => {
            let e = thrift::Error::read_application_error_from_in_protocol(i)?;
            i.read_message_end()?;
            return Ok(Outcome::Exception(format!("{:?}: {}", e.kind, e.message)));
        }
        other => {
            return Err(thrift::new_application_error(
                thrift::ApplicationErrorKind::InvalidMessageType,
                format!("unexpected message type {other:?}"),
            ))
        }
    }
    let outcome = read_result(i, call)?;
    i.read_message_end()?;
    Ok(outcome)
}

/// Reads a `<method>_result` struct: field 0 is the return value, field 1 `ouch`.
fn read_result(i: &mut dyn TInputProtocol, call: &Call<'_>) -> thrift::Result<Outcome> {
    i.read_struct_begin()?;
    let mut success: Option<Reply> = None;
    let mut invalid = None;
    loop {
        let field = i.read_field_begin()?;
        match (field.field_type, field.id) {
            (TType::Stop, _) => break,
            (TType::List, Some(0)) if matches!(call, Call::ReadAll { .. }) => {
                let list = i.read_list_begin()?;
                if list.element_type != TType::I64 {
                    return Err(thrift::new_protocol_error(
                        thrift::ProtocolErrorKind::InvalidData,
                        format!("register values of type {:?}", list.element_type),
                    ));
                }
                let v = read_values(i, call, list.size)?;
                i.read_list_end()?;
                success = Some(Reply::Values(v));
            }
            (TType::I64, Some(0)) if matches!(call, Call::Read { .. }) => {
                success = Some(Reply::Value(i.read_i64()?));
            }
            (TType::Struct, Some(1)) => invalid = Some(read_invalid_register(i)?),
            (t, _) => i.skip(t)?,
        }
        i.read_field_end()?;
    }
    i.read_struct_end()?;
    if let Some(code) = invalid {
        return Ok(Outcome::Invalid(code));
    }
    match (call, success) {
        (Call::Write { .. } | Call::WriteRange { .. } | Call::Reset { .. }, _) => {
            Ok(Outcome::Ok(Reply::Done))
        }
        (_, Some(r)) => Ok(Outcome::Ok(r)),
        (_, None) => Err(thrift::new_application_error(
            thrift::ApplicationErrorKind::MissingResult,
            format!("{} returned no result", call.method()),
        )),
    }
}

/// The `claimed` values of a `list<i64>`. Room is made as values arrive (8 bytes each), never
/// for the claim alone: a reply that lies costs what it sent, and fails naming itself.
fn read_values(
    i: &mut dyn TInputProtocol,
    call: &Call<'_>,
    claimed: i32,
) -> thrift::Result<Vec<i64>> {
    let n = usize::try_from(claimed).unwrap_or(0);
    let mut v = Vec::with_capacity(n.min(PREALLOC_VALUES));
    for read in 0..n {
        match i.read_i64() {
            Ok(x) => v.push(x),
            Err(e) => {
                return Err(thrift::new_protocol_error(
                    thrift::ProtocolErrorKind::InvalidData,
                    format!(
                        "{} reply lists {n} values but ends after {read}: {}",
                        call.method(),
                        describe(&e)
                    ),
                ))
            }
        }
    }
    Ok(v)
}

/// `exception InvalidRegisterOperation { 1: RegisterOperationErrorCode code }`.
fn read_invalid_register(i: &mut dyn TInputProtocol) -> thrift::Result<RegisterErrorCode> {
    i.read_struct_begin()?;
    let mut code = RegisterErrorCode::Other(0);
    loop {
        let field = i.read_field_begin()?;
        match (field.field_type, field.id) {
            (TType::Stop, _) => break,
            (TType::I32, Some(1)) => code = RegisterErrorCode::from_wire(i.read_i32()?),
            (t, _) => i.skip(t)?,
        }
        i.read_field_end()?;
    }
    i.read_struct_end()?;
    Ok(code)
}
