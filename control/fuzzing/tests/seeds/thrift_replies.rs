//! BMv2's Thrift replies, as its server writes them (strict binary protocol).

use canary_fuzzing::THRIFT_SEQ;
use thrift::protocol::{
    TBinaryOutputProtocol, TMessageIdentifier, TMessageType, TOutputProtocol, TStructIdentifier,
};

/// A `<method>_result` reply message with the fields `body` writes, strict binary protocol.
pub(crate) fn reply(
    method: &str,
    body: impl FnOnce(&mut dyn TOutputProtocol) -> thrift::Result<()>,
) -> Vec<u8> {
    let mut buf = Vec::new();
    {
        let mut o = TBinaryOutputProtocol::new(&mut buf, true);
        let write = |o: &mut dyn TOutputProtocol| -> thrift::Result<()> {
            o.write_message_begin(&TMessageIdentifier::new(
                method,
                TMessageType::Reply,
                THRIFT_SEQ,
            ))?;
            o.write_struct_begin(&TStructIdentifier::new(format!("{method}_result")))?;
            body(o)?;
            o.write_field_stop()?;
            o.write_struct_end()?;
            o.write_message_end()?;
            o.flush()
        };
        write(&mut o).expect("writes to memory");
    }
    buf
}

/// An application exception in reply to `method` (an unknown method, say).
pub(crate) fn exception(method: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    {
        let mut o = TBinaryOutputProtocol::new(&mut buf, true);
        let e = thrift::ApplicationError::new(
            thrift::ApplicationErrorKind::UnknownMethod,
            "no such method",
        );
        o.write_message_begin(&TMessageIdentifier::new(
            method,
            TMessageType::Exception,
            THRIFT_SEQ,
        ))
        .and_then(|_| thrift::Error::write_application_error_to_out_protocol(&e, &mut o))
        .and_then(|_| o.write_message_end())
        .and_then(|_| o.flush())
        .expect("writes to memory");
    }
    buf
}
