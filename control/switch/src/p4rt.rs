//! A P4Runtime client for one switch: arbitration, pipeline push, writes, reads and digests.
//!
//! One client owns one StreamChannel. The server tells it whether it is the primary (highest
//! election id for its role); only the primary may write. Digests arrive on the stream; a
//! background task acknowledges every list (so the switch's duplicate filter is released),
//! rate-limits them, and queues them in a bounded channel. What does not fit is counted, never
//! silently lost.

use bfrt_proto::google::rpc;
use bfrt_proto::p4rt::{
    self, get_forwarding_pipeline_config_request::ResponseType, p4_runtime_client::P4RuntimeClient,
    set_forwarding_pipeline_config_request, stream_message_request, stream_message_response,
    update, DigestEntry, DigestList, DigestListAck, Entity, ForwardingPipelineConfig,
    GetForwardingPipelineConfigRequest, MasterArbitrationUpdate, ReadRequest, Role,
    SetForwardingPipelineConfigRequest, StreamMessageRequest, Uint128, Update, WriteRequest,
};
use prost::Message;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

/// TLS material for a switch's gRPC server (all PEM files).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// CA that signed the server's certificate.
    pub ca: PathBuf,
    /// Client certificate and key, for servers that require mutual TLS.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// Name to verify in the server's certificate (default: the endpoint's host).
    pub domain: Option<String>,
}

#[derive(Clone, Debug)]
pub struct P4RtConfig {
    /// Switch name, for errors and logs.
    pub name: String,
    /// `host:port` of the P4Runtime server.
    pub endpoint: String,
    pub device_id: u64,
    pub election_id: u128,
    /// P4Runtime role; empty = the default role (full access).
    pub role: String,
    /// The role's configuration, sent in arbitration (a packed `P4RoleConfig`).
    pub role_config: Option<prost_types::Any>,
    pub tls: Option<TlsFiles>,
    /// Deadline of every unary call, and of connecting.
    pub timeout: Duration,
    /// Deadline of a pipeline push (the switch parses and loads the whole program).
    pub pipeline_timeout: Duration,
    /// Digest lists queued before further ones are dropped (and counted).
    pub digest_queue: usize,
    /// Digest messages accepted per second; the excess is dropped and counted.
    pub digest_rate: u32,
}

impl P4RtConfig {
    pub fn new(name: &str, endpoint: &str, device_id: u64) -> Self {
        Self {
            name: name.to_string(),
            endpoint: endpoint.to_string(),
            device_id,
            election_id: 1,
            role: String::new(),
            role_config: None,
            tls: None,
            timeout: Duration::from_secs(2),
            pipeline_timeout: Duration::from_secs(30),
            digest_queue: 1024,
            digest_rate: 20_000,
        }
    }
}

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

/// Counters of the stream task, shared with the client.
#[derive(Debug, Default)]
pub struct StreamStats {
    pub digest_lists: AtomicU64,
    pub digests: AtomicU64,
    /// Digest messages dropped: queue full or over the rate limit.
    pub digests_dropped: AtomicU64,
    pub closed: AtomicBool,
    /// Set when a later arbitration update says we are no longer primary.
    pub demoted: AtomicBool,
}

pub struct P4RtClient {
    pub cfg: P4RtConfig,
    client: P4RuntimeClient<Channel>,
    digests: mpsc::Receiver<DigestList>,
    pub stats: Arc<StreamStats>,
    /// Whether arbitration made this client the primary.
    pub primary: bool,
    /// What the arbitration reply said.
    pub arbitration: String,
    /// The primary's election id in the arbitration reply (ours when we won).
    pub primary_id: Option<u128>,
    /// The stream reader; it holds the request side open, so it must end with the client.
    stream_task: tokio::task::JoinHandle<()>,
}

impl Drop for P4RtClient {
    /// Ends the stream channel, so the switch frees this election id at once.
    fn drop(&mut self) {
        self.stream_task.abort();
    }
}

/// Runs one unary call with a deadline, as the switch's error or DEADLINE_EXCEEDED.
async fn call<T>(
    switch: &str,
    op: &'static str,
    deadline: Duration,
    fut: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, P4RtError> {
    match tokio::time::timeout(deadline, fut).await {
        Ok(Ok(r)) => Ok(r.into_inner()),
        Ok(Err(s)) => Err(rpc_error(switch, op, s)),
        Err(_) => Err(P4RtError::Rpc {
            switch: switch.to_string(),
            op,
            code: tonic::Code::DeadlineExceeded,
            message: format!("no answer within {deadline:?}"),
            details: Vec::new(),
        }),
    }
}

fn uint128(x: u128) -> Uint128 {
    Uint128 {
        high: (x >> 64) as u64,
        low: x as u64,
    }
}

fn rpc_error(switch: &str, op: &'static str, s: tonic::Status) -> P4RtError {
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

async fn endpoint(cfg: &P4RtConfig) -> Result<Endpoint, P4RtError> {
    let scheme = if cfg.tls.is_some() { "https" } else { "http" };
    let connect_err = |detail: String| P4RtError::Connect {
        switch: cfg.name.clone(),
        endpoint: cfg.endpoint.clone(),
        detail,
    };
    let mut ep = Endpoint::from_shared(format!("{scheme}://{}", cfg.endpoint))
        .map_err(|e| connect_err(e.to_string()))?
        .connect_timeout(cfg.timeout)
        .tcp_nodelay(true);
    if let Some(tls) = &cfg.tls {
        let read = |p: &PathBuf| {
            std::fs::read(p).map_err(|e| P4RtError::Tls {
                switch: cfg.name.clone(),
                path: p.display().to_string(),
                detail: e.to_string(),
            })
        };
        let mut t = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(&tls.ca)?));
        if let Some(d) = &tls.domain {
            t = t.domain_name(d.clone());
        }
        match (&tls.cert, &tls.key) {
            (Some(c), Some(k)) => t = t.identity(Identity::from_pem(read(c)?, read(k)?)),
            (None, None) => {}
            _ => {
                return Err(P4RtError::Tls {
                    switch: cfg.name.clone(),
                    path: "tls.cert/tls.key".into(),
                    detail: "give both a client certificate and its key, or neither".into(),
                })
            }
        }
        ep = ep.tls_config(t).map_err(|e| connect_err(e.to_string()))?;
    }
    Ok(ep)
}

impl P4RtClient {
    /// Connects, opens the stream channel and runs arbitration. Returns a client whether or not
    /// it became primary (see [`P4RtClient::primary`]); use [`P4RtClient::connect_primary`] to
    /// insist.
    pub async fn connect(cfg: P4RtConfig) -> Result<Self, P4RtError> {
        let ep = endpoint(&cfg).await?;
        let channel = ep.connect().await.map_err(|e| P4RtError::Connect {
            switch: cfg.name.clone(),
            endpoint: cfg.endpoint.clone(),
            detail: format!("{e} ({})", source_chain(&e)),
        })?;
        let mut client = P4RuntimeClient::new(channel)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        let (stream_tx, rx) = mpsc::channel(64);
        let arbitration = StreamMessageRequest {
            update: Some(stream_message_request::Update::Arbitration(
                MasterArbitrationUpdate {
                    device_id: cfg.device_id,
                    role: (!cfg.role.is_empty()).then(|| Role {
                        name: cfg.role.clone(),
                        config: cfg.role_config.clone(),
                    }),
                    election_id: Some(uint128(cfg.election_id)),
                    status: None,
                },
            )),
        };
        stream_tx
            .send(arbitration)
            .await
            .expect("receiver alive: held by the request stream below");
        // The stream has no per-call deadline (it lives for the run); bound the wait for the
        // arbitration reply instead.
        let open = client.stream_channel(ReceiverStream::new(rx));
        let mut inbound = tokio::time::timeout(cfg.timeout, open)
            .await
            .map_err(|_| P4RtError::Connect {
                switch: cfg.name.clone(),
                endpoint: cfg.endpoint.clone(),
                detail: "no answer to StreamChannel".into(),
            })?
            .map_err(|s| rpc_error(&cfg.name, "StreamChannel", s))?
            .into_inner();
        let first = tokio::time::timeout(cfg.timeout, inbound.next())
            .await
            .map_err(|_| P4RtError::Connect {
                switch: cfg.name.clone(),
                endpoint: cfg.endpoint.clone(),
                detail: "no arbitration reply".into(),
            })?;
        let (primary, arbitration, primary_id) = match first {
            Some(Ok(p4rt::StreamMessageResponse {
                update: Some(stream_message_response::Update::Arbitration(a)),
            })) => {
                let st = a.status.unwrap_or_default();
                (
                    st.code == 0,
                    format!("{:?}: {}", tonic::Code::from(st.code), st.message),
                    a.election_id
                        .map(|e| u128::from(e.high) << 64 | u128::from(e.low)),
                )
            }
            Some(Ok(other)) => {
                return Err(P4RtError::StreamClosed {
                    switch: cfg.name.clone(),
                    detail: format!("expected an arbitration reply, got {other:?}"),
                })
            }
            Some(Err(s)) => return Err(rpc_error(&cfg.name, "StreamChannel", s)),
            None => {
                return Err(P4RtError::StreamClosed {
                    switch: cfg.name.clone(),
                    detail: "closed before arbitration".into(),
                })
            }
        };
        let stats = Arc::new(StreamStats::default());
        let (dtx, digests) = mpsc::channel(cfg.digest_queue.max(1));
        let stream_task = tokio::spawn(stream_task(
            cfg.name.clone(),
            cfg.digest_rate,
            inbound,
            stream_tx,
            dtx,
            stats.clone(),
        ));
        Ok(Self {
            cfg,
            client,
            digests,
            stats,
            primary,
            arbitration,
            primary_id,
            stream_task,
        })
    }

    /// Connects and fails with [`P4RtError::NotPrimary`] unless this client won arbitration.
    pub async fn connect_primary(cfg: P4RtConfig) -> Result<Self, P4RtError> {
        let c = Self::connect(cfg).await?;
        if !c.primary {
            return Err(P4RtError::NotPrimary {
                switch: c.cfg.name.clone(),
                ours: c.cfg.election_id,
                message: c.arbitration.clone(),
                primary: c.primary_id,
            });
        }
        Ok(c)
    }

    /// True while the stream is open and we are still primary.
    pub fn healthy(&self) -> bool {
        !self.stats.closed.load(Ordering::Relaxed) && !self.stats.demoted.load(Ordering::Relaxed)
    }

    /// Pushes the compiled program (`p4info`: encoded P4Info; `device_config`: the target's
    /// binary, the BMv2 JSON) and tags it with `cookie`, which later tells whether the switch
    /// still runs what we pushed.
    pub async fn set_pipeline(
        &mut self,
        p4info: &[u8],
        device_config: &[u8],
        cookie: u64,
    ) -> Result<(), P4RtError> {
        let req = SetForwardingPipelineConfigRequest {
            device_id: self.cfg.device_id,
            election_id: Some(uint128(self.cfg.election_id)),
            role: self.cfg.role.clone(),
            action: set_forwarding_pipeline_config_request::Action::VerifyAndCommit as i32,
            config: Some(ForwardingPipelineConfig {
                p4info: p4info.to_vec(),
                p4_device_config: device_config.to_vec(),
                cookie: Some(p4rt::forwarding_pipeline_config::Cookie { cookie }),
            }),
        };
        let name = self.cfg.name.clone();
        let deadline = self.cfg.pipeline_timeout;
        call(
            &name,
            "SetForwardingPipelineConfig",
            deadline,
            self.client.set_forwarding_pipeline_config(req),
        )
        .await?;
        Ok(())
    }

    /// The cookie of the running pipeline; `None` when no pipeline is set (a fresh switch).
    pub async fn pipeline_cookie(&mut self) -> Result<Option<u64>, P4RtError> {
        let req = GetForwardingPipelineConfigRequest {
            device_id: self.cfg.device_id,
            response_type: ResponseType::CookieOnly as i32,
        };
        let name = self.cfg.name.clone();
        let timeout = self.cfg.timeout;
        match call(
            &name,
            "GetForwardingPipelineConfig",
            timeout,
            self.client.get_forwarding_pipeline_config(req),
        )
        .await
        {
            Ok(r) => Ok(r.config.and_then(|c| c.cookie).map(|c| c.cookie)),
            // BMv2 answers FAILED_PRECONDITION before a pipeline is set.
            Err(e) if e.code() == Some(tonic::Code::FailedPrecondition) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes `updates` in batches of at most `batch`; stops at the first failed batch.
    pub async fn write(&mut self, updates: Vec<Update>, batch: usize) -> Result<(), P4RtError> {
        let mut it = updates.into_iter().peekable();
        while it.peek().is_some() {
            let chunk: Vec<Update> = it.by_ref().take(batch.max(1)).collect();
            let req = WriteRequest {
                device_id: self.cfg.device_id,
                election_id: Some(uint128(self.cfg.election_id)),
                role: self.cfg.role.clone(),
                updates: chunk,
                atomicity: 0,
            };
            let name = self.cfg.name.clone();
            let timeout = self.cfg.timeout;
            call(&name, "Write", timeout, self.client.write(req)).await?;
        }
        Ok(())
    }

    /// Reads every entity matching the wildcards in `entities`.
    pub async fn read(&mut self, entities: Vec<Entity>) -> Result<Vec<Entity>, P4RtError> {
        let req = ReadRequest {
            device_id: self.cfg.device_id,
            role: self.cfg.role.clone(),
            entities,
        };
        let name = self.cfg.name.clone();
        let timeout = self.cfg.timeout;
        let mut stream = call(&name, "Read", timeout, self.client.read(req)).await?;
        let mut out = Vec::new();
        while let Some(r) = stream.next().await {
            out.extend(
                r.map_err(|s| rpc_error(&self.cfg.name, "Read", s))?
                    .entities,
            );
        }
        Ok(out)
    }

    /// Enables a digest. `max_list_size` and `max_timeout` batch its messages on the switch;
    /// `ack_timeout` is how long the switch suppresses repeats of a message until acked.
    pub async fn enable_digest(
        &mut self,
        digest_id: u32,
        max_timeout: Duration,
        max_list_size: i32,
        ack_timeout: Duration,
    ) -> Result<(), P4RtError> {
        let entity = Entity {
            entity: Some(p4rt::entity::Entity::DigestEntry(DigestEntry {
                digest_id,
                config: Some(p4rt::digest_entry::Config {
                    max_timeout_ns: max_timeout.as_nanos() as i64,
                    max_list_size,
                    ack_timeout_ns: ack_timeout.as_nanos() as i64,
                }),
            })),
        };
        let up = |t: update::Type| Update {
            r#type: t as i32,
            entity: Some(entity.clone()),
        };
        match self.write(vec![up(update::Type::Insert)], 1).await {
            // Configured by a controller before this one (a restart, a standby taking over).
            Err(e) if e.already_exists() => self.write(vec![up(update::Type::Modify)], 1).await,
            r => r,
        }
    }

    /// Digest lists received since the last call (at most what the queue held).
    pub fn take_digests(&mut self) -> Vec<DigestList> {
        let mut out = Vec::new();
        while let Ok(d) = self.digests.try_recv() {
            out.push(d);
        }
        out
    }
}

fn source_chain(e: &dyn std::error::Error) -> String {
    let mut parts = Vec::new();
    let mut cur = e.source();
    while let Some(s) = cur {
        parts.push(s.to_string());
        cur = s.source();
    }
    parts.join(": ")
}

/// Reads the stream: acks and queues digests (rate-limited, bounded), records arbitration
/// changes and closure.
async fn stream_task(
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
