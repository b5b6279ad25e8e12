//! The stream reader: one task per client that acknowledges and queues digests (rate-limited,
//! bounded, the excess counted) and records demotion and closure.

use super::StreamStats;
use bfrt_proto::p4rt::{
    self, stream_message_request, stream_message_response, DigestList, DigestListAck,
    StreamMessageRequest,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;

/// Reads the stream: acks and queues digests (rate-limited, bounded), records arbitration
/// changes and closure.
pub(super) async fn stream_task(
    name: String,
    rate: u32,
    mut inbound: tonic::Streaming<p4rt::StreamMessageResponse>,
    tx: mpsc::Sender<StreamMessageRequest>,
    digests: mpsc::Sender<DigestList>,
    stats: Arc<StreamStats>,
) {
    // Token bucket: `rate` digest messages per second, bursts up to one second's worth.
    let cap = f64::from(rate.max(1));
    let mut tokens = cap;
    let mut last = Instant::now();
    loop {
        match inbound.next().await {
            Some(Ok(msg)) => match msg.update {
                Some(stream_message_response::Update::Digest(d)) => {
                    let ack = StreamMessageRequest {
                        update: Some(stream_message_request::Update::DigestAck(DigestListAck {
                            digest_id: d.digest_id,
                            list_id: d.list_id,
                        })),
                    };
                    let _ = tx.try_send(ack);
                    let n = d.data.len() as u64;
                    stats.digest_lists.fetch_add(1, Ordering::Relaxed);
                    stats.digests.fetch_add(n, Ordering::Relaxed);
                    let now = Instant::now();
                    tokens = (tokens + now.duration_since(last).as_secs_f64() * cap).min(cap);
                    last = now;
                    if tokens < n as f64 || digests.try_send(d).is_err() {
                        stats.digests_dropped.fetch_add(n, Ordering::Relaxed);
                    } else {
                        tokens -= n as f64;
                    }
                }
                Some(stream_message_response::Update::Arbitration(a)) => {
                    let code = a.status.map(|s| s.code).unwrap_or(0);
                    if code != 0 {
                        tracing::warn!(switch = name, "no longer primary (code {code})");
                        stats.demoted.store(true, Ordering::Relaxed);
                    }
                }
                Some(stream_message_response::Update::Error(e)) => {
                    tracing::warn!(
                        switch = name,
                        "stream error: {}: {}",
                        e.canonical_code,
                        e.message
                    );
                }
                None => {}
            },
            Some(Err(s)) => {
                tracing::warn!(switch = name, "stream channel failed: {s}");
                break;
            }
            None => break,
        }
    }
    stats.closed.store(true, Ordering::Relaxed);
}
