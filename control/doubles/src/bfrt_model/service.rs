//! The `BfRuntime` gRPC service: writes (each update held to the schema, then applied), reads
//! in chunks as `bf_switchd` sends them, the pipeline binding, and the stream that carries
//! subscriptions and digests.

use super::{lock, BfrtModelSwitch, FIXED_BFRT_JSON};
use bfrt_proto::bfrt::{
    self, bf_runtime_server::BfRuntime, entity, stream_message_request, stream_message_response,
    Entity, ForwardingPipelineConfig, GetForwardingPipelineConfigRequest,
    GetForwardingPipelineConfigResponse, NonP4Config, ReadRequest, ReadResponse,
    SetForwardingPipelineConfigRequest, SetForwardingPipelineConfigResponse, StreamMessageRequest,
    StreamMessageResponse, WriteRequest, WriteResponse,
};
use bfrt_proto::google::rpc;
use prost::Message;
use std::pin::Pin;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

/// A failed write's status as `bf_switchd` gives it: one `bfrt_proto.Error` per update.
fn errors_status(errors: Vec<Option<String>>) -> Status {
    let details: Vec<prost_types::Any> = errors
        .iter()
        .map(|e| prost_types::Any {
            type_url: "type.googleapis.com/bfrt_proto.Error".into(),
            value: bfrt::Error {
                canonical_code: if e.is_some() { 2 } else { 0 },
                message: e.clone().unwrap_or_default(),
                space: String::new(),
                code: 0,
            }
            .encode_to_vec(),
        })
        .collect();
    let first = errors.iter().flatten().next().cloned().unwrap_or_default();
    let st = rpc::Status {
        code: tonic::Code::Unknown as i32,
        message: first.clone(),
        details,
    };
    Status::with_details(tonic::Code::Unknown, first, st.encode_to_vec().into())
}

type RespStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

impl BfrtModelSwitch {
    /// Whether table `id` is a register (the meters' or HashPipe's).
    fn is_register(&self, id: u32) -> bool {
        self.schema
            .tables
            .get(&id)
            .is_some_and(|t| t.kind == "Register")
    }
}

#[tonic::async_trait]
impl BfRuntime for BfrtModelSwitch {
    async fn write(&self, req: Request<WriteRequest>) -> Result<Response<WriteResponse>, Status> {
        let req = req.into_inner();
        {
            let mut inner = lock(&self.inner);
            inner.wire.writes += 1;
            inner.wire.updates += req.updates.len() as u64;
            inner.wire.write_bytes += req.encoded_len() as u64;
            if inner.restarted {
                return Err(Status::unavailable("bf_switchd restarted: connection lost"));
            }
            if !inner.bound {
                return Err(Status::failed_precondition("client not bound to a program"));
            }
            let writes = req.updates.iter().any(|u| {
                !matches!(
                    u.entity.as_ref().and_then(|e| e.entity.as_ref()),
                    Some(entity::Entity::TableOperation(_))
                )
            });
            if writes && inner.readers.contains(&req.client_id) {
                return Err(Status::permission_denied(format!(
                    "client {} subscribed without mastership: it may not write",
                    req.client_id
                )));
            }
            let syncs = req.updates.iter().any(|u| {
                matches!(
                    u.entity.as_ref().and_then(|e| e.entity.as_ref()),
                    Some(entity::Entity::TableOperation(op)) if self.is_register(op.table_id)
                )
            });
            if syncs {
                *inner.register_requests.entry(req.client_id).or_default() += 1;
            }
        }
        let mut errors = Vec::with_capacity(req.updates.len());
        for u in &req.updates {
            let r = self.apply(u);
            if let Err((true, e)) = &r {
                lock(&self.inner).violations.push(e.clone());
            }
            errors.push(r.err().map(|(_, e)| e));
        }
        if errors.iter().any(Option::is_some) {
            return Err(errors_status(errors));
        }
        Ok(Response::new(WriteResponse::default()))
    }

    type ReadStream = RespStream<ReadResponse>;

    async fn read(&self, req: Request<ReadRequest>) -> Result<Response<Self::ReadStream>, Status> {
        let req = req.into_inner();
        {
            let mut inner = lock(&self.inner);
            inner.wire.reads += 1;
            inner.wire.read_bytes += req.encoded_len() as u64;
            if inner.restarted {
                return Err(Status::unavailable("bf_switchd restarted: connection lost"));
            }
            let registers = req.entities.iter().any(|e| {
                matches!(&e.entity, Some(entity::Entity::TableEntry(te)) if self.is_register(te.table_id))
            });
            if registers {
                *inner.register_requests.entry(req.client_id).or_default() += 1;
            }
        }
        let mut cells = None;
        let mut entities = Vec::new();
        for e in &req.entities {
            let Some(entity::Entity::TableEntry(te)) = &e.entity else {
                return Err(Status::unimplemented("only table entries are read"));
            };
            for x in self.read_entry(te, &mut cells)? {
                entities.push(Entity {
                    entity: Some(entity::Entity::TableEntry(x)),
                });
            }
        }
        // Large reads come in several messages, as from bf_switchd.
        let msgs: Vec<Result<ReadResponse, Status>> = entities
            .chunks(1024)
            .map(|c| {
                Ok(ReadResponse {
                    entities: c.to_vec(),
                    status: vec![],
                })
            })
            .collect();
        {
            let mut inner = lock(&self.inner);
            inner.wire.read_entities += entities.len() as u64;
            for m in msgs.iter().flatten() {
                inner.wire.read_responses += 1;
                inner.wire.read_response_bytes += m.encoded_len() as u64;
            }
        }
        Ok(Response::new(Box::pin(tokio_stream::iter(msgs))))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        req: Request<SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<SetForwardingPipelineConfigResponse>, Status> {
        let req = req.into_inner();
        if req.device_id != self.device_id {
            return Err(Status::not_found(format!("no device {}", req.device_id)));
        }
        match req.config.first() {
            Some(c) if c.p4_name == "canary" => {
                lock(&self.inner).bound = true;
                Ok(Response::new(SetForwardingPipelineConfigResponse::default()))
            }
            Some(c) => Err(Status::not_found(format!("no program {}", c.p4_name))),
            None => Err(Status::invalid_argument("no program named")),
        }
    }

    async fn get_forwarding_pipeline_config(
        &self,
        req: Request<GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<GetForwardingPipelineConfigResponse>, Status> {
        if req.into_inner().device_id != self.device_id {
            return Err(Status::not_found("no such device"));
        }
        Ok(Response::new(GetForwardingPipelineConfigResponse {
            config: vec![ForwardingPipelineConfig {
                p4_name: "canary".into(),
                bfruntime_info: (*self.json).clone(),
                profiles: vec![],
            }],
            non_p4_config: Some(NonP4Config {
                bfruntime_info: FIXED_BFRT_JSON.as_bytes().to_vec(),
            }),
        }))
    }

    type StreamChannelStream = RespStream<StreamMessageResponse>;

    async fn stream_channel(
        &self,
        req: Request<Streaming<StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let mut incoming = req.into_inner();
        let (tx, rx) = mpsc::channel(256);
        let inner = self.inner.clone();
        let device = self.device_id;
        tokio::spawn(async move {
            while let Ok(Some(m)) = incoming.message().await {
                if let Some(stream_message_request::Update::Subscribe(s)) = m.update {
                    let ok = s.device_id == device;
                    let ack = StreamMessageResponse {
                        update: Some(stream_message_response::Update::Subscribe(
                            bfrt::Subscribe {
                                is_master: s.is_master,
                                device_id: s.device_id,
                                notifications: s.notifications,
                                status: Some(rpc::Status {
                                    code: if ok { 0 } else { tonic::Code::NotFound as i32 },
                                    message: if ok {
                                        String::new()
                                    } else {
                                        format!("no device {}", s.device_id)
                                    },
                                    details: vec![],
                                }),
                            },
                        )),
                    };
                    if tx.send(Ok(ack)).await.is_err() {
                        return;
                    }
                    if ok {
                        let mut i = lock(&inner);
                        i.restarted = false;
                        if s.is_master {
                            i.readers.remove(&m.client_id);
                            i.streams.push(tx.clone());
                        } else {
                            // A reader gets no learn lists.
                            i.readers.insert(m.client_id);
                        }
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}
