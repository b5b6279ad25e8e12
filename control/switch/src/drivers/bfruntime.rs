//! Canary's writes, register reads and digests as BF Runtime messages, with the ids and widths of
//! a program resolved from its `bfrt.json` ([`crate::contract::Program::from_bfrt_json`]), and
//! the packet replication engine's fixed tables (`$pre.node`, `$pre.mgid`) resolved by name from
//! the switch's non-P4 `bfrt.json`. Pure: the Tofino driver adds the I/O, the model-backed BF-RT
//! server the other side.
//!
//! * A table entry is a `TableEntry` with its key fields and its action's data fields, each a
//!   big-endian byte string of its width; `switch_config`'s is its default entry.
//! * A register is a table keyed by `$REGISTER_INDEX`; it is read by syncing it from hardware
//!   (its `Sync` operation) and reading every entry, or the entries of some indexes by key;
//!   each data field comes once per pipe.
//! * A multicast group is one `$pre.node` per replication id (its ports) and the `$pre.mgid`
//!   entry listing those nodes.

mod answers;
mod pre;
mod registers;
mod requests;

pub use answers::{
    decode_digest, decode_digest_list, default_entry_args, entries_by_table, entry_of,
};
pub use pre::{group_updates, node_id, PreTables};
pub use registers::{meter_cells, meter_cells_at, register_cells};
pub use requests::{
    clear_table, read_all, read_cell, sync_update, table_entry, write_update, zero_cell, zero_cells,
};

use bfrt_proto::bfrt::{
    data_field, entity, key_field, update, DataField, Entity, KeyField, Update,
};

/// The register table operation that copies a register from hardware into the driver.
pub const SYNC: &str = "Sync";

/// An exact-match key field.
fn exact(field_id: u32, value: Vec<u8>) -> KeyField {
    KeyField {
        field_id,
        match_type: Some(key_field::MatchType::Exact(key_field::Exact { value })),
    }
}

/// A data field of bytes.
fn stream(field_id: u32, value: Vec<u8>) -> DataField {
    DataField {
        field_id,
        value: Some(data_field::Value::Stream(value)),
    }
}

/// One update of `kind` carrying entity `e`.
fn entity_update(kind: update::Type, e: entity::Entity) -> Update {
    Update {
        r#type: kind as i32,
        entity: Some(Entity { entity: Some(e) }),
    }
}

/// A big-endian value of up to 16 bytes; `None` when longer.
fn be(b: &[u8]) -> Option<u128> {
    (b.len() <= 16).then(|| b.iter().fold(0u128, |a, &x| a << 8 | u128::from(x)))
}

#[cfg(test)]
mod tests;
