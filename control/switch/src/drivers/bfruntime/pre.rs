//! The packet replication engine's fixed tables (`$pre.node`, `$pre.mgid`): resolved by name
//! from the switch's non-P4 `bfrt.json`, and a multicast group written as their entries.

use super::{entity_update, exact, stream};
use crate::contract::{ContractError, Field};
use crate::entries::McGroup;
use bfrt_proto::bfrt::{
    data_field, entity, table_entry, update, DataField, TableData, TableEntry, TableKey, Update,
};

/// The packet replication engine's tables as the switch has them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreTables {
    pub node: u32,
    pub node_id: Field,
    pub rid: Field,
    pub lag_ids: Field,
    pub dev_ports: Field,
    pub mgid: u32,
    pub mgid_key: Field,
    pub nodes: Field,
    pub l1_xid_valid: Field,
    pub l1_xid: Field,
}

#[derive(serde::Deserialize)]
struct FixedJson {
    tables: Vec<FixedTable>,
}

#[derive(serde::Deserialize)]
struct FixedTable {
    name: String,
    id: u32,
    #[serde(default)]
    key: Vec<FixedField>,
    #[serde(default)]
    data: Vec<FixedData>,
}

#[derive(serde::Deserialize)]
struct FixedData {
    singleton: Option<FixedField>,
}

#[derive(serde::Deserialize)]
struct FixedField {
    id: u32,
    name: String,
    #[serde(rename = "type", default)]
    ty: Option<serde_json::Value>,
}

impl FixedField {
    fn field(&self) -> Field {
        let bits = match self
            .ty
            .as_ref()
            .and_then(|t| t.get("type"))
            .and_then(|t| t.as_str())
        {
            Some("uint8") => 8,
            Some("uint16") => 16,
            Some("uint64") => 64,
            Some("bool") => 1,
            Some("bytes") => self
                .ty
                .as_ref()
                .and_then(|t| t.get("width"))
                .and_then(|w| w.as_u64())
                .unwrap_or(32) as u32,
            _ => 32,
        };
        Field { id: self.id, bits }
    }
}

impl PreTables {
    /// Resolves `$pre.node` and `$pre.mgid` from a non-P4 `bfrt.json` (named `file` in errors).
    pub fn from_json(file: &str, json: &[u8]) -> Result<PreTables, ContractError> {
        let info: FixedJson = serde_json::from_slice(json).map_err(|e| ContractError::Format {
            file: file.into(),
            detail: format!("not a bfrt.json: {e}"),
        })?;
        let table = |name: &str| {
            info.tables
                .iter()
                .find(|t| t.name == name)
                .ok_or_else(|| ContractError::Missing {
                    file: file.into(),
                    what: "fixed table",
                    name: name.into(),
                    closest: crate::contract::closest(
                        name,
                        info.tables.iter().map(|t| t.name.as_str()),
                    ),
                })
        };
        let field = |t: &FixedTable, name: &str, key: bool| {
            let mut all = t.key.iter().filter(|_| key).chain(
                t.data
                    .iter()
                    .filter_map(|d| d.singleton.as_ref())
                    .filter(|_| !key),
            );
            all.find(|f| f.name == name)
                .map(FixedField::field)
                .ok_or_else(|| ContractError::Missing {
                    file: file.into(),
                    what: if key { "key field" } else { "data field" },
                    name: format!("{}.{name}", t.name),
                    closest: None,
                })
        };
        let node = table("$pre.node")?;
        let mgid = table("$pre.mgid")?;
        Ok(PreTables {
            node: node.id,
            node_id: field(node, "$MULTICAST_NODE_ID", true)?,
            rid: field(node, "$MULTICAST_RID", false)?,
            lag_ids: field(node, "$MULTICAST_LAG_ID", false)?,
            dev_ports: field(node, "$DEV_PORT", false)?,
            mgid: mgid.id,
            mgid_key: field(mgid, "$MGID", true)?,
            nodes: field(mgid, "$MULTICAST_NODE_ID", false)?,
            l1_xid_valid: field(mgid, "$MULTICAST_NODE_L1_XID_VALID", false)?,
            l1_xid: field(mgid, "$MULTICAST_NODE_L1_XID", false)?,
        })
    }
}

/// The `$pre.node` id of group `g`'s replicas with replication id `rid`: unique per (group,
/// rid), below `$pre.node`'s 2^24.
pub fn node_id(group: u16, rid: u16) -> u32 {
    u32::from(group) << 2 | u32::from(rid & 3)
}

fn int_arr(field_id: u32, v: Vec<u32>) -> DataField {
    DataField {
        field_id,
        value: Some(data_field::Value::IntArrVal(data_field::IntArray {
            val: v,
        })),
    }
}

/// Group `g` as `$pre.node` entries (one per replication id present) followed by its
/// `$pre.mgid` entry, each `kind`.
pub fn group_updates(pre: &PreTables, g: &McGroup, kind: update::Type) -> Vec<Update> {
    let mut rids: Vec<u16> = g.replicas.iter().map(|r| r.1).collect();
    rids.sort_unstable();
    rids.dedup();
    let mut out = Vec::with_capacity(rids.len() + 1);
    let nodes: Vec<u32> = rids.iter().map(|&rid| node_id(g.id, rid)).collect();
    for (&rid, &node) in rids.iter().zip(&nodes) {
        let ports: Vec<u32> = g
            .replicas
            .iter()
            .filter(|r| r.1 == rid)
            .map(|r| r.0)
            .collect();
        out.push(entity_update(
            kind,
            entity::Entity::TableEntry(TableEntry {
                table_id: pre.node,
                value: Some(table_entry::Value::Key(TableKey {
                    fields: vec![exact(pre.node_id.id, node.to_be_bytes().to_vec())],
                })),
                data: Some(TableData {
                    action_id: 0,
                    fields: vec![
                        stream(pre.rid.id, rid.to_be_bytes().to_vec()),
                        int_arr(pre.lag_ids.id, vec![]),
                        int_arr(pre.dev_ports.id, ports),
                    ],
                }),
                ..Default::default()
            }),
        ));
    }
    let n = nodes.len();
    out.push(entity_update(
        kind,
        entity::Entity::TableEntry(TableEntry {
            table_id: pre.mgid,
            value: Some(table_entry::Value::Key(TableKey {
                fields: vec![exact(pre.mgid_key.id, g.id.to_be_bytes().to_vec())],
            })),
            data: Some(TableData {
                action_id: 0,
                fields: vec![
                    int_arr(pre.nodes.id, nodes),
                    DataField {
                        field_id: pre.l1_xid_valid.id,
                        value: Some(data_field::Value::BoolArrVal(data_field::BoolArray {
                            val: vec![false; n],
                        })),
                    },
                    int_arr(pre.l1_xid.id, vec![0; n]),
                ],
            }),
            ..Default::default()
        }),
    ));
    out
}
