//! Canary's names in a program's `bfrt.json`, resolved once to BF-RT ids, and the exact BF-RT
//! messages for Canary's operations. No I/O: the client in the parent module sends them.

use std::collections::HashMap;

use bfrt_proto::bfrt::{
    self, data_field, entity, key_field, table_entry, update, DataField, Entity, KeyField,
    TableData, TableEntry, TableKey, TableOperation, Update,
};
use canary_core::fabric::{Parity, RuleOp};
use canary_core::FlowId;

use super::{ResolveError, ValueError, REGISTER_INDEX, SYNC_REGISTERS};
use crate::tna_meters::TnaMeterLayout;

#[derive(serde::Deserialize)]
pub(super) struct InfoJson {
    tables: Vec<TableJson>,
    #[serde(default)]
    learn_filters: Vec<LearnJson>,
}

#[derive(serde::Deserialize)]
struct TableJson {
    name: String,
    id: u32,
    #[serde(default)]
    table_type: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    key: Vec<FieldJson>,
    #[serde(default)]
    action_specs: Vec<ActionJson>,
    #[serde(default)]
    data: Vec<DataJson>,
}

#[derive(serde::Deserialize)]
struct FieldJson {
    id: u32,
    name: String,
    #[serde(default)]
    match_type: Option<String>,
    #[serde(rename = "type", default)]
    ty: Option<TypeJson>,
}

#[derive(serde::Deserialize)]
struct TypeJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    width: Option<u32>,
}

#[derive(serde::Deserialize)]
struct ActionJson {
    id: u32,
    name: String,
    #[serde(default)]
    data: Vec<FieldJson>,
}

#[derive(serde::Deserialize)]
struct DataJson {
    #[serde(default)]
    singleton: Option<FieldJson>,
}

#[derive(serde::Deserialize)]
struct LearnJson {
    name: String,
    id: u32,
    #[serde(default)]
    fields: Vec<FieldJson>,
}

impl FieldJson {
    fn bits(&self) -> u32 {
        match &self.ty {
            Some(TypeJson { width: Some(w), .. }) => *w,
            Some(TypeJson { kind, .. }) => match kind.as_str() {
                "bool" => 1,
                "uint8" => 8,
                "uint16" => 16,
                "uint64" => 64,
                _ => 32,
            },
            None => 32,
        }
    }
    fn field(&self) -> Field {
        Field {
            id: self.id,
            bits: self.bits(),
        }
    }
}

/// One field of a key, action, register or digest: its id and width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub id: u32,
    pub bits: u32,
}

impl Field {
    /// Bytes on the wire: the width rounded up.
    pub fn bytes(&self) -> usize {
        self.bits.div_ceil(8) as usize
    }
}

/// A match table Canary writes: its exact keys in Canary's order, one action and its
/// parameters in Canary's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchTable {
    pub name: String,
    pub id: u32,
    pub keys: Vec<Field>,
    pub action_id: u32,
    pub params: Vec<Field>,
}

/// A register table: the index key and its value fields (one for a scalar register, one per
/// member for a struct, e.g. the meters' `{dirty, count}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterTable {
    pub name: String,
    pub id: u32,
    pub size: usize,
    pub index: Field,
    /// (member name, field): bfrt.json names them `<register>.<member>`, `f1` for a scalar.
    pub values: Vec<(String, Field)>,
}

impl RegisterTable {
    /// The value field of member `member` (`f1` for a scalar register).
    pub fn value(&self, member: &str) -> Option<Field> {
        self.values
            .iter()
            .find(|(m, _)| m == member)
            .map(|(_, f)| *f)
    }
}

/// The HH digest (learn filter) and its fields: src, dst, protocol, sport, dport, pathBF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DigestFilter {
    pub name: String,
    pub id: u32,
    pub fields: [Field; 6],
}

/// The one item named `suffix` or ending in `.suffix`; `Err` lists them when several do.
fn unique<'a, T>(
    items: &'a [T],
    name_of: impl Fn(&T) -> &str,
    suffix: &str,
) -> std::result::Result<Option<&'a T>, Vec<String>> {
    let dotted = format!(".{suffix}");
    let hits: Vec<&T> = items
        .iter()
        .filter(|t| name_of(t) == suffix || name_of(t).ends_with(&dotted))
        .collect();
    match hits.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        many => Err(many.iter().map(|t| name_of(t).to_string()).collect()),
    }
}

fn table<'a>(info: &'a InfoJson, name: &str) -> Result<&'a TableJson, ResolveError> {
    match unique(&info.tables, |t| &t.name, name) {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(ResolveError::NoTable { name: name.into() }),
        Err(matches) => Err(ResolveError::AmbiguousTable {
            name: name.into(),
            matches,
        }),
    }
}

pub(super) fn match_table(
    info: &InfoJson,
    name: &str,
    keys: &[(&str, &'static str)],
    action: &str,
    params: &[&str],
) -> Result<MatchTable, ResolveError> {
    let t = table(info, name)?;
    let mut key_fields = Vec::new();
    for &(k, want) in keys {
        let f = t
            .key
            .iter()
            .find(|f| f.name == k)
            .ok_or_else(|| ResolveError::NoKeyField {
                table: t.name.clone(),
                field: k.into(),
                has: t.key.iter().map(|f| f.name.clone()).collect(),
            })?;
        let got = f.match_type.clone().unwrap_or_default();
        if got != want {
            return Err(ResolveError::KeyMatch {
                table: t.name.clone(),
                field: k.into(),
                got,
                want,
            });
        }
        key_fields.push(f.field());
    }
    let a = match unique(&t.action_specs, |a| &a.name, action) {
        Ok(Some(a)) => a,
        _ => {
            return Err(ResolveError::NoAction {
                table: t.name.clone(),
                action: action.into(),
                has: t.action_specs.iter().map(|a| a.name.clone()).collect(),
            })
        }
    };
    let mut param_fields = Vec::new();
    for &p in params {
        let f = a
            .data
            .iter()
            .find(|f| f.name == p)
            .ok_or_else(|| ResolveError::NoParam {
                table: t.name.clone(),
                action: a.name.clone(),
                param: p.into(),
                has: a.data.iter().map(|f| f.name.clone()).collect(),
            })?;
        param_fields.push(f.field());
    }
    Ok(MatchTable {
        name: t.name.clone(),
        id: t.id,
        keys: key_fields,
        action_id: a.id,
        params: param_fields,
    })
}

const FLOW_KEYS: [(&str, &str); 5] = [
    ("src_addr", "Exact"),
    ("dst_addr", "Exact"),
    ("protocol", "Exact"),
    ("src_port", "Exact"),
    ("dst_port", "Exact"),
];

/// Canary's tables, registers and digest, resolved to BF-RT ids from one `bfrt.json`.
///
/// Builds the exact BF-RT messages for Canary's operations; performs no I/O.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanaryTables {
    pub dsm: MatchTable,
    pub usm: MatchTable,
    pub hh: MatchTable,
    pub switch_config: MatchTable,
    /// Every register table of the meters and HashPipe, by full BF-RT name.
    pub registers: HashMap<String, RegisterTable>,
    /// The meters' and HashPipe's register names (`tna_meters`).
    pub layout: TnaMeterLayout,
    pub hh_digest: DigestFilter,
}

impl CanaryTables {
    /// Resolves every name Canary uses; the first one missing or different is the error.
    pub fn resolve(bfrt_json: &[u8]) -> Result<Self, ResolveError> {
        let info: InfoJson =
            serde_json::from_slice(bfrt_json).map_err(|e| ResolveError::Json(e.to_string()))?;
        let mut dsm_keys = FLOW_KEYS.to_vec();
        dsm_keys.push(("path_bf", "Exact"));
        let dsm = match_table(
            &info,
            "downstream_meter.dsm_table",
            &dsm_keys,
            "dsm_hit",
            &["id"],
        )?;
        let usm = match_table(
            &info,
            "upstream_meter.usm_table",
            &FLOW_KEYS,
            "usm_count",
            &["id"],
        )?;
        let hh = match_table(
            &info,
            "hh_report.hh_table",
            &[("path_bf", "Exact")],
            "hh_watch",
            &["eta"],
        )?;
        let switch_config = match_table(
            &info,
            "switch_config.switch_config",
            &[],
            "set_config",
            &["monitor", "mask", "parity"],
        )?;
        let regs: Vec<&TableJson> = info
            .tables
            .iter()
            .filter(|t| t.table_type == "Register")
            .collect();
        let layout = TnaMeterLayout::from_registers(
            regs.iter().map(|t| (t.name.as_str(), t.size as usize)),
        )?;
        let mut registers = HashMap::new();
        for name in layout.meter_names().iter().chain(layout.hashpipe_names()) {
            let t = regs
                .iter()
                .find(|t| &t.name == name)
                .expect("the layout only holds names of these tables");
            let index = t
                .key
                .iter()
                .find(|f| f.name == REGISTER_INDEX)
                .ok_or_else(|| ResolveError::NoKeyField {
                    table: t.name.clone(),
                    field: REGISTER_INDEX.into(),
                    has: t.key.iter().map(|f| f.name.clone()).collect(),
                })?
                .field();
            let values: Vec<(String, Field)> = t
                .data
                .iter()
                .filter_map(|d| d.singleton.as_ref())
                .map(|f| {
                    let member = f.name.rsplit('.').next().unwrap_or(&f.name);
                    (member.to_string(), f.field())
                })
                .collect();
            // The members the harvest reads: a meter row's ID, and its state's pair.
            let needs: &[&str] = if name.ends_with(".id_reg") {
                &["f1"]
            } else if name.ends_with(".state_reg") && !name.contains(".hashpipe.") {
                &["dirty", "count"]
            } else {
                &[]
            };
            if needs.iter().any(|m| !values.iter().any(|(v, _)| v == m)) || values.is_empty() {
                return Err(ResolveError::RegisterData {
                    table: t.name.clone(),
                    want: needs.join(", "),
                    has: values.iter().map(|(m, _)| m.clone()).collect(),
                });
            }
            registers.insert(
                name.clone(),
                RegisterTable {
                    name: name.clone(),
                    id: t.id,
                    size: t.size as usize,
                    index,
                    values,
                },
            );
        }
        let has_filters = || info.learn_filters.iter().map(|l| l.name.clone()).collect();
        let filter = match unique(&info.learn_filters, |l| &l.name, "hh_digest") {
            Ok(Some(l)) => l,
            _ => {
                return Err(ResolveError::NoLearnFilter {
                    name: "hh_digest".into(),
                    has: has_filters(),
                })
            }
        };
        let names = [
            "src_addr", "dst_addr", "protocol", "src_port", "dst_port", "path_bf",
        ];
        let mut fields = [Field { id: 0, bits: 0 }; 6];
        for (slot, name) in fields.iter_mut().zip(names) {
            *slot = filter
                .fields
                .iter()
                .find(|f| f.name == name)
                .ok_or_else(|| ResolveError::NoLearnField {
                    filter: filter.name.clone(),
                    field: name.into(),
                    has: filter.fields.iter().map(|f| f.name.clone()).collect(),
                })?
                .field();
        }
        Ok(CanaryTables {
            dsm,
            usm,
            hh,
            switch_config,
            registers,
            layout,
            hh_digest: DigestFilter {
                name: filter.name.clone(),
                id: filter.id,
                fields,
            },
        })
    }

    /// The register table called `name` (a full BF-RT name from [`Self::layout`]).
    pub fn register(&self, name: &str) -> Option<&RegisterTable> {
        self.registers.get(name)
    }

    /// The update for one rule change (`RuleOp`'s switch is the caller's business). USM and
    /// DSM installs carry `rule_id` as the action's `id` (`crate::rule_ids`; ignored for the
    /// other operations). HH installs are INSERT_OR_MODIFY: installing over a rule changes its
    /// eta.
    pub fn rule_update(
        &self,
        op: &RuleOp,
        rule_id: u32,
    ) -> std::result::Result<Update, ValueError> {
        let flow = |f: &FlowId| {
            vec![
                u64::from(f.src),
                u64::from(f.dst),
                u64::from(f.proto),
                u64::from(f.sport),
                u64::from(f.dport),
            ]
        };
        let (t, ty, keys, params) = match *op {
            RuleOp::InstallDsm {
                flow: f, path_bf, ..
            } => {
                let mut k = flow(&f);
                k.push(path_bf.into());
                (
                    &self.dsm,
                    update::Type::Insert,
                    k,
                    Some(vec![rule_id.into()]),
                )
            }
            RuleOp::RemoveDsm {
                flow: f, path_bf, ..
            } => {
                let mut k = flow(&f);
                k.push(path_bf.into());
                (&self.dsm, update::Type::Delete, k, None)
            }
            RuleOp::InstallUsm { flow: f, .. } => {
                let id = vec![rule_id.into()];
                (&self.usm, update::Type::Insert, flow(&f), Some(id))
            }
            RuleOp::RemoveUsm { flow: f, .. } => (&self.usm, update::Type::Delete, flow(&f), None),
            RuleOp::InstallHh { path_bf, eta, .. } => (
                &self.hh,
                update::Type::InsertOrModify,
                vec![path_bf.into()],
                Some(vec![eta.into()]),
            ),
            RuleOp::RemoveHh { path_bf, .. } => {
                (&self.hh, update::Type::Delete, vec![path_bf.into()], None)
            }
        };
        let key = exact_key(t, &keys)?;
        let data = params.map(|p| action_data(t, &p)).transpose()?;
        Ok(Update {
            r#type: ty as i32,
            entity: Some(Entity {
                entity: Some(entity::Entity::TableEntry(TableEntry {
                    table_id: t.id,
                    value: Some(table_entry::Value::Key(key)),
                    data,
                    ..Default::default()
                })),
            }),
        })
    }

    /// The parity flip: `switch_config`'s default action `set_config(monitor, mask, parity)`.
    pub fn set_config_update(&self, monitor: bool, mask: u32, parity: Parity) -> Update {
        let data = action_data(
            &self.switch_config,
            &[u64::from(monitor), u64::from(mask), parity.index() as u64],
        )
        .expect("1-bit and 32-bit parameters hold these values");
        Update {
            r#type: update::Type::Modify as i32,
            entity: Some(Entity {
                entity: Some(entity::Entity::TableEntry(TableEntry {
                    table_id: self.switch_config.id,
                    data: Some(data),
                    is_default_entry: true,
                    ..Default::default()
                })),
            }),
        }
    }

    /// Copies a register table from hardware into the driver (before reading it).
    pub fn sync_update(&self, reg: &RegisterTable) -> Update {
        Update {
            r#type: update::Type::Insert as i32,
            entity: Some(Entity {
                entity: Some(entity::Entity::TableOperation(TableOperation {
                    table_id: reg.id,
                    table_operations_type: SYNC_REGISTERS.into(),
                })),
            }),
        }
    }

    /// Zeroes a whole register table (a DELETE without a key clears the table).
    pub fn clear_update(&self, reg: &RegisterTable) -> Update {
        Update {
            r#type: update::Type::Delete as i32,
            entity: Some(Entity {
                entity: Some(entity::Entity::TableEntry(TableEntry {
                    table_id: reg.id,
                    ..Default::default()
                })),
            }),
        }
    }

    /// Zeroes the cells `cells` of a register table, every value field (one MODIFY per cell):
    /// how one parity half of a meter is cleared while the other keeps counting.
    pub fn clear_cells_updates(
        &self,
        reg: &RegisterTable,
        cells: std::ops::Range<usize>,
    ) -> Vec<Update> {
        cells
            .map(|i| Update {
                r#type: update::Type::Modify as i32,
                entity: Some(Entity {
                    entity: Some(entity::Entity::TableEntry(TableEntry {
                        table_id: reg.id,
                        value: Some(table_entry::Value::Key(TableKey {
                            fields: vec![KeyField {
                                field_id: reg.index.id,
                                match_type: Some(key_field::MatchType::Exact(key_field::Exact {
                                    value: encode(&reg.index, i as u64)
                                        .expect("a register index fits its key field"),
                                })),
                            }],
                        })),
                        data: Some(TableData {
                            action_id: 0,
                            fields: reg
                                .values
                                .iter()
                                .map(|(_, f)| DataField {
                                    field_id: f.id,
                                    value: Some(data_field::Value::Stream(vec![0; f.bytes()])),
                                })
                                .collect(),
                        }),
                        ..Default::default()
                    })),
                }),
            })
            .collect()
    }

    /// Reads every entry of a register table.
    pub fn read_entity(&self, reg: &RegisterTable) -> Entity {
        Entity {
            entity: Some(entity::Entity::TableEntry(TableEntry {
                table_id: reg.id,
                ..Default::default()
            })),
        }
    }

    /// Decodes one digest list of the HH filter into (flow, pathBF) reports.
    pub fn decode_digest(
        &self,
        list: &bfrt::DigestList,
    ) -> std::result::Result<Vec<(FlowId, u32)>, String> {
        if list.digest_id != self.hh_digest.id {
            return Err(format!(
                "digest id {} is not {} ({})",
                list.digest_id, self.hh_digest.name, self.hh_digest.id
            ));
        }
        list.data
            .iter()
            .map(|d| {
                let mut v = [0u64; 6];
                for (slot, f) in v.iter_mut().zip(&self.hh_digest.fields) {
                    let field = d
                        .fields
                        .iter()
                        .find(|x| x.field_id == f.id)
                        .ok_or_else(|| {
                            format!("{}: digest without field id {}", self.hh_digest.name, f.id)
                        })?;
                    *slot = match &field.value {
                        Some(data_field::Value::Stream(b)) if b.len() <= 8 => be_value(b),
                        other => {
                            return Err(format!(
                                "{}: field id {} is {other:?}, expected bytes",
                                self.hh_digest.name, f.id
                            ))
                        }
                    };
                }
                Ok((
                    FlowId {
                        src: v[0] as u32,
                        dst: v[1] as u32,
                        proto: v[2] as u8,
                        sport: v[3] as u16,
                        dport: v[4] as u16,
                    },
                    v[5] as u32,
                ))
            })
            .collect()
    }
}

/// Big-endian bytes of `value` in `f.bytes()` bytes, or the offending (value, bits).
fn encode(f: &Field, value: u64) -> std::result::Result<Vec<u8>, (u64, u32)> {
    if f.bits < 64 && value >> f.bits != 0 {
        return Err((value, f.bits));
    }
    Ok(value.to_be_bytes()[8 - f.bytes()..].to_vec())
}

pub(super) fn be_value(b: &[u8]) -> u64 {
    b.iter().fold(0, |acc, &x| acc << 8 | u64::from(x))
}

fn exact_key(t: &MatchTable, values: &[u64]) -> std::result::Result<TableKey, ValueError> {
    let fields = t
        .keys
        .iter()
        .zip(values)
        .enumerate()
        .map(|(i, (f, &v))| {
            let value = encode(f, v).map_err(|(value, bits)| ValueError {
                table: t.name.clone(),
                field: format!("key field {i}"),
                value,
                bits,
            })?;
            Ok(KeyField {
                field_id: f.id,
                match_type: Some(key_field::MatchType::Exact(key_field::Exact { value })),
            })
        })
        .collect::<std::result::Result<_, _>>()?;
    Ok(TableKey { fields })
}

fn action_data(t: &MatchTable, values: &[u64]) -> std::result::Result<TableData, ValueError> {
    let fields = t
        .params
        .iter()
        .zip(values)
        .enumerate()
        .map(|(i, (f, &v))| {
            let stream = encode(f, v).map_err(|(value, bits)| ValueError {
                table: t.name.clone(),
                field: format!("action parameter {i}"),
                value,
                bits,
            })?;
            Ok(DataField {
                field_id: f.id,
                value: Some(data_field::Value::Stream(stream)),
            })
        })
        .collect::<std::result::Result<_, _>>()?;
    Ok(TableData {
        action_id: t.action_id,
        fields,
    })
}
