//! The BF-RT client at the message level, against an in-process BF-RT server on a loopback
//! socket that records every request and answers like bf_switchd: subscribe acknowledgement,
//! BIND, the program's bfrt.json, register tables (per value field one value per pipe; a keyless
//! DELETE clears a table, a MODIFY of an index writes it), digests on the stream.
//!
//! bfrt.json here is written by hand from p4src/tna (no bf-p4c in this repository): table,
//! action, field and register names as the TNA program declares them, ids made up.

use bfrt_proto::bfrt::{
    self, bf_runtime_server, data_field, entity, key_field, set_forwarding_pipeline_config_request,
    stream_message_request, stream_message_response, table_entry, update, write_request, DataField,
    DigestList, Entity, ForwardingPipelineConfig, GetForwardingPipelineConfigRequest,
    GetForwardingPipelineConfigResponse, KeyField, ReadRequest, ReadResponse,
    SetForwardingPipelineConfigRequest, SetForwardingPipelineConfigResponse, StreamMessageRequest,
    StreamMessageResponse, Subscribe, TableData, TableEntry, TableKey, TableOperation,
    TargetDevice, Update, WriteRequest, WriteResponse,
};
use canary_core::fabric::{Parity, RuleOp};
use canary_core::sketch::{FlowHashes, MeterConfig, Usm};
use canary_core::FlowId;
use canary_switch::bfrt::{BfrtClient, BfrtConfig, BfrtError, CanaryTables, ResolveError};
use canary_switch::rule_ids::RuleKey;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

const P4_NAME: &str = "canary";
const WIDTH: usize = 1024;
const PIPES: usize = 2;

// ---------------------------------------------------------------------------------------------
// bfrt.json of p4src/tna, by hand

fn bytes(name: &str, id: u32, width: u32) -> Value {
    json!({"id": id, "name": name, "repeated": false, "annotations": [],
           "type": {"type": "bytes", "width": width}})
}

fn key(name: &str, id: u32, width: u32) -> Value {
    let mut k = bytes(name, id, width);
    k["mandatory"] = json!(true);
    k["match_type"] = json!("Exact");
    k
}

fn flow_keys() -> Vec<Value> {
    vec![
        key("src_addr", 1, 32),
        key("dst_addr", 2, 32),
        key("protocol", 3, 8),
        key("src_port", 4, 16),
        key("dst_port", 5, 16),
    ]
}

fn action(name: &str, id: u32, params: Vec<Value>) -> Value {
    json!({"id": id, "name": name, "action_scope": "TableAndDefault", "annotations": [],
           "data": params})
}

fn match_table(name: &str, id: u32, keys: Vec<Value>, actions: Vec<Value>) -> Value {
    json!({"name": name, "id": id, "table_type": "MatchAction_Direct", "size": 4096,
           "annotations": [], "depends_on": [], "key": keys, "action_specs": actions, "data": [],
           "supported_operations": [], "attributes": ["EntryScope"]})
}

/// Register table ids: 0x0800_0000 + a running number.
fn register_table(name: &str, id: u32, size: usize, fields: &[(&str, u32)]) -> Value {
    let short = name.trim_start_matches("pipe.");
    let data: Vec<Value> = fields
        .iter()
        .enumerate()
        .map(|(i, (f, w))| {
            let mut d = bytes(&format!("{short}.{f}"), 65557 + i as u32, *w);
            d["repeated"] = json!(true);
            json!({"mandatory": false, "read_only": false, "singleton": d})
        })
        .collect();
    json!({"name": name, "id": id, "table_type": "Register", "size": size, "annotations": [],
           "depends_on": [],
           "key": [{"id": 65556, "name": "$REGISTER_INDEX", "repeated": false, "annotations": [],
                    "mandatory": true, "match_type": "Exact", "type": {"type": "uint32"}}],
           "data": data, "supported_operations": ["Sync"], "attributes": []})
}

const DSM_ID: u32 = 0x0200_0011;
const USM_ID: u32 = 0x0200_0012;
const HH_ID: u32 = 0x0200_0013;
const CONFIG_ID: u32 = 0x0200_0014;
const DSM_HIT: u32 = 0x2000_0021;
const USM_COUNT: u32 = 0x2000_0022;
const HH_WATCH: u32 = 0x2000_0023;
const SET_CONFIG: u32 = 0x2000_0024;
const DIGEST_ID: u32 = 0x0300_0031;

/// A register table: (name, id, size, value fields with their widths).
type Reg = (String, u32, usize, Vec<(&'static str, u32)>);

/// Every register of the TNA program: per meter row `id_reg` and the pair `state_reg`, both
/// parities in one register (2 × WIDTH cells); per HashPipe stage `fp_reg` and `count_reg`
/// (a pair {fp, count} in stages 1-2).
fn registers() -> Vec<Reg> {
    let mut out = Vec::new();
    let mut id = 0x0800_0000;
    for meter in ["upstream_meter", "downstream_meter"] {
        for r in 0..3 {
            for (f, fields) in [
                ("id", vec![("f1", 32)]),
                ("state", vec![("dirty", 32), ("count", 32)]),
            ] {
                id += 1;
                out.push((
                    format!("pipe.CanaryIngress.{meter}.meter.row{r}.{f}_reg"),
                    id,
                    2 * WIDTH,
                    fields,
                ));
            }
        }
    }
    for s in 0..3 {
        id += 1;
        out.push((
            format!("pipe.CanaryIngress.hashpipe.stage{s}.fp_reg"),
            id,
            32,
            vec![("f1", 32)],
        ));
        id += 1;
        let count = if s == 0 {
            vec![("f1", 32)]
        } else {
            vec![("fp", 32), ("count", 32)]
        };
        out.push((
            format!("pipe.CanaryIngress.hashpipe.stage{s}.count_reg"),
            id,
            32,
            count,
        ));
    }
    out
}

fn bfrt_json() -> Value {
    let mut dsm_keys = flow_keys();
    dsm_keys.push(key("path_bf", 6, 32));
    let mut tables = vec![
        match_table(
            "pipe.CanaryIngress.downstream_meter.dsm_table",
            DSM_ID,
            dsm_keys,
            vec![
                action(
                    "CanaryIngress.downstream_meter.dsm_hit",
                    DSM_HIT,
                    vec![bytes("id", 1, 32)],
                ),
                action("NoAction", 0x2000_0001, vec![]),
            ],
        ),
        match_table(
            "pipe.CanaryIngress.upstream_meter.usm_table",
            USM_ID,
            flow_keys(),
            vec![
                action(
                    "CanaryIngress.upstream_meter.usm_count",
                    USM_COUNT,
                    vec![bytes("id", 1, 32)],
                ),
                action("NoAction", 0x2000_0001, vec![]),
            ],
        ),
        match_table(
            "pipe.CanaryIngress.hh_report.hh_table",
            HH_ID,
            vec![key("path_bf", 1, 32)],
            vec![action(
                "CanaryIngress.hh_report.hh_watch",
                HH_WATCH,
                vec![bytes("eta", 1, 32)],
            )],
        ),
        match_table(
            "pipe.CanaryIngress.switch_config.switch_config",
            CONFIG_ID,
            vec![],
            vec![action(
                "CanaryIngress.switch_config.set_config",
                SET_CONFIG,
                vec![
                    bytes("monitor", 1, 1),
                    bytes("mask", 2, 32),
                    bytes("parity", 3, 1),
                ],
            )],
        ),
        match_table(
            "pipe.CanaryIngress.forwarding.ipv4_route",
            0x0200_0015,
            vec![json!({"id": 1, "name": "dst_addr", "match_type": "LPM",
                        "type": {"type": "bytes", "width": 32}})],
            vec![action(
                "CanaryIngress.forwarding.set_group",
                0x2000_0025,
                vec![],
            )],
        ),
    ];
    for (name, id, size, fields) in registers() {
        tables.push(register_table(&name, id, size, &fields));
    }
    json!({
        "schema_version": "1.0.0",
        "tables": tables,
        "learn_filters": [{
            "name": "pipe.CanaryIngressDeparser.hh_digest", "id": DIGEST_ID, "annotations": [],
            "fields": [bytes("src_addr", 1, 32), bytes("dst_addr", 2, 32), bytes("protocol", 3, 8),
                       bytes("src_port", 4, 16), bytes("dst_port", 5, 16), bytes("path_bf", 6, 32)]
        }]
    })
}

fn register_id(suffix: &str) -> u32 {
    registers()
        .into_iter()
        .find(|(n, ..)| n.ends_with(suffix))
        .unwrap_or_else(|| panic!("no register *{suffix}"))
        .1
}

// ---------------------------------------------------------------------------------------------
// The fake bf_switchd

#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Stream(StreamMessageRequest),
    SetConfig(SetForwardingPipelineConfigRequest),
    GetConfig(GetForwardingPipelineConfigRequest),
    Write(WriteRequest),
    Read(ReadRequest),
}

#[derive(Default)]
struct State {
    seen: Vec<Seen>,
    /// Register table id -> [value field][pipe][index].
    regs: HashMap<u32, Vec<Vec<Vec<u64>>>>,
    /// Register table id -> bytes of each value field.
    widths: HashMap<u32, Vec<usize>>,
    stream: Option<mpsc::Sender<Result<StreamMessageResponse, Status>>>,
}

#[derive(Clone)]
struct FakeSwitch {
    state: Arc<Mutex<State>>,
    json: Vec<u8>,
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl bf_runtime_server::BfRuntime for FakeSwitch {
    async fn write(&self, req: Request<WriteRequest>) -> Result<Response<WriteResponse>, Status> {
        let req = req.into_inner();
        let mut st = self.state.lock().unwrap();
        st.seen.push(Seen::Write(req.clone()));
        for u in &req.updates {
            let Some(entity::Entity::TableEntry(te)) =
                u.entity.as_ref().and_then(|e| e.entity.clone())
            else {
                continue;
            };
            let Some(r) = st.regs.get_mut(&te.table_id) else {
                continue;
            };
            // A keyless DELETE of a register table zeroes it, like tableClear.
            if u.r#type == update::Type::Delete as i32 && te.value.is_none() {
                r.iter_mut().flatten().for_each(|p| p.fill(0));
            }
            // A MODIFY of one index writes its value fields in every pipe (target: all pipes).
            if u.r#type == update::Type::Modify as i32 {
                let Some(table_entry::Value::Key(k)) = &te.value else {
                    return Err(Status::invalid_argument("register MODIFY without a key"));
                };
                let index = match &k.fields[..] {
                    [KeyField {
                        field_id: 65556,
                        match_type: Some(key_field::MatchType::Exact(e)),
                    }] => e.value.iter().fold(0usize, |a, &b| a << 8 | usize::from(b)),
                    other => return Err(Status::invalid_argument(format!("key {other:?}"))),
                };
                for d in te.data.iter().flat_map(|d| &d.fields) {
                    let Some(data_field::Value::Stream(b)) = &d.value else {
                        return Err(Status::invalid_argument("register value not bytes"));
                    };
                    let v = b.iter().fold(0u64, |a, &x| a << 8 | u64::from(x));
                    let field = (d.field_id - 65557) as usize;
                    for pipe in &mut r[field] {
                        pipe[index] = v;
                    }
                }
            }
        }
        Ok(Response::new(WriteResponse::default()))
    }

    type ReadStream = BoxStream<ReadResponse>;
    async fn read(&self, req: Request<ReadRequest>) -> Result<Response<Self::ReadStream>, Status> {
        let req = req.into_inner();
        let mut st = self.state.lock().unwrap();
        st.seen.push(Seen::Read(req.clone()));
        let mut entities = Vec::new();
        for e in &req.entities {
            let Some(entity::Entity::TableEntry(te)) = &e.entity else {
                return Err(Status::invalid_argument("only table entries"));
            };
            let Some(fields) = st.regs.get(&te.table_id) else {
                return Err(Status::not_found(format!("table {}", te.table_id)));
            };
            let widths = &st.widths[&te.table_id];
            for i in 0..fields[0][0].len() {
                entities.push(Entity {
                    entity: Some(entity::Entity::TableEntry(TableEntry {
                        table_id: te.table_id,
                        value: Some(table_entry::Value::Key(TableKey {
                            fields: vec![KeyField {
                                field_id: 65556,
                                match_type: Some(key_field::MatchType::Exact(key_field::Exact {
                                    value: (i as u32).to_be_bytes().to_vec(),
                                })),
                            }],
                        })),
                        data: Some(TableData {
                            action_id: 0,
                            // Per value field, one value per pipe (a repeated field).
                            fields: fields
                                .iter()
                                .zip(widths)
                                .enumerate()
                                .flat_map(|(f, (pipes, &bytes))| {
                                    pipes.iter().map(move |p| DataField {
                                        field_id: 65557 + f as u32,
                                        value: Some(data_field::Value::Stream(
                                            p[i].to_be_bytes()[8 - bytes..].to_vec(),
                                        )),
                                    })
                                })
                                .collect(),
                        }),
                        ..Default::default()
                    })),
                });
            }
        }
        // Several messages, as bf_switchd splits large reads.
        let msgs: Vec<Result<ReadResponse, Status>> = entities
            .chunks(700)
            .map(|c| {
                Ok(ReadResponse {
                    entities: c.to_vec(),
                    status: vec![],
                })
            })
            .collect();
        Ok(Response::new(Box::pin(tokio_stream::iter(msgs))))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        req: Request<SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<SetForwardingPipelineConfigResponse>, Status> {
        let req = req.into_inner();
        let mut st = self.state.lock().unwrap();
        st.seen.push(Seen::SetConfig(req));
        Ok(Response::new(SetForwardingPipelineConfigResponse::default()))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        req: Request<GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<GetForwardingPipelineConfigResponse>, Status> {
        self.state
            .lock()
            .unwrap()
            .seen
            .push(Seen::GetConfig(req.into_inner()));
        Ok(Response::new(GetForwardingPipelineConfigResponse {
            config: vec![ForwardingPipelineConfig {
                p4_name: P4_NAME.into(),
                bfruntime_info: self.json.clone(),
                profiles: vec![],
            }],
            non_p4_config: None,
        }))
    }

    type StreamChannelStream = BoxStream<StreamMessageResponse>;
    async fn stream_channel(
        &self,
        req: Request<Streaming<StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let mut incoming = req.into_inner();
        let (tx, rx) = mpsc::channel(16);
        self.state.lock().unwrap().stream = Some(tx.clone());
        let state = self.state.clone();
        tokio::spawn(async move {
            while let Ok(Some(m)) = incoming.message().await {
                state.lock().unwrap().seen.push(Seen::Stream(m.clone()));
                if let Some(stream_message_request::Update::Subscribe(mut s)) = m.update {
                    s.status = Some(bfrt_proto::google::rpc::Status {
                        code: 0,
                        message: "Subscribe successful".into(),
                        details: vec![],
                    });
                    let ack = StreamMessageResponse {
                        update: Some(stream_message_response::Update::Subscribe(s)),
                    };
                    let _ = tx.send(Ok(ack)).await;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

impl FakeSwitch {
    fn new(json: Value) -> Self {
        let mut st = State::default();
        for (_, id, size, fields) in registers() {
            st.regs
                .insert(id, vec![vec![vec![0; size]; PIPES]; fields.len()]);
            st.widths.insert(
                id,
                fields
                    .iter()
                    .map(|(_, w)| (*w as usize).div_ceil(8))
                    .collect(),
            );
        }
        FakeSwitch {
            state: Arc::new(Mutex::new(st)),
            json: serde_json::to_vec(&json).unwrap(),
        }
    }

    /// Serves on a free loopback port; returns the endpoint.
    async fn serve(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let svc = bf_runtime_server::BfRuntimeServer::new(self.clone());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(svc)
                .serve_with_incoming(TcpListenerStream::new(listener)),
        );
        format!("http://{addr}")
    }

    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut self.state.lock().unwrap().seen)
    }

    /// Sets value field `field` of cell `index` in `pipe`.
    fn set(&self, reg: u32, field: usize, pipe: usize, index: usize, value: u64) {
        self.state.lock().unwrap().regs.get_mut(&reg).unwrap()[field][pipe][index] = value;
    }

    /// [value field][pipe][index].
    fn reg(&self, reg: u32) -> Vec<Vec<Vec<u64>>> {
        self.state.lock().unwrap().regs[&reg].clone()
    }
}

fn config(endpoint: String) -> BfrtConfig {
    BfrtConfig {
        switch: "tor3".into(),
        endpoint,
        client_id: 7,
        device_id: 0,
        p4_name: P4_NAME.into(),
        timeout: Duration::from_secs(5),
    }
}

fn target() -> Option<TargetDevice> {
    Some(TargetDevice {
        device_id: 0,
        pipe_id: 0xffff,
        direction: 0xff,
        prsr_id: 0xff,
    })
}

fn write(updates: Vec<Update>) -> Seen {
    Seen::Write(WriteRequest {
        target: target(),
        client_id: 7,
        updates,
        atomicity: write_request::Atomicity::ContinueOnError as i32,
        p4_name: P4_NAME.into(),
    })
}

fn exact(id: u32, value: &[u8]) -> KeyField {
    KeyField {
        field_id: id,
        match_type: Some(key_field::MatchType::Exact(key_field::Exact {
            value: value.to_vec(),
        })),
    }
}

fn stream(id: u32, value: &[u8]) -> DataField {
    DataField {
        field_id: id,
        value: Some(data_field::Value::Stream(value.to_vec())),
    }
}

fn entry_update(ty: update::Type, entry: TableEntry) -> Update {
    Update {
        r#type: ty as i32,
        entity: Some(Entity {
            entity: Some(entity::Entity::TableEntry(entry)),
        }),
    }
}

const FLOW: FlowId = FlowId {
    src: 0x0a00_0101,
    dst: 0x0a00_0202,
    proto: 17,
    sport: 0x1234,
    dport: 53,
};

fn flow_key_fields() -> Vec<KeyField> {
    vec![
        exact(1, &[10, 0, 1, 1]),
        exact(2, &[10, 0, 2, 2]),
        exact(3, &[17]),
        exact(4, &[0x12, 0x34]),
        exact(5, &[0, 53]),
    ]
}

// ---------------------------------------------------------------------------------------------

#[test]
fn names_resolve_from_bfrt_json_and_mismatches_name_what_differs() {
    let t = CanaryTables::resolve(&serde_json::to_vec(&bfrt_json()).unwrap()).unwrap();
    assert_eq!((t.dsm.id, t.dsm.action_id), (DSM_ID, DSM_HIT));
    assert_eq!(
        t.dsm
            .keys
            .iter()
            .map(|k| (k.id, k.bytes()))
            .collect::<Vec<_>>(),
        [(1, 4), (2, 4), (3, 1), (4, 2), (5, 2), (6, 4)]
    );
    assert_eq!(
        (t.hh.id, t.hh.action_id, t.hh.params.len()),
        (HH_ID, HH_WATCH, 1)
    );
    assert_eq!(t.switch_config.params.len(), 3);
    assert_eq!(t.hh_digest.id, DIGEST_ID);
    assert_eq!(
        (t.usm.params.len(), t.dsm.params.len()),
        (1, 1),
        "the rule ID"
    );
    assert_eq!(t.layout.usm_config(), MeterConfig::new(3, WIDTH).unwrap());
    assert_eq!(t.layout.meter_names().len(), 12);
    assert_eq!(t.registers.len(), 12 + 6);
    let state = t
        .register("pipe.CanaryIngress.downstream_meter.meter.row1.state_reg")
        .unwrap();
    assert_eq!(
        (
            state.value("dirty").map(|f| f.id),
            state.value("count").map(|f| f.id)
        ),
        (Some(65557), Some(65558)),
        "a pair register's members"
    );

    let bad = |edit: &dyn Fn(&mut Value)| {
        let mut j = bfrt_json();
        edit(&mut j);
        CanaryTables::resolve(&serde_json::to_vec(&j).unwrap()).unwrap_err()
    };
    let e = bad(&|j| {
        j["tables"][0]["key"][5]["name"] = json!("pathbf");
    });
    assert!(
        matches!(&e, ResolveError::NoKeyField { table, field, .. } if table == "pipe.CanaryIngress.downstream_meter.dsm_table" && field == "path_bf"),
        "{e}"
    );
    let e = bad(&|j| {
        j["tables"][2]["action_specs"][0]["name"] = json!("CanaryIngress.hh_report.hh_report");
    });
    assert!(
        matches!(&e, ResolveError::NoAction { action, .. } if action == "hh_watch"),
        "{e}"
    );
    let e = bad(&|j| {
        j["tables"][3]["action_specs"][0]["data"][1]["name"] = json!("pathbf_mask");
    });
    assert!(
        matches!(&e, ResolveError::NoParam { param, .. } if param == "mask"),
        "{e}"
    );
    let e = bad(&|j| {
        j["tables"][1]["key"][0]["match_type"] = json!("Ternary");
    });
    assert!(
        e.to_string()
            .contains("src_addr is Ternary, Canary needs Exact"),
        "{e}"
    );
    let e = bad(&|j| {
        let t = j["tables"].as_array_mut().unwrap();
        t.retain(|t| t["name"] != "pipe.CanaryIngress.hh_report.hh_table");
    });
    assert!(
        matches!(&e, ResolveError::NoTable { name } if name == "hh_report.hh_table"),
        "{e}"
    );
    let e = bad(&|j| {
        j["learn_filters"][0]["fields"][5]["name"] = json!("bf");
    });
    assert!(
        matches!(&e, ResolveError::NoLearnField { field, .. } if field == "path_bf"),
        "{e}"
    );
    let e = bad(&|j| {
        let t = j["tables"].as_array_mut().unwrap();
        t.retain(|t| t["name"] != "pipe.CanaryIngress.upstream_meter.meter.row2.state_reg");
    });
    assert!(
        e.to_string()
            .contains("upstream_meter.meter.row2.state_reg"),
        "{e}"
    );
    // A state register without its count member: named, with what it has.
    let e = bad(&|j| {
        for t in j["tables"].as_array_mut().unwrap() {
            if t["name"] == "pipe.CanaryIngress.upstream_meter.meter.row0.state_reg" {
                t["data"].as_array_mut().unwrap().pop();
            }
        }
    });
    assert!(
        matches!(&e, ResolveError::RegisterData { table, has, .. }
            if table.ends_with("upstream_meter.meter.row0.state_reg") && has == &["dirty"]),
        "{e}"
    );
}

#[tokio::test]
async fn session_sends_the_exact_messages() {
    let fake = FakeSwitch::new(bfrt_json());
    let endpoint = fake.serve().await;
    let mut c = BfrtClient::connect(config(endpoint)).await.unwrap();
    assert_eq!(
        fake.take(),
        [Seen::Stream(StreamMessageRequest {
            client_id: 7,
            update: Some(stream_message_request::Update::Subscribe(Subscribe {
                is_master: true,
                device_id: 0,
                notifications: Some(bfrt::subscribe::Notifications {
                    enable_learn_notifications: true,
                    ..Default::default()
                }),
                status: None,
            })),
        })]
    );
    assert!(matches!(c.tables(), Err(BfrtError::NotBound { .. })));

    c.bind().await.unwrap();
    assert_eq!(
        fake.take(),
        [
            Seen::SetConfig(SetForwardingPipelineConfigRequest {
                device_id: 0,
                client_id: 7,
                action: set_forwarding_pipeline_config_request::Action::Bind as i32,
                config: vec![ForwardingPipelineConfig {
                    p4_name: P4_NAME.into(),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            Seen::GetConfig(GetForwardingPipelineConfigRequest {
                device_id: 0,
                client_id: 7,
            }),
        ]
    );

    // Install a DSM rule: one INSERT with the six exact keys at their widths and dsm_hit.
    c.apply(&[RuleOp::InstallDsm {
        switch: 3,
        flow: FLOW,
        path_bf: 0x8000_0401,
    }])
    .await
    .unwrap();
    let mut dsm_key = flow_key_fields();
    dsm_key.push(exact(6, &[0x80, 0, 0x04, 0x01]));
    assert_eq!(
        fake.take(),
        [write(vec![entry_update(
            update::Type::Insert,
            TableEntry {
                table_id: DSM_ID,
                value: Some(table_entry::Value::Key(TableKey {
                    fields: dsm_key.clone()
                })),
                data: Some(TableData {
                    action_id: DSM_HIT,
                    fields: vec![stream(1, &[0, 0, 0, 1])],
                }),
                ..Default::default()
            }
        )])]
    );

    // Remove it, a USM install and an HH install (eta as its action parameter), in one batch.
    c.apply(&[
        RuleOp::RemoveDsm {
            switch: 3,
            flow: FLOW,
            path_bf: 0x8000_0401,
        },
        RuleOp::InstallUsm {
            switch: 3,
            flow: FLOW,
        },
        RuleOp::InstallHh {
            switch: 3,
            path_bf: 0x11,
            eta: 500,
        },
    ])
    .await
    .unwrap();
    assert_eq!(
        fake.take(),
        [write(vec![
            entry_update(
                update::Type::Delete,
                TableEntry {
                    table_id: DSM_ID,
                    value: Some(table_entry::Value::Key(TableKey { fields: dsm_key })),
                    ..Default::default()
                }
            ),
            entry_update(
                update::Type::Insert,
                TableEntry {
                    table_id: USM_ID,
                    value: Some(table_entry::Value::Key(TableKey {
                        fields: flow_key_fields()
                    })),
                    // The second rule ID: the DSM rule's is retiring, not free.
                    data: Some(TableData {
                        action_id: USM_COUNT,
                        fields: vec![stream(1, &[0, 0, 0, 2])],
                    }),
                    ..Default::default()
                }
            ),
            entry_update(
                update::Type::InsertOrModify,
                TableEntry {
                    table_id: HH_ID,
                    value: Some(table_entry::Value::Key(TableKey {
                        fields: vec![exact(1, &[0, 0, 0, 0x11])]
                    })),
                    data: Some(TableData {
                        action_id: HH_WATCH,
                        fields: vec![stream(1, &[0, 0, 0x01, 0xf4])],
                    }),
                    ..Default::default()
                }
            ),
        ])]
    );

    // The parity flip: switch_config's default entry.
    c.set_config(true, 0x0102_0304, Parity::Odd).await.unwrap();
    assert_eq!(
        fake.take(),
        [write(vec![entry_update(
            update::Type::Modify,
            TableEntry {
                table_id: CONFIG_ID,
                is_default_entry: true,
                data: Some(TableData {
                    action_id: SET_CONFIG,
                    fields: vec![stream(1, &[1]), stream(2, &[1, 2, 3, 4]), stream(3, &[1])],
                }),
                ..Default::default()
            }
        )])]
    );

    // Read a pair register: SyncRegisters, then a keyless read; per member one value per pipe.
    let count = "pipe.CanaryIngress.upstream_meter.meter.row2.state_reg";
    let count_id = register_id("upstream_meter.meter.row2.state_reg");
    fake.set(count_id, 1, 0, 5, 77);
    fake.set(count_id, 1, 1, 2047, u64::from(u32::MAX));
    fake.set(count_id, 0, 1, 2047, 1);
    let v = c.read_registers(&[count]).await.unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].register, count);
    assert_eq!(v[0].pipes(), PIPES);
    let mut want = vec![vec![0u64; 2 * WIDTH]; PIPES];
    want[0][5] = 77;
    want[1][2047] = u64::from(u32::MAX);
    assert_eq!(v[0].field("count").unwrap(), want);
    let mut want = vec![vec![0u64; 2 * WIDTH]; PIPES];
    want[1][2047] = 1;
    assert_eq!(v[0].field("dirty").unwrap(), want);
    assert_eq!(
        fake.take(),
        [
            write(vec![Update {
                r#type: update::Type::Insert as i32,
                entity: Some(Entity {
                    entity: Some(entity::Entity::TableOperation(TableOperation {
                        table_id: count_id,
                        table_operations_type: "SyncRegisters".into(),
                    })),
                }),
            }]),
            Seen::Read(ReadRequest {
                target: target(),
                client_id: 7,
                entities: vec![Entity {
                    entity: Some(entity::Entity::TableEntry(TableEntry {
                        table_id: count_id,
                        ..Default::default()
                    })),
                }],
                p4_name: P4_NAME.into(),
            }),
        ]
    );

    // Clear: a keyless DELETE per table.
    let used = "pipe.CanaryIngress.upstream_meter.meter.row2.id_reg";
    c.clear_registers(&[count, used]).await.unwrap();
    let clear = |id| {
        entry_update(
            update::Type::Delete,
            TableEntry {
                table_id: id,
                ..Default::default()
            },
        )
    };
    assert_eq!(
        fake.take(),
        [write(vec![
            clear(count_id),
            clear(register_id("upstream_meter.meter.row2.id_reg"))
        ])]
    );
    assert_eq!(fake.reg(count_id), vec![vec![vec![0; 2 * WIDTH]; PIPES]; 2]);
    let e = c
        .read_registers(&["pipe.CanaryIngress.nope_reg"])
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("tor3") && e.to_string().contains("nope_reg"),
        "{e}"
    );

    // A digest: decoded into (flow, pathBF) reports and acknowledged with its ids.
    assert_eq!(
        c.next_digest(Duration::from_millis(50)).await.unwrap(),
        None
    );
    let digest_data = |f: &FlowId, bf: u32| TableData {
        action_id: 0,
        fields: vec![
            stream(1, &f.src.to_be_bytes()),
            stream(2, &f.dst.to_be_bytes()),
            stream(3, &[f.proto]),
            stream(4, &f.sport.to_be_bytes()),
            stream(5, &f.dport.to_be_bytes()),
            stream(6, &bf.to_be_bytes()),
        ],
    };
    let other = FlowId {
        proto: 6,
        dport: 443,
        ..FLOW
    };
    let tx = fake.state.lock().unwrap().stream.clone().unwrap();
    tx.send(Ok(StreamMessageResponse {
        update: Some(stream_message_response::Update::Digest(DigestList {
            digest_id: DIGEST_ID,
            list_id: 42,
            data: vec![digest_data(&FLOW, 0x11), digest_data(&other, 0x8000_0001)],
            target: target(),
        })),
    }))
    .await
    .unwrap();
    let reports = c
        .next_digest(Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reports, vec![(FLOW, 0x11), (other, 0x8000_0001)]);
    // The acknowledgement travels on the stream; give the server a moment to record it.
    let ack = Seen::Stream(StreamMessageRequest {
        client_id: 7,
        update: Some(stream_message_request::Update::DigestAck(
            bfrt::DigestListAck {
                digest_id: DIGEST_ID,
                list_id: 42,
            },
        )),
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut seen = Vec::new();
    while !seen.contains(&ack) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        seen.extend(fake.take());
    }
    assert_eq!(seen, [ack]);
}

#[tokio::test]
async fn harvest_reads_each_pipe_and_clears_only_its_parity_half_and_hashpipe() {
    let fake = FakeSwitch::new(bfrt_json());
    let mut c = BfrtClient::connect(config(fake.serve().await))
        .await
        .unwrap();
    c.bind().await.unwrap();

    // 1 500 USM rules, installed through the client so it holds their IDs.
    let flows: Vec<FlowId> = (0..1500u32)
        .map(|i| FlowId {
            sport: i as u16,
            ..FLOW
        })
        .collect();
    let ops: Vec<RuleOp> = flows
        .iter()
        .map(|&flow| RuleOp::InstallUsm { switch: 3, flow })
        .collect();
    c.apply(&ops).await.unwrap();

    // Pipe 1's even half holds a USM fed with packets, written as p4src/tna stores it (the
    // rule's ID, {dirty, count}); pipe 0 is empty; the odd half and HashPipe hold something.
    let cfg = MeterConfig::new(3, WIDTH).unwrap();
    let mut usm = Usm::new(cfg).unwrap();
    for i in 0..3000usize {
        let f = flows[i % 1500];
        usm.update(&f, FlowHashes::of(&f));
    }
    assert!(usm.dirty_buckets() > 0);
    for r in 0..3 {
        let id_reg = register_id(&format!("upstream_meter.meter.row{r}.id_reg"));
        let state_reg = register_id(&format!("upstream_meter.meter.row{r}.state_reg"));
        for col in 0..WIDTH {
            let b = usm.bucket(r, col);
            let Some(f) = b.flow else { continue };
            let id = c.rule_ids().id(&RuleKey::Usm(f)).unwrap();
            fake.set(id_reg, 0, 1, col, u64::from(id));
            fake.set(state_reg, 0, 1, col, u64::from(b.dirty));
            fake.set(state_reg, 1, 1, col, u64::from(b.count));
        }
    }
    let odd = register_id("upstream_meter.meter.row0.state_reg");
    fake.set(odd, 1, 0, WIDTH + 9, 4);
    let hp = register_id("hashpipe.stage1.count_reg");
    fake.set(hp, 0, 1, 3, 0xdead_beef);
    fake.set(hp, 1, 1, 3, 12);
    fake.take();

    let snaps = c.harvest(3, Parity::Even).await.unwrap();
    assert_eq!(snaps.len(), PIPES);
    assert_eq!(snaps[1].usm, usm);
    assert_eq!(snaps[0].usm, Usm::new(cfg).unwrap());
    for s in &snaps {
        assert_eq!((s.switch, s.parity), (3, Parity::Even));
        assert_eq!(s.dsm.occupied(), 0);
    }
    // One sync write and one read of the 12 meter registers; then the clears: a MODIFY per
    // cell of the even half (12 × 1 024) and a keyless DELETE per HashPipe register (6), in
    // Writes of at most 4 096 updates.
    let seen = fake.take();
    let (Seen::Write(sync), Seen::Read(read)) = (&seen[0], &seen[1]) else {
        panic!("{:#?}", &seen[..2]);
    };
    assert_eq!((sync.updates.len(), read.entities.len()), (12, 12));
    let clears: Vec<&Update> = seen[2..]
        .iter()
        .flat_map(|s| match s {
            Seen::Write(w) => {
                assert!(w.updates.len() <= 4096);
                w.updates.iter()
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(seen.len(), 2 + 4);
    let modify = clears
        .iter()
        .filter(|u| u.r#type == update::Type::Modify as i32)
        .count();
    let delete = clears
        .iter()
        .filter(|u| u.r#type == update::Type::Delete as i32)
        .count();
    assert_eq!(
        (modify, delete, clears.len()),
        (12 * WIDTH, 6, 12 * WIDTH + 6)
    );

    for r in 0..3 {
        for reg in ["id", "state"] {
            let id = register_id(&format!("upstream_meter.meter.row{r}.{reg}_reg"));
            for field in fake.reg(id) {
                for pipe in field {
                    assert!(pipe[..WIDTH].iter().all(|&v| v == 0), "even half cleared");
                }
            }
        }
    }
    assert_eq!(fake.reg(odd)[1][0][WIDTH + 9], 4, "odd half untouched");
    assert_eq!(
        fake.reg(hp),
        vec![vec![vec![0; 32]; PIPES]; 2],
        "HashPipe cleared"
    );

    // A bucket holding an ID the client never assigned fails the harvest, naming the register
    // and cell, and clears nothing.
    let id_reg = register_id("downstream_meter.meter.row2.id_reg");
    fake.set(id_reg, 0, 0, WIDTH + 5, 999_999);
    fake.set(odd, 1, 0, WIDTH + 9, 5);
    fake.take();
    let e = c.harvest(3, Parity::Odd).await.unwrap_err().to_string();
    assert!(
        e.contains("tor3")
            && e.contains("downstream_meter.meter.row2.id_reg")
            && e.contains("[1029]"),
        "{e}"
    );
    assert!(
        fake.take().iter().all(|s| !matches!(s, Seen::Write(w) if w.updates.iter().any(|u| u.r#type == update::Type::Modify as i32))),
        "no clear after a failed decode"
    );
    assert_eq!(fake.reg(odd)[1][0][WIDTH + 9], 5);
}
