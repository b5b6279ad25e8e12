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

mod forwarding;
mod monitor;
pub mod net;
mod packet;
mod rules;
pub mod wire;

pub use forwarding::Router;
pub use monitor::MonitorRules;
pub use packet::{
    epoch_tag, epoch_window, Packet, Shim, EPOCH_TAGS, EPOCH_TAG_BITS, ETHERTYPE_ARP,
    ETHERTYPE_CANARY, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_LLDP, L3,
};

pub use rules::RuleError;

use crate::capacity::Capacity;
use crate::flow::FlowId;
use crate::sketch::{Dsm, HashPipe, Usm};
use forwarding::Forwarding;
use rules::Rules;
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

/// A meter instance and the epoch tag it holds counts of.
#[derive(Clone, Debug)]
struct Tagged<M> {
    tag: Option<u16>,
    meter: M,
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
