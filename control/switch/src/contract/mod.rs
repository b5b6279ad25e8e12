//! The program contract: every table, key, action, parameter, register, digest and counter
//! Canary uses in its P4 program (`p4src/`), declared once here and resolved at start against the
//! program a switch runs: the P4Info on BMv2 ([`Program::from_p4info`]), the compiler's
//! `bfrt.json` on Tofino ([`Program::from_bfrt_json`]). A reader per format translates its file
//! into one neutral description (`neutral.rs`) and one resolver (`resolve.rs`) checks it, so both
//! targets are held to the same checks. Names are matched by suffix (the
//! architectures nest controls differently); widths and match kinds are checked; sizes are read
//! from the program, never retyped. An error names what differs and the closest name the program
//! has.
//!
//! The resolved [`Program`] gives ids and widths to the entry builders ([`crate::entries`]) and
//! the register layout to the harvest ([`crate::meters`]); the capacity
//! (`canary_core::capacity::Capacity`) comes from it too.

mod bfrt_json;
mod errors;
mod neutral;
mod p4info;
mod resolve;
mod spec;

pub(crate) use errors::closest;
pub use errors::ContractError;
pub use spec::{
    KeySpec, Kind, Table, TableSpec, COUNT_REGISTER, DIGEST_BFRT, DIGEST_FIELDS, DIGEST_P4INFO,
    HASHPIPE_CONTROL, HH_COUNTER, ID_REGISTER, METERS, PORT_BITS, TABLES,
};

use canary_core::capacity::Capacity;
use canary_core::sketch::{HashPipeConfig, MeterConfig};

/// A field of a key, an action, a register or a digest: its id on the wire and its width.
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

/// A table as the program has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedTable {
    pub table: Table,
    /// The program's full name.
    pub name: String,
    pub id: u32,
    /// In the spec's order.
    pub keys: Vec<Field>,
    pub action_id: u32,
    pub params: Vec<Field>,
    pub size: usize,
}

/// A register as the program has it. On BMv2 a pair is one `bit<64>` (the first member in the
/// upper half) and `members` is empty; on Tofino each member is a data field of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Register {
    pub name: String,
    pub id: u32,
    pub size: usize,
    /// BF-RT's `$REGISTER_INDEX` key field (Tofino only).
    pub index: Option<Field>,
    /// (member, data field), Tofino only.
    pub members: Vec<(String, Field)>,
}

/// One meter row: its two registers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeterRow {
    pub id: Register,
    pub count: Register,
}

/// The meters' registers: USM rows, then DSM rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeterRegisters {
    pub usm: Vec<MeterRow>,
    pub dsm: Vec<MeterRow>,
    /// Buckets per row and parity (a register holds 2 × width cells).
    pub width: usize,
}

impl MeterRegisters {
    pub fn config(&self) -> MeterConfig {
        MeterConfig {
            rows: self.usm.len(),
            width: self.width,
        }
    }

    /// Row `row` of the DSM (`dsm`) or the USM, if the meter has it.
    pub fn row(&self, dsm: bool, row: usize) -> Option<&MeterRow> {
        if dsm {
            self.dsm.get(row)
        } else {
            self.usm.get(row)
        }
    }

    /// Every row, USM first.
    pub fn rows(&self) -> impl Iterator<Item = &MeterRow> {
        self.usm.iter().chain(&self.dsm)
    }
}

/// The HH digest as the program has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digest {
    pub name: String,
    pub id: u32,
    /// In [`DIGEST_FIELDS`]' order (P4Info: member positions, ids from 1).
    pub fields: Vec<Field>,
}

/// Which resolver made a [`Program`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// P4Info (BMv2, or any P4Runtime switch).
    P4Runtime,
    /// `bfrt.json` (Tofino's BF Runtime).
    BfRuntime,
}

/// Canary's program as one switch runs it: every name of the contract resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub target: Target,
    tables: Vec<ResolvedTable>,
    pub meters: MeterRegisters,
    pub hashpipe: Vec<Register>,
    pub digest: Digest,
    /// `hh_report_ctr`, if the program has it.
    pub hh_counter: Option<u32>,
}

impl Program {
    pub fn table(&self, t: Table) -> &ResolvedTable {
        &self.tables[t as usize]
    }

    pub fn tables(&self) -> &[ResolvedTable] {
        &self.tables
    }

    /// What one switch holds, read from the program.
    pub fn capacity(&self) -> Capacity {
        let meter = self.meters.config();
        let entries = self
            .hashpipe
            .iter()
            .filter(|r| r.name.ends_with(".count_reg"))
            .map(|r| r.size)
            .min()
            .unwrap_or(0);
        let stages = self
            .hashpipe
            .iter()
            .filter(|r| r.name.ends_with(".count_reg"))
            .count();
        Capacity {
            meter,
            hashpipe: HashPipeConfig {
                stages,
                entries,
                meter_width: meter.width,
            },
            usm_rules: self.table(Table::Usm).size,
            dsm_rules: self.table(Table::Dsm).size,
            hh_rules: self.table(Table::Hh).size,
            routes: self.table(Table::IpRoute).size,
            ecmp_entries: self.table(Table::EcmpGroup).size,
        }
    }
}

#[cfg(test)]
mod tests;
