//! Each directed link's own change test, pooling every segment through it.
//!
//! A segment's CUSUM weighs only that segment's packets. A link lies on several segments, and a
//! loss `q` on it takes about `q` of every one's packets, so the segments' log-likelihood ratios
//! add into one test of the link: a loss on a link whose busiest segment carries 1 800 packets
//! an epoch is then decided on all of its segments' packets together (k = 8: four times as many),
//! at the information limit the evidence map states ([`super::smallest_shown`]).
//!
//! Under "link `l` loses `q`", segment `s` (background `p0_s`) loses `1 − (1 − p0_s)(1 − q)`;
//! under "every link of `s` is healthy", at most `p0_s`. Page's CUSUM of the summed ratio runs
//! for `q` on a grid (`4·background`, ×4, … below ½), as a segment's does. The false-alarm
//! argument is the segments' one (Ville's inequality, one start per epoch, arm and link), so the
//! threshold counts the links' arms with the segments' ([`super::Decider::new`]).
//!
//! A link's test firing says that its segments, together, lose more than healthy ones can. That
//! may be its neighbour's loss seen on the one segment they share: which link is at fault is the
//! localizer's question. So a firing declares the segments through the link that lost packets,
//! and the localizer weighs them with the rest.

use super::{llr, threshold, Change, Cusum, Decider, DecisionParams, Lossy, State};
use crate::detect::{SegmentCount, WindowCount};
use crate::topo::{LinkIx, SegmentId};
use std::collections::BTreeMap;

/// The loss rates a link is watched for: 4 × a healthy link's, then ×4 up to one half.
pub(super) fn link_arms(background: f64) -> Vec<f64> {
    std::iter::successors(Some(background * 4.0), |q| Some(q * 4.0))
        .take_while(|&q| q < 0.5)
        .collect()
}

/// What `count` (a segment whose healthy loss is `p0`) weighs for "a link of it loses `q`".
pub(super) fn link_llr(count: &SegmentCount, p0: f64, q: f64) -> f64 {
    llr(count, 1.0 - (1.0 - p0) * (1.0 - q), p0)
}

#[derive(Clone, Debug)]
pub struct LinkWatch {
    /// Loss rates of a link watched for.
    arms: Vec<f64>,
    /// Per link: the segments through it, each with its background.
    through: Vec<Vec<(SegmentId, f64)>>,
    /// Per link: one CUSUM per arm (empty for a link no segment crosses).
    cusums: Vec<Vec<Cusum>>,
    /// Per segment: the links it crosses, and its background.
    links_of: Vec<Vec<LinkIx>>,
    p0_of: Vec<f64>,
}

/// A link whose pooled test passed: its loss began in `since`, at about `rate`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkFired {
    pub link: LinkIx,
    pub since: u64,
    pub rate: f64,
}

impl LinkWatch {
    /// `segment_links[s]`: the links segment `s` crosses; `p0[s]`: its background;
    /// `background`: a healthy link's.
    pub fn new(links: usize, segment_links: &[Vec<LinkIx>], p0: &[f64], background: f64) -> Self {
        let arms = link_arms(background);
        let mut through = vec![Vec::new(); links];
        for (s, ls) in segment_links.iter().enumerate() {
            for &l in ls {
                if let Some(t) = through.get_mut(l as usize) {
                    t.push((s as SegmentId, p0[s]));
                }
            }
        }
        let cusums = through
            .iter()
            .map(|t| {
                if t.is_empty() {
                    Vec::new()
                } else {
                    vec![Cusum::default(); arms.len()]
                }
            })
            .collect();
        Self {
            arms,
            through,
            cusums,
            links_of: segment_links.to_vec(),
            p0_of: p0.to_vec(),
        }
    }

    /// Arms over every watched link: what the fabric-wide threshold counts.
    pub fn total_arms(&self) -> usize {
        self.cusums.iter().map(Vec::len).sum()
    }

    /// The segments through `link`, each with its background.
    pub fn through(&self, link: LinkIx) -> &[(SegmentId, f64)] {
        self.through.get(link as usize).map_or(&[], Vec::as_slice)
    }

    /// What a test of `link` that knew its loss `q` gains from `counts`: the log-likelihood ratio
    /// of the segments through it that counted, each at the loss `q` on the link makes it show,
    /// against its background. Summed from a loss's onset, the epoch it first reaches the
    /// threshold is the earliest a sequential test could have decided on the packets counted:
    /// the information limit a detection is measured against.
    pub fn oracle_gain(
        &self,
        link: LinkIx,
        counts: &BTreeMap<SegmentId, SegmentCount>,
        q: f64,
    ) -> f64 {
        let q = q.clamp(0.0, 1.0 - 1e-12);
        self.through(link)
            .iter()
            .filter_map(|&(s, p0)| Some(link_llr(counts.get(&s)?, p0, q)))
            .sum()
    }

    /// Adds one epoch's counts against the threshold `h`; returns the links whose test passed,
    /// each restarted. Links none of whose segments counted stand still. Segments `declared`
    /// lossy already are left out: their loss is the localizer's to place, and a neighbour of
    /// the lossy link would otherwise pass on the one segment it shares with it.
    pub fn observe(
        &mut self,
        epoch: u64,
        counts: &BTreeMap<SegmentId, SegmentCount>,
        declared: impl Fn(SegmentId) -> bool,
        h: f64,
    ) -> Vec<LinkFired> {
        // Each link's counts for this epoch, segment by segment, with their backgrounds.
        let mut pooled: BTreeMap<LinkIx, Vec<(SegmentCount, f64)>> = BTreeMap::new();
        for (&s, c) in counts.iter().filter(|(&s, c)| c.sent > 0 && !declared(s)) {
            let Some(links) = self.links_of.get(s as usize) else {
                continue;
            };
            for &l in links {
                let p0 = self.p0_of[s as usize];
                pooled.entry(l).or_default().push((*c, p0));
            }
        }
        let mut fired = Vec::new();
        for (link, segs) in pooled {
            let Some(cusums) = self.cusums.get_mut(link as usize) else {
                continue;
            };
            let total = segs.iter().fold(SegmentCount::default(), |mut t, (c, _)| {
                t.sent += c.sent;
                t.lost += c.lost;
                t
            });
            let mut best: Option<(f64, u64)> = None;
            for (cu, &q) in cusums.iter_mut().zip(&self.arms) {
                let step: f64 = segs.iter().map(|(c, p0)| link_llr(c, *p0, q)).sum();
                cu.add(epoch, &total, step);
                // Of several arms at once, the one whose change began first.
                if cu.sum >= h && best.is_none_or(|(_, from)| cu.from < from) {
                    best = Some((q, cu.from));
                }
            }
            if let Some((rate, since)) = best {
                cusums.iter_mut().for_each(|c| *c = Cusum::default());
                fired.push(LinkFired { link, since, rate });
            }
        }
        fired
    }

    /// Restarts the test of every link through `segment`, newly declared lossy: what it added
    /// to them is now the localizer's to place.
    pub fn restart_through(&mut self, segment: SegmentId) {
        for &l in self
            .links_of
            .get(segment as usize)
            .map_or(&[][..], Vec::as_slice)
        {
            if let Some(c) = self.cusums.get_mut(l as usize) {
                c.iter_mut().for_each(|c| *c = Cusum::default());
            }
        }
    }
}

/// The decider's links: building it with them, and their tests' part in each epoch.
impl Decider {
    /// Tests every segment, and every one of the fabric's `n_links` links on the segments
    /// through it together ([`LinkWatch`]); `segment_links[s]`: the links segment `s` crosses.
    /// The threshold counts both tests' arms, so the false alarms asked for cover both.
    pub fn with_links(
        segment_links: &[Vec<LinkIx>],
        n_links: usize,
        params: DecisionParams,
    ) -> Self {
        let lengths: Vec<usize> = segment_links.iter().map(Vec::len).collect();
        let mut d = Self::new(&lengths, params);
        let watch = LinkWatch::new(n_links, segment_links, &d.p0, params.background);
        let total: usize = d.arms.iter().map(Vec::len).sum::<usize>() + watch.total_arms();
        d.h = threshold(total.max(1), params.false_alarms);
        d.links = Some(watch);
        d
    }

    /// Adds one epoch's counts to every link's pooled test; a link whose test passes declares
    /// the segments through it that lost more than their background over `totals` (the
    /// evidence the epoch localizes from), with those counts and the loss dated from the link's
    /// test. Segments already lossy stay as they are; `declared_now`: what the segments' own
    /// tests changed this epoch ([`Decider::observe`]).
    pub fn observe_links(
        &mut self,
        epoch: u64,
        counts: &BTreeMap<SegmentId, SegmentCount>,
        totals: &BTreeMap<SegmentId, WindowCount>,
        declared_now: &[Change],
    ) -> Vec<Change> {
        let Some(watch) = &mut self.links else {
            return Vec::new();
        };
        let state = &mut self.state;
        // Segments their own test declared this epoch take their loss out of their links' tests.
        for c in declared_now {
            if let Change::Declared { segment, .. } = c {
                watch.restart_through(*segment);
            }
        }
        let is_lossy = |s: SegmentId| matches!(state.get(s as usize), Some(State::Lossy(_)));
        let fired = watch.observe(epoch, counts, is_lossy, self.h);
        let mut changes = Vec::new();
        for fired in fired {
            let through: Vec<(SegmentId, f64)> = watch.through(fired.link).to_vec();
            for (segment, p0) in through {
                let Some(t) = totals.get(&segment) else {
                    continue;
                };
                let s = segment as usize;
                if t.lost == 0 || (t.lost as f64) <= p0 * t.sent as f64 {
                    continue;
                }
                if !matches!(state[s], State::Watching(_)) {
                    continue;
                }
                // What its all-clear weighs against: the least its own counts show it loses
                // (never below the lowest loss watched for, nor above the link's rate).
                let at_link = 1.0 - (1.0 - p0) * (1.0 - fired.rate);
                let low = crate::score::wilson(t.lost as f64 / t.sent as f64, t.sent, 3.0)[0];
                state[s] = State::Lossy(Lossy {
                    since: fired.since,
                    declared: epoch,
                    sent: t.sent,
                    lost: t.lost,
                    rate: low.max(4.0 * p0).min(at_link),
                    clear: Cusum::default(),
                });
                watch.restart_through(segment);
                changes.push(Change::Declared {
                    segment,
                    since: fired.since,
                });
            }
        }
        changes
    }

    /// What a test of `link` knowing its loss `q` gains from `counts`
    /// ([`LinkWatch::oracle_gain`]); 0 when links are not tested.
    pub fn link_gain(
        &self,
        link: LinkIx,
        counts: &BTreeMap<SegmentId, SegmentCount>,
        q: f64,
    ) -> f64 {
        self.links
            .as_ref()
            .map_or(0.0, |w| w.oracle_gain(link, counts, q))
    }

    /// The segments through `link`, each with its background (none when links are not tested).
    pub fn segments_through(&self, link: LinkIx) -> &[(SegmentId, f64)] {
        self.links.as_ref().map_or(&[], |w| w.through(link))
    }

    /// The segments through `link` declared lossy now (none when links are not tested).
    pub fn lossy_through(&self, link: LinkIx) -> Vec<SegmentId> {
        self.links.as_ref().map_or_else(Vec::new, |w| {
            w.through(link)
                .iter()
                .map(|&(s, _)| s)
                .filter(|&s| self.lossy_segment(s).is_some())
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(sent: u64, lost: u64) -> SegmentCount {
        SegmentCount {
            sent,
            lost,
            flows: 20,
        }
    }

    /// Link 0 lies on four segments (with links 1..=4), each of 1 800 packets an epoch, and
    /// loses 0.05 %: about 0.9 packets per segment and epoch. Link 5 lies on none.
    fn four_segments(background: f64) -> LinkWatch {
        let segs: Vec<Vec<LinkIx>> = (1..=4).map(|m| vec![0, m]).collect();
        let p0 = vec![1.0 - (1.0 - background).powi(2); 4];
        LinkWatch::new(6, &segs, &p0, background)
    }

    #[test]
    fn a_link_decides_on_its_segments_packets_together() {
        let mut w = four_segments(1e-5);
        // The same losses, one per segment and epoch (a 0.055 % rate): 20 epochs in all.
        let h = 23.0;
        let counts: BTreeMap<SegmentId, SegmentCount> = (0..4).map(|s| (s, c(1_800, 1))).collect();
        let at = (0..20)
            .find(|&e| !w.observe(e, &counts, |_| false, h).is_empty())
            .expect("the pooled test passes");
        // 7 200 packets and 4 losses an epoch: the 6.4e-4 arm gains about
        // 4·ln(32) − 7 200·6.2e-4 ≈ 9.4 an epoch, so its sum reaches 23 in the third epoch.
        assert_eq!(at, 2);
        // One segment alone gains a quarter of that: no segment test could have passed yet.
        let mut one = four_segments(1e-5);
        let single: BTreeMap<SegmentId, SegmentCount> = [(0, c(1_800, 1))].into_iter().collect();
        assert!((0..=at).all(|e| one.observe(e, &single, |_| false, h).is_empty()));
    }

    #[test]
    fn healthy_segments_never_pass_and_a_link_without_segments_is_not_watched() {
        let mut w = four_segments(1e-5);
        // Links 0..=4 are watched, link 5 is not.
        assert_eq!(w.total_arms(), 5 * w.arms.len());
        let counts: BTreeMap<SegmentId, SegmentCount> = (0..4).map(|s| (s, c(1_800, 0))).collect();
        assert!((0..500).all(|e| w.observe(e, &counts, |_| false, 23.0).is_empty()));
        assert!(w.through(5).is_empty());
    }
}
