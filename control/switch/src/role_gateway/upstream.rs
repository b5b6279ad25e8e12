//! The gateway's own connection to the switch (primary for the default role), made on the first
//! call that needs it and again after it breaks; the reader that routes digest lists to their
//! role's primary; and the switch's P4Info names, to name what a refused update touched.

use super::{lock, uint128, RoleGateway};
use bfrt_proto::p4rt::{
    self, p4_runtime_client::P4RuntimeClient, stream_message_request, stream_message_response,
    GetForwardingPipelineConfigRequest, MasterArbitrationUpdate, StreamMessageRequest,
    StreamMessageResponse,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::transport::Channel;
use tonic::{Status, Streaming};

/// The switch's connection, as the gateway holds it.
pub(super) struct Upstream {
    pub(super) client: P4RuntimeClient<Channel>,
    /// The gateway's side of the switch's stream (digest acknowledgements).
    pub(super) stream: mpsc::Sender<StreamMessageRequest>,
    pub(super) generation: u64,
}

impl RoleGateway {
    /// The switch's client, connecting (and winning arbitration) first if needed.
    pub(super) async fn upstream(&self) -> Result<P4RuntimeClient<Channel>, Status> {
        if let Some(u) = &lock(&self.state).upstream {
            return Ok(u.client.clone());
        }
        let _one = self.connecting.lock().await;
        if let Some(u) = &lock(&self.state).upstream {
            return Ok(u.client.clone());
        }
        let unavailable =
            |what: String| Status::unavailable(format!("switch {}: {what}", self.cfg.upstream));
        let channel = tokio::time::timeout(
            self.cfg.timeout,
            tonic::transport::Endpoint::from_shared(format!("http://{}", self.cfg.upstream))
                .map_err(|e| unavailable(e.to_string()))?
                .connect(),
        )
        .await
        .map_err(|_| unavailable("no answer".into()))?
        .map_err(|e| unavailable(e.to_string()))?;
        let mut client = P4RuntimeClient::new(channel)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        let (tx, rx) = mpsc::channel(256);
        let _ = tx
            .send(StreamMessageRequest {
                update: Some(stream_message_request::Update::Arbitration(
                    MasterArbitrationUpdate {
                        device_id: self.cfg.device_id,
                        role: None,
                        election_id: Some(uint128(self.cfg.election_id)),
                        status: None,
                    },
                )),
            })
            .await;
        let mut inbound = tokio::time::timeout(
            self.cfg.timeout,
            client.stream_channel(ReceiverStream::new(rx)),
        )
        .await
        .map_err(|_| unavailable("no answer to StreamChannel".into()))??
        .into_inner();
        match tokio::time::timeout(self.cfg.timeout, inbound.next()).await {
            Ok(Some(Ok(StreamMessageResponse {
                update: Some(stream_message_response::Update::Arbitration(a)),
            }))) if a.status.as_ref().is_some_and(|s| s.code == 0) => {}
            Ok(Some(Ok(StreamMessageResponse {
                update: Some(stream_message_response::Update::Arbitration(a)),
            }))) => {
                return Err(Status::failed_precondition(format!(
                    "switch {}: the gateway is not its primary controller ({})",
                    self.cfg.upstream,
                    a.status.map(|s| s.message).unwrap_or_default()
                )))
            }
            _ => return Err(unavailable("no arbitration reply".into())),
        }
        let generation = {
            let mut st = lock(&self.state);
            st.generation += 1;
            st.upstream = Some(Upstream {
                client: client.clone(),
                stream: tx,
                generation: st.generation,
            });
            st.generation
        };
        tokio::spawn(self.clone().read_upstream(inbound, generation));
        Ok(client)
    }

    /// The switch's stream: digest lists to their role's primary; its end ends every stream.
    async fn read_upstream(self, mut inbound: Streaming<StreamMessageResponse>, generation: u64) {
        while let Some(Ok(m)) = inbound.next().await {
            match m.update {
                Some(stream_message_response::Update::Digest(d)) => {
                    let mut st = lock(&self.state);
                    let role = st.roles.digest_role(d.digest_id).to_string();
                    let to = st.primary(&role).and_then(|(id, _)| st.conns.get(&id));
                    let (digest_id, list_id) = (d.digest_id, d.list_id);
                    let msg = StreamMessageResponse {
                        update: Some(stream_message_response::Update::Digest(d)),
                    };
                    let delivered = to.is_some_and(|c| c.tx.try_send(Ok(msg)).is_ok());
                    if !delivered {
                        st.digests_unclaimed += 1;
                        if let Some(u) = &st.upstream {
                            let _ = u.stream.try_send(ack(digest_id, list_id));
                        }
                    }
                }
                Some(stream_message_response::Update::Arbitration(a))
                    if a.status.as_ref().is_some_and(|s| s.code != 0) =>
                {
                    // Someone else took the switch from under the gateway.
                    break;
                }
                _ => {}
            }
        }
        lock(&self.state).drop_upstream(generation);
    }

    /// The names of the switch's P4 entities by id, from its P4Info (empty if it has none), to
    /// name what a refused update touched.
    pub(super) async fn entity_names(&self) -> std::collections::HashMap<u32, String> {
        let mut names = std::collections::HashMap::new();
        let Ok(mut client) = self.upstream().await else {
            return names;
        };
        let req = GetForwardingPipelineConfigRequest {
            device_id: self.cfg.device_id,
            response_type:
                p4rt::get_forwarding_pipeline_config_request::ResponseType::P4infoAndCookie as i32,
        };
        let Ok(Ok(resp)) =
            tokio::time::timeout(self.cfg.timeout, client.get_forwarding_pipeline_config(req))
                .await
        else {
            return names;
        };
        let bytes = resp
            .into_inner()
            .config
            .map(|c| c.p4info)
            .unwrap_or_default();
        if let Ok(info) = <bfrt_proto::p4info::P4Info as prost::Message>::decode(bytes.as_slice()) {
            let preambles = info
                .tables
                .iter()
                .map(|t| &t.preamble)
                .chain(info.registers.iter().map(|r| &r.preamble))
                .chain(info.counters.iter().map(|c| &c.preamble))
                .chain(info.digests.iter().map(|d| &d.preamble));
            for p in preambles.flatten() {
                names.insert(p.id, p.name.clone());
            }
        }
        names
    }
}

/// The acknowledgement of one digest list.
pub(super) fn ack(digest_id: u32, list_id: u64) -> StreamMessageRequest {
    StreamMessageRequest {
        update: Some(stream_message_request::Update::DigestAck(
            p4rt::DigestListAck { digest_id, list_id },
        )),
    }
}
