//! Whether a link's loss falls on some of its flows only: a bad ECMP member, a corrupted TCAM
//! entry or a black-holed prefix drops every packet of the flows it catches and none of the
//! others, where a dirty fibre drops at random from every flow.
//!
//! Under a loss `q` spread over every packet, a flow of `n` packets loses at least one with
//! probability `p = 1 − (1 − q)^n`, so the number of flows that lost packets is a sum of
//! independent Bernoulli trials with mean `Σ p` and variance `Σ p(1 − p)`. Far fewer hit flows
//! than that (below the mean by more than [`Z`] standard deviations, and by at least
//! [`MIN_GAP`] flows) says the loss is on some flows only. With small flows and small losses
//! the test has no power and says nothing, which is the honest answer.

use super::MmEntry;
use serde::{Deserialize, Serialize};

/// Standard deviations below the mean for "some flows only" (a one-sided 3e-5 at normal tails).
const Z: f64 = 4.0;
/// Fewest missing hit flows for the verdict, so one or two flows decide nothing.
const MIN_GAP: f64 = 3.0;

/// The flows a loss was counted on.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowShare {
    /// Flows counted, and of them those that lost packets.
    pub flows: u32,
    pub hit: u32,
    /// The loss of the hit flows' packets alone.
    pub loss_of_hit: f64,
}

/// The share of `entries` (a link's flows of one epoch) that lost packets, when it is far below
/// what a loss `q` on every packet would give; `None` when the loss may be on every flow.
pub fn some_flows_only<'a>(
    entries: impl Iterator<Item = &'a MmEntry>,
    q: f64,
) -> Option<FlowShare> {
    let q = q.clamp(0.0, 1.0);
    let (mut flows, mut hit, mut mean, mut var) = (0u32, 0u32, 0.0f64, 0.0f64);
    let (mut sent_hit, mut lost_hit) = (0u64, 0u64);
    for e in entries.filter(|e| e.sent > 0) {
        flows += 1;
        let p = 1.0 - (1.0 - q).powf(e.sent as f64);
        mean += p;
        var += p * (1.0 - p);
        if e.lost > 0 {
            hit += 1;
            sent_hit += e.sent;
            lost_hit += e.lost;
        }
    }
    let gap = mean - f64::from(hit);
    (hit > 0 && gap >= MIN_GAP && gap > Z * var.sqrt()).then(|| FlowShare {
        flows,
        hit,
        loss_of_hit: lost_hit as f64 / sent_hit as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FlowId;

    fn e(n: u32, sent: u64, lost: u64) -> MmEntry {
        MmEntry {
            flow: FlowId::v4(n, 1, 6, 1, 2),
            segment: 0,
            sent,
            lost,
        }
    }

    #[test]
    fn a_tenth_of_the_flows_losing_everything_is_some_flows_only() {
        // 40 flows of 100 packets; 4 lose all: the link's loss is 10 %.
        let v: Vec<MmEntry> = (0..40)
            .map(|i| e(i, 100, if i < 4 { 100 } else { 0 }))
            .collect();
        let s = some_flows_only(v.iter(), 0.1).expect("some flows only");
        assert_eq!((s.flows, s.hit), (40, 4));
        assert_eq!(s.loss_of_hit, 1.0);
    }

    #[test]
    fn a_loss_spread_over_every_flow_is_not() {
        // 10 % of every flow's 100 packets: every flow hit.
        let v: Vec<MmEntry> = (0..40).map(|i| e(i, 100, 10)).collect();
        assert_eq!(some_flows_only(v.iter(), 0.1), None);
        // A faint loss on small flows: few flows hit is what uniform loss gives too.
        let v: Vec<MmEntry> = (0..40).map(|i| e(i, 20, u64::from(i == 0))).collect();
        assert_eq!(some_flows_only(v.iter(), 0.001), None);
        // Nothing lost: nothing to say.
        let v: Vec<MmEntry> = (0..40).map(|i| e(i, 100, 0)).collect();
        assert_eq!(some_flows_only(v.iter(), 0.1), None);
    }
}
