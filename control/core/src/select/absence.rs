//! Which monitored flows the controller expects downstream, so that their absence there is
//! read as loss (`detect::SwitchRecords::decode_expecting`).
//!
//! A flow is expected on its segment once its DSM has counted it there: that shows its DSM rule
//! is installed and matches, and that the fabric's forwarding sends the flow along the segment.
//! It stops being expected, until counted there again, when anything says it may have moved:
//! * the forwarding changed at a switch on its segment (a route or ECMP group the fabric's own
//!   control changed, as the fabric reports it);
//! * it was seen leaving the same upstream monitor on another segment (an HH report, or a DSM
//!   record of the flow monitored there too);
//! * installing its DSM rule failed.
//!
//! A DSM rule whose install failed may be missing until the flow is counted through it: a flow
//! selected again on its segment before the rule's held-back removal went out does not keep
//! that rule ([`FlowSelector::held_back_dsm`]).
//!
//! The paper's Algorithm 3 reads DSM records only, so a flow that loses every packet leaves no
//! trace; this is where we depart from it.

use super::FlowSelector;
use crate::detect::{EpochDetection, Expected};
use crate::fabric::{HhReport, RuleOp};
use crate::topo::{SegmentId, Segments, SwitchIx};
use crate::FlowId;
use std::collections::{HashMap, HashSet};

/// A held-back removal of the DSM rule a flow selected again on its segment would use.
pub(super) enum HeldBack {
    /// None is waiting: the rule is installed afresh.
    None,
    /// The removal at this index of the held-back ones: the rule is still there and is kept.
    Kept(usize),
    /// The rule's install failed and nothing showed it there since: it may be missing. The
    /// flow is not selected there again until the removal has gone out.
    Unsure,
}

impl FlowSelector {
    /// The monitored flows whose absence at their segment's downstream monitor is loss, in a
    /// stable order.
    pub fn expected(&self) -> Vec<Expected> {
        let mut out: Vec<Expected> = self
            .flows
            .iter()
            .filter(|(_, m)| m.verified)
            .map(|(&(flow, segment), _)| Expected { flow, segment })
            .collect();
        out.sort_unstable_by_key(|e| (e.segment, e.flow));
        out
    }

    /// The forwarding changed at `switches` (routes, ECMP groups): flows whose segment crosses
    /// one of them may have moved, and are expected again only once counted there again.
    pub fn forwarding_changed(&mut self, switches: &HashSet<SwitchIx>, segments: &Segments) {
        if switches.is_empty() {
            return;
        }
        let crosses = |seg: SegmentId| {
            segments
                .get(seg)
                .switches
                .iter()
                .any(|s| switches.contains(s))
        };
        for ((_, seg), m) in self.flows.iter_mut() {
            if crosses(*seg) {
                m.verified = false;
            }
        }
        // The change fell within the epoch being harvested: a flow counted on its segment in
        // it may have moved since, so that count verifies nothing.
        self.unsettled.extend(switches.iter().copied());
        for (seg, parked) in self.parked.iter_mut() {
            if crosses(*seg) {
                for p in parked.iter_mut() {
                    p.2 = false;
                }
            }
        }
    }

    /// Rule changes that failed: a flow whose DSM rule may be missing is not expected.
    pub fn on_failed(&mut self, failed: &[RuleOp]) {
        for op in failed {
            if let RuleOp::InstallDsm {
                switch,
                flow,
                path_bf,
            } = *op
            {
                self.dsm_unsure.insert((switch, flow, path_bf));
                for ((f, _), m) in self.flows.iter_mut() {
                    if *f == flow && m.downstream == switch && m.path_bf == path_bf {
                        m.verified = false;
                    }
                }
            }
        }
    }

    /// Flows counted on their segment are verified; a flow seen at the same monitor on another
    /// segment has moved.
    pub(super) fn verify(&mut self, det: &EpochDetection, segments: &Segments) {
        let mut arrived: HashMap<FlowId, Vec<SegmentId>> = HashMap::new();
        for e in det.entries.iter().filter(|e| e.lost < e.sent) {
            arrived.entry(e.flow).or_default().push(e.segment);
        }
        let unsettled = std::mem::take(&mut self.unsettled);
        for (&(flow, seg), m) in self.flows.iter_mut() {
            let Some(on) = arrived.get(&flow) else {
                continue;
            };
            if segments
                .get(seg)
                .switches
                .iter()
                .any(|s| unsettled.contains(s))
            {
                continue;
            }
            if on.contains(&seg) {
                m.verified = true;
                m.predicted = false;
                // Counted through its DSM rule: the rule is there.
                self.dsm_unsure.remove(&(m.downstream, flow, m.path_bf));
            } else if on.iter().any(|&o| segments.get(o).upstream() == m.upstream) {
                m.verified = false;
            }
        }
    }

    /// HH reports of monitored flows leaving their upstream monitor on another segment than
    /// theirs: they moved.
    pub(super) fn moved_by_reports(
        &mut self,
        reports: &[(&HhReport, Option<SegmentId>)],
        segments: &Segments,
    ) {
        let seen: HashMap<(FlowId, SwitchIx), Vec<SegmentId>> =
            reports.iter().fold(HashMap::new(), |mut m, (r, seg)| {
                if let Some(seg) = seg {
                    let up = segments.get(*seg).upstream();
                    m.entry((r.flow, up)).or_default().push(*seg);
                }
                m
            });
        if seen.is_empty() {
            return;
        }
        for (&(flow, seg), m) in self.flows.iter_mut() {
            if seen
                .get(&(flow, m.upstream))
                .is_some_and(|on| on.iter().any(|&o| o != seg))
            {
                m.verified = false;
            }
        }
    }

    /// Whether a held-back removal of the DSM rule (`switch`, `flow`, `path_bf`) is waiting, and
    /// whether the rule can be kept for the flow selected again. Kept, the removal is dropped:
    /// sent after the new install it would take the rule away, and the flow, counted upstream,
    /// would never be counted downstream again. A rule whose install failed is not kept: it may
    /// be missing, and a flow expected at once (a sentinel) would read as lost on its segment.
    pub(super) fn held_back_dsm(&self, switch: SwitchIx, flow: FlowId, path_bf: u32) -> HeldBack {
        match self.deferred.position(switch, flow, path_bf) {
            None => HeldBack::None,
            Some(_) if self.dsm_unsure.contains(&(switch, flow, path_bf)) => HeldBack::Unsure,
            Some(i) => HeldBack::Kept(i),
        }
    }

    /// The held-back removals went out: the rules they name are gone, sure or not before.
    pub(super) fn removals_sent(&mut self, ops: &[RuleOp]) {
        for op in ops {
            if let RuleOp::RemoveDsm {
                switch,
                flow,
                path_bf,
            } = *op
            {
                self.dsm_unsure.remove(&(switch, flow, path_bf));
            }
        }
    }
}
