//! Watching segments in rounds ([`crate::schedule::WatchPlan`]): one round's segments served at a
//! time, the others' HH rules removed and their flows parked for their next round.

use super::capacity::HH;
use super::FlowSelector;
use crate::fabric::RuleOp;
use crate::pathbf::PathBfCodec;
use crate::topo::{SegmentId, Segments};
use crate::FlowId;

impl FlowSelector {
    /// Serves only `segments` from the next [`FlowSelector::on_epoch`] on (`None`: all): the
    /// flows of any other segment are retired and its HH rule removed, so a switch's meters
    /// count one round of segments at a time.
    pub fn set_watching(&mut self, segments: Option<&[SegmentId]>) {
        self.watching = segments.map(|s| s.iter().copied().collect());
    }

    pub(super) fn watched(&self, segment: SegmentId) -> bool {
        self.watching.as_ref().is_none_or(|w| w.contains(&segment))
    }

    /// Keeps up to β of the flows whose round ended, per segment, for its next round.
    /// A parked flow keeps whether it was verified: its path is known until the forwarding on
    /// its way changes ([`FlowSelector::forwarding_changed`]).
    pub(super) fn park(&mut self, mut round_over: Vec<(SegmentId, FlowId, u32, bool)>) {
        round_over.sort_unstable();
        for (seg, flow, path_bf, verified) in round_over {
            let parked = self.parked.entry(seg).or_default();
            if parked.len() < self.params.beta as usize {
                parked.push((flow, path_bf, verified));
            }
        }
    }

    /// Installs again the parked flows of the segments watched now (DSM before USM).
    pub(super) fn unpark(&mut self, segments: &Segments) -> Vec<RuleOp> {
        let Some(watching) = &self.watching else {
            return Vec::new();
        };
        let mut back: Vec<SegmentId> = watching
            .iter()
            .copied()
            .filter(|s| self.parked.contains_key(s))
            .collect();
        back.sort_unstable();
        let mut ops = Vec::new();
        for seg in back {
            for (flow, path_bf, verified) in self.parked.remove(&seg).expect("listed") {
                self.start_monitoring(segments, seg, flow, path_bf, verified, &mut ops);
            }
        }
        ops
    }

    /// Removes the HH rules of segments not watched now.
    pub(super) fn unwatched_hh_rules(
        &mut self,
        segments: &Segments,
        codec: &PathBfCodec,
    ) -> Vec<RuleOp> {
        let mut gone: Vec<SegmentId> = self
            .hh
            .keys()
            .copied()
            .filter(|&s| !self.watched(s))
            .collect();
        gone.sort_unstable();
        gone.into_iter()
            .map(|seg| {
                if let Some(rule) = self.hh.remove(&seg) {
                    self.eta_when_left.insert(seg, rule.eta);
                }
                let switch = segments.get(seg).downstream();
                self.used(switch, HH, -1);
                self.stats.hh_rules_removed += 1;
                RuleOp::RemoveHh {
                    switch,
                    path_bf: codec.segment_bf[seg as usize],
                }
            })
            .collect()
    }
}
