//! The reference model of one switch: what Canary's P4 program (`p4src/`, v1model and TNA alike)
//! does with one packet. The simulator runs it at every hop, the BMv2 packet tests hold the real
//! switch to it bucket for bucket and digest for digest, and the chaos driver puts it behind the
//! driver interface. There is no other copy of a switch's behaviour.
//!
//! Ingress, in the order of the paper's Fig. 2 (`p4src/include/canary_ingress.p4`):
//! 1. A frame from a host port gets the shim pushed (pathBF 0, unmarked). A host frame that is
//!    itself of the shim's EtherType is carried opaquely, inside a shim of ours.
//! 2. IP unicast is routed ([`Forwarding`]: longest prefix, then ECMP member
//!    `ecmp_member(c32, mask, size)`); every other frame is flooded along the fabric's tree.
//! 3. Only routed IP unicast that carries a shim is monitored, at a monitor switch:
//!    DSM (a rule on (flow, pathBF): count a marked packet in its mark's epoch), else HashPipe
//!    and the HH report (a rule on the incoming pathBF: a digest when the count exceeds η);
//!    then the pathBF stamp (a monitor restarts it with its mask, a transit switch ORs its mask
//!    in); then the USM (a rule on the flow, not towards a host: count in this switch's epoch and
//!    mark the packet; any other packet leaves a monitor unmarked).
//! 4. A unicast packet leaving to a host loses the shim; flooded copies to hosts lose it too.
//!
//! Frames from a fabric port without a shim (a neighbour not running Canary) are forwarded
//! unmonitored, without one. Nothing is dropped but IP unicast without a route.
//!
//! Meters are tagged with the epoch that wrote them: a packet of a newer epoch finds the
//! instance of its parity stale and starts it afresh (the data plane does this bucket by bucket;
//! decoded, both are the same). So nothing needs clearing between epochs.

mod monitor;
pub mod net;
mod packet;
pub mod wire;

pub use monitor::MonitorRules;
pub use packet::{
    epoch_tag, epoch_window, Packet, Shim, EPOCH_TAGS, EPOCH_TAG_BITS, ETHERTYPE_ARP,
    ETHERTYPE_CANARY, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_LLDP, L3,
};

use crate::capacity::Capacity;
use crate::fabric::RuleOp;
use crate::flow::{Addr, FlowId};
use crate::sketch::{ecmp_member, Dsm, HashPipe, Usm};
use crate::topo::{ForwardingState, Replica};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A meter instance and the tag of the epoch it holds (`None`: never written).
pub type Instance<'a, M> = (&'a M, Option<u16>);

/// The keyless `switch_config` table's action: what the controller sets per switch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchConfig {
    pub monitor: bool,
    /// This switch's pathBF mask.
    pub mask: u32,
    /// The epoch tag the USM counts and marks in (`epoch_tag(epoch)`; 0 before the controller
    /// sets one, when no USM rule exists yet).
    pub epoch: u16,
}

/// Where a packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Egress {
    Unicast(u32),
    /// To every replica of this flood group ([`SwitchModel::replicas`]).
    Flood(u16),
    /// IP unicast with no route.
    NoRoute,
}

/// An HH report: the packet's flow and the pathBF it arrived with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Digest {
    pub flow: FlowId,
    pub path_bf: u32,
}

/// One packet's passage through the switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub egress: Egress,
    pub digest: Option<Digest>,
}

/// A rule the switch could not take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("{table} is full ({size} entries)")]
    Full { table: &'static str, size: usize },
}

/// Routes of one prefix length: prefix → (group, size).
type RoutesOfLength = FxHashMap<u128, (u16, u16)>;

/// The forwarding tables, indexed for lookups.
#[derive(Clone, Debug, Default)]
struct Forwarding {
    state: ForwardingState,
    /// Longest first: (prefix length on 128 bits, its routes), per family.
    v4: Vec<(u8, RoutesOfLength)>,
    v6: Vec<(u8, RoutesOfLength)>,
    /// Members by group id.
    groups: FxHashMap<u16, Vec<u32>>,
    flood_of_port: FxHashMap<u32, u16>,
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

    fn is_host_port(&self, port: u32) -> bool {
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
    /// [`SwitchModel::route`].
    pub fn route(&self, flow: &FlowId, c32: u32) -> Option<u32> {
        self.fwd.route(self.mask, flow, c32)
    }
}

/// A meter instance and the epoch tag it holds counts of.
#[derive(Clone, Debug)]
struct Tagged<M> {
    tag: Option<u16>,
    meter: M,
}

/// The rules the controller installed.
#[derive(Clone, Debug, Default)]
struct Rules {
    usm: FxHashSet<FlowId>,
    dsm: FxHashSet<(FlowId, u32)>,
    hh: FxHashMap<u32, u32>,
}

/// Counters the data plane keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// HH digests sent (`hh_report_ctr`).
    pub hh_reports: u64,
}

/// One switch: its tables, as the controller wrote them, and its registers.
#[derive(Clone, Debug)]
pub struct SwitchModel {
    config: SwitchConfig,
    capacity: Capacity,
    /// Shared with the switch's [`Router`]s; replaced whole, never written in place.
    fwd: Arc<Forwarding>,
    rules: Rules,
    usm: [Tagged<Usm>; 2],
    dsm: [Tagged<Dsm>; 2],
    hashpipe: HashPipe,
    pub counters: Counters,
}

impl SwitchModel {
    /// A switch with empty tables and registers, as it boots.
    pub fn new(capacity: Capacity) -> Self {
        let usm = || Tagged {
            tag: None,
            meter: Usm::new(capacity.meter).expect("capacity holds a valid meter shape"),
        };
        let dsm = || Tagged {
            tag: None,
            meter: Dsm::new(capacity.meter).expect("capacity holds a valid meter shape"),
        };
        SwitchModel {
            config: SwitchConfig::default(),
            capacity,
            fwd: Arc::default(),
            rules: Rules::default(),
            usm: [usm(), usm()],
            dsm: [dsm(), dsm()],
            hashpipe: HashPipe::new(capacity.hashpipe).expect("capacity holds a valid shape"),
            counters: Counters::default(),
        }
    }

    pub fn config(&self) -> SwitchConfig {
        self.config
    }

    pub fn set_config(&mut self, config: SwitchConfig) {
        self.config = config;
    }

    pub fn capacity(&self) -> &Capacity {
        &self.capacity
    }

    pub fn set_forwarding(&mut self, state: ForwardingState) {
        self.fwd = Arc::new(Forwarding::new(state));
    }

    pub fn forwarding(&self) -> &ForwardingState {
        &self.fwd.state
    }

    /// Installs or removes one rule (`op`'s switch is the caller's business). Installing a rule
    /// that is there is a no-op (an HH rule takes the new η); removing one that is not, too.
    pub fn apply(&mut self, op: &RuleOp) -> Result<(), RuleError> {
        let full = |table, size| Err(RuleError::Full { table, size });
        let r = &mut self.rules;
        match *op {
            RuleOp::InstallUsm { flow, .. } => {
                if !r.usm.contains(&flow) && r.usm.len() >= self.capacity.usm_rules {
                    return full("usm_table", self.capacity.usm_rules);
                }
                r.usm.insert(flow);
            }
            RuleOp::RemoveUsm { flow, .. } => {
                r.usm.remove(&flow);
            }
            RuleOp::InstallDsm { flow, path_bf, .. } => {
                if !r.dsm.contains(&(flow, path_bf)) && r.dsm.len() >= self.capacity.dsm_rules {
                    return full("dsm_table", self.capacity.dsm_rules);
                }
                r.dsm.insert((flow, path_bf));
            }
            RuleOp::RemoveDsm { flow, path_bf, .. } => {
                r.dsm.remove(&(flow, path_bf));
            }
            RuleOp::InstallHh { path_bf, eta, .. } => {
                if !r.hh.contains_key(&path_bf) && r.hh.len() >= self.capacity.hh_rules {
                    return full("hh_table", self.capacity.hh_rules);
                }
                r.hh.insert(path_bf, eta);
            }
            RuleOp::RemoveHh { path_bf, .. } => {
                r.hh.remove(&path_bf);
            }
        }
        Ok(())
    }

    /// Rules installed: (USM, DSM, HH).
    pub fn rule_counts(&self) -> (usize, usize, usize) {
        (
            self.rules.usm.len(),
            self.rules.dsm.len(),
            self.rules.hh.len(),
        )
    }

    pub fn has_usm(&self, flow: &FlowId) -> bool {
        self.rules.usm.contains(flow)
    }

    pub fn has_dsm(&self, flow: &FlowId, path_bf: u32) -> bool {
        self.rules.dsm.contains(&(*flow, path_bf))
    }

    /// Every rule installed, as the installs that made it (`switch` 0: the caller's business),
    /// in a stable order.
    pub fn installed(&self) -> Vec<RuleOp> {
        let r = &self.rules;
        let mut usm: Vec<_> = r.usm.iter().copied().collect();
        let mut dsm: Vec<_> = r.dsm.iter().copied().collect();
        let mut hh: Vec<_> = r.hh.iter().map(|(&b, &e)| (b, e)).collect();
        usm.sort_unstable();
        dsm.sort_unstable();
        hh.sort_unstable();
        let mut ops: Vec<RuleOp> = usm
            .into_iter()
            .map(|flow| RuleOp::InstallUsm { switch: 0, flow })
            .collect();
        ops.extend(dsm.into_iter().map(|(flow, path_bf)| RuleOp::InstallDsm {
            switch: 0,
            flow,
            path_bf,
        }));
        ops.extend(hh.into_iter().map(|(path_bf, eta)| RuleOp::InstallHh {
            switch: 0,
            path_bf,
            eta,
        }));
        ops
    }

    /// η of the HH rule on `path_bf`, if there is one.
    pub fn hh_eta(&self, path_bf: u32) -> Option<u32> {
        self.rules.hh.get(&path_bf).copied()
    }

    /// One packet arriving on `in_port`: updates `pkt` to what leaves (the shim pushed,
    /// stamped, marked or removed) and the switch's registers.
    pub fn process(&mut self, pkt: &mut Packet, in_port: u32) -> Hop {
        let from_host = self.fwd.is_host_port(in_port);
        if from_host {
            if pkt.shim.is_some() {
                // A host's own frame of the shim's EtherType: carried whole, inside ours.
                pkt.ether_type = ETHERTYPE_CANARY;
                pkt.l3 = L3::Other;
            }
            pkt.shim = Some(Shim::default());
        }
        let (flow, hashes) = match pkt.l3 {
            L3::Ip {
                flow,
                hashes,
                unicast: true,
            } => (flow, hashes),
            _ => {
                let group = self.fwd.flood_of_port.get(&in_port).copied().unwrap_or(0);
                return Hop {
                    egress: Egress::Flood(group),
                    digest: None,
                };
            }
        };
        let Some(port) = self.route(&flow, hashes.c32) else {
            return Hop {
                egress: Egress::NoRoute,
                digest: None,
            };
        };
        let to_host = self.fwd.is_host_port(port);
        let mut digest = None;
        if let Some(shim) = pkt.shim.as_mut() {
            digest = self.monitor(&flow, hashes, shim, to_host);
            if to_host {
                pkt.shim = None;
            }
        }
        Hop {
            egress: Egress::Unicast(port),
            digest,
        }
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

    /// What the registers hold for the epoch with tag `tag`: its USM and DSM (empty if the
    /// instance has moved on or never counted it).
    pub fn meters_of(&self, tag: u16) -> (Usm, Dsm) {
        let p = usize::from(tag & 1);
        let usm = if self.usm[p].tag == Some(tag) {
            self.usm[p].meter.clone()
        } else {
            Usm::new(self.capacity.meter).expect("valid shape")
        };
        let dsm = if self.dsm[p].tag == Some(tag) {
            self.dsm[p].meter.clone()
        } else {
            Dsm::new(self.capacity.meter).expect("valid shape")
        };
        (usm, dsm)
    }

    /// The meters of parity `p` as they are, each with the tag of the epoch it holds (the USM
    /// counts in its switch's epoch, the DSM in the epoch packets were marked with, so the two
    /// can differ while a switch is not flipped).
    pub fn meters_raw(&self, p: usize) -> (Instance<'_, Usm>, Instance<'_, Dsm>) {
        (
            (&self.usm[p].meter, self.usm[p].tag),
            (&self.dsm[p].meter, self.dsm[p].tag),
        )
    }

    pub fn hashpipe(&self) -> &HashPipe {
        &self.hashpipe
    }

    /// The controller clears HashPipe every epoch, so heavy hitters are the last epoch's.
    pub fn clear_hashpipe(&mut self) {
        self.hashpipe.reset();
    }

    /// Empties the rule tables asked for (a controller clearing them).
    pub fn clear_rules(&mut self, usm: bool, dsm: bool, hh: bool) {
        if usm {
            self.rules.usm.clear();
        }
        if dsm {
            self.rules.dsm.clear();
        }
        if hh {
            self.rules.hh.clear();
        }
    }

    /// Every meter register back to zero: no epoch holds any bucket.
    pub fn clear_meters(&mut self) {
        for t in self.usm.iter_mut() {
            t.meter.reset();
            t.tag = None;
        }
        for t in self.dsm.iter_mut() {
            t.meter.reset();
            t.tag = None;
        }
    }

    /// A restart: tables, registers and counters lost; the capacity is the program's.
    pub fn restart(&mut self) {
        *self = SwitchModel::new(self.capacity);
    }
}

#[cfg(test)]
mod tests;
