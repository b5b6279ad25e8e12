//! Which segments are lossy this epoch, and which fall short of α packets or β flows. How a
//! segment is judged is chosen once, when the controller is made ([`Judge`]).

use super::watching::Watching;
use super::Controller;
use canary_core::decide::{decided_observations, hold, Change, Decider, LinkClearing, Release};
use canary_core::detect::{EpochDetection, Observations, Window};
use canary_core::localize::BlamedLink;
use canary_core::topo::{LinkIx, SegmentId, Segments};
use std::collections::BTreeMap;

/// How a segment is judged lossy.
pub(super) enum Judge {
    /// The paper's rule: a loss above the floor in n′ of the window's n epochs.
    Floor { min_lossy_epochs: u32 },
    /// A sequential test of each segment against the background loss, with a pooled all-clear
    /// for each blamed link; a blame holds until a test clears it.
    Sequential(Box<Sequential>),
}

pub(super) struct Sequential {
    decider: Decider,
    clearing: LinkClearing,
    /// The links blamed in the last epoch, with the least their loss has been.
    last_blamed: Vec<(LinkIx, f64)>,
    /// The links whose pooled all-clear passed this epoch.
    cleared: Vec<LinkIx>,
}

/// What one epoch decided: the observations to localize from, and the segments whose verdict
/// changed.
pub(super) struct Decided {
    pub(super) obs: Observations,
    pub(super) changes: Vec<Change>,
}

impl Judge {
    pub(super) fn sequential(decider: Decider, clearing: LinkClearing) -> Self {
        Judge::Sequential(Box::new(Sequential {
            decider,
            clearing,
            last_blamed: Vec::new(),
            cleared: Vec::new(),
        }))
    }

    /// Judges this epoch's counts `det` (at `epoch`) with the evidence `watching` keeps.
    pub(super) fn decide(
        &mut self,
        epoch: u64,
        det: &EpochDetection,
        segments: &Segments,
        window: &Window,
        watching: &mut Watching,
    ) -> Decided {
        match self {
            Judge::Floor { min_lossy_epochs } => Decided {
                obs: watching.floor_observations(
                    epoch,
                    &det.segments,
                    window,
                    segments,
                    *min_lossy_epochs,
                ),
                changes: vec![],
            },
            Judge::Sequential(s) => s.decide(epoch, det, segments, window, watching),
        }
    }

    /// What a test of `link` knowing its loss `q` gains from `counts`, and the threshold it
    /// must reach; `None` under the paper's rule.
    pub(super) fn information(
        &self,
        link: LinkIx,
        counts: &BTreeMap<SegmentId, canary_core::detect::SegmentCount>,
        q: f64,
    ) -> Option<(f64, f64)> {
        let Judge::Sequential(s) = self else {
            return None;
        };
        Some((s.decider.link_gain(link, counts, q), s.decider.threshold()))
    }

    /// The epoch each segment declared lossy began losing, as its test dates it (none under
    /// the paper's rule, which dates nothing).
    pub(super) fn onsets(&self) -> BTreeMap<SegmentId, u64> {
        match self {
            Judge::Floor { .. } => BTreeMap::new(),
            Judge::Sequential(s) => s.decider.lossy().map(|(seg, l)| (seg, l.since)).collect(),
        }
    }

    /// Notes the links the epoch blamed, with the least their loss has been: what the next
    /// epoch's all-clear tests.
    pub(super) fn blamed(&mut self, least: impl FnOnce() -> Vec<(LinkIx, f64)>) {
        if let Judge::Sequential(s) = self {
            s.last_blamed = least();
        }
    }

    /// Adds to `blamed` the last epoch's blames (`last`) no test cleared ([`hold`]); the held
    /// links, and those released because the loss moved, each with the link it moved to.
    /// Under the paper's rule nothing is held.
    pub(super) fn hold(
        &self,
        last: &[BlamedLink],
        blamed: &mut Vec<BlamedLink>,
        segments: &Segments,
    ) -> (Vec<LinkIx>, BTreeMap<LinkIx, LinkIx>) {
        let Judge::Sequential(s) = self else {
            return (Vec::new(), BTreeMap::new());
        };
        let held = hold(
            last,
            blamed,
            &s.cleared,
            |l| s.decider.lossy_through(l),
            |seg| segments.get(seg).links.as_slice(),
        );
        let corrected = held
            .released
            .into_iter()
            .filter_map(|(l, why)| match why {
                Release::Corrected { to } => Some((l, to)),
                _ => None,
            })
            .collect();
        (held.held, corrected)
    }
}

impl Sequential {
    fn decide(
        &mut self,
        epoch: u64,
        det: &EpochDetection,
        segments: &Segments,
        window: &Window,
        watching: &mut Watching,
    ) -> Decided {
        let d = &mut self.decider;
        let mut changes = d.observe(epoch, &det.segments);
        // A link whose segments, taken together, show it repaired ends their losses.
        let through = |l: LinkIx| d.segments_through(l).to_vec();
        self.cleared = self
            .clearing
            .observe(&self.last_blamed, &det.segments, through);
        for &l in &self.cleared {
            let segs: Vec<SegmentId> = d.segments_through(l).iter().map(|t| t.0).collect();
            for s in segs {
                if d.force_clear(s) {
                    changes.push(Change::Cleared { segment: s });
                }
            }
        }
        let totals = watching.totals(epoch, &det.segments, window);
        // Links whose segments together show a loss none shows alone.
        let declared = d.observe_links(epoch, &det.segments, &totals, &changes);
        changes.extend(declared);
        let obs = decided_observations(segments, &totals, d);
        Decided { obs, changes }
    }
}

impl Controller {
    /// Segments that counted fewer than α packets or β flows in this epoch (of those watched
    /// in it, when watching in rounds).
    pub(super) fn short_segments(&self, det: &EpochDetection) -> usize {
        (0..self.segments.len())
            .filter(|&i| self.watching.watches(i as SegmentId, self.epoch))
            .filter(|&i| {
                let c = det
                    .segments
                    .get(&(i as SegmentId))
                    .copied()
                    .unwrap_or_default();
                c.sent < self.cfg.selection.alpha || c.flows < self.cfg.selection.beta
            })
            .count()
    }
}
