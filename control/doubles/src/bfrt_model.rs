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

mod apply;
mod read;
mod schema;
mod service;

use crate::chaos::Plane;
use crate::model_target::ModelTables;
use bfrt_proto::bfrt::{
    self, data_field, stream_message_response, DataField, DigestList, StreamMessageResponse,
    TableData,
};
use canary_core::topo::SwitchIx;
use canary_switch::contract::Program;
use prost::Message;
use schema::Schema;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tonic::Status;

/// The non-P4 `bfrt.json` of the fixed tables Canary uses.
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
    /// Requests that touched a meter or HashPipe register (Reads naming one, Writes syncing
    /// one), by client ID: who reads this switch's registers.
    register_requests: BTreeMap<u32, u64>,
    /// Clients that subscribed without mastership: they may read and sync, never write.
    readers: std::collections::BTreeSet<u32>,
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
                register_requests: BTreeMap::new(),
                readers: Default::default(),
            })),
        })
    }

    /// What crossed the wire since the last [`BfrtModelSwitch::take_wire`].
    pub fn take_wire(&self) -> Wire {
        std::mem::take(&mut lock(&self.inner).wire)
    }

    /// Requests that touched a register so far, by BF Runtime client ID: who reads this
    /// switch's meters.
    pub fn register_requests(&self) -> BTreeMap<u32, u64> {
        lock(&self.inner).register_requests.clone()
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
}

/// A big-endian value of up to 16 bytes, as BF Runtime carries keys and data.
fn be(b: &[u8]) -> u128 {
    b.iter()
        .take(16)
        .fold(0u128, |a, &x| a << 8 | u128::from(x))
}
