//! The wire codec of the register calls: each [`Call`]'s `<method>_args` struct, and the reading
//! of a reply into an [`Outcome`], with the field ids of `thrift_src/standard.thrift`. Nothing
//! here touches a socket, so replies can be decoded from bytes ([`decode_reply`]).

use super::{describe, RegisterErrorCode, ReplyError, READ_BUFFER, SERVICE};
use thrift::protocol::{
    TBinaryInputProtocol, TFieldIdentifier, TInputProtocol, TMessageIdentifier, TMessageType,
    TOutputProtocol, TStructIdentifier, TType,
};
use thrift::TConfiguration;

/// Register values made room for before they arrive: what one read buffer holds. A reply's list
/// size is only a claim; beyond this, room grows with the values actually read.
const PREALLOC_VALUES: usize = READ_BUFFER / 8;
/// The longest string a reply may hold (method names, exception messages): the thrift crate
/// would otherwise allocate up to 100 MiB for a string before reading a byte of it.
const MAX_REPLY_STRING: usize = 64 * 1024;

/// The limits replies are read with.
pub(super) fn reply_config() -> TConfiguration {
    TConfiguration::builder()
        .max_string_size(Some(MAX_REPLY_STRING))
        .build()
        .unwrap_or_default()
}

/// One register call, for [`ThriftClient::pipeline`](super::ThriftClient::pipeline).
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
    pub(super) fn wire_len(&self) -> usize {
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

/// Writes one call message (`seq` is its sequence number).
pub(super) fn write_call(
    o: &mut dyn TOutputProtocol,
    call: &Call<'_>,
    seq: i32,
) -> thrift::Result<()> {
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
pub(super) fn read_reply(
    i: &mut dyn TInputProtocol,
    call: &Call<'_>,
    seq: i32,
) -> thrift::Result<Outcome> {
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
