//! [`P4RtError`]: what failed, with what the server said (per-update errors of a failed Write
//! included), and the questions the drivers ask of it.

use bfrt_proto::google::rpc;
use bfrt_proto::p4rt;
use prost::Message;

/// A failed P4Runtime operation, with what the server said.
#[derive(Debug, thiserror::Error)]
pub enum P4RtError {
    #[error("switch {switch}: cannot connect to {endpoint}: {detail}")]
    Connect {
        switch: String,
        endpoint: String,
        detail: String,
    },
    #[error("switch {switch}: TLS file {path}: {detail}")]
    Tls {
        switch: String,
        path: String,
        detail: String,
    },
    #[error("switch {switch}: {op}: {code:?}: {message}{}", fmt_details(.details))]
    Rpc {
        switch: String,
        op: &'static str,
        code: tonic::Code,
        message: String,
        /// Per-update errors of a failed Write: (index in the request, code, message).
        details: Vec<(usize, i32, String)>,
    },
    #[error("switch {switch}: the stream channel closed: {detail}")]
    StreamClosed { switch: String, detail: String },
    #[error(
        "switch {switch}: another controller is primary (our election id {ours}, arbitration says: {message})"
    )]
    NotPrimary {
        switch: String,
        ours: u128,
        message: String,
        /// The primary's election id, as arbitration gave it.
        primary: Option<u128>,
    },
}

fn fmt_details(d: &[(usize, i32, String)]) -> String {
    let shown: Vec<String> = d
        .iter()
        .take(5)
        .map(|(i, c, m)| format!("update {i}: {:?}: {m}", tonic::Code::from(*c)))
        .collect();
    if shown.is_empty() {
        String::new()
    } else if d.len() > shown.len() {
        format!(
            " [{} ... and {} more]",
            shown.join("; "),
            d.len() - shown.len()
        )
    } else {
        format!(" [{}]", shown.join("; "))
    }
}

impl P4RtError {
    /// The gRPC code, when the server answered.
    pub fn code(&self) -> Option<tonic::Code> {
        match self {
            P4RtError::Rpc { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the switch refused because the entity exists already, as the call's status or
    /// (BMv2 answers a batch with UNKNOWN and per-update codes) every update's.
    pub fn already_exists(&self) -> bool {
        match self {
            P4RtError::Rpc { code, details, .. } => {
                *code == tonic::Code::AlreadyExists
                    || (!details.is_empty()
                        && details
                            .iter()
                            .all(|(_, c, _)| *c == tonic::Code::AlreadyExists as i32))
            }
            _ => false,
        }
    }

    /// True when the switch could not be reached at all (as opposed to refusing a request).
    pub fn is_unreachable(&self) -> bool {
        match self {
            P4RtError::Connect { .. } | P4RtError::StreamClosed { .. } => true,
            P4RtError::Rpc { code, .. } => matches!(
                code,
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
            ),
            _ => false,
        }
    }
}

/// The error a call's status is, with the per-update errors in its details.
pub(super) fn rpc_error(switch: &str, op: &'static str, s: tonic::Status) -> P4RtError {
    let mut details = Vec::new();
    if let Ok(st) = rpc::Status::decode(s.details()) {
        for (i, any) in st.details.iter().enumerate() {
            if let Ok(e) = p4rt::Error::decode(any.value.as_slice()) {
                // OK entries mark the updates that succeeded.
                if e.canonical_code != 0 {
                    details.push((i, e.canonical_code, e.message));
                }
            }
        }
    }
    P4RtError::Rpc {
        switch: switch.to_string(),
        op,
        code: s.code(),
        message: s.message().to_string(),
        details,
    }
}

/// The causes under `e`, which its own message leaves out.
pub(super) fn source_chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut said = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        push_once(&mut parts, &mut said, s.to_string());
        cur = s.source();
    }
    parts.join(": ")
}

/// Adds `part` to a chain unless the chain says it already: some errors repeat their source in
/// their own message (`tcp connect error: Connection refused`, then `Connection refused`), and
/// some wrap an error that says the same (`tcp connect error`, then `tcp connect error`).
fn push_once(parts: &mut Vec<String>, said: &mut String, part: String) {
    if said.contains(&part) {
        return;
    }
    if let Some(last) = parts.last_mut() {
        if part.starts_with(last.as_str()) {
            said.push_str(&part);
            *last = part;
            return;
        }
    }
    said.push_str(&part);
    parts.push(part);
}

#[cfg(test)]
mod chain_tests {
    use super::*;

    #[derive(Debug)]
    struct E(&'static str, Option<Box<E>>);
    impl std::fmt::Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for E {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn a_chain_says_each_cause_once() {
        let e = E(
            "transport error",
            Some(Box::new(E(
                "tcp connect error",
                Some(Box::new(E(
                    "tcp connect error: Connection refused",
                    Some(Box::new(E("Connection refused", None))),
                ))),
            ))),
        );
        assert_eq!(source_chain(&e), "tcp connect error: Connection refused");
    }
}
