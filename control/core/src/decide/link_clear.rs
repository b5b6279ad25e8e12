//! A blamed link's all-clear, from every segment through it at once.
//!
//! After a repair each segment through the link has to show, on its own packets, that it is
//! back to its background; the thinnest segment decides when the last one does (on the testbed,
//! a segment of 10 packets an epoch took 16 epochs). The link's own question pools them: if the
//! link still lost at least `rate`, every segment through it would too, so the product of their
//! likelihood ratios of "background" against "still `rate`" is a supermartingale of mean at most
//! 1, and Ville's inequality bounds a false all-clear by `e^-h` as for one segment.

use super::{llr, DecisionParams};
use crate::detect::SegmentCount;
use crate::topo::{LinkIx, SegmentId};
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub struct LinkClearing {
    h: f64,
    /// Per blamed link: the least its loss has been, and the CUSUM of its all-clear.
    links: BTreeMap<LinkIx, (f64, f64)>,
}

impl LinkClearing {
    pub fn new(params: &DecisionParams) -> Self {
        Self {
            h: (1.0 / params.false_alarms).ln(),
            links: BTreeMap::new(),
        }
    }

    /// Adds one epoch's `counts` for the links blamed until now (`blamed`: each link with the
    /// least its loss has been); `through(l)` gives the segments crossing `l`, each with its
    /// background `p0`. Returns the links whose all-clear test passed.
    pub fn observe(
        &mut self,
        blamed: &[(LinkIx, f64)],
        counts: &BTreeMap<SegmentId, SegmentCount>,
        through: impl Fn(LinkIx) -> Vec<(SegmentId, f64)>,
    ) -> Vec<LinkIx> {
        self.links.retain(|l, _| blamed.iter().any(|b| b.0 == *l));
        let mut clear = Vec::new();
        for &(link, rate) in blamed {
            let e = self.links.entry(link).or_insert((rate, 0.0));
            e.0 = e.0.max(rate);
            let segs = through(link);
            if segs.iter().any(|&(_, p0)| p0 >= e.0) {
                continue; // A rate no higher than the background tells nothing apart.
            }
            let step: f64 = segs
                .iter()
                .filter_map(|&(s, p0)| counts.get(&s).map(|c| llr(c, p0, e.0)))
                .sum();
            e.1 = (e.1 + step).max(0.0);
            if e.1 >= self.h {
                clear.push(link);
            }
        }
        for l in &clear {
            self.links.remove(l);
        }
        clear
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(sent: u64, lost: u64) -> SegmentCount {
        SegmentCount {
            sent,
            lost,
            flows: 1,
        }
    }

    #[test]
    fn thin_segments_together_clear_a_link_sooner_than_each_alone() {
        let params = DecisionParams::default();
        let p0 = params.p0(2);
        let mut lc = LinkClearing::new(&params);
        let through = |_| vec![(0, p0), (1, p0), (2, p0)];
        // Three segments of 12 packets an epoch, no loss after the repair, the link at >= 7 %.
        let counts: BTreeMap<SegmentId, SegmentCount> =
            [(0, c(12, 0)), (1, c(12, 0)), (2, c(12, 0))]
                .into_iter()
                .collect();
        let at = (1..20)
            .find(|_| !lc.observe(&[(5, 0.07)], &counts, through).is_empty())
            .expect("cleared");
        // Each epoch adds 36 × ln(1/0.93) ≈ 2.6 of the ln(1e6) ≈ 13.8 needed: 6 epochs; one
        // segment alone would take 16.
        assert_eq!(at, 6);
        // Still losing at that rate: never cleared.
        let mut lc = LinkClearing::new(&params);
        let lossy: BTreeMap<SegmentId, SegmentCount> =
            [(0, c(100, 8)), (1, c(100, 7)), (2, c(100, 9))]
                .into_iter()
                .collect();
        assert!((0..200).all(|_| lc.observe(&[(5, 0.07)], &lossy, through).is_empty()));
    }
}
