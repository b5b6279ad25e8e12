//! The program contract: every table, key, action, parameter, register, digest and counter
//! Canary uses in its P4 program (`p4src/`), declared once here and resolved at start against the
//! program a switch runs: the P4Info on BMv2 ([`Program::from_p4info`]), the compiler's
//! `bfrt.json` on Tofino ([`Program::from_bfrt_json`]). Names are matched by suffix (the
//! architectures nest controls differently); widths and match kinds are checked; sizes are read
//! from the program, never retyped. An error names what differs and the closest name the program
//! has.
//!
//! The resolved [`Program`] gives ids and widths to the entry builders ([`crate::entries`]) and
//! the register layout to the harvest ([`crate::meters`]); the capacity
//! (`canary_core::capacity::Capacity`) comes from it too.

mod bfrt_json;
mod p4info;

use canary_core::capacity::Capacity;
use canary_core::sketch::{HashPipeConfig, MeterConfig};

/// How a key field matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Exact,
    Lpm,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Exact => "exact",
            Kind::Lpm => "lpm",
        }
    }
}

/// A key field Canary fills: its `@name`, match kind and width.
#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    pub name: &'static str,
    pub kind: Kind,
    pub bits: u32,
}

const fn exact(name: &'static str, bits: u32) -> KeySpec {
    KeySpec {
        name,
        kind: Kind::Exact,
        bits,
    }
}

/// The tables Canary writes. The discriminant indexes [`TABLES`] and [`Program`]'s tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    HostPortIn,
    FloodGroup,
    SwitchConfig,
    IpRoute,
    EcmpMul0,
    EcmpMul1,
    EcmpMul2,
    EcmpMul3,
    EcmpModHi,
    EcmpModLo,
    EcmpGroup,
    HostPortOut,
    Dsm,
    Usm,
    Hh,
}

impl Table {
    /// The table's name in the contract.
    pub fn name(self) -> &'static str {
        TABLES[self as usize].name
    }
}

/// A table Canary writes: its name (the last component of the program's name), its keys in
/// Canary's order, and the one action Canary installs with its parameters in Canary's order.
#[derive(Clone, Copy, Debug)]
pub struct TableSpec {
    pub table: Table,
    pub name: &'static str,
    pub keys: &'static [KeySpec],
    pub action: &'static str,
    pub params: &'static [(&'static str, u32)],
}

/// Bits of a port: BMv2's `bit<9>`, Tofino 1's `PortId_t`.
pub const PORT_BITS: u32 = 9;

const FLOW_KEYS: [KeySpec; 5] = [
    exact("src_addr", 128),
    exact("dst_addr", 128),
    exact("protocol", 8),
    exact("src_port", 16),
    exact("dst_port", 16),
];
const DSM_KEYS: [KeySpec; 6] = [
    FLOW_KEYS[0],
    FLOW_KEYS[1],
    FLOW_KEYS[2],
    FLOW_KEYS[3],
    FLOW_KEYS[4],
    exact("path_bf", 32),
];

/// Every table of the contract, in [`Table`] order.
pub const TABLES: [TableSpec; 15] = [
    TableSpec {
        table: Table::HostPortIn,
        name: "host_port_in",
        keys: &[exact("port", PORT_BITS)],
        action: "host_port",
        params: &[],
    },
    TableSpec {
        table: Table::FloodGroup,
        name: "flood_group",
        keys: &[exact("port", PORT_BITS)],
        action: "flood",
        params: &[("group", 16)],
    },
    TableSpec {
        table: Table::SwitchConfig,
        name: "switch_config",
        keys: &[],
        action: "set_config",
        params: &[
            ("monitor", 1),
            ("mask", 32),
            ("epoch", 15),
            ("epoch_prev", 15),
            ("epoch_next", 15),
        ],
    },
    TableSpec {
        table: Table::IpRoute,
        name: "ip_route",
        keys: &[KeySpec {
            name: "dst_addr",
            kind: Kind::Lpm,
            bits: 128,
        }],
        action: "set_group",
        params: &[("group", 16), ("group_size", 16)],
    },
    TableSpec {
        table: Table::EcmpMul0,
        name: "ecmp_mul0",
        keys: &[exact("byte", 8)],
        action: "mul0",
        params: &[("term", 32)],
    },
    TableSpec {
        table: Table::EcmpMul1,
        name: "ecmp_mul1",
        keys: &[exact("byte", 8)],
        action: "mul1",
        params: &[("term", 32)],
    },
    TableSpec {
        table: Table::EcmpMul2,
        name: "ecmp_mul2",
        keys: &[exact("byte", 8)],
        action: "mul2",
        params: &[("term", 32)],
    },
    TableSpec {
        table: Table::EcmpMul3,
        name: "ecmp_mul3",
        keys: &[exact("byte", 8)],
        action: "mul3",
        params: &[("term", 32)],
    },
    TableSpec {
        table: Table::EcmpModHi,
        name: "ecmp_mod_hi",
        keys: &[exact("size", 16), exact("byte", 8)],
        action: "mod_hi",
        params: &[("r", 16)],
    },
    TableSpec {
        table: Table::EcmpModLo,
        name: "ecmp_mod_lo",
        keys: &[exact("size", 16), exact("byte", 8)],
        action: "mod_lo",
        params: &[("r", 16)],
    },
    TableSpec {
        table: Table::EcmpGroup,
        name: "ecmp_group",
        keys: &[exact("group", 16), exact("member", 16)],
        action: "set_port",
        params: &[("port", PORT_BITS)],
    },
    TableSpec {
        table: Table::HostPortOut,
        name: "host_port_out",
        keys: &[exact("port", PORT_BITS)],
        action: "to_host",
        params: &[],
    },
    TableSpec {
        table: Table::Dsm,
        name: "dsm_table",
        keys: &DSM_KEYS,
        action: "dsm_hit",
        params: &[("id", 32)],
    },
    TableSpec {
        table: Table::Usm,
        name: "usm_table",
        keys: &FLOW_KEYS,
        action: "usm_count",
        params: &[("id", 32)],
    },
    TableSpec {
        table: Table::Hh,
        name: "hh_table",
        keys: &[exact("path_bf", 32)],
        action: "hh_watch",
        params: &[("eta", 32)],
    },
];

/// The meter rows' registers: `<meter>.buckets.row<r>.<register>`: a pair {epoch tag, rule ID}
/// and a count. On BMv2 a pair is one `bit<64>`, the first member in the upper half.
pub const METERS: [&str; 2] = ["upstream_meter", "downstream_meter"];
pub const ID_REGISTER: (&str, [&str; 2], u32) = ("id_reg", ["tag", "id"], 64);
pub const COUNT_REGISTER: (&str, u32) = ("count_reg", 32);
/// Every register under this control is HashPipe's: cleared each epoch, never harvested.
pub const HASHPIPE_CONTROL: &str = "hashpipe";

/// The HH digest: the P4Info digest names its struct type, the `bfrt.json` learn filter its
/// extern instance.
pub const DIGEST_P4INFO: &str = "hh_digest_t";
pub const DIGEST_BFRT: &str = "hh_digest";
pub const DIGEST_FIELDS: [(&str, u32); 6] = [
    ("src_addr", 128),
    ("dst_addr", 128),
    ("protocol", 8),
    ("src_port", 16),
    ("dst_port", 16),
    ("path_bf", 32),
];
/// The counter of HH digests sent.
pub const HH_COUNTER: &str = "hh_report_ctr";

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

/// Why a program and the contract disagree. Every variant names the file and the entity, and
/// where a name is missing, the closest name the program has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    #[error("{file}: {detail}")]
    Format { file: String, detail: String },
    #[error("{file}: no {what} `{name}`{}", hint(.closest))]
    Missing {
        file: String,
        what: &'static str,
        name: String,
        closest: Option<String>,
    },
    #[error("{file}: {what} `{name}` is ambiguous: {matches:?}")]
    Ambiguous {
        file: String,
        what: &'static str,
        name: String,
        matches: Vec<String>,
    },
    #[error("{file}: {entity}: {detail}")]
    Differs {
        file: String,
        entity: String,
        detail: String,
    },
}

fn hint(closest: &Option<String>) -> String {
    closest
        .as_ref()
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// The candidate closest to `name` (compared on their last dotted component), if any is close
/// enough to be a likely typo or rename.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    fn last(s: &str) -> &str {
        s.rsplit('.').next().unwrap_or(s)
    }
    candidates
        .into_iter()
        .map(|c| {
            (
                strsim::normalized_damerau_levenshtein(last(name), last(c)),
                c,
            )
        })
        .filter(|(score, _)| *score >= 0.5)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.to_string())
}

/// The one item whose name is `name` or ends with `.name`.
pub(crate) fn by_suffix<'a, T>(
    items: &'a [T],
    name_of: impl Fn(&T) -> &str,
    name: &str,
    file: &str,
    what: &'static str,
) -> Result<&'a T, ContractError> {
    let dotted = format!(".{name}");
    let hits: Vec<&T> = items
        .iter()
        .filter(|t| name_of(t) == name || name_of(t).ends_with(&dotted))
        .collect();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(ContractError::Missing {
            file: file.into(),
            what,
            name: name.into(),
            closest: closest(name, items.iter().map(&name_of)),
        }),
        many => Err(ContractError::Ambiguous {
            file: file.into(),
            what,
            name: name.into(),
            matches: many.iter().map(|t| name_of(t).to_string()).collect(),
        }),
    }
}

/// Sorts resolved meter rows into USM and DSM, checks shapes, and finds the width.
pub(crate) fn meter_registers(
    file: &str,
    mut row: impl FnMut(&str, usize, &str) -> Result<Option<Register>, ContractError>,
) -> Result<MeterRegisters, ContractError> {
    let mut out: Vec<Vec<MeterRow>> = Vec::new();
    let mut width = None;
    for meter in METERS {
        let mut rows = Vec::new();
        for r in 0.. {
            let Some(id) = row(meter, r, ID_REGISTER.0)? else {
                break;
            };
            let count = row(meter, r, COUNT_REGISTER.0)?.ok_or_else(|| ContractError::Missing {
                file: file.into(),
                what: "register",
                name: format!("{meter}.buckets.row{r}.{}", COUNT_REGISTER.0),
                closest: None,
            })?;
            for reg in [&id, &count] {
                let w = *width.get_or_insert(reg.size);
                if reg.size != w || reg.size % 2 != 0 {
                    return Err(ContractError::Differs {
                        file: file.into(),
                        entity: format!("register `{}`", reg.name),
                        detail: format!(
                            "{} cells; every meter register needs the same even size ({w}: two parities)",
                            reg.size
                        ),
                    });
                }
            }
            rows.push(MeterRow { id, count });
        }
        if rows.is_empty() {
            return Err(ContractError::Missing {
                file: file.into(),
                what: "register",
                name: format!("{meter}.buckets.row0.id_reg"),
                closest: None,
            });
        }
        out.push(rows);
    }
    let dsm = out.pop().expect("two meters");
    let usm = out.pop().expect("two meters");
    if usm.len() != dsm.len() {
        return Err(ContractError::Differs {
            file: file.into(),
            entity: "meters".into(),
            detail: format!("USM has {} rows, DSM {}", usm.len(), dsm.len()),
        });
    }
    let width = width.unwrap_or(0) / 2;
    let meters = MeterRegisters { usm, dsm, width };
    meters
        .config()
        .validate()
        .map_err(|e| ContractError::Differs {
            file: file.into(),
            entity: "meter registers".into(),
            detail: e.to_string(),
        })?;
    Ok(meters)
}

#[cfg(test)]
mod tests;
