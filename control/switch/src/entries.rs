//! What Canary writes into a switch's tables, before any wire format: the forwarding a switch
//! needs ([`forwarding`]: host ports, flood groups, the ECMP tables, routes), its configuration
//! ([`config`]) and the monitoring rules ([`rule`]). One builder for both targets; the P4Runtime
//! and BF Runtime drivers render [`Entry`]s with the ids and widths of the resolved
//! [`Program`](crate::contract::Program).
//!
//! The ECMP tables stand in for a multiplier and a remainder (p4src/include/forwarding.p4):
//! `ecmp_mul0..3` (`ecmp_mul_term`, rewritten when the switch's pathBF mask changes),
//! `ecmp_mod_hi`/`_lo` (`ecmp_mod_term`, per distinct group size), and `2s - 1` `ecmp_group`
//! entries per group of size `s`; together they pick `canary_core::sketch::ecmp_member`.

use crate::contract::Table;
use canary_core::fabric::RuleOp;
use canary_core::model::{epoch_window, SwitchConfig};
use canary_core::sketch::{ecmp_mod_term, ecmp_mul_term};
use canary_core::topo::ForwardingState;
use canary_core::FlowId;

/// The value of one key field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Exact(u128),
    /// Value and prefix length (on the field's width).
    Lpm(u128, u32),
}

/// One table entry: keys in the contract's order, the contract's action with `args` in its
/// order. A `default` entry sets the table's default action (keyless `switch_config`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    pub table: Table,
    pub keys: Vec<Key>,
    pub args: Vec<u128>,
    pub default: bool,
}

impl Entry {
    fn new(table: Table, keys: Vec<Key>, args: Vec<u128>) -> Self {
        Entry {
            table,
            keys,
            args,
            default: false,
        }
    }
}

/// How an entry changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Change {
    Insert,
    Modify,
    Delete,
}

/// One write.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Write {
    pub change: Change,
    pub entry: Entry,
}

/// A multicast group: its replicas as (port, replication id); id 1 marks a copy that leaves to
/// a host and loses the shim (p4src: egress).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct McGroup {
    pub id: u16,
    pub replicas: Vec<(u32, u16)>,
}

/// The replication id of copies that leave to a host.
pub const RID_TO_HOST: u16 = 1;

/// A switch's forwarding as entries and multicast groups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Forwarding {
    /// In an order no lookup can go wrong in: ports, flood groups, the ECMP tables and
    /// `ecmp_group`, routes last (no route is there before its group).
    pub entries: Vec<Entry>,
    pub groups: Vec<McGroup>,
}

/// Whether `args`, read back from `switch_config`'s default action in the order [`config`]
/// writes them, are this switch's configuration: its monitor flag and mask, and a real epoch tag
/// (a table back at the program's default reads zeros; tags start at 2).
pub fn holds_config(args: &[u128], monitor: bool, mask: u32) -> bool {
    args.len() >= 3 && args[0] == u128::from(monitor) && args[1] == u128::from(mask) && args[2] >= 2
}

/// The keyless `switch_config` table's default action (the epoch's neighbours with it).
pub fn config(c: SwitchConfig) -> Entry {
    Entry {
        table: Table::SwitchConfig,
        keys: vec![],
        args: {
            let [prev, _, next] = epoch_window(c.epoch);
            vec![
                u128::from(c.monitor),
                c.mask.into(),
                c.epoch.into(),
                prev.into(),
                next.into(),
            ]
        },
        default: true,
    }
}

/// A monitor's epoch flip: `switch_config` modified to count and mark in epoch tag `tag`.
pub fn epoch_flip(mask: u32, tag: u16) -> Write {
    Write {
        change: Change::Modify,
        entry: config(SwitchConfig {
            monitor: true,
            mask,
            epoch: tag,
        }),
    }
}

/// `ecmp_mul0..3` for pathBF mask `mask`: 4 × 256 entries.
pub fn mul_entries(mask: u32) -> Vec<Entry> {
    let tables = [
        Table::EcmpMul0,
        Table::EcmpMul1,
        Table::EcmpMul2,
        Table::EcmpMul3,
    ];
    let mut out = Vec::with_capacity(4 * 256);
    for (i, t) in tables.into_iter().enumerate() {
        for b in 0..=255u8 {
            out.push(Entry::new(
                t,
                vec![Key::Exact(b.into())],
                vec![ecmp_mul_term(mask, i, b).into()],
            ));
        }
    }
    out
}

/// Every entry and group that makes a switch forward as `state` says, with the ECMP product
/// tables of pathBF mask `mask`.
pub fn forwarding(state: &ForwardingState, mask: u32) -> Forwarding {
    let mut entries = Vec::new();
    for &p in &state.host_ports {
        entries.push(Entry::new(
            Table::HostPortIn,
            vec![Key::Exact(p.into())],
            vec![],
        ));
        entries.push(Entry::new(
            Table::HostPortOut,
            vec![Key::Exact(p.into())],
            vec![],
        ));
    }
    for f in &state.floods {
        entries.push(Entry::new(
            Table::FloodGroup,
            vec![Key::Exact(f.in_port.into())],
            vec![f.group.into()],
        ));
    }
    entries.extend(mul_entries(mask));
    for s in state.sizes() {
        for b in 0..=255u8 {
            for (t, hi) in [(Table::EcmpModHi, true), (Table::EcmpModLo, false)] {
                entries.push(Entry::new(
                    t,
                    vec![Key::Exact(s.into()), Key::Exact(b.into())],
                    vec![ecmp_mod_term(s, hi, b).into()],
                ));
            }
        }
    }
    for (g, members) in &state.groups {
        let s = members.len();
        for j in 0..2 * s - 1 {
            entries.push(Entry::new(
                Table::EcmpGroup,
                vec![Key::Exact((*g).into()), Key::Exact(j as u128)],
                vec![members[j % s].into()],
            ));
        }
    }
    for r in &state.routes {
        entries.push(Entry::new(
            Table::IpRoute,
            vec![Key::Lpm(
                r.prefix.addr.to_u128(),
                u32::from(r.prefix.len128()),
            )],
            vec![r.group.into(), r.size.into()],
        ));
    }
    let groups = state
        .floods
        .iter()
        .map(|f| McGroup {
            id: f.group,
            replicas: f
                .replicas
                .iter()
                .map(|r| (r.port, if r.to_host { RID_TO_HOST } else { 0 }))
                .collect(),
        })
        .collect();
    Forwarding { entries, groups }
}

fn flow_keys(f: &FlowId) -> Vec<Key> {
    vec![
        Key::Exact(f.src.to_u128()),
        Key::Exact(f.dst.to_u128()),
        Key::Exact(f.proto.into()),
        Key::Exact(f.sport.into()),
        Key::Exact(f.dport.into()),
    ]
}

/// The write for one rule change. USM and DSM installs carry the rule's `id`
/// (`crate::rule_ids`; ignored otherwise). `modify` turns an HH install into a modify (a rule
/// that is there gets its new η).
pub fn rule(op: &RuleOp, id: u32, modify: bool) -> Write {
    let (change, table, keys, args) = match *op {
        RuleOp::InstallDsm { flow, path_bf, .. } => {
            let mut k = flow_keys(&flow);
            k.push(Key::Exact(path_bf.into()));
            (Change::Insert, Table::Dsm, k, vec![id.into()])
        }
        RuleOp::RemoveDsm { flow, path_bf, .. } => {
            let mut k = flow_keys(&flow);
            k.push(Key::Exact(path_bf.into()));
            (Change::Delete, Table::Dsm, k, vec![0])
        }
        RuleOp::InstallUsm { flow, .. } => (
            Change::Insert,
            Table::Usm,
            flow_keys(&flow),
            vec![id.into()],
        ),
        RuleOp::RemoveUsm { flow, .. } => (Change::Delete, Table::Usm, flow_keys(&flow), vec![0]),
        RuleOp::InstallHh { path_bf, eta, .. } => (
            if modify {
                Change::Modify
            } else {
                Change::Insert
            },
            Table::Hh,
            vec![Key::Exact(path_bf.into())],
            vec![eta.into()],
        ),
        RuleOp::RemoveHh { path_bf, .. } => (
            Change::Delete,
            Table::Hh,
            vec![Key::Exact(path_bf.into())],
            vec![0],
        ),
    };
    Write {
        change,
        entry: Entry::new(table, keys, args),
    }
}

/// A monitoring rule read back from a switch: what [`rule`] wrote, with the ID it carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReadRule {
    Usm { flow: FlowId, id: u32 },
    Dsm { flow: FlowId, path_bf: u32, id: u32 },
    Hh { path_bf: u32, eta: u32 },
}

impl ReadRule {
    /// The install that made the rule on `switch`, with its rule ID (0 for HH rules).
    pub fn install(self, switch: u32) -> (RuleOp, u32) {
        match self {
            ReadRule::Usm { flow, id } => (RuleOp::InstallUsm { switch, flow }, id),
            ReadRule::Dsm { flow, path_bf, id } => (
                RuleOp::InstallDsm {
                    switch,
                    flow,
                    path_bf,
                },
                id,
            ),
            ReadRule::Hh { path_bf, eta } => (
                RuleOp::InstallHh {
                    switch,
                    path_bf,
                    eta,
                },
                0,
            ),
        }
    }
}

/// The rule `e` is, read back from a `usm_table`, `dsm_table` or `hh_table` (the inverse of
/// [`rule`]). Errors name the table and what is missing or out of range.
pub fn read_rule(e: &Entry) -> Result<ReadRule, String> {
    let name = e.table.name();
    let exact = |i: usize, bits: u32| match e.keys.get(i) {
        Some(Key::Exact(v)) if bits >= 128 || v >> bits == 0 => Ok(*v),
        Some(Key::Exact(v)) => Err(format!("{name}: key {i} = {v:#x} exceeds {bits} bits")),
        _ => Err(format!("{name}: key {i} is missing or not an exact match")),
    };
    let arg = |bits: u32| match e.args.first() {
        Some(v) if v >> bits == 0 => Ok(*v as u32),
        Some(v) => Err(format!("{name}: parameter {v:#x} exceeds {bits} bits")),
        None => Err(format!("{name}: the action has no parameter")),
    };
    let flow = || -> Result<FlowId, String> {
        Ok(FlowId {
            src: canary_core::flow::Addr(exact(0, 128)?.to_be_bytes()),
            dst: canary_core::flow::Addr(exact(1, 128)?.to_be_bytes()),
            proto: exact(2, 8)? as u8,
            sport: exact(3, 16)? as u16,
            dport: exact(4, 16)? as u16,
        })
    };
    match e.table {
        Table::Usm => Ok(ReadRule::Usm {
            flow: flow()?,
            id: arg(32)?,
        }),
        Table::Dsm => Ok(ReadRule::Dsm {
            flow: flow()?,
            path_bf: exact(5, 32)? as u32,
            id: arg(32)?,
        }),
        Table::Hh => Ok(ReadRule::Hh {
            path_bf: exact(0, 32)? as u32,
            eta: arg(32)?,
        }),
        other => Err(format!("{}: not a monitoring rule table", other.name())),
    }
}

mod rewrite;
pub use rewrite::forwarding_rewrite;

#[cfg(test)]
mod tests;
