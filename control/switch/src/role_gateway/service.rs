//! The P4Runtime service controllers see: writes, reads and pipeline pushes checked against the
//! sender's role before they are forwarded, and each controller's stream (arbitration, digest
//! acknowledgements).

use super::upstream::ack;
use super::{from_uint128, lock, role_name, uint128, RoleGateway, NO_ENTITY};
use crate::roles;
use bfrt_proto::p4rt::{
    p4_runtime_server::P4Runtime, stream_message_request, CapabilitiesRequest,
    CapabilitiesResponse, GetForwardingPipelineConfigRequest, GetForwardingPipelineConfigResponse,
    ReadRequest, ReadResponse, SetForwardingPipelineConfigRequest,
    SetForwardingPipelineConfigResponse, StreamMessageRequest, StreamMessageResponse, WriteRequest,
    WriteResponse,
};
use std::pin::Pin;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

type RespStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl P4Runtime for RoleGateway {
    async fn write(&self, req: Request<WriteRequest>) -> Result<Response<WriteResponse>, Status> {
        let mut req = req.into_inner();
        let election = from_uint128(req.election_id.as_ref());
        self.check_primary(&req.role, election, req.device_id)?;
        let denied: Vec<(usize, Option<roles::Touches>, String)> = {
            let st = lock(&self.state);
            req.updates
                .iter()
                .enumerate()
                .filter_map(|(i, u)| {
                    let e = u.entity.as_ref().unwrap_or(&NO_ENTITY);
                    st.roles
                        .may_write(&req.role, e)
                        .err()
                        .map(|why| (i, roles::touches(e), why))
                })
                .collect()
        };
        if !denied.is_empty() {
            let names = self.entity_names().await;
            let denied: Vec<String> = denied
                .into_iter()
                .map(|(i, t, why)| {
                    match t.and_then(|t| match t {
                        roles::Touches::P4(id) => names.get(&id),
                        roles::Touches::Pre => None,
                    }) {
                        Some(name) => format!("update {i} (`{name}`): {why}"),
                        None => format!("update {i}: {why}"),
                    }
                })
                .collect();
            return Err(Status::permission_denied(format!(
                "role `{}` may not write: {}{}",
                role_name(&req.role),
                denied
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; "),
                if denied.len() > 5 {
                    format!(" (and {} more)", denied.len() - 5)
                } else {
                    String::new()
                }
            )));
        }
        req.role.clear();
        req.election_id = Some(uint128(self.cfg.election_id));
        self.upstream().await?.write(req).await
    }

    type ReadStream = RespStream<ReadResponse>;

    async fn read(&self, req: Request<ReadRequest>) -> Result<Response<Self::ReadStream>, Status> {
        let mut req = req.into_inner();
        if req.device_id != self.cfg.device_id {
            return Err(Status::not_found(format!("no device {}", req.device_id)));
        }
        let role = std::mem::take(&mut req.role);
        {
            let st = lock(&self.state);
            for e in &req.entities {
                match roles::touches(e) {
                    Some(roles::Touches::P4(0)) => {}
                    Some(t) if st.roles.may_read(&role, t) => {}
                    _ => {
                        return Err(Status::permission_denied(format!(
                            "role `{}` may not read {e:?}",
                            role_name(&role)
                        )))
                    }
                }
            }
        }
        let mut stream = self.upstream().await?.read(req).await?.into_inner();
        let mut out = Vec::new();
        while let Some(r) = stream.next().await {
            let mut r = r?;
            if !role.is_empty() {
                let st = lock(&self.state);
                r.entities
                    .retain(|e| roles::touches(e).is_some_and(|t| st.roles.may_read(&role, t)));
            }
            out.push(Ok(r));
        }
        Ok(Response::new(Box::pin(tokio_stream::iter(out))))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        req: Request<SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<SetForwardingPipelineConfigResponse>, Status> {
        let mut req = req.into_inner();
        let election = from_uint128(req.election_id.as_ref());
        self.check_primary(&req.role, election, req.device_id)?;
        if !lock(&self.state).roles.may_push_pipeline(&req.role) {
            return Err(Status::permission_denied(format!(
                "role `{}` may not push a pipeline",
                role_name(&req.role)
            )));
        }
        req.role.clear();
        req.election_id = Some(uint128(self.cfg.election_id));
        self.upstream()
            .await?
            .set_forwarding_pipeline_config(req)
            .await
    }

    async fn get_forwarding_pipeline_config(
        &self,
        req: Request<GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<GetForwardingPipelineConfigResponse>, Status> {
        self.upstream()
            .await?
            .get_forwarding_pipeline_config(req.into_inner())
            .await
    }

    async fn capabilities(
        &self,
        req: Request<CapabilitiesRequest>,
    ) -> Result<Response<CapabilitiesResponse>, Status> {
        self.upstream().await?.capabilities(req.into_inner()).await
    }

    type StreamChannelStream = RespStream<StreamMessageResponse>;

    async fn stream_channel(
        &self,
        req: Request<Streaming<StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        // The switch first: a controller's stream lives as long as the switch's.
        self.upstream().await?;
        let mut incoming = req.into_inner();
        let (tx, rx) = mpsc::channel(1024);
        let gw = self.clone();
        tokio::spawn(async move {
            let mut me: Option<u64> = None;
            while let Some(Ok(m)) = incoming.next().await {
                match m.update {
                    Some(stream_message_request::Update::Arbitration(a)) => {
                        match gw.arbitrate(me, &a, &tx) {
                            Ok(id) => me = Some(id),
                            Err(s) => {
                                let _ = tx.send(Err(s)).await;
                                break;
                            }
                        }
                    }
                    Some(stream_message_request::Update::DigestAck(a)) => {
                        let st = lock(&gw.state);
                        if let Some(u) = &st.upstream {
                            let _ = u.stream.try_send(ack(a.digest_id, a.list_id));
                        }
                    }
                    None => {}
                }
            }
            if let Some(id) = me {
                let mut st = lock(&gw.state);
                if let Some(c) = st.conns.remove(&id) {
                    st.announce(&c.role, gw.cfg.device_id);
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}
