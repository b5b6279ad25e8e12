//! The evidence map: for every directed link, the smallest loss its current evidence could show,
//! and how old that evidence is.
//!
//! The evidence is what the controller localizes from this epoch ([`Observations`]): each
//! segment's window totals, a lossy segment's counts since its loss began, or, watching in
//! rounds, each segment's latest watch. A link's packets are those of every segment through it,
//! summed: a loss of `q` on the link takes at least `q` of each segment's packets, so the
//! segments' likelihood ratios multiply into one test on the link (the pooled all-clear of
//! [`super::LinkClearing`] is the same product). Its background is that of the longest segment
//! through it (the largest `p0`, `1 − (1 − background)^L`): the test is then conservative for
//! the shorter ones, whose `KL(q ‖ p0)` is larger.
//!
//! The smallest loss shown is the smallest `q > p0` with `n · KL(q ‖ p0) ≥ h`, `n` the pooled
//! packets and `h` the decision's own threshold (`ln(arms / false_alarms)`, as
//! [`super::Decider::threshold`]): the expected log-likelihood ratio a loss of `q` adds over `n`
//! packets, against what a declaration needs. It is the information limit, not a promise that
//! today's per-segment CUSUM arms reach it (an arm at `p1 ≠ q` gains `KL(q ‖ p0) − KL(q ‖ p1)`
//! per packet, less). `1.0` means even the loss of every packet would not show: too few packets.
//!
//! A link's age is the epochs since the freshest segment through it was last counted. A link
//! whose segments were counted once but are no longer in the evidence (a window that moved on)
//! has no packets, bound 1 and its age; a link no segment through which was ever counted is
//! unwatched.

use super::{arms, kl, threshold, DecisionParams};
use crate::detect::{Observations, SegmentCount};
use crate::topo::{LinkIx, Segment, SegmentId};
use std::collections::BTreeMap;

/// One link's evidence now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkEvidence {
    pub link: LinkIx,
    /// Packets of the segments through it, in the evidence.
    pub packets: u64,
    /// Segments through it in the evidence.
    pub segments: u32,
    /// The smallest loss these packets could show (1: none).
    pub min_loss: f64,
    /// Epochs since a segment through it was last counted (0: this epoch).
    pub age: u64,
}

/// Every link's evidence: those ever counted, and those never.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvidenceMap {
    /// In link order.
    pub links: Vec<LinkEvidence>,
    /// Links no segment through which was ever counted, in link order.
    pub unwatched: Vec<LinkIx>,
}

/// When each segment was last counted, and the decision's threshold.
#[derive(Clone, Debug)]
pub struct EvidenceTracker {
    params: DecisionParams,
    h: f64,
    last_seen: Vec<Option<u64>>,
}

impl EvidenceTracker {
    /// `links[s]`: how many links segment `s` crosses. The threshold is the one
    /// [`super::Decider::new`] sets for the same segments and parameters.
    pub fn new(links: &[usize], params: DecisionParams) -> Self {
        let total_arms: usize = links
            .iter()
            .map(|&l| arms(params.p0(l.max(1))).len())
            .sum::<usize>()
            .max(1);
        Self {
            params,
            h: threshold(total_arms, params.false_alarms),
            last_seen: vec![None; links.len()],
        }
    }

    pub fn threshold(&self) -> f64 {
        self.h
    }

    /// The same tracker against the threshold `h` of the decision in use (one that also tests
    /// links counts their arms too: [`super::Decider::with_links`]).
    pub fn with_threshold(self, h: f64) -> Self {
        Self { h, ..self }
    }

    /// Notes the segments that counted packets in `epoch`.
    pub fn record(&mut self, epoch: u64, counts: &BTreeMap<SegmentId, SegmentCount>) {
        for (&s, _) in counts.iter().filter(|(_, c)| c.sent > 0) {
            if let Some(slot) = self.last_seen.get_mut(s as usize) {
                *slot = Some(epoch);
            }
        }
    }

    /// The map at epoch `now`, of a fabric of `links` directed links, from the evidence `obs`;
    /// `segments` is every segment of the fabric (`Segments::list`).
    pub fn map(
        &self,
        now: u64,
        links: usize,
        segments: &[Segment],
        obs: &Observations,
    ) -> EvidenceMap {
        #[derive(Clone, Copy, Default)]
        struct Pool {
            packets: u64,
            segments: u32,
            p0: f64,
            seen: Option<u64>,
        }
        let mut pool = vec![Pool::default(); links];
        let fresher = |a: Option<u64>, b: Option<u64>| a.max(b);
        let mut in_obs = vec![false; self.last_seen.len()];
        for o in &obs.segments {
            if let Some(x) = in_obs.get_mut(o.segment as usize) {
                *x = true;
            }
            let seen = self.last_seen.get(o.segment as usize).copied().flatten();
            let p0 = self.params.p0(o.links.len().max(1));
            for &l in &o.links {
                let Some(p) = pool.get_mut(l as usize) else {
                    continue;
                };
                p.packets += o.sent;
                p.segments += 1;
                p.p0 = p.p0.max(p0);
                p.seen = fresher(p.seen, seen.or(Some(now)));
            }
        }
        // Segments counted before but no longer in the evidence still date their links.
        for (s, seen) in self.last_seen.iter().enumerate() {
            if seen.is_none() || in_obs[s] || s >= segments.len() {
                continue;
            }
            for &l in &segments[s].links {
                if let Some(p) = pool.get_mut(l as usize) {
                    p.seen = fresher(p.seen, *seen);
                }
            }
        }
        let mut map = EvidenceMap::default();
        for (l, p) in pool.iter().enumerate() {
            let link = l as LinkIx;
            match p.seen {
                None => map.unwatched.push(link),
                Some(seen) => map.links.push(LinkEvidence {
                    link,
                    packets: p.packets,
                    segments: p.segments,
                    min_loss: smallest_shown(p.packets, p.p0, self.h),
                    age: now.saturating_sub(seen),
                }),
            }
        }
        map
    }
}

/// The smallest loss `q > p0` that `packets` packets let a test of threshold `h` tell from the
/// background `p0`: `packets · KL(q ‖ p0) ≥ h`. 1 when even losing every packet would not.
pub fn smallest_shown(packets: u64, p0: f64, h: f64) -> f64 {
    let n = packets as f64;
    if packets == 0 || !(p0 > 0.0 && p0 < 1.0) || n * kl(1.0, p0) < h {
        return 1.0;
    }
    // KL(q ‖ p0) grows with q above p0: bisect, geometrically (q spans decades).
    let (mut lo, mut hi) = (p0, 1.0f64);
    for _ in 0..100 {
        let mid = (lo * hi).sqrt();
        if n * kl(mid, p0) >= h {
            hi = mid;
        } else {
            lo = mid;
        }
        if hi / lo < 1.0 + 1e-9 {
            break;
        }
    }
    hi
}

#[cfg(test)]
mod tests;
