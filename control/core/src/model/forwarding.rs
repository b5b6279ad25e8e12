//! The forwarding tables as the switch looks them up (longest prefix, then ECMP member) and
//! the forwarding step they make. Apart from the rest of the switch because forwarding reads
//! no register: a [`Router`] can be asked while packets are being counted.

use super::SwitchModel;
use crate::flow::{Addr, FlowId};
use crate::sketch::ecmp_member;
use crate::topo::{ForwardingState, Replica};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// What a route leads to: the ECMP size it gives, and its group's members (`len` ports from
/// `first` in [`Forwarding::members`]; `first == NO_GROUP` when the group does not exist).
#[derive(Clone, Copy, Debug)]
struct Hit {
    size: u16,
    first: u32,
    len: u32,
}

const NO_GROUP: u32 = u32::MAX;

/// Routes of one prefix length: prefix → hit. IPv4 keys are the address's 32 bits (every IPv4
/// route and address shares the mapped form's upper 96): half the memory per entry, and a
/// fabric's routes are looked up on every hop of every flow across tables larger than the caches.
type V4OfLength = FxHashMap<u32, Hit>;
type V6OfLength = FxHashMap<u128, Hit>;

/// The forwarding tables, indexed for lookups.
#[derive(Clone, Debug, Default)]
pub(super) struct Forwarding {
    pub(super) state: ForwardingState,
    /// Longest first: (prefix length on 128 bits, its routes), per family.
    v4: Vec<(u8, V4OfLength)>,
    v6: Vec<(u8, V6OfLength)>,
    /// Every group's members, one group after the other (routes point into it).
    members: Vec<u32>,
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

/// Longest first.
fn by_length<K>(m: FxHashMap<u8, FxHashMap<K, Hit>>) -> Vec<(u8, FxHashMap<K, Hit>)> {
    let mut v: Vec<_> = m.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.0));
    v
}

impl Forwarding {
    fn new(state: ForwardingState) -> Self {
        // By id, a later group of the same id replacing an earlier one.
        let groups: FxHashMap<u16, &Vec<u32>> = state.groups.iter().map(|(g, m)| (*g, m)).collect();
        let mut members = Vec::new();
        let mut spans: FxHashMap<u16, (u32, u32)> = FxHashMap::default();
        let mut hit = |group: u16, size: u16| {
            let (first, len) = match groups.get(&group) {
                None => (NO_GROUP, 0),
                Some(m) => *spans.entry(group).or_insert_with(|| {
                    members.extend_from_slice(m);
                    ((members.len() - m.len()) as u32, m.len() as u32)
                }),
            };
            Hit { size, first, len }
        };
        let mut v4: FxHashMap<u8, V4OfLength> = FxHashMap::default();
        let mut v6: FxHashMap<u8, V6OfLength> = FxHashMap::default();
        for r in &state.routes {
            let (len, a, h) = (
                r.prefix.len128(),
                r.prefix.addr.to_u128(),
                hit(r.group, r.size),
            );
            if r.prefix.is_v4() {
                v4.entry(len).or_default().insert(a as u32, h);
            } else {
                v6.entry(len).or_default().insert(a, h);
            }
        }
        Forwarding {
            v4: by_length(v4),
            v6: by_length(v6),
            members,
            flood_of_port: state.floods.iter().map(|f| (f.in_port, f.group)).collect(),
            replicas: state
                .floods
                .iter()
                .map(|f| (f.group, f.replicas.clone()))
                .collect(),
            state,
        }
    }

    fn lookup(&self, dst: Addr) -> Option<Hit> {
        let a = dst.to_u128();
        if dst.is_v4() {
            self.v4
                .iter()
                .find_map(|(len, m)| m.get(&((a & mask128(*len)) as u32)).copied())
        } else {
            self.v6
                .iter()
                .find_map(|(len, m)| m.get(&(a & mask128(*len))).copied())
        }
    }

    pub(super) fn is_host_port(&self, port: u32) -> bool {
        self.state.host_ports.contains(&port)
    }

    /// The ECMP member of the longest-prefix route to the flow's destination.
    fn route(&self, mask: u32, flow: &FlowId, c32: u32) -> Option<u32> {
        let hit = self.lookup(flow.dst)?;
        if hit.first == NO_GROUP {
            return None;
        }
        let m = ecmp_member(c32, mask, hit.size);
        if m as u32 >= hit.len {
            return None;
        }
        self.members.get(hit.first as usize + m as usize).copied()
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
