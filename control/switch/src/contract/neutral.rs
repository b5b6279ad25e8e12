//! A program's description with its file format taken away: what a reader ([`super::p4info`],
//! [`super::bfrt_json`]) translates its format into and the one resolver ([`super::resolve`])
//! checks against the contract. A reader only translates; every check is the resolver's.

use super::{Field, Target};

/// Everything of one program the contract may ask for.
#[derive(Clone, Debug)]
pub(super) struct Description {
    /// Which format it came from: it decides the digest's and registers' shapes below.
    pub target: Target,
    /// The match-action tables.
    pub tables: Vec<NTable>,
    pub registers: Vec<NRegister>,
    /// P4Info digests or BF-RT learn filters.
    pub digests: Vec<NDigest>,
    /// Counters, by (name, id).
    pub counters: Vec<(String, u32)>,
}

#[derive(Clone, Debug)]
pub(super) struct NTable {
    pub name: String,
    pub id: u32,
    pub size: usize,
    pub keys: Vec<NKey>,
    /// The actions this table may use.
    pub actions: Vec<NAction>,
}

#[derive(Clone, Debug)]
pub(super) struct NKey {
    pub name: String,
    pub id: u32,
    /// Lower case: `exact`, `lpm`, …
    pub kind: String,
    pub bits: u32,
}

#[derive(Clone, Debug)]
pub(super) struct NAction {
    pub name: String,
    pub id: u32,
    /// (name, field) in declaration order.
    pub params: Vec<(String, Field)>,
}

/// How a register's cell is laid out.
#[derive(Clone, Debug)]
pub(super) enum Cells {
    /// P4Info: one bitstring per cell (a pair packed into one `bit<64>`); `None` if not a
    /// bitstring.
    Packed(Option<u32>),
    /// BF-RT: a table keyed by `$REGISTER_INDEX` with one data field per member.
    Split {
        index: Option<Field>,
        /// (member, field): the member is the last dotted component of the data field's name.
        members: Vec<(String, Field)>,
    },
}

#[derive(Clone, Debug)]
pub(super) struct NRegister {
    pub name: String,
    pub id: u32,
    pub size: usize,
    pub cells: Cells,
}

#[derive(Clone, Debug)]
pub(super) struct NDigest {
    pub name: String,
    pub id: u32,
    /// (name, width, id); `None` when the digest is not a struct (P4Info only). A P4Info
    /// member's width is `None` when it is not a bitstring.
    pub fields: Option<Vec<(String, Option<u32>, u32)>>,
}

/// BF-RT's key field of every register table.
pub(super) const REGISTER_INDEX: &str = "$REGISTER_INDEX";
