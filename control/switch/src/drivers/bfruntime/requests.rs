//! What the driver sends: Canary's entries and writes as table entries and updates, register
//! syncs, wildcard reads, and the clears and zeroings of registers.

use super::{entity_update, exact, stream, SYNC};
use crate::contract::{Program, Register};
use crate::drivers::p4runtime::{bytes, ValueError};
use crate::entries::{Change, Entry, Key, Write};
use crate::meters::Cell;
use bfrt_proto::bfrt::{
    entity, key_field, table_entry, update, Entity, KeyField, TableData, TableEntry, TableKey,
    TableOperation, Update,
};

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

/// Reading cell `index` of register `r` (its entry keyed by `$REGISTER_INDEX`); `None` for a
/// register without that key field or an index too wide for it.
pub fn read_cell(r: &Register, index: usize) -> Option<Entity> {
    let ix = r.index?;
    Some(Entity {
        entity: Some(entity::Entity::TableEntry(TableEntry {
            table_id: r.id,
            value: Some(table_entry::Value::Key(TableKey {
                fields: vec![exact(ix.id, bytes(index as u128, ix)?)],
            })),
            ..Default::default()
        })),
    })
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
