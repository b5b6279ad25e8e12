//! A BF Runtime (BF-RT) client for Canary's TNA program on Tofino (`bf_switchd`'s gRPC API).
//!
//! What Canary needs of a Tofino switch, and nothing else: subscribe a client (with learn
//! notifications) and bind it to the loaded program; resolve Canary's table, action, field,
//! register and digest names to BF-RT ids **once**, from the `bfrt.json` the switch returns,
//! failing with an error that names what disagrees; add and delete the DSM/USM/HH entries; set
//! `switch_config`'s default action (the parity flip); sync, read and clear whole register tables;
//! receive and acknowledge HH digests.
//!
//! The message builders ([`CanaryTables`]) are pure, so tests assert exact messages; the client
//! ([`BfrtClient`]) adds the I/O. It is async (tonic): gRPC is natively async, and the digest
//! stream has to be serviced while the daemon does other things.
//!
//! Registers: one BF-RT table per register array, keyed by `$REGISTER_INDEX`; a read returns one
//! value per pipe for every index (registers are per pipe on Tofino), so reads return per-pipe
//! arrays and [`BfrtClient::harvest`] one snapshot per pipe. How the per-pipe meters of a
//! switch combine is the fabric's decision, not this module's.
//!
//! Not here: the `Fabric` implementation over several switches, program loading (the program is
//! expected loaded by `bf_switchd` at start; BIND attaches to it), and BF-RT's fixed tables.

use std::collections::HashMap;
use std::time::Duration;

use bfrt_proto::bfrt::{
    self, bf_runtime_client::BfRuntimeClient, data_field, entity, key_field,
    set_forwarding_pipeline_config_request as fpc, stream_message_request, stream_message_response,
    table_entry, write_request, ForwardingPipelineConfig, GetForwardingPipelineConfigRequest,
    ReadRequest, SetForwardingPipelineConfigRequest, StreamMessageRequest, StreamMessageResponse,
    Subscribe, TableEntry, TargetDevice, Update, WriteRequest,
};
use canary_core::fabric::{MeterSnapshot, Parity, RuleOp};
use canary_core::topo::SwitchIx;
use canary_core::FlowId;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};

use crate::bmv2_meters::{HarvestError, LayoutError};
use crate::rule_ids::{RuleIds, RuleIdsExhausted};
use crate::tna_meters::RowCells;

mod forwarding;
mod tables;

pub use forwarding::{ForwardingTable, NamedField, TnaForwardingTables, FORWARDING_BATCH};
use tables::be_value;
pub use tables::{CanaryTables, DigestFilter, Field, MatchTable, RegisterTable};

/// All pipes (`BF_DEV_PIPE_ALL`).
pub const ALL_PIPES: u32 = 0xffff;
/// Both directions / all parsers.
pub const ALL: u32 = 0xff;
/// The table operation that copies a register table from hardware into the driver's shadow.
pub const SYNC_REGISTERS: &str = "SyncRegisters";
/// Key field of every register table.
pub const REGISTER_INDEX: &str = "$REGISTER_INDEX";
/// Updates per Write when clearing a parity half (12 registers × 1 024 cells on Tofino 1).
pub const MAX_UPDATES_PER_WRITE: usize = 4096;

/// Why `bfrt.json` and Canary disagree. Each variant names the table, action or field.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("bfrt.json: {0}")]
    Json(String),
    #[error("no table *.{name} in bfrt.json")]
    NoTable { name: String },
    #[error("table name *.{name} is ambiguous: {matches:?}")]
    AmbiguousTable { name: String, matches: Vec<String> },
    #[error("table {table}: no key field {field} (has {has:?})")]
    NoKeyField {
        table: String,
        field: String,
        has: Vec<String>,
    },
    #[error("table {table}: key field {field} is {got}, Canary needs {want}")]
    KeyMatch {
        table: String,
        field: String,
        got: String,
        want: &'static str,
    },
    #[error("table {table}: no action *.{action} (has {has:?})")]
    NoAction {
        table: String,
        action: String,
        has: Vec<String>,
    },
    #[error("table {table}, action {action}: no parameter {param} (has {has:?})")]
    NoParam {
        table: String,
        action: String,
        param: String,
        has: Vec<String>,
    },
    #[error("register table {table}: value fields {has:?}, Canary reads {want:?}")]
    RegisterData {
        table: String,
        want: String,
        has: Vec<String>,
    },
    #[error("no learn filter *.{name} in bfrt.json (has {has:?})")]
    NoLearnFilter { name: String, has: Vec<String> },
    #[error("learn filter {filter}: no field {field} (has {has:?})")]
    NoLearnField {
        filter: String,
        field: String,
        has: Vec<String>,
    },
    #[error("register tables: {0}")]
    Layout(#[from] LayoutError),
}

/// Why a BF-RT operation failed. Every variant names the switch.
#[derive(Debug, thiserror::Error)]
pub enum BfrtError {
    #[error("switch {switch}: cannot connect to BF-RT at {endpoint}: {source}")]
    Connect {
        switch: String,
        endpoint: String,
        source: tonic::transport::Error,
    },
    #[error("switch {switch}: {rpc}: {status}")]
    Rpc {
        switch: String,
        rpc: &'static str,
        status: Box<tonic::Status>,
    },
    #[error("switch {switch}: no answer to {what} within {timeout:?}")]
    Timeout {
        switch: String,
        what: &'static str,
        timeout: Duration,
    },
    #[error("switch {switch}: the BF-RT stream closed")]
    StreamClosed { switch: String },
    #[error("switch {switch}: subscribe refused: code {code}: {message}")]
    Subscribe {
        switch: String,
        code: i32,
        message: String,
    },
    #[error("switch {switch}: no program {p4_name} (the device has {available:?})")]
    NoProgram {
        switch: String,
        p4_name: String,
        available: Vec<String>,
    },
    #[error("switch {switch}: {source}")]
    Resolve {
        switch: String,
        source: ResolveError,
    },
    #[error("switch {switch}: not bound to a program yet (call bind)")]
    NotBound { switch: String },
    #[error("switch {switch}: register {register}: {message}")]
    Register {
        switch: String,
        register: String,
        message: String,
    },
    #[error("switch {switch}: {source}")]
    Value { switch: String, source: ValueError },
    #[error("switch {switch}: {source}")]
    RuleIds {
        switch: String,
        source: RuleIdsExhausted,
    },
    #[error("switch {switch}, pipe {pipe}: {source}")]
    Harvest {
        switch: String,
        pipe: usize,
        source: Box<HarvestError>,
    },
}

pub type Result<T, E = BfrtError> = std::result::Result<T, E>;

/// A value wider than its key field or action parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{table} {field} = {value:#x} does not fit in {bits} bits")]
pub struct ValueError {
    pub table: String,
    pub field: String,
    pub value: u64,
    pub bits: u32,
}

// ---------------------------------------------------------------------------------------------
// The client

/// Where and who: one switch's BF-RT server and this controller's identity on it.
#[derive(Clone, Debug)]
pub struct BfrtConfig {
    /// The switch's name, in every error.
    pub switch: String,
    /// e.g. `http://10.0.0.1:50052` (bf_switchd's default BF-RT port is 50052).
    pub endpoint: String,
    pub client_id: u32,
    pub device_id: u32,
    /// The program's name as bf_switchd loaded it (`canary`).
    pub p4_name: String,
    /// Bound on connecting and on every call.
    pub timeout: Duration,
}

/// The values of one register table: per value field (member), `pipes[p][i]` is cell `i` in
/// pipe `p`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterValues {
    pub register: String,
    /// (member, pipes), in the order of [`RegisterTable::values`].
    pub fields: Vec<(String, Vec<Vec<u64>>)>,
}

impl RegisterValues {
    /// Member `member`'s per-pipe cells (`f1` for a scalar register).
    pub fn field(&self, member: &str) -> Option<&[Vec<u64>]> {
        self.fields
            .iter()
            .find(|(m, _)| m == member)
            .map(|(_, p)| p.as_slice())
    }

    /// How many pipes the read returned.
    pub fn pipes(&self) -> usize {
        self.fields.first().map_or(0, |(_, p)| p.len())
    }
}

/// A subscribed BF-RT client of one switch.
pub struct BfrtClient {
    cfg: BfrtConfig,
    rpc: BfRuntimeClient<Channel>,
    stream_tx: mpsc::Sender<StreamMessageRequest>,
    stream_rx: tonic::Streaming<StreamMessageResponse>,
    tables: Option<CanaryTables>,
    /// The IDs of the USM and DSM rules this client installed (`p4src/tna/meter_row.p4`).
    rule_ids: RuleIds,
}

impl BfrtClient {
    /// Connects and subscribes (device, client id, learn notifications on); waits for the
    /// server's acknowledgement.
    pub async fn connect(cfg: BfrtConfig) -> Result<Self> {
        let connect_err = |source| BfrtError::Connect {
            switch: cfg.switch.clone(),
            endpoint: cfg.endpoint.clone(),
            source,
        };
        let channel = Endpoint::from_shared(cfg.endpoint.clone())
            .map_err(connect_err)?
            .connect_timeout(cfg.timeout)
            .connect()
            .await
            .map_err(connect_err)?;
        let mut rpc = BfRuntimeClient::new(channel);
        let (stream_tx, rx) = mpsc::channel(64);
        // Queued before the call: some servers answer the stream's headers only with the first
        // response, which is the subscribe acknowledgement.
        stream_tx
            .send(StreamMessageRequest {
                client_id: cfg.client_id,
                update: Some(stream_message_request::Update::Subscribe(Subscribe {
                    is_master: true,
                    device_id: cfg.device_id,
                    notifications: Some(bfrt::subscribe::Notifications {
                        enable_learn_notifications: true,
                        ..Default::default()
                    }),
                    status: None,
                })),
            })
            .await
            .expect("receiver alive");
        let stream_rx = within(
            &cfg,
            "StreamChannel",
            rpc.stream_channel(ReceiverStream::new(rx)),
        )
        .await?
        .into_inner();
        let mut client = BfrtClient {
            cfg,
            rpc,
            stream_tx,
            stream_rx,
            tables: None,
            rule_ids: RuleIds::default(),
        };
        let deadline = tokio::time::Instant::now() + client.cfg.timeout;
        loop {
            match client.next_message(deadline, "subscribe").await? {
                stream_message_response::Update::Subscribe(s) => {
                    let status = s.status.unwrap_or_default();
                    if status.code != 0 {
                        return Err(BfrtError::Subscribe {
                            switch: client.cfg.switch.clone(),
                            code: status.code,
                            message: status.message,
                        });
                    }
                    return Ok(client);
                }
                other => {
                    tracing::debug!(switch = %client.cfg.switch, ?other, "before subscribe ack")
                }
            }
        }
    }

    /// The switch's name.
    pub fn switch(&self) -> &str {
        &self.cfg.switch
    }

    /// Binds this client to the loaded program and resolves Canary's names from its bfrt.json.
    pub async fn bind(&mut self) -> Result<&CanaryTables> {
        let req = SetForwardingPipelineConfigRequest {
            device_id: self.cfg.device_id,
            client_id: self.cfg.client_id,
            action: fpc::Action::Bind as i32,
            config: vec![ForwardingPipelineConfig {
                p4_name: self.cfg.p4_name.clone(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut rpc = self.rpc.clone();
        within(
            &self.cfg,
            "SetForwardingPipelineConfig",
            rpc.set_forwarding_pipeline_config(req),
        )
        .await?;
        let req = GetForwardingPipelineConfigRequest {
            device_id: self.cfg.device_id,
            client_id: self.cfg.client_id,
        };
        let resp = within(
            &self.cfg,
            "GetForwardingPipelineConfig",
            rpc.get_forwarding_pipeline_config(req),
        )
        .await?
        .into_inner();
        let Some(program) = resp.config.iter().find(|c| c.p4_name == self.cfg.p4_name) else {
            return Err(BfrtError::NoProgram {
                switch: self.cfg.switch.clone(),
                p4_name: self.cfg.p4_name.clone(),
                available: resp.config.iter().map(|c| c.p4_name.clone()).collect(),
            });
        };
        let tables = CanaryTables::resolve(&program.bfruntime_info).map_err(|source| {
            BfrtError::Resolve {
                switch: self.cfg.switch.clone(),
                source,
            }
        })?;
        Ok(self.tables.insert(tables))
    }

    /// The resolved tables (after [`Self::bind`]).
    pub fn tables(&self) -> Result<&CanaryTables> {
        self.tables.as_ref().ok_or_else(|| BfrtError::NotBound {
            switch: self.cfg.switch.clone(),
        })
    }

    fn target(&self) -> TargetDevice {
        TargetDevice {
            device_id: self.cfg.device_id,
            pipe_id: ALL_PIPES,
            direction: ALL,
            prsr_id: ALL,
        }
    }

    /// One Write of `updates` (continue on error: the server reports failures in the status).
    pub async fn write(&mut self, updates: Vec<Update>) -> Result<()> {
        let req = WriteRequest {
            target: Some(self.target()),
            client_id: self.cfg.client_id,
            updates,
            atomicity: write_request::Atomicity::ContinueOnError as i32,
            p4_name: self.cfg.p4_name.clone(),
        };
        let mut rpc = self.rpc.clone();
        within(&self.cfg, "Write", rpc.write(req)).await.map(drop)
    }

    /// Applies rule changes in one Write. USM and DSM installs get their rule's ID
    /// ([`RuleIds`]); removals retire it. A removal is retired even if the switch then refuses
    /// the delete: a bucket holding it after two harvests fails the harvest loudly (unknown
    /// ID) rather than being decoded as another flow.
    pub async fn apply(&mut self, ops: &[RuleOp]) -> Result<()> {
        self.tables()?;
        let mut updates = Vec::with_capacity(ops.len());
        for op in ops {
            let id = self
                .rule_ids
                .for_op(op)
                .map_err(|source| BfrtError::RuleIds {
                    switch: self.cfg.switch.clone(),
                    source,
                })?;
            let t = self.tables.as_ref().expect("bound above");
            let u = t
                .rule_update(op, id.unwrap_or(0))
                .map_err(|source| BfrtError::Value {
                    switch: self.cfg.switch.clone(),
                    source,
                })?;
            updates.push(u);
        }
        self.write(updates).await
    }

    /// The rule IDs this client assigned.
    pub fn rule_ids(&self) -> &RuleIds {
        &self.rule_ids
    }

    /// Makes the switch count and mark in `parity` (and sets its monitor flag and mask).
    pub async fn set_config(&mut self, monitor: bool, mask: u32, parity: Parity) -> Result<()> {
        let u = self.tables()?.set_config_update(monitor, mask, parity);
        self.write(vec![u]).await
    }

    fn registers(&self, names: &[&str]) -> Result<Vec<RegisterTable>> {
        let t = self.tables()?;
        names
            .iter()
            .map(|n| {
                t.register(n).cloned().ok_or_else(|| BfrtError::Register {
                    switch: self.cfg.switch.clone(),
                    register: n.to_string(),
                    message: "not a meter or HashPipe register of the program".into(),
                })
            })
            .collect()
    }

    /// Syncs the tables from hardware (one Write) then reads all of them (one Read).
    pub async fn read_registers(&mut self, names: &[&str]) -> Result<Vec<RegisterValues>> {
        let regs = self.registers(names)?;
        let t = self.tables()?;
        let syncs = regs.iter().map(|r| t.sync_update(r)).collect();
        let entities = regs.iter().map(|r| t.read_entity(r)).collect();
        self.write(syncs).await?;
        let req = ReadRequest {
            target: Some(self.target()),
            client_id: self.cfg.client_id,
            entities,
            p4_name: self.cfg.p4_name.clone(),
        };
        let mut rpc = self.rpc.clone();
        let mut stream = within(&self.cfg, "Read", rpc.read(req)).await?.into_inner();
        let mut by_id: HashMap<u32, Vec<TableEntry>> = HashMap::new();
        loop {
            let msg = tokio::time::timeout(self.cfg.timeout, stream.message())
                .await
                .map_err(|_| self.timeout("Read"))?
                .map_err(|status| self.rpc_err("Read", status))?;
            let Some(msg) = msg else { break };
            for e in msg.entities {
                if let Some(entity::Entity::TableEntry(te)) = e.entity {
                    by_id.entry(te.table_id).or_default().push(te);
                }
            }
        }
        regs.iter()
            .map(|r| self.decode_register(r, by_id.remove(&r.id).unwrap_or_default()))
            .collect()
    }

    fn decode_register(
        &self,
        r: &RegisterTable,
        entries: Vec<TableEntry>,
    ) -> Result<RegisterValues> {
        let err = |message: String| BfrtError::Register {
            switch: self.cfg.switch.clone(),
            register: r.name.clone(),
            message,
        };
        // [field][pipe][index]
        let mut cells: Vec<Vec<Vec<u64>>> = vec![Vec::new(); r.values.len()];
        let mut seen = vec![false; r.size];
        for te in entries {
            let index = match &te.value {
                Some(table_entry::Value::Key(k)) => k
                    .fields
                    .iter()
                    .find(|f| f.field_id == r.index.id)
                    .and_then(|f| match &f.match_type {
                        Some(key_field::MatchType::Exact(e)) => Some(be_value(&e.value) as usize),
                        _ => None,
                    }),
                _ => None,
            }
            .ok_or_else(|| err("an entry without $REGISTER_INDEX".into()))?;
            if index >= r.size || std::mem::replace(&mut seen[index], true) {
                return Err(err(format!("index {index} out of range or repeated")));
            }
            for ((member, field), pipes) in r.values.iter().zip(&mut cells) {
                let values: Vec<u64> = te
                    .data
                    .iter()
                    .flat_map(|d| &d.fields)
                    .filter(|f| f.field_id == field.id)
                    .map(|f| match &f.value {
                        Some(data_field::Value::Stream(b)) if b.len() <= 8 => Ok(be_value(b)),
                        other => Err(err(format!("index {index}, {member}: value {other:?}"))),
                    })
                    .collect::<Result<_>>()?;
                if pipes.is_empty() {
                    if values.is_empty() {
                        return Err(err(format!("index {index}: no value of {member}")));
                    }
                    *pipes = vec![vec![0; r.size]; values.len()];
                }
                if values.len() != pipes.len() {
                    return Err(err(format!(
                        "index {index}, {member}: {} values, earlier entries had {} (one per pipe)",
                        values.len(),
                        pipes.len()
                    )));
                }
                for (p, v) in values.into_iter().enumerate() {
                    pipes[p][index] = v;
                }
            }
        }
        if let Some(missing) = seen.iter().position(|s| !s) {
            return Err(err(format!(
                "index {missing} missing from the read ({} cells)",
                r.size
            )));
        }
        Ok(RegisterValues {
            register: r.name.clone(),
            fields: r.values.iter().map(|(m, _)| m.clone()).zip(cells).collect(),
        })
    }

    /// Zeroes whole register tables (one Write).
    pub async fn clear_registers(&mut self, names: &[&str]) -> Result<()> {
        let regs = self.registers(names)?;
        let t = self.tables()?;
        let updates = regs.iter().map(|r| t.clear_update(r)).collect();
        self.write(updates).await
    }

    /// The end of an epoch on this switch: reads the meters (one snapshot of `parity` per
    /// pipe), then zeroes `parity`'s half of every meter register and all of HashPipe, in
    /// Writes of at most [`MAX_UPDATES_PER_WRITE`] updates. Nothing is cleared unless every
    /// pipe decoded. The other parity's half, still counting in-flight packets, is not touched.
    pub async fn harvest(
        &mut self,
        switch: SwitchIx,
        parity: Parity,
    ) -> Result<Vec<MeterSnapshot>> {
        let layout = self.tables()?.layout.clone();
        let names: Vec<&str> = layout.meter_names().iter().map(String::as_str).collect();
        let values = self.read_registers(&names).await?;
        let pipes = values.first().map_or(0, RegisterValues::pipes);
        let mut snapshots = Vec::with_capacity(pipes);
        for p in 0..pipes {
            let rows = self.row_cells(&values, p)?;
            let snap = layout
                .decode(&self.cfg.switch, switch, parity, &rows, &self.rule_ids)
                .map_err(|source| BfrtError::Harvest {
                    switch: self.cfg.switch.clone(),
                    pipe: p,
                    source: Box::new(source),
                })?;
            snapshots.push(snap);
        }
        let mut clears = Vec::new();
        {
            let t = self.tables()?;
            for name in layout.meter_names() {
                let reg = t.register(name).expect("resolved with the layout");
                let cells = layout
                    .parity_cells_of(name, parity)
                    .expect("a meter register");
                clears.extend(t.clear_cells_updates(reg, cells));
            }
            for name in layout.hashpipe_names() {
                clears.push(t.clear_update(t.register(name).expect("resolved with the layout")));
            }
        }
        for chunk in clears.chunks(MAX_UPDATES_PER_WRITE) {
            self.write(chunk.to_vec()).await?;
        }
        self.rule_ids.harvested();
        Ok(snapshots)
    }

    /// Pipe `p`'s cells of every meter row, from `values` read in the layout's order
    /// ([`crate::tna_meters::ROW_REGISTERS`] per row: `id_reg`, `state_reg`).
    fn row_cells(&self, values: &[RegisterValues], p: usize) -> Result<Vec<RowCells>> {
        let pick = |v: &RegisterValues, member: &str| -> Result<Vec<u64>> {
            v.field(member)
                .and_then(|pipes| pipes.get(p))
                .cloned()
                .ok_or_else(|| BfrtError::Register {
                    switch: self.cfg.switch.clone(),
                    register: v.register.clone(),
                    message: format!("no {member} for pipe {p}"),
                })
        };
        values
            .chunks(2)
            .map(|pair| {
                Ok(RowCells {
                    id: pick(&pair[0], "f1")?,
                    dirty: pick(&pair[1], "dirty")?,
                    count: pick(&pair[1], "count")?,
                })
            })
            .collect()
    }

    /// The next HH digest list within `wait` (acknowledged to the switch), decoded into
    /// (flow, pathBF) reports; `None` when none arrived.
    pub async fn next_digest(&mut self, wait: Duration) -> Result<Option<Vec<(FlowId, u32)>>> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let msg = match self.next_message(deadline, "digest").await {
                Ok(m) => m,
                Err(BfrtError::Timeout { .. }) => return Ok(None),
                Err(e) => return Err(e),
            };
            let stream_message_response::Update::Digest(list) = msg else {
                continue;
            };
            self.stream_tx
                .send(StreamMessageRequest {
                    client_id: self.cfg.client_id,
                    update: Some(stream_message_request::Update::DigestAck(
                        bfrt::DigestListAck {
                            digest_id: list.digest_id,
                            list_id: list.list_id,
                        },
                    )),
                })
                .await
                .map_err(|_| BfrtError::StreamClosed {
                    switch: self.cfg.switch.clone(),
                })?;
            let t = self.tables()?;
            let reports = t
                .decode_digest(&list)
                .map_err(|message| BfrtError::Register {
                    switch: self.cfg.switch.clone(),
                    register: t.hh_digest.name.clone(),
                    message,
                })?;
            return Ok(Some(reports));
        }
    }

    async fn next_message(
        &mut self,
        deadline: tokio::time::Instant,
        what: &'static str,
    ) -> Result<stream_message_response::Update> {
        loop {
            let msg = tokio::time::timeout_at(deadline, self.stream_rx.message())
                .await
                .map_err(|_| self.timeout(what))?
                .map_err(|status| self.rpc_err("StreamChannel", status))?;
            match msg {
                None => {
                    return Err(BfrtError::StreamClosed {
                        switch: self.cfg.switch.clone(),
                    })
                }
                Some(StreamMessageResponse { update: Some(u) }) => return Ok(u),
                Some(_) => continue,
            }
        }
    }

    fn timeout(&self, what: &'static str) -> BfrtError {
        BfrtError::Timeout {
            switch: self.cfg.switch.clone(),
            what,
            timeout: self.cfg.timeout,
        }
    }

    fn rpc_err(&self, rpc: &'static str, status: tonic::Status) -> BfrtError {
        BfrtError::Rpc {
            switch: self.cfg.switch.clone(),
            rpc,
            status: Box::new(status),
        }
    }

    /// Fills the TNA forwarding tables with `state`, the ECMP product tables for pathBF `mask`
    /// (the mask `set_config` gives this switch), in Writes of at most [`FORWARDING_BATCH`]
    /// updates, routes last. Stops at the first failed Write; every update is INSERT_OR_MODIFY,
    /// so calling it again is safe.
    pub async fn install_forwarding(
        &mut self,
        fwd: &TnaForwardingTables,
        state: &crate::forwarding::ForwardingState,
        mask: u32,
    ) -> Result<()> {
        let mut updates = fwd
            .updates(state, mask)
            .map_err(|source| BfrtError::Value {
                switch: self.cfg.switch.clone(),
                source,
            })?
            .into_iter();
        loop {
            let batch: Vec<Update> = updates.by_ref().take(FORWARDING_BATCH).collect();
            if batch.is_empty() {
                return Ok(());
            }
            self.write(batch).await?;
        }
    }
}

/// Runs one call under the configured timeout, mapping both failures to errors naming the switch.
async fn within<T>(
    cfg: &BfrtConfig,
    rpc: &'static str,
    call: impl std::future::Future<Output = std::result::Result<T, tonic::Status>>,
) -> Result<T> {
    match tokio::time::timeout(cfg.timeout, call).await {
        Err(_) => Err(BfrtError::Timeout {
            switch: cfg.switch.clone(),
            what: rpc,
            timeout: cfg.timeout,
        }),
        Ok(Err(status)) => Err(BfrtError::Rpc {
            switch: cfg.switch.clone(),
            rpc,
            status: Box::new(status),
        }),
        Ok(Ok(v)) => Ok(v),
    }
}
