//! A P4Runtime server that adds roles to a switch whose own server has none (BMv2's
//! `simple_switch_grpc`: PI's server ignores `role` and keeps one primary per device).
//!
//! The gateway is the switch's only controller: it holds one upstream connection, primary for
//! the default role. Controllers connect to the gateway instead and get P4Runtime's role
//! semantics ([`crate::roles`]): one primary per role, chosen by election id among that role's
//! streams; writes, reads and pipeline pushes checked against the role's configuration before
//! anything reaches the switch (a request with one forbidden update is refused whole, naming the
//! update and why); digest lists delivered to the primary of the role that holds the digest
//! (acknowledged by the gateway when that role has no primary, so the switch does not stall).
//! When the switch's connection breaks (a restart), every controller's stream is closed, as the
//! switch's own would be, and the gateway connects again on the next call.
//!
//! It carries what Canary's P4Runtime subset carries (`bfrt_proto/proto/p4/v1`): table, counter,
//! register, digest and multicast entries, arbitration and digests. An update of any other kind
//! decodes without an entity and is refused, never forwarded empty.

use crate::roles::{self, Roles};
use bfrt_proto::google::rpc;
use bfrt_proto::p4rt::{
    self, p4_runtime_client::P4RuntimeClient, p4_runtime_server::P4Runtime, stream_message_request,
    stream_message_response, CapabilitiesRequest, CapabilitiesResponse,
    GetForwardingPipelineConfigRequest, GetForwardingPipelineConfigResponse,
    MasterArbitrationUpdate, ReadRequest, ReadResponse, Role, SetForwardingPipelineConfigRequest,
    SetForwardingPipelineConfigResponse, StreamMessageRequest, StreamMessageResponse, Uint128,
    WriteRequest, WriteResponse,
};
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::Channel;
use tonic::{Request, Response, Status, Streaming};

#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// `host:port` of the switch's P4Runtime server.
    pub upstream: String,
    pub device_id: u64,
    /// The gateway's election id on the switch (it must be the switch's primary).
    pub election_id: u128,
    /// Deadline of connecting and of the arbitration reply.
    pub timeout: Duration,
}

/// What an update without an entity is checked as (and refused as).
const NO_ENTITY: p4rt::Entity = p4rt::Entity { entity: None };

type Tx = mpsc::Sender<Result<StreamMessageResponse, Status>>;

/// One controller's stream.
struct Conn {
    role: String,
    election_id: u128,
    tx: Tx,
}

struct Upstream {
    client: P4RuntimeClient<Channel>,
    /// The gateway's side of the switch's stream (digest acknowledgements).
    stream: mpsc::Sender<StreamMessageRequest>,
    generation: u64,
}

#[derive(Default)]
struct State {
    upstream: Option<Upstream>,
    generation: u64,
    roles: Roles,
    conns: BTreeMap<u64, Conn>,
    next_conn: u64,
    /// Digest lists acknowledged by the gateway because no controller held their role.
    digests_unclaimed: u64,
}

impl State {
    fn primary(&self, role: &str) -> Option<(u64, u128)> {
        self.conns
            .iter()
            .filter(|(_, c)| c.role == role)
            .max_by_key(|(_, c)| c.election_id)
            .map(|(&id, c)| (id, c.election_id))
    }

    /// Tells every stream of `role` who its primary is (OK to the primary, ALREADY_EXISTS to
    /// the others, as P4Runtime's arbitration does).
    fn announce(&self, role: &str, device_id: u64) {
        let primary = self.primary(role);
        for (&id, c) in self.conns.iter().filter(|(_, c)| c.role == role) {
            let ours = primary.is_some_and(|(p, _)| p == id);
            let msg = arbitration_reply(device_id, role, primary.map(|p| p.1), ours);
            let _ = c.tx.try_send(Ok(msg));
        }
    }

    /// The switch's connection is gone: every controller's stream ends.
    fn drop_upstream(&mut self, generation: u64) {
        if self.upstream.as_ref().map(|u| u.generation) != Some(generation) {
            return;
        }
        self.upstream = None;
        for (_, c) in std::mem::take(&mut self.conns) {
            let _ =
                c.tx.try_send(Err(Status::unavailable("the switch's connection was lost")));
        }
    }
}

fn arbitration_reply(
    device_id: u64,
    role: &str,
    primary: Option<u128>,
    ours: bool,
) -> StreamMessageResponse {
    let (code, message) = match (ours, primary) {
        (true, _) => (tonic::Code::Ok, "primary".to_string()),
        (false, Some(_)) => (
            tonic::Code::AlreadyExists,
            "a controller with a higher election id is primary for this role".to_string(),
        ),
        (false, None) => (tonic::Code::NotFound, "no primary".to_string()),
    };
    StreamMessageResponse {
        update: Some(stream_message_response::Update::Arbitration(
            MasterArbitrationUpdate {
                device_id,
                role: (!role.is_empty()).then(|| Role {
                    name: role.to_string(),
                    config: None,
                }),
                election_id: primary.map(uint128),
                status: Some(rpc::Status {
                    code: code as i32,
                    message,
                    details: vec![],
                }),
            },
        )),
    }
}

fn uint128(v: u128) -> Uint128 {
    Uint128 {
        high: (v >> 64) as u64,
        low: v as u64,
    }
}

fn from_uint128(v: Option<&Uint128>) -> u128 {
    v.map_or(0, |v| (u128::from(v.high) << 64) | u128::from(v.low))
}

/// The role gateway of one switch.
#[derive(Clone)]
pub struct RoleGateway {
    cfg: Arc<GatewayConfig>,
    state: Arc<Mutex<State>>,
    /// Serialises connecting to the switch.
    connecting: Arc<tokio::sync::Mutex<()>>,
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RoleGateway {
    pub fn new(cfg: GatewayConfig) -> Self {
        Self {
            cfg: Arc::new(cfg),
            state: Arc::default(),
            connecting: Arc::default(),
        }
    }

    /// Serves P4Runtime on `listener` until the task is dropped.
    pub fn serve(&self, listener: tokio::net::TcpListener) -> tokio::task::JoinHandle<()> {
        let svc = p4rt::p4_runtime_server::P4RuntimeServer::new(self.clone())
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(svc)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
                .await;
        })
    }

    /// Digest lists no controller's role claimed so far.
    pub fn digests_unclaimed(&self) -> u64 {
        lock(&self.state).digests_unclaimed
    }

    /// The switch's client, connecting (and winning arbitration) first if needed.
    async fn upstream(&self) -> Result<P4RuntimeClient<Channel>, Status> {
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
    async fn entity_names(&self) -> std::collections::HashMap<u32, String> {
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

    /// Checks that `role`'s primary sent this request.
    fn check_primary(&self, role: &str, election: u128, device_id: u64) -> Result<(), Status> {
        if device_id != self.cfg.device_id {
            return Err(Status::not_found(format!("no device {device_id}")));
        }
        match lock(&self.state).primary(role) {
            Some((_, e)) if e == election => Ok(()),
            _ => Err(Status::permission_denied(format!(
                "election id {election} is not the primary of role `{}`",
                role_name(role)
            ))),
        }
    }
}

fn role_name(role: &str) -> &str {
    if role.is_empty() {
        "(default)"
    } else {
        role
    }
}

fn ack(digest_id: u32, list_id: u64) -> StreamMessageRequest {
    StreamMessageRequest {
        update: Some(stream_message_request::Update::DigestAck(
            p4rt::DigestListAck { digest_id, list_id },
        )),
    }
}

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

impl RoleGateway {
    /// One arbitration message of stream `me` (None: its first).
    fn arbitrate(
        &self,
        me: Option<u64>,
        a: &MasterArbitrationUpdate,
        tx: &Tx,
    ) -> Result<u64, Status> {
        if a.device_id != self.cfg.device_id {
            return Err(Status::not_found(format!("no device {}", a.device_id)));
        }
        let role = a.role.as_ref().map(|r| r.name.clone()).unwrap_or_default();
        let election = from_uint128(a.election_id.as_ref());
        let mut st = lock(&self.state);
        if let Some(id) = me {
            if st.conns.get(&id).is_some_and(|c| c.role != role) {
                return Err(Status::invalid_argument("a stream cannot change its role"));
            }
        }
        if st
            .conns
            .iter()
            .any(|(&id, c)| Some(id) != me && c.role == role && c.election_id == election)
        {
            return Err(Status::invalid_argument(format!(
                "election id {election} is already in use for role `{}`",
                role_name(&role)
            )));
        }
        let id = me.unwrap_or_else(|| {
            st.next_conn += 1;
            st.next_conn
        });
        st.conns.insert(
            id,
            Conn {
                role: role.clone(),
                election_id: election,
                tx: tx.clone(),
            },
        );
        // The primary's configuration is the role's.
        let config = a.role.as_ref().and_then(|r| r.config.as_ref());
        if let (Some(any), Some((p, _))) = (config, st.primary(&role)) {
            if p == id {
                let applied = roles::unpack(any).and_then(|c| st.roles.set(&role, c));
                if let Err(why) = applied {
                    st.conns.remove(&id);
                    return Err(Status::invalid_argument(why));
                }
            }
        }
        st.announce(&role, self.cfg.device_id);
        Ok(id)
    }
}
