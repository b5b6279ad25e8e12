//! The forwarding tables as the switch looks them up (longest prefix, then ECMP member) and
//! the forwarding step they make. Apart from the rest of the switch because forwarding reads
//! no register: a [`Router`] can be asked while packets are being counted.

use super::SwitchModel;
use crate::flow::{Addr, FlowId};
use crate::sketch::ecmp_member;
use crate::topo::{ForwardingState, Replica};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Routes of one prefix length: prefix → (group, size).
type RoutesOfLength = FxHashMap<u128, (u16, u16)>;

/// The forwarding tables, indexed for lookups.
#[derive(Clone, Debug, Default)]
pub(super) struct Forwarding {
    pub(super) state: ForwardingState,
    /// Longest first: (prefix length on 128 bits, its routes), per family.
    v4: Vec<(u8, RoutesOfLength)>,
    v6: Vec<(u8, RoutesOfLength)>,
    /// Members by group id.
    groups: FxHashMap<u16, Vec<u32>>,
    pub(super) flood_of_port: FxHashMap<u32, u16>,
    replicas: FxHashMap<u16, Vec<Replica>>,
}

fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    }
}

impl Forwarding {
    fn new(state: ForwardingState) -> Self {
        let mut v4: FxHashMap<u8, RoutesOfLength> = FxHashMap::default();
        let mut v6: FxHashMap<u8, RoutesOfLength> = FxHashMap::default();
        for r in &state.routes {
            let t = if r.prefix.is_v4() { &mut v4 } else { &mut v6 };
            t.entry(r.prefix.len128())
                .or_default()
                .insert(r.prefix.addr.to_u128(), (r.group, r.size));
        }
        let sorted = |m: FxHashMap<u8, RoutesOfLength>| {
            let mut v: Vec<_> = m.into_iter().collect();
            v.sort_by_key(|e| std::cmp::Reverse(e.0));
            v
        };
        Forwarding {
            v4: sorted(v4),
            v6: sorted(v6),
            groups: state.groups.iter().cloned().collect(),
            flood_of_port: state.floods.iter().map(|f| (f.in_port, f.group)).collect(),
            replicas: state
                .floods
                .iter()
                .map(|f| (f.group, f.replicas.clone()))
                .collect(),
            state,
        }
    }

    fn lookup(&self, dst: Addr) -> Option<(u16, u16)> {
        let a = dst.to_u128();
        let t = if dst.is_v4() { &self.v4 } else { &self.v6 };
        t.iter()
            .find_map(|(len, m)| m.get(&(a & mask128(*len))).copied())
    }

    pub(super) fn is_host_port(&self, port: u32) -> bool {
        self.state.host_ports.contains(&port)
    }

    /// The ECMP member of the longest-prefix route to the flow's destination.
    fn route(&self, mask: u32, flow: &FlowId, c32: u32) -> Option<u32> {
        let (group, size) = self.lookup(flow.dst)?;
        let members = self.groups.get(&group)?;
        let m = ecmp_member(c32, mask, size) as usize;
        members.get(m).copied()
    }
}

/// A switch's forwarding step ([`SwitchModel::route`]) as it was when taken.
#[derive(Clone, Debug, Default)]
pub struct Router {
    fwd: Arc<Forwarding>,
    mask: u32,
}

impl Router {
    /// The forwarding step of a switch holding `state`, whose pathBF mask (the ECMP hash's
    /// salt) is `mask`: what the controller expects the switch it configured to do.
    pub fn new(state: ForwardingState, mask: u32) -> Self {
        Router {
            fwd: Arc::new(Forwarding::new(state)),
            mask,
        }
    }

    /// [`SwitchModel::route`].
    pub fn route(&self, flow: &FlowId, c32: u32) -> Option<u32> {
        self.fwd.route(self.mask, flow, c32)
    }

    /// Whether both were taken from the same forwarding and mask (each change of a switch's
    /// forwarding makes a new one), so route the same.
    pub fn same_as(&self, other: &Router) -> bool {
        Arc::ptr_eq(&self.fwd, &other.fwd) && self.mask == other.mask
    }
}

impl SwitchModel {
    pub fn set_forwarding(&mut self, state: ForwardingState) {
        self.fwd = Arc::new(Forwarding::new(state));
    }

    pub fn forwarding(&self) -> &ForwardingState {
        &self.fwd.state
    }

    /// The forwarding step alone: the port a unicast packet of `flow` (CRC-32 `c32`) leaves
    /// by, `None` without a route.
    pub fn route(&self, flow: &FlowId, c32: u32) -> Option<u32> {
        self.fwd.route(self.config.mask, flow, c32)
    }

    /// The forwarding step as the tables and configuration are now, apart from the registers
    /// (so it can be asked while packets are being counted).
    pub fn router(&self) -> Router {
        Router {
            fwd: Arc::clone(&self.fwd),
            mask: self.config.mask,
        }
    }

    /// Whether `port` faces a host.
    pub fn is_host_port(&self, port: u32) -> bool {
        self.fwd.is_host_port(port)
    }

    /// The replicas of flood group `group`.
    pub fn replicas(&self, group: u16) -> &[Replica] {
        self.fwd.replicas.get(&group).map_or(&[], Vec::as_slice)
    }
}
