//! What Canary declares of its program, before any switch is asked: the tables it writes with
//! their keys, action and parameters; the meter, HashPipe and digest names; their widths.

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

/// The tables Canary writes. The discriminant indexes [`TABLES`] and
/// [`Program`](super::Program)'s tables.
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
