//! A binary P4Info file as p4c writes it (`--p4runtime-files X.bin`): its bytes, pushed to the
//! switch as they are, and the decoded message the contract is resolved against
//! ([`crate::contract::Program::from_p4info`]).

use bfrt_proto::p4info::P4Info;
use prost::Message;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum P4InfoError {
    #[error("cannot read P4Info {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a binary P4Info (p4c --p4runtime-files X.bin): {source}")]
    Decode {
        path: String,
        source: prost::DecodeError,
    },
}

/// A decoded P4Info and where it came from.
#[derive(Clone, Debug)]
pub struct P4InfoFile {
    /// Where it came from, for error messages.
    pub path: String,
    /// The encoded P4Info, sent to the switch as is.
    pub bytes: Vec<u8>,
    pub info: P4Info,
}

impl P4InfoFile {
    pub fn load(path: &Path) -> Result<Self, P4InfoError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| P4InfoError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::decode(&shown, bytes)
    }

    pub fn decode(path: &str, bytes: Vec<u8>) -> Result<Self, P4InfoError> {
        let info = P4Info::decode(bytes.as_slice()).map_err(|source| P4InfoError::Decode {
            path: path.to_string(),
            source,
        })?;
        Ok(Self {
            path: path.to_string(),
            bytes,
            info,
        })
    }
}

/// `value` as the `ceil(width/8)` big-endian bytes P4Runtime expects; panics when it does not
/// fit, which is a controller bug (values come from typed fields of the right width).
pub fn bytes_of(value: u64, width: u32) -> Vec<u8> {
    assert!(
        width >= 64 || value >> width == 0,
        "value {value:#x} does not fit in {width} bits"
    );
    let n = width.div_ceil(8) as usize;
    value.to_be_bytes()[8 - n..].to_vec()
}
