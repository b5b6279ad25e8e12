//! A BF Runtime server in front of the reference model: a switch of the simulated data plane
//! (`canary_sim::SimFabric::driven`) that speaks `bf_switchd`'s gRPC API for one compiled
//! program. It is what `canary run --target tofino` is tested against where no Tofino can be had.
//!
//! It holds every request to the program's real `bfrt.json` (the compiler's, given to
//! [`BfrtModelSwitch::new`]) generically, before any meaning is given to it: the table id must
//! exist; every key field of the table must be there once, with its match type and a value of
//! exactly its width in bytes that fits its width in bits; the action must be one of the table's,
//! with each of its data fields there once at its width; register entries must name the
//! register's `$REGISTER_INDEX` within its size and its data fields; a table operation must be
//! one the table supports (`Sync` for registers). A request that breaks a rule fails with a
//! message naming the table and the field, as `bf_switchd` would refuse it.
//!
//! Then the request is applied to the model ([`crate::model_target`]), which answers what the
//! program would: entries that exist cannot be inserted, full tables refuse, registers read back
//! the model's meters (one copy per pipe; `pipes` pipes, all traffic in pipe 0), and HH digests
//! leave on the stream as learn lists of the program's learn filter.
//!
//! The packet replication engine's fixed tables come from [`FIXED_BFRT_JSON`], written here from
//! the public BF-RT names (`$pre.node`, `$pre.mgid` and their fields); their ids are this file's.

use crate::contract::{Program, Table};
use crate::drivers::bfruntime;
use crate::drivers::chaos::Plane;
use crate::entries::{Change, Entry, Key, McGroup, Write};
use crate::meters::MeterCells;
use crate::model_target::ModelTables;
use bfrt_proto::bfrt::{
    self, bf_runtime_server::BfRuntime, data_field, entity, key_field, stream_message_request,
    stream_message_response, table_entry, update, DataField, DigestList, Entity,
    ForwardingPipelineConfig, GetForwardingPipelineConfigRequest,
    GetForwardingPipelineConfigResponse, KeyField, NonP4Config, ReadRequest, ReadResponse,
    SetForwardingPipelineConfigRequest, SetForwardingPipelineConfigResponse, StreamMessageRequest,
    StreamMessageResponse, TableData, TableEntry, TableKey, Update, WriteRequest, WriteResponse,
};
use bfrt_proto::google::rpc;
use canary_core::topo::SwitchIx;
use prost::Message;
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

/// The non-P4 `bfrt.json` of the fixed tables Canary uses.
mod schema;

use schema::Schema;

pub const FIXED_BFRT_JSON: &str = r#"{"tables": [
 {"name": "$pre.node", "id": 503316481, "table_type": "PreNode", "size": 16777216,
  "key": [{"id": 1, "name": "$MULTICAST_NODE_ID", "match_type": "Exact", "type": {"type": "uint32"}}],
  "data": [{"singleton": {"id": 1, "name": "$MULTICAST_RID", "repeated": false, "type": {"type": "uint16"}}},
           {"singleton": {"id": 2, "name": "$MULTICAST_LAG_ID", "repeated": true, "type": {"type": "uint8"}}},
           {"singleton": {"id": 3, "name": "$DEV_PORT", "repeated": true, "type": {"type": "uint32"}}}],
  "supported_operations": [], "attributes": []},
 {"name": "$pre.mgid", "id": 503316482, "table_type": "PreMgid", "size": 65536,
  "key": [{"id": 1, "name": "$MGID", "match_type": "Exact", "type": {"type": "uint16"}}],
  "data": [{"singleton": {"id": 1, "name": "$MULTICAST_NODE_ID", "repeated": true, "type": {"type": "uint32"}}},
           {"singleton": {"id": 2, "name": "$MULTICAST_NODE_L1_XID_VALID", "repeated": true, "type": {"type": "bool"}}},
           {"singleton": {"id": 3, "name": "$MULTICAST_NODE_L1_XID", "repeated": true, "type": {"type": "uint16"}}}],
  "supported_operations": [], "attributes": []}
]}"#;

/// One switch's state behind the server.
struct Inner {
    tables: ModelTables,
    bound: bool,
    /// Restarted since the last subscription: the old connections are dead.
    restarted: bool,
    streams: Vec<mpsc::Sender<Result<StreamMessageResponse, Status>>>,
    list_id: u32,
    /// Requests that broke the schema so far, with why (for tests).
    violations: Vec<String>,
    groups: BTreeMap<u16, Vec<(u32, u16)>>,
    nodes: BTreeMap<u32, (u16, Vec<u32>)>,
    wire: Wire,
}

/// What crossed the wire so far, counted as gRPC messages and their protobuf-encoded bytes
/// (without HTTP/2 framing): the cost a controller puts on `bf_switchd`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wire {
    /// Write RPCs, the updates they carried, and their request bytes.
    pub writes: u64,
    pub updates: u64,
    pub write_bytes: u64,
    /// Read RPCs and their request bytes; response messages, entities and bytes.
    pub reads: u64,
    pub read_bytes: u64,
    pub read_responses: u64,
    pub read_entities: u64,
    pub read_response_bytes: u64,
    /// Learn lists sent on the stream and their bytes.
    pub digests: u64,
    pub digest_bytes: u64,
}

impl std::ops::AddAssign for Wire {
    fn add_assign(&mut self, o: Wire) {
        self.writes += o.writes;
        self.updates += o.updates;
        self.write_bytes += o.write_bytes;
        self.reads += o.reads;
        self.read_bytes += o.read_bytes;
        self.read_responses += o.read_responses;
        self.read_entities += o.read_entities;
        self.read_response_bytes += o.read_response_bytes;
        self.digests += o.digests;
        self.digest_bytes += o.digest_bytes;
    }
}

/// A model switch behind BF Runtime.
#[derive(Clone)]
pub struct BfrtModelSwitch {
    ix: SwitchIx,
    plane: Plane,
    program: Arc<Program>,
    json: Arc<Vec<u8>>,
    schema: Arc<Schema>,
    pipes: usize,
    device_id: u32,
    inner: Arc<Mutex<Inner>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl BfrtModelSwitch {
    /// Switch `ix` of `plane`, running the program compiled to `bfrt_json`, on a device with
    /// `pipes` pipes.
    pub fn new(
        ix: SwitchIx,
        plane: Plane,
        bfrt_json: Vec<u8>,
        device_id: u32,
        pipes: usize,
    ) -> Result<Self, String> {
        let program =
            Program::from_bfrt_json("bfrt.json", &bfrt_json).map_err(|e| e.to_string())?;
        let mut schema = Schema::default();
        schema.add(&bfrt_json)?;
        schema.add(FIXED_BFRT_JSON.as_bytes())?;
        Ok(Self {
            ix,
            plane,
            program: Arc::new(program),
            json: Arc::new(bfrt_json),
            schema: Arc::new(schema),
            pipes: pipes.max(1),
            device_id,
            inner: Arc::new(Mutex::new(Inner {
                tables: ModelTables::default(),
                bound: false,
                restarted: false,
                streams: Vec::new(),
                list_id: 0,
                violations: Vec::new(),
                groups: BTreeMap::new(),
                nodes: BTreeMap::new(),
                wire: Wire::default(),
            })),
        })
    }

    /// What crossed the wire since the last [`BfrtModelSwitch::take_wire`].
    pub fn take_wire(&self) -> Wire {
        std::mem::take(&mut lock(&self.inner).wire)
    }

    /// Requests that broke the program's `bfrt.json` so far (a switch refuses them).
    pub fn violations(&self) -> Vec<String> {
        lock(&self.inner).violations.clone()
    }

    /// `bf_switchd` restarts: clients are cut off, tables and registers are lost, the program is
    /// loaded again (unbound).
    pub fn restart(&self) {
        let mut inner = lock(&self.inner);
        for s in inner.streams.drain(..) {
            let _ = s.try_send(Err(Status::unavailable("bf_switchd restarted")));
        }
        inner.bound = false;
        inner.restarted = true;
        inner.groups.clear();
        inner.nodes.clear();
        let mut plane = lock(&self.plane);
        inner.tables.restart(plane.switch_mut(self.ix));
    }

    /// Sends the HH digests the switch produced since the last call to its subscribed clients.
    pub fn pump_digests(&self) {
        let reports = lock(&self.plane).take_reports_of(self.ix);
        if reports.is_empty() {
            return;
        }
        let d = &self.program.digest;
        let data: Vec<TableData> = reports
            .iter()
            .map(|r| {
                let vals = [
                    r.flow.src.to_u128(),
                    r.flow.dst.to_u128(),
                    r.flow.proto.into(),
                    r.flow.sport.into(),
                    r.flow.dport.into(),
                    r.path_bf.into(),
                ];
                TableData {
                    action_id: 0,
                    fields: d
                        .fields
                        .iter()
                        .zip(vals)
                        .map(|(f, v)| DataField {
                            field_id: f.id,
                            value: Some(data_field::Value::Stream(
                                v.to_be_bytes()[16 - f.bytes()..].to_vec(),
                            )),
                        })
                        .collect(),
                }
            })
            .collect();
        let mut inner = lock(&self.inner);
        inner.list_id += 1;
        let msg = StreamMessageResponse {
            update: Some(stream_message_response::Update::Digest(DigestList {
                digest_id: d.id,
                list_id: inner.list_id,
                data,
                target: None,
            })),
        };
        inner.wire.digests += 1;
        inner.wire.digest_bytes += msg.encoded_len() as u64;
        inner
            .streams
            .retain(|s| s.try_send(Ok(msg.clone())).is_ok());
    }

    /// Serves on `listener` until the task is dropped.
    pub fn serve(&self, listener: tokio::net::TcpListener) -> tokio::task::JoinHandle<()> {
        let svc = bfrt::bf_runtime_server::BfRuntimeServer::new(self.clone());
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .tcp_nodelay(true)
                .add_service(svc)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
                .await;
        })
    }

    /// Applies one update; `Err((true, why))` when it breaks the schema.
    fn apply(&self, u: &Update) -> Result<(), (bool, String)> {
        let schema = |e: String| (true, e);
        let kind = update::Type::try_from(u.r#type).unwrap_or(update::Type::Unspecified);
        let e = u
            .entity
            .as_ref()
            .and_then(|e| e.entity.as_ref())
            .ok_or_else(|| schema("an update without entity".into()))?;
        match e {
            entity::Entity::TableOperation(op) => {
                let t = self
                    .schema
                    .tables
                    .get(&op.table_id)
                    .ok_or_else(|| schema(format!("no table with id {}", op.table_id)))?;
                if !t.operations.contains(&op.table_operations_type) {
                    return Err(schema(format!(
                        "{}: operation {:?} not supported (it has {:?})",
                        t.name, op.table_operations_type, t.operations
                    )));
                }
                Ok(())
            }
            entity::Entity::TableEntry(te) => {
                let t = self.schema.check(te, kind).map_err(schema)?;
                let mut inner = lock(&self.inner);
                let mut plane = lock(&self.plane);
                let model = plane.switch_mut(self.ix);
                let clear =
                    kind == update::Type::Delete && te.value.is_none() && !te.is_default_entry;
                if t.kind == "Register" {
                    if clear {
                        if self.program.meters.rows().any(|r| r.id.id == te.table_id) {
                            model.clear_meters();
                        } else if self.program.hashpipe.iter().any(|r| r.id == te.table_id) {
                            model.clear_hashpipe();
                        }
                    }
                    // A cell written to zero: the model's cells are zero unless an epoch holds them.
                    return Ok(());
                }
                if t.kind.starts_with("Pre") {
                    return self
                        .apply_pre(&mut inner, model, te, kind, clear)
                        .map_err(|e| (false, e));
                }
                let table = self
                    .program
                    .tables()
                    .iter()
                    .find(|r| r.id == te.table_id)
                    .ok_or_else(|| (false, format!("{}: not a table Canary writes", t.name)))?;
                if clear {
                    inner.tables.clear(model, table.table);
                    return Ok(());
                }
                let w = to_write(table, te, kind).map_err(schema)?;
                let failed = inner.tables.write(model, &[w]);
                match failed.into_iter().next() {
                    None => Ok(()),
                    Some((_, e)) => Err((false, e.to_string())),
                }
            }
            _ => Err(schema("unsupported entity".into())),
        }
    }

    fn apply_pre(
        &self,
        inner: &mut Inner,
        model: &mut canary_core::model::SwitchModel,
        te: &TableEntry,
        kind: update::Type,
        clear: bool,
    ) -> Result<(), String> {
        let node_table = te.table_id == 503316481;
        if clear {
            if node_table {
                inner.nodes.clear();
            } else {
                inner.groups.clear();
                inner.tables.clear_groups(model);
            }
            return Ok(());
        }
        let key = key_values(te).into_iter().next().unwrap_or(0) as u32;
        let fields = te
            .data
            .as_ref()
            .map(|d| d.fields.clone())
            .unwrap_or_default();
        let ints = |id: u32| -> Vec<u32> {
            fields
                .iter()
                .find(|f| f.field_id == id)
                .and_then(|f| match &f.value {
                    Some(data_field::Value::IntArrVal(a)) => Some(a.val.clone()),
                    _ => None,
                })
                .unwrap_or_default()
        };
        if node_table {
            if kind == update::Type::Delete {
                inner.nodes.remove(&key);
                return Ok(());
            }
            let rid = fields
                .iter()
                .find(|f| f.field_id == 1)
                .and_then(|f| match &f.value {
                    Some(data_field::Value::Stream(b)) => {
                        Some(b.iter().fold(0u16, |a, &x| a << 8 | u16::from(x)))
                    }
                    _ => None,
                })
                .unwrap_or(0);
            inner.nodes.insert(key, (rid, ints(3)));
            return Ok(());
        }
        let mgid = key as u16;
        if kind == update::Type::Delete {
            inner.groups.remove(&mgid);
        } else {
            let mut replicas = Vec::new();
            for n in ints(1) {
                let (rid, ports) = inner
                    .nodes
                    .get(&n)
                    .cloned()
                    .ok_or_else(|| format!("$pre.mgid {mgid}: no node {n}"))?;
                replicas.extend(ports.into_iter().map(|p| (p, rid)));
            }
            inner.groups.insert(mgid, replicas.clone());
            inner
                .tables
                .write_groups(model, &[McGroup { id: mgid, replicas }]);
        }
        Ok(())
    }

    /// Every entry of a monitoring rule table (`usm_table`, `dsm_table`, `hh_table`), as the
    /// switch holds them; other match tables are not read by Canary.
    fn read_rules(&self, table_id: u32, name: &str) -> Result<Vec<TableEntry>, Status> {
        let table = self
            .program
            .tables()
            .iter()
            .find(|r| r.id == table_id)
            .map(|r| r.table)
            .filter(|t| matches!(t, Table::Usm | Table::Dsm | Table::Hh))
            .ok_or_else(|| Status::unimplemented(format!("{name}: reads of its match entries")))?;
        let installed = {
            let inner = lock(&self.inner);
            let mut plane = lock(&self.plane);
            inner.tables.read_installed(plane.switch_mut(self.ix))
        };
        let mut out = Vec::new();
        for r in installed.rules {
            let (op, id) = r.install(0);
            let entry = crate::entries::rule(&op, id, false).entry;
            if entry.table == table {
                out.push(
                    bfruntime::table_entry(&self.program, &entry)
                        .map_err(|e| Status::internal(e.to_string()))?,
                );
            }
        }
        Ok(out)
    }

    fn read_entry(
        &self,
        te: &TableEntry,
        cells: &mut Option<MeterCells>,
    ) -> Result<Vec<TableEntry>, Status> {
        let t = self
            .schema
            .tables
            .get(&te.table_id)
            .ok_or_else(|| Status::not_found(format!("no table with id {}", te.table_id)))?;
        if te.is_default_entry {
            let table = self
                .program
                .tables()
                .iter()
                .find(|r| r.id == te.table_id)
                .ok_or_else(|| Status::invalid_argument(format!("{}: no default entry", t.name)))?;
            if table.table != Table::SwitchConfig {
                return Err(Status::unimplemented("default entries of other tables"));
            }
            let config = lock(&self.plane).switch_mut(self.ix).config();
            let e = crate::entries::config(config);
            return bfruntime::table_entry(&self.program, &e)
                .map(|x| vec![x])
                .map_err(|e| Status::internal(e.to_string()));
        }
        if t.kind != "Register" {
            return self.read_rules(te.table_id, &t.name);
        }
        let meters = cells.get_or_insert_with(|| {
            let inner = lock(&self.inner);
            let mut plane = lock(&self.plane);
            inner.tables.meter_cells(plane.switch_mut(self.ix))
        });
        let (reg, values): (&crate::contract::Register, Vec<Vec<u32>>) = if let Some((i, row)) =
            self.program
                .meters
                .usm
                .iter()
                .chain(&self.program.meters.dsm)
                .enumerate()
                .find(|(_, r)| r.id.id == te.table_id || r.count.id == te.table_id)
        {
            let rows = self.program.meters.usm.len();
            let cells = if i < rows {
                &meters.usm[i]
            } else {
                &meters.dsm[i - rows]
            };
            if row.id.id == te.table_id {
                (&row.id, vec![cells.id_tag.clone(), cells.id.clone()])
            } else {
                (&row.count, vec![cells.count.clone()])
            }
        } else if let Some(r) = self.program.hashpipe.iter().find(|r| r.id == te.table_id) {
            (r, r.members.iter().map(|_| vec![0; r.size]).collect())
        } else {
            return Err(Status::not_found(format!(
                "{}: not a register of the program",
                t.name
            )));
        };
        let ix = reg.index.ok_or_else(|| Status::internal("no index"))?;
        let mut out = Vec::with_capacity(reg.size);
        for i in 0..reg.size {
            let mut fields = Vec::new();
            for ((_, f), vals) in reg.members.iter().zip(&values) {
                for p in 0..self.pipes {
                    let v = if p == 0 {
                        vals.get(i).copied().unwrap_or(0)
                    } else {
                        0
                    };
                    fields.push(DataField {
                        field_id: f.id,
                        value: Some(data_field::Value::Stream(
                            u128::from(v).to_be_bytes()[16 - f.bytes()..].to_vec(),
                        )),
                    });
                }
            }
            out.push(TableEntry {
                table_id: reg.id,
                value: Some(table_entry::Value::Key(TableKey {
                    fields: vec![KeyField {
                        field_id: ix.id,
                        match_type: Some(key_field::MatchType::Exact(key_field::Exact {
                            value: (i as u32).to_be_bytes()[4 - ix.bytes()..].to_vec(),
                        })),
                    }],
                })),
                data: Some(TableData {
                    action_id: 0,
                    fields,
                }),
                ..Default::default()
            });
        }
        Ok(out)
    }
}

fn key_values(te: &TableEntry) -> Vec<u128> {
    match &te.value {
        Some(table_entry::Value::Key(k)) => k
            .fields
            .iter()
            .map(|f| match &f.match_type {
                Some(key_field::MatchType::Exact(e)) => be(&e.value),
                Some(key_field::MatchType::Lpm(l)) => be(&l.value),
                _ => 0,
            })
            .collect(),
        _ => vec![],
    }
}

fn be(b: &[u8]) -> u128 {
    b.iter()
        .take(16)
        .fold(0u128, |a, &x| a << 8 | u128::from(x))
}

/// The contract's write an entry is (checked against the schema already).
fn to_write(
    table: &crate::contract::ResolvedTable,
    te: &TableEntry,
    kind: update::Type,
) -> Result<Write, String> {
    let mut keys = Vec::new();
    if let Some(table_entry::Value::Key(k)) = &te.value {
        for f in &table.keys {
            let kf = k
                .fields
                .iter()
                .find(|x| x.field_id == f.id)
                .ok_or_else(|| format!("{}: key field {} missing", table.name, f.id))?;
            keys.push(match &kf.match_type {
                Some(key_field::MatchType::Exact(e)) => Key::Exact(be(&e.value)),
                Some(key_field::MatchType::Lpm(l)) => Key::Lpm(be(&l.value), l.prefix_len as u32),
                _ => return Err(format!("{}: key field {}", table.name, f.id)),
            });
        }
    }
    let mut args = Vec::new();
    if let Some(d) = &te.data {
        for f in &table.params {
            let v = d
                .fields
                .iter()
                .find(|x| x.field_id == f.id)
                .and_then(|x| match &x.value {
                    Some(data_field::Value::Stream(b)) => Some(be(b)),
                    _ => None,
                })
                .unwrap_or(0);
            args.push(v);
        }
    }
    let change = match kind {
        update::Type::Insert => Change::Insert,
        update::Type::Delete => Change::Delete,
        _ if te.is_default_entry => Change::Modify,
        update::Type::Modify | update::Type::InsertOrModify => Change::Modify,
        other => return Err(format!("{}: update type {other:?}", table.name)),
    };
    Ok(Write {
        change,
        entry: Entry {
            table: table.table,
            keys,
            args,
            default: te.is_default_entry,
        },
    })
}

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
                        i.streams.push(tx.clone());
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}
