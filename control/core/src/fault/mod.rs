//! Injected faults: what drops packets, where, on which flows and in which epochs.
//!
//! A fault file (parsed by [`parse`]) lists them; `random:P%` and friends ([`random`], [`pick`])
//! draw them. Every fault ends up as one [`Fault`] per directed link: a device fault becomes one
//! per link out of the device, tagged with it. Time is counted in epochs, the unit the report
//! and the scores use.
//!
//! ```yaml
//! faults:
//!   - {link: [agg3_1, core5], loss: 0.002}
//!   - {link: [edge0_0, agg0_1], loss: 0.3, both_directions: true}
//!   - {link: [agg0_0, core0], loss: 0.01, from_epoch: 10, until_epoch: 30}
//!   - {link: [agg1_0, core1], loss: 0.05, period: 8, duty: 0.25}
//!   - {device: agg2_1, loss: 0.01}
//!   - {device: agg3_0, ports: [core0, edge3_1], loss: 0.02}
//!   - {link: [edge1_0, agg1_1], loss: 0.1, flows: 0.25}
//!   - {link: [edge2_0, agg2_0], loss: 0.01, corruption: true}
//!   - {link: [agg0_1, core2], out_of_service: true, from_epoch: 6, until_epoch: 12}
//! ```

mod file;
mod random;

pub use file::{parse, FaultFileError};
pub use random::{pick, random, Rates, PAPER_MIX};

use crate::topo::{LinkIx, SwitchIx, Topology};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One faulty directed link: its per-packet drop probability, when it drops, and on which
/// flows.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    pub link: LinkIx,
    pub loss: f64,
    #[serde(default)]
    pub when: When,
    /// The share of flows that lose packets, chosen by flow hash ([`hits_flow`]); 1 = all.
    #[serde(default = "all_flows")]
    pub flows: f64,
    /// The switch whose failure this is, for a fault given as a device.
    #[serde(default)]
    pub device: Option<SwitchIx>,
    /// Packets are corrupted on the wire and dropped by the next hop's MAC (a bad checksum)
    /// rather than lost on the link. Both happen before the next switch's pipeline, so the
    /// meters see the same; the testbed drops them at the receiving interface instead.
    #[serde(default)]
    pub corruption: bool,
    /// Not a fault: the fabric's own control takes the link out of service (out of every ECMP
    /// group) in these epochs, and its flows move to other links. Drops nothing; nothing is to
    /// blame for it ([`split_out_of_service`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub out_of_service: bool,
}

/// The entries of a fault file that drop packets, and those that take links out of service.
pub fn split_out_of_service(all: Vec<Fault>) -> (Vec<Fault>, Vec<Fault>) {
    all.into_iter().partition(|f| !f.out_of_service)
}

/// The directed links out of service in `epoch`.
pub fn out_of_service_at(maintenance: &[Fault], epoch: u64) -> Vec<LinkIx> {
    let mut out: Vec<LinkIx> = maintenance
        .iter()
        .filter(|f| f.out_of_service && f.active(epoch))
        .map(|f| f.link)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn all_flows() -> f64 {
    1.0
}

impl Fault {
    /// A fault on `link` for the whole run, on every flow.
    pub fn constant(link: LinkIx, loss: f64) -> Self {
        Self {
            link,
            loss,
            when: When::default(),
            flows: 1.0,
            device: None,
            corruption: false,
            out_of_service: false,
        }
    }

    pub fn active(&self, epoch: u64) -> bool {
        self.when.active(epoch)
    }
}

/// The epochs in which a fault drops packets: from `from` until `until` (the epoch it is
/// repaired, not lossy itself), and within that, when it flaps, the first `on` epochs of every
/// `period` counted from `from`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct When {
    #[serde(default)]
    pub from: u64,
    #[serde(default)]
    pub until: Option<u64>,
    #[serde(default)]
    pub flap: Option<Flap>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flap {
    pub period: u64,
    pub on: u64,
}

impl When {
    pub fn active(&self, epoch: u64) -> bool {
        if epoch < self.from || self.until.is_some_and(|u| epoch >= u) {
            return false;
        }
        match self.flap {
            Some(f) => (epoch - self.from) % f.period < f.on,
            None => true,
        }
    }

    /// Whether it ever drops: a flap with `on` 0 or an empty range never does.
    pub fn ever(&self) -> bool {
        self.until.is_none_or(|u| u > self.from) && self.flap.is_none_or(|f| f.on > 0)
    }

    /// The epochs in which it starts dropping (a flapping fault starts every period), up to
    /// `end` (exclusive).
    pub fn onsets(&self, end: u64) -> Vec<u64> {
        (self.from..end.min(self.until.unwrap_or(u64::MAX)))
            .filter(|&e| self.active(e) && (e == self.from || !self.active(e - 1)))
            .collect()
    }

    /// The epochs in which it stops dropping (a repair, or the off part of a flap), up to `end`.
    pub fn repairs(&self, end: u64) -> Vec<u64> {
        (self.from + 1..=end.min(self.until.unwrap_or(u64::MAX)))
            .filter(|&e| !self.active(e) && self.active(e - 1))
            .collect()
    }
}

/// What one directed link does to packets in one epoch: drop with probability `p` the packets
/// of the share `flows` of flows [`hits_flow`] picks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkLoss {
    pub p: f64,
    pub flows: f64,
}

impl LinkLoss {
    /// Links dropping with probability `p[l]` on every flow.
    pub fn on_every_flow(p: &[f64]) -> Vec<LinkLoss> {
        p.iter().map(|&p| LinkLoss { p, flows: 1.0 }).collect()
    }
}

/// Whether a fault on `link` hitting the share `share` of flows hits the flow with hash `h`:
/// a bad ECMP member or TCAM entry catches the same flows every time, and different ones on
/// different links.
pub fn hits_flow(h: u32, link: LinkIx, share: f64) -> bool {
    if share >= 1.0 {
        return true;
    }
    // splitmix64 of the flow hash and the link, compared with the share of 2^64.
    let mut z = ((h as u64) << 32 | link as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z as f64) < share * u64::MAX as f64
}

/// Per-directed-link background loss: a rate drawn from U(0, `noise`) on every link (as Flock's
/// and 007's setups model it), 0 everywhere without noise.
pub fn background(topo: &Topology, noise: f64, rng: &mut impl Rng) -> Vec<f64> {
    (0..topo.links.len())
        .map(|_| {
            if noise > 0.0 {
                rng.random_range(0.0..noise)
            } else {
                0.0
            }
        })
        .collect()
}

/// What every link does in `epoch`: its background, replaced by the faults active on it (two
/// active on one link drop independently). A fault on some flows drops only theirs: the
/// background of that link's other flows is left out, at most the noise rate.
pub fn link_losses(background: &[f64], faults: &[Fault], epoch: u64) -> Vec<LinkLoss> {
    let mut out: Vec<LinkLoss> = background
        .iter()
        .map(|&p| LinkLoss { p, flows: 1.0 })
        .collect();
    let mut faulty = vec![false; out.len()];
    for f in faults.iter().filter(|f| f.active(epoch)) {
        let l = &mut out[f.link as usize];
        if faulty[f.link as usize] {
            l.p = 1.0 - (1.0 - l.p) * (1.0 - f.loss);
            l.flows = l.flows.max(f.flows);
        } else {
            *l = LinkLoss {
                p: f.loss,
                flows: f.flows,
            };
            faulty[f.link as usize] = true;
        }
    }
    out
}

/// Per-directed-link drop probabilities of a run whose faults never change: the faults, plus
/// `noise` on every other link ([`background`]). Drawn in the same order as before schedules
/// existed, so a seed gives the same rates.
pub fn loss_vector(topo: &Topology, faults: &[Fault], noise: f64, rng: &mut impl Rng) -> Vec<f64> {
    with_faults(&background(topo, noise, rng), faults)
}

/// Each link's rate with every fault on, whatever its schedule, over `background`.
pub fn with_faults(background: &[f64], faults: &[Fault]) -> Vec<f64> {
    let mut loss = background.to_vec();
    for f in faults {
        loss[f.link as usize] = f.loss;
    }
    loss
}

/// The directed links with a fault active in `epoch`: the truth an epoch's verdict is scored
/// against.
pub fn active_links(faults: &[Fault], epoch: u64) -> Vec<LinkIx> {
    let mut v: Vec<LinkIx> = faults
        .iter()
        .filter(|f| f.active(epoch) && f.loss > 0.0)
        .map(|f| f.link)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether any fault changes over time (a schedule, not one set of lossy links for the run).
pub fn scheduled(faults: &[Fault]) -> bool {
    faults.iter().any(|f| f.when != When::default())
}

#[cfg(test)]
mod tests;
