//! A session with `bf_switchd`: the channel, the subscription as master of the device, the task
//! that acknowledges and queues learn lists, and the device's programs fetched at connect.

use super::{from_status, unreachable, TofinoOptions};
use crate::driver::DriverError;
use crate::switches::BoundSwitch;
use bfrt_proto::bfrt::{
    self, bf_runtime_client::BfRuntimeClient, stream_message_request, stream_message_response,
    GetForwardingPipelineConfigRequest, StreamMessageRequest, StreamMessageResponse, Subscribe,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};
use tonic::Streaming;

/// What the stream task shares with the driver.
#[derive(Default)]
pub(super) struct StreamShared {
    pub(super) closed: AtomicBool,
    pub(super) dropped: AtomicU64,
    pub(super) digests: Mutex<Vec<bfrt::DigestList>>,
}

/// A connected session; the stream's request side lives as long as it does.
pub(super) struct Session {
    pub(super) rpc: BfRuntimeClient<Channel>,
    pub(super) shared: Arc<StreamShared>,
    _tx: mpsc::Sender<StreamMessageRequest>,
}

/// Connects, subscribes and fetches the device's programs: (session, Canary's bfrt.json, the
/// non-P4 bfrt.json).
pub(super) async fn open(
    bound: &BoundSwitch,
    opts: &TofinoOptions,
) -> Result<(Session, Vec<u8>, Vec<u8>), DriverError> {
    let name = &bound.name;
    let mut rpc = BfRuntimeClient::new(connect(bound, opts).await?);
    let device_id = bound.endpoint.device_id as u32;
    let (tx, stream) = subscribe(name, &mut rpc, device_id, opts).await?;
    let shared = Arc::new(StreamShared::default());
    spawn_stream_task(stream, shared.clone(), tx.clone(), opts);
    let (program, non_p4) = programs(name, &mut rpc, device_id, opts).await?;
    Ok((
        Session {
            rpc,
            shared,
            _tx: tx,
        },
        program,
        non_p4,
    ))
}

async fn connect(bound: &BoundSwitch, opts: &TofinoOptions) -> Result<Channel, DriverError> {
    let name = &bound.name;
    let url = format!("http://{}", bound.endpoint.grpc);
    Endpoint::from_shared(url.clone())
        .map_err(|e| DriverError::Refused(format!("{name}: endpoint {url}: {e}")))?
        .connect_timeout(opts.timeout)
        .tcp_nodelay(true)
        .connect()
        .await
        .map_err(|e| unreachable(format!("{name}: cannot connect to BF-RT at {url}: {e}")))
}

/// Opens the stream and subscribes as the device's master with learn notifications (a reader:
/// neither); returns
/// once the switch has acknowledged, with the stream's two sides.
async fn subscribe(
    name: &str,
    rpc: &mut BfRuntimeClient<Channel>,
    device_id: u32,
    opts: &TofinoOptions,
) -> Result<
    (
        mpsc::Sender<StreamMessageRequest>,
        Streaming<StreamMessageResponse>,
    ),
    DriverError,
> {
    let (tx, rx) = mpsc::channel(64);
    tx.send(StreamMessageRequest {
        client_id: opts.client_id,
        update: Some(stream_message_request::Update::Subscribe(Subscribe {
            is_master: !opts.reader,
            device_id,
            notifications: Some(bfrt::subscribe::Notifications {
                enable_learn_notifications: !opts.reader,
                ..Default::default()
            }),
            status: None,
        })),
    })
    .await
    .map_err(unreachable)?;
    let mut stream =
        tokio::time::timeout(opts.timeout, rpc.stream_channel(ReceiverStream::new(rx)))
            .await
            .map_err(|_| unreachable(format!("{name}: no answer to StreamChannel")))?
            .map_err(|s| from_status(name, "StreamChannel", s))?
            .into_inner();
    // Other messages may come first; wait for the subscribe acknowledgement.
    loop {
        let msg = tokio::time::timeout(opts.timeout, stream.message())
            .await
            .map_err(|_| unreachable(format!("{name}: no subscribe acknowledgement")))?
            .map_err(|s| from_status(name, "subscribe", s))?
            .ok_or_else(|| unreachable(format!("{name}: the stream closed")))?;
        if let Some(stream_message_response::Update::Subscribe(s)) = msg.update {
            let st = s.status.unwrap_or_default();
            if st.code != 0 {
                return Err(DriverError::NotPrimary(format!(
                    "{name}: subscribe refused: {}",
                    st.message
                )));
            }
            return Ok((tx, stream));
        }
    }
}

/// The task that reads the stream until it closes: it acknowledges every learn list and queues
/// it for the driver, dropping (and counting) what exceeds the queue.
fn spawn_stream_task(
    mut stream: Streaming<StreamMessageResponse>,
    shared: Arc<StreamShared>,
    tx: mpsc::Sender<StreamMessageRequest>,
    opts: &TofinoOptions,
) {
    let (queue, client_id) = (opts.digest_queue, opts.client_id);
    tokio::spawn(async move {
        loop {
            match stream.message().await {
                Ok(Some(m)) => {
                    if let Some(stream_message_response::Update::Digest(list)) = m.update {
                        let ack = StreamMessageRequest {
                            client_id,
                            update: Some(stream_message_request::Update::DigestAck(
                                bfrt::DigestListAck {
                                    digest_id: list.digest_id,
                                    list_id: list.list_id,
                                },
                            )),
                        };
                        let _ = tx.try_send(ack);
                        let mut q = shared.digests.lock().unwrap_or_else(|e| e.into_inner());
                        let held: usize = q.iter().map(|l| l.data.len()).sum();
                        if held + list.data.len() > queue {
                            shared
                                .dropped
                                .fetch_add(list.data.len() as u64, Ordering::Relaxed);
                        } else {
                            q.push(list);
                        }
                    }
                }
                Ok(None) | Err(_) => {
                    shared.closed.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
    });
}

/// The device's programs: Canary's `bfrt.json` (by `opts.p4_name`) and the non-P4 one.
async fn programs(
    name: &str,
    rpc: &mut BfRuntimeClient<Channel>,
    device_id: u32,
    opts: &TofinoOptions,
) -> Result<(Vec<u8>, Vec<u8>), DriverError> {
    let req = GetForwardingPipelineConfigRequest {
        device_id,
        client_id: opts.client_id,
    };
    let resp = tokio::time::timeout(opts.timeout, rpc.get_forwarding_pipeline_config(req))
        .await
        .map_err(|_| unreachable(format!("{name}: no answer to GetForwardingPipelineConfig")))?
        .map_err(|s| from_status(name, "GetForwardingPipelineConfig", s))?
        .into_inner();
    let Some(cfg) = resp.config.iter().find(|c| c.p4_name == opts.p4_name) else {
        return Err(DriverError::Program(format!(
            "{name}: no program `{}` on the device (it has {:?})",
            opts.p4_name,
            resp.config.iter().map(|c| &c.p4_name).collect::<Vec<_>>()
        )));
    };
    let non_p4 = resp
        .non_p4_config
        .map(|c| c.bfruntime_info)
        .unwrap_or_default();
    Ok((cfg.bfruntime_info.clone(), non_p4))
}
