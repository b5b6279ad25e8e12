//! Canary's writes, register reads and digests as BF Runtime messages, with the ids and widths of
//! a program resolved from its `bfrt.json` ([`crate::contract::Program::from_bfrt_json`]), and
//! the packet replication engine's fixed tables (`$pre.node`, `$pre.mgid`) resolved by name from
//! the switch's non-P4 `bfrt.json`. Pure: the Tofino driver adds the I/O, the model-backed BF-RT
//! server the other side.
//!
//! * A table entry is a `TableEntry` with its key fields and its action's data fields, each a
//!   big-endian byte string of its width; `switch_config`'s is its default entry.
//! * A register is a table keyed by `$REGISTER_INDEX`; it is read by syncing it from hardware
//!   (its `Sync` operation) and reading every entry; each data field comes once per pipe.
//! * A multicast group is one `$pre.node` per replication id (its ports) and the `$pre.mgid`
//!   entry listing those nodes.

use super::p4runtime::{bytes, ValueError};
use crate::contract::{ContractError, Field, Program, Register, ResolvedTable, Table};
use crate::driver::Digests;
use crate::entries::{Change, Entry, Key, McGroup, Write};
use crate::meters::{Cell, MeterCells, RowCells};
use bfrt_proto::bfrt::{
    self, data_field, entity, key_field, table_entry, update, DataField, Entity, KeyField,
    TableData, TableEntry, TableKey, TableOperation, Update,
};
use canary_core::flow::Addr;
use canary_core::FlowId;
use std::collections::HashMap;

/// The register table operation that copies a register from hardware into the driver.
pub const SYNC: &str = "Sync";

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

fn exact(field_id: u32, value: Vec<u8>) -> KeyField {
    KeyField {
        field_id,
        match_type: Some(key_field::MatchType::Exact(key_field::Exact { value })),
    }
}

fn stream(field_id: u32, value: Vec<u8>) -> DataField {
    DataField {
        field_id,
        value: Some(data_field::Value::Stream(value)),
    }
}

fn entity_update(kind: update::Type, e: entity::Entity) -> Update {
    Update {
        r#type: kind as i32,
        entity: Some(Entity { entity: Some(e) }),
    }
}

/// The table entry `e` is, in BF Runtime terms.
pub fn table_entry(prog: &Program, e: &Entry) -> Result<TableEntry, ValueError> {
    let t = prog.table(e.table);
    let bad = |field: String, value: u128, bits: u32| ValueError {
        table: t.name.clone(),
        field,
        value,
        bits,
    };
    let mut keys = Vec::with_capacity(e.keys.len());
    for (i, (k, f)) in e.keys.iter().zip(&t.keys).enumerate() {
        let (v, len) = match *k {
            Key::Exact(v) => (v, None),
            Key::Lpm(v, l) => (v, Some(l)),
        };
        let value = bytes(v, *f).ok_or_else(|| bad(format!("key field {i}"), v, f.bits))?;
        keys.push(match len {
            None => exact(f.id, value),
            Some(prefix_len) => KeyField {
                field_id: f.id,
                match_type: Some(key_field::MatchType::Lpm(key_field::Lpm {
                    value,
                    prefix_len: prefix_len as i32,
                })),
            },
        });
    }
    let mut fields = Vec::with_capacity(e.args.len());
    for (i, (&v, f)) in e.args.iter().zip(&t.params).enumerate() {
        let value = bytes(v, *f).ok_or_else(|| bad(format!("parameter {i}"), v, f.bits))?;
        fields.push(stream(f.id, value));
    }
    Ok(TableEntry {
        table_id: t.id,
        value: (!e.default).then_some(table_entry::Value::Key(TableKey { fields: keys })),
        data: Some(TableData {
            action_id: t.action_id,
            fields,
        }),
        is_default_entry: e.default,
        ..Default::default()
    })
}

/// The entry a switch returned for table `table` (the inverse of [`table_entry`]): keys and
/// parameters in the contract's order, by field id. Errors name the table and the field.
pub fn entry_of(prog: &Program, table: Table, te: &TableEntry) -> Result<Entry, String> {
    let t = prog.table(table);
    if te.table_id != t.id {
        return Err(format!(
            "{}: entry of table id {} read back",
            t.name, te.table_id
        ));
    }
    let fits = |b: &[u8], bits: u32| be(b).filter(|v| bits >= 128 || v >> bits == 0);
    let mut keys = Vec::with_capacity(t.keys.len());
    if !te.is_default_entry {
        let Some(table_entry::Value::Key(k)) = &te.value else {
            return Err(format!("{}: an entry without a key", t.name));
        };
        for (i, f) in t.keys.iter().enumerate() {
            let kf = k
                .fields
                .iter()
                .find(|x| x.field_id == f.id)
                .ok_or_else(|| format!("{}: key field {i} (id {}) missing", t.name, f.id))?;
            let bad = || format!("{}: key field {i} does not fit {} bits", t.name, f.bits);
            keys.push(match &kf.match_type {
                Some(key_field::MatchType::Exact(x)) => {
                    Key::Exact(fits(&x.value, f.bits).ok_or_else(bad)?)
                }
                Some(key_field::MatchType::Lpm(x)) => Key::Lpm(
                    fits(&x.value, f.bits).ok_or_else(bad)?,
                    u32::try_from(x.prefix_len).map_err(|_| bad())?,
                ),
                _ => {
                    return Err(format!(
                        "{}: key field {i} is neither exact nor LPM",
                        t.name
                    ))
                }
            });
        }
    }
    let data = te
        .data
        .as_ref()
        .ok_or_else(|| format!("{}: the entry has no data", t.name))?;
    if data.action_id != t.action_id {
        return Err(format!(
            "{}: action id {} is not Canary's",
            t.name, data.action_id
        ));
    }
    let mut args = Vec::with_capacity(t.params.len());
    for (i, f) in t.params.iter().enumerate() {
        let v = data
            .fields
            .iter()
            .find(|x| x.field_id == f.id)
            .and_then(|x| match &x.value {
                Some(data_field::Value::Stream(b)) => fits(b, f.bits),
                _ => None,
            })
            .ok_or_else(|| {
                format!(
                    "{}: parameter {i} (id {}) missing or too wide",
                    t.name, f.id
                )
            })?;
        args.push(v);
    }
    Ok(Entry {
        table,
        keys,
        args,
        default: te.is_default_entry,
    })
}

/// The update for one write. A delete carries only the key; a default entry is modified.
pub fn write_update(prog: &Program, w: &Write) -> Result<Update, ValueError> {
    let mut entry = table_entry(prog, &w.entry)?;
    let kind = match w.change {
        Change::Insert if w.entry.default => update::Type::Modify,
        Change::Insert => update::Type::Insert,
        Change::Modify => update::Type::Modify,
        Change::Delete => {
            entry.data = None;
            update::Type::Delete
        }
    };
    Ok(entity_update(kind, entity::Entity::TableEntry(entry)))
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

/// Syncing register `r` from hardware (a table operation, written before a read).
pub fn sync_update(r: &Register) -> Update {
    entity_update(
        update::Type::Unspecified,
        entity::Entity::TableOperation(TableOperation {
            table_id: r.id,
            table_operations_type: SYNC.into(),
        }),
    )
}

/// Reading every entry of table `table_id` (no key: a wildcard read).
pub fn read_all(table_id: u32) -> Entity {
    Entity {
        entity: Some(entity::Entity::TableEntry(TableEntry {
            table_id,
            ..Default::default()
        })),
    }
}

/// Deleting every entry of table `table_id` (for a register: every cell back to 0).
pub fn clear_table(table_id: u32) -> Update {
    entity_update(
        update::Type::Delete,
        entity::Entity::TableEntry(TableEntry {
            table_id,
            ..Default::default()
        }),
    )
}

/// Cell `index` of register `r` set to zero in every data field (all pipes).
pub fn zero_cell(r: &Register, index: usize) -> Option<Update> {
    let ix = r.index?;
    Some(entity_update(
        update::Type::Modify,
        entity::Entity::TableEntry(TableEntry {
            table_id: r.id,
            value: Some(table_entry::Value::Key(TableKey {
                fields: vec![exact(ix.id, bytes(index as u128, ix)?)],
            })),
            data: Some(TableData {
                action_id: 0,
                fields: r
                    .members
                    .iter()
                    .map(|(_, f)| stream(f.id, vec![0; f.bytes()]))
                    .collect(),
            }),
            ..Default::default()
        }),
    ))
}

/// The updates zeroing `cells` (both registers of each) in every pipe.
pub fn zero_cells(prog: &Program, cells: &[Cell]) -> Vec<Update> {
    let mut out = Vec::new();
    for c in cells {
        let rows = if c.dsm {
            &prog.meters.dsm
        } else {
            &prog.meters.usm
        };
        if let Some(row) = rows.get(c.row) {
            out.extend(zero_cell(&row.id, c.index));
            out.extend(zero_cell(&row.count, c.index));
        }
    }
    out
}

fn be(b: &[u8]) -> Option<u128> {
    (b.len() <= 16).then(|| b.iter().fold(0u128, |a, &x| a << 8 | u128::from(x)))
}

/// One register's cells as read: `[member][pipe][index]`.
pub fn register_cells(r: &Register, entries: &[TableEntry]) -> Result<Vec<Vec<Vec<u32>>>, String> {
    let ix = r.index.ok_or("not a BF-RT register")?;
    let mut cells: Vec<Vec<Vec<u32>>> = vec![Vec::new(); r.members.len()];
    let mut seen = vec![false; r.size];
    for te in entries {
        let index = match &te.value {
            Some(table_entry::Value::Key(k)) => k
                .fields
                .iter()
                .find(|f| f.field_id == ix.id)
                .and_then(|f| match &f.match_type {
                    Some(key_field::MatchType::Exact(e)) => be(&e.value),
                    _ => None,
                }),
            _ => None,
        }
        .ok_or_else(|| format!("{}: an entry without $REGISTER_INDEX", r.name))?
            as usize;
        if index >= r.size || std::mem::replace(&mut seen[index], true) {
            return Err(format!(
                "{}: index {index} out of range or repeated",
                r.name
            ));
        }
        for ((member, f), pipes) in r.members.iter().zip(&mut cells) {
            let values: Vec<u32> = te
                .data
                .iter()
                .flat_map(|d| &d.fields)
                .filter(|d| d.field_id == f.id)
                .map(|d| match &d.value {
                    Some(data_field::Value::Stream(b)) if b.len() <= 4 => {
                        Ok(be(b).unwrap_or(0) as u32)
                    }
                    other => Err(format!("{}[{index}].{member}: value {other:?}", r.name)),
                })
                .collect::<Result<_, _>>()?;
            if pipes.is_empty() {
                if values.is_empty() {
                    return Err(format!("{}[{index}]: no value of {member}", r.name));
                }
                *pipes = vec![vec![0; r.size]; values.len()];
            }
            if values.len() != pipes.len() {
                return Err(format!(
                    "{}[{index}].{member}: {} values, other cells {} (one per pipe)",
                    r.name,
                    values.len(),
                    pipes.len()
                ));
            }
            for (p, v) in values.into_iter().enumerate() {
                pipes[p][index] = v;
            }
        }
    }
    // A read that stopped early is not a register of the program: the decoder says so.
    let read = seen.iter().filter(|s| **s).count();
    if read < r.size {
        for pipes in &mut cells {
            for p in pipes.iter_mut() {
                p.truncate(read);
            }
        }
    }
    Ok(cells)
}

/// The meters as read, one [`MeterCells`] per pipe, from the entries of each register table.
pub fn meter_cells(
    prog: &Program,
    by_table: &HashMap<u32, Vec<TableEntry>>,
) -> Result<Vec<MeterCells>, String> {
    let empty = Vec::new();
    let mut pipes: Option<usize> = None;
    let mut rows = |rows: &[crate::contract::MeterRow]| -> Result<Vec<Vec<RowCells>>, String> {
        let mut per_pipe: Vec<Vec<RowCells>> = Vec::new();
        for row in rows {
            let id = register_cells(&row.id, by_table.get(&row.id.id).unwrap_or(&empty))?;
            let count = register_cells(&row.count, by_table.get(&row.count.id).unwrap_or(&empty))?;
            let member = |cells: &Vec<Vec<Vec<u32>>>, reg: &Register, name: &str| {
                reg.members
                    .iter()
                    .position(|(m, _)| m == name)
                    .map(|i| cells[i].clone())
                    .ok_or_else(|| format!("{}: no data field {name}", reg.name))
            };
            let (tag, ids) = (member(&id, &row.id, "tag")?, member(&id, &row.id, "id")?);
            let counts = count
                .first()
                .cloned()
                .ok_or_else(|| format!("{}: no data field", row.count.name))?;
            let n = *pipes.get_or_insert(tag.len());
            if tag.len() != n || ids.len() != n || counts.len() != n {
                return Err(format!(
                    "{}: {} pipes, other registers {n}",
                    row.id.name,
                    tag.len()
                ));
            }
            per_pipe.resize_with(n, Vec::new);
            for p in 0..n {
                per_pipe[p].push(RowCells {
                    id_tag: tag[p].clone(),
                    id: ids[p].clone(),
                    count: counts[p].clone(),
                });
            }
        }
        Ok(per_pipe)
    };
    let usm = rows(&prog.meters.usm)?;
    let dsm = rows(&prog.meters.dsm)?;
    Ok(usm
        .into_iter()
        .zip(dsm)
        .map(|(usm, dsm)| MeterCells { usm, dsm })
        .collect())
}

/// Every digest of a learn list the switch sent, decoded into `out` (reports, or why not); a list
/// of another digest is one bad entry.
pub fn decode_digest_list(prog: &Program, list: &bfrt::DigestList, out: &mut Digests) {
    if list.digest_id != prog.digest.id {
        out.bad
            .push(format!("digest id {} is not the HH digest", list.digest_id));
        return;
    }
    for d in &list.data {
        match decode_digest(prog, d) {
            Ok(r) => out.reports.push(r),
            Err(e) => out.bad.push(e),
        }
    }
}

/// The table entries of one Read answer, added to `out` by table id.
pub fn entries_by_table(answer: bfrt::ReadResponse, out: &mut HashMap<u32, Vec<TableEntry>>) {
    for e in answer.entities {
        if let Some(entity::Entity::TableEntry(te)) = e.entity {
            out.entry(te.table_id).or_default().push(te);
        }
    }
}

/// The action parameters in the data of a Read answer's entries (the last entry with data wins),
/// in `t`'s parameter order; a missing or over-long value reads as 0. `None` without data.
pub fn default_entry_args(t: &ResolvedTable, answer: bfrt::ReadResponse) -> Option<Vec<u128>> {
    let mut args = None;
    for e in answer.entities {
        if let Some(entity::Entity::TableEntry(TableEntry { data: Some(d), .. })) = e.entity {
            args = Some(
                t.params
                    .iter()
                    .map(|p| {
                        d.fields
                            .iter()
                            .find(|f| f.field_id == p.id)
                            .and_then(|f| match &f.value {
                                Some(data_field::Value::Stream(b)) => be(b),
                                _ => None,
                            })
                            .unwrap_or(0)
                    })
                    .collect(),
            );
        }
    }
    args
}

/// One HH digest of a learn list: (flow, incoming pathBF).
pub fn decode_digest(prog: &Program, data: &TableData) -> Result<(FlowId, u32), String> {
    let mut v = [0u128; 6];
    for (i, f) in prog.digest.fields.iter().enumerate() {
        let d = data
            .fields
            .iter()
            .find(|d| d.field_id == f.id)
            .ok_or_else(|| format!("{}: field {} missing", prog.digest.name, f.id))?;
        let Some(data_field::Value::Stream(b)) = &d.value else {
            return Err(format!("{}: field {} is not bytes", prog.digest.name, f.id));
        };
        let x = be(b).ok_or_else(|| format!("{}: field {} too long", prog.digest.name, f.id))?;
        if f.bits < 128 && x >> f.bits != 0 {
            return Err(format!(
                "{}: field {} exceeds {} bits",
                prog.digest.name, f.id, f.bits
            ));
        }
        v[i] = x;
    }
    Ok((
        FlowId {
            src: Addr::v6(v[0]),
            dst: Addr::v6(v[1]),
            proto: v[2] as u8,
            sport: v[3] as u16,
            dport: v[4] as u16,
        },
        v[5] as u32,
    ))
}

#[cfg(test)]
mod tests;
