//! Which segments are lossy this epoch, and which fall short of α packets or β flows.

use super::Controller;
use canary_core::decide::{decided_observations, Change};
use canary_core::detect::{observations, EpochDetection, Observations};
use canary_core::topo::{LinkIx, SegmentId};

impl Controller {
    /// The window's observations under the decision in use, and the segments whose verdict
    /// changed this epoch.
    pub(super) fn decide(&mut self, det: &EpochDetection) -> (Observations, Vec<Change>) {
        match &mut self.decider {
            Some(d) => {
                let mut changes = d.observe(self.epoch, &det.segments);
                // A link whose segments, taken together, show it repaired ends their losses.
                let through = |l: LinkIx| d.segments_through(l).to_vec();
                let clearing = self.link_clearing.as_mut().expect("with the decider");
                self.links_cleared = clearing.observe(&self.last_blamed, &det.segments, through);
                for &l in &self.links_cleared {
                    let segs: Vec<SegmentId> = d.segments_through(l).iter().map(|t| t.0).collect();
                    for s in segs {
                        if d.force_clear(s) {
                            changes.push(Change::Cleared { segment: s });
                        }
                    }
                }
                // Watching in rounds, a segment's evidence is its latest watch, however old.
                let totals = if self.plan.is_some() {
                    self.shown.record(self.epoch, &det.segments);
                    self.shown.totals()
                } else {
                    self.window.totals()
                };
                // Links whose segments together show a loss none shows alone.
                let declared = d.observe_links(self.epoch, &det.segments, &totals, &changes);
                changes.extend(declared);
                let obs = decided_observations(&self.segments, &totals, d);
                (obs, changes)
            }
            None if self.plan.is_some() => {
                let obs = self
                    .shown
                    .observe(
                        self.epoch,
                        &det.segments,
                        &self.segments,
                        self.cfg.min_lossy_epochs,
                    )
                    .clone();
                (obs, vec![])
            }
            None => {
                let obs = observations(
                    &self.segments,
                    &self.window.totals(),
                    self.cfg.min_lossy_epochs,
                );
                (obs, vec![])
            }
        }
    }

    /// Segments that counted fewer than α packets or β flows in this epoch (of those watched
    /// in it, when watching in rounds).
    pub(super) fn short_segments(&self, det: &EpochDetection) -> usize {
        let watched = |i: usize| {
            self.plan
                .as_ref()
                .is_none_or(|p| p.round_of(i as SegmentId) == p.round_at(self.epoch))
        };
        self.segments
            .list
            .iter()
            .enumerate()
            .filter(|(i, _)| watched(*i))
            .filter(|(i, _)| {
                let c = det
                    .segments
                    .get(&(*i as SegmentId))
                    .copied()
                    .unwrap_or_default();
                c.sent < self.cfg.selection.alpha || c.flows < self.cfg.selection.beta
            })
            .count()
    }
}
