//! One trial's traffic, what the downstream HashPipe reports, and which packets the link drops
//! at a loss rate: drawn once and shared by every structure and width, so all are compared on
//! the same losses.

use crate::overhead::traffic::{LinkEpoch, LinkTraffic};
use canary_core::sketch::lossradar::PacketId;
use canary_core::sketch::{FlowHashes, HashPipe, HashPipeConfig};
use canary_core::FlowId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashSet};

/// One trial's traffic and what the downstream HashPipe reports.
pub(super) struct Trial {
    pub(super) seed: u64,
    pub(super) epoch: LinkEpoch,
    pub(super) hashes: Vec<FlowHashes>,
    /// Flow indices in the order the HashPipe reports them.
    reported: Vec<u32>,
}

/// One trial at one loss rate.
pub(super) struct Lost {
    pub(super) per_flow: Vec<u32>,
    pub(super) packets: Vec<PacketId>,
    pub(super) truth: BTreeMap<FlowId, u32>,
    /// Flow indices Canary monitors.
    pub(super) monitored: Vec<u32>,
}

impl Trial {
    pub(super) fn draw(seed: u64, cfg: &LinkTraffic, eta: u32) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let epoch = LinkEpoch::draw(cfg, &mut rng);
        let hashes: Vec<FlowHashes> = epoch.flows.iter().map(FlowHashes::of).collect();
        let mut hp = HashPipe::new(HashPipeConfig::default()).expect("default");
        let mut seen = HashSet::new();
        let mut reported = Vec::new();
        for (_, i) in epoch.packet_order(cfg.epoch_ns, &mut rng) {
            let c = hp.update(hashes[i as usize]);
            if c > eta && seen.insert(i) {
                reported.push(i);
            }
        }
        Trial {
            seed,
            epoch,
            hashes,
            reported,
        }
    }

    pub(super) fn lose(&self, p: f64) -> Lost {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ p.to_bits());
        let mut per_flow = vec![0u32; self.epoch.flows.len()];
        let mut packets = Vec::new();
        let mut next = gap(p, &mut rng);
        for (i, &n) in self.epoch.sizes.iter().enumerate() {
            let n = n as u64;
            let mut cursor = 0u64;
            while next < n - cursor {
                let ipid = (cursor + next) as u16;
                packets.push(PacketId {
                    flow: self.epoch.flows[i],
                    ipid,
                });
                per_flow[i] += 1;
                cursor += next + 1;
                next = gap(p, &mut rng);
            }
            next -= n - cursor;
        }
        packets.sort_unstable();
        let truth = per_flow
            .iter()
            .enumerate()
            .filter(|(_, &l)| l > 0)
            .map(|(i, &l)| (self.epoch.flows[i], l))
            .collect();
        let need = packets_needed(p);
        let mut monitored = Vec::new();
        let mut counted = 0u64;
        for &i in &self.reported {
            if counted >= need {
                break;
            }
            monitored.push(i);
            counted += self.epoch.sizes[i as usize] as u64;
        }
        Lost {
            per_flow,
            packets,
            truth,
            monitored,
        }
    }
}

/// Packets that pass before the next drop: geometric with success probability 1 − p.
fn gap(p: f64, rng: &mut impl Rng) -> u64 {
    if p <= 0.0 {
        return u64::MAX / 2;
    }
    let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
    (u.ln() / (1.0 - p).ln()).floor().min(u64::MAX as f64 / 4.0) as u64
}

/// N(p) = ⌈ln(0.01) / ln(1 − p)⌉: packets to count to see a loss with probability 0.99.
pub fn packets_needed(p: f64) -> u64 {
    ((0.01f64).ln() / (1.0 - p).ln()).ceil() as u64
}
