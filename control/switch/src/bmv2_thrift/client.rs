//! The client: one connection per switch, reconnected after a transport error, and the
//! pipelined register calls over it.

use super::codec::{read_reply, reply_config, write_call, Call, Outcome, Reply};
use super::{Result, ThriftError, Timeouts, READ_BUFFER, SERVICE};
use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TMultiplexedOutputProtocol, TOutputProtocol,
};
use thrift::transport::{TBufferedReadTransport, TBufferedWriteTransport};

/// Calls per pipelined window. Requests are ~100 bytes, so a window stays far below any socket
/// buffer: the client never blocks writing while BMv2 blocks writing replies nobody reads yet.
const WINDOW_CALLS: usize = 128;
/// Request bytes per pipelined window (long register names count too).
const WINDOW_BYTES: usize = 32 * 1024;

type Input = TBinaryInputProtocol<TBufferedReadTransport<Counted>>;
type Output = TMultiplexedOutputProtocol<TBinaryOutputProtocol<TBufferedWriteTransport<Counted>>>;

/// Bytes a client sent and received over all its connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireBytes {
    pub sent: u64,
    pub received: u64,
}

/// The socket, counting the bytes through it (what a harvest costs on the wire).
struct Counted {
    stream: TcpStream,
    bytes: Arc<Mutex<WireBytes>>,
}

impl io::Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.stream.read(buf)?;
        self.bytes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .received += n as u64;
        Ok(n)
    }
}

impl io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.stream.write(buf)?;
        self.bytes.lock().unwrap_or_else(|e| e.into_inner()).sent += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

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
    bytes: Arc<Mutex<WireBytes>>,
}

impl ThriftClient {
    /// Connects to `addr` (e.g. `127.0.0.1:9090`). `switch` names the switch in every error.
    pub fn connect(
        switch: impl Into<String>,
        addr: impl ToSocketAddrs,
        timeouts: Timeouts,
    ) -> Result<Self> {
        Self::connect_counting(switch, addr, timeouts, Arc::default())
    }

    /// [`ThriftClient::connect`], adding the bytes of every connection to `bytes` (which can
    /// outlive the client: a driver keeps one across reconnections).
    pub fn connect_counting(
        switch: impl Into<String>,
        addr: impl ToSocketAddrs,
        timeouts: Timeouts,
        bytes: Arc<Mutex<WireBytes>>,
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
            bytes,
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

    /// Bytes sent and received since the client was made, over every connection it made.
    pub fn wire_bytes(&self) -> WireBytes {
        *self.bytes.lock().unwrap_or_else(|e| e.into_inner())
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
            let reader = Counted {
                stream: stream.try_clone().map_err(connect_err)?,
                bytes: self.bytes.clone(),
            };
            let stream = Counted {
                stream,
                bytes: self.bytes.clone(),
            };
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
