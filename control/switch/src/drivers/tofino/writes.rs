//! Writes: one Write RPC of many updates, and which of them failed, from the status details.

use super::{from_status, unreachable, TofinoDriver};
use crate::driver::DriverError;
use bfrt_proto::bfrt::{self, write_request, Update, WriteRequest};
use bfrt_proto::google::rpc;
use prost::Message;
use std::sync::atomic::Ordering;

/// Per-update failures of a Write, from the status details (a `google.rpc.Status` whose details
/// hold one `bfrt_proto.Error` per update, in order; OK ones mark updates that went in).
fn failed_updates(s: &tonic::Status) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    if let Ok(st) = rpc::Status::decode(s.details()) {
        for (i, any) in st.details.iter().enumerate() {
            if let Ok(e) = bfrt::Error::decode(any.value.as_slice()) {
                if e.canonical_code != 0 {
                    out.push((i, e.message));
                }
            }
        }
    }
    out
}

impl TofinoDriver {
    /// One Write of `updates`; the indices (into `updates`) that failed.
    pub(super) async fn write_updates(
        &mut self,
        updates: Vec<Update>,
    ) -> Vec<(usize, DriverError)> {
        let n = updates.len();
        let req = WriteRequest {
            target: Some(self.target()),
            client_id: self.opts.client_id,
            updates,
            atomicity: write_request::Atomicity::ContinueOnError as i32,
            p4_name: self.opts.p4_name.clone(),
        };
        let name = self.bound.name.clone();
        let timeout = self.opts.timeout;
        let rpc = match self.session() {
            Ok(s) => &mut s.rpc,
            Err(e) => return (0..n).map(|i| (i, e.clone())).collect(),
        };
        match tokio::time::timeout(timeout, rpc.write(req)).await {
            Ok(Ok(_)) => vec![],
            Ok(Err(s)) => {
                let each = failed_updates(&s);
                let e = from_status(&name, "Write", s);
                if matches!(e, DriverError::Unreachable(_)) {
                    // The switch went away (bf_switchd restarted): connect again next time.
                    if let Some(s) = &self.session {
                        s.shared.closed.store(true, Ordering::Relaxed);
                    }
                }
                if each.is_empty() || matches!(e, DriverError::Unreachable(_)) {
                    (0..n).map(|i| (i, e.clone())).collect()
                } else {
                    each.into_iter()
                        .map(|(i, m)| (i, DriverError::Refused(format!("{name}: {m}"))))
                        .collect()
                }
            }
            Err(_) => (0..n)
                .map(|i| (i, unreachable(format!("{name}: no answer to Write"))))
                .collect(),
        }
    }
}
