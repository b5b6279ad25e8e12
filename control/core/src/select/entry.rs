//! Flows seen entering the fabric, monitored on the segment the forwarding sends them onto
//! ([`super::predict`]): how selection finds the flows of a segment that delivers nothing.

use super::capacity::HH;
use super::predict::Predictor;
use super::FlowSelector;
use crate::detect::EpochDetection;
use crate::fabric::{HhReport, RuleOp};
use crate::pathbf::PathBfCodec;
use crate::topo::{SegmentId, Segments, SwitchIx};
use std::sync::Arc;

/// The pathBF of a packet that came in from a host: no switch has stamped it yet.
pub(super) const ENTRY_BF: u32 = 0;

/// An HH rule on [`ENTRY_BF`] at a monitor with hosts.
#[derive(Clone, Copy, Debug)]
pub(super) struct EntryRule {
    pub eta: u32,
    /// Flows it brought onto a segment without flows since the last epoch.
    pub useful: u32,
}

impl FlowSelector {
    /// The forwarding the controller installed, when it is the fabric's (the controller owns
    /// the forwarding and nothing has changed it): flows can then be predicted onto segments
    /// that deliver none. `None` ends the predictions.
    pub fn set_predictor(&mut self, predictor: Option<Arc<Predictor>>) {
        self.predictor = predictor;
    }

    /// Entry rules where a segment without flows starts, gone where none does; η halves each
    /// epoch a rule brings nothing while such a segment is short of β flows (flows from hosts
    /// are small in one epoch).
    pub(super) fn ask_at_entries(&mut self, segments: &Segments, ops: &mut Vec<RuleOp>) {
        let predicting = self.predictor.is_some() && self.watching.is_none();
        let mut wanted: Vec<SwitchIx> = Vec::new();
        if let Some(p) = self.predictor.as_ref().filter(|_| predicting) {
            wanted = (0..segments.len() as SegmentId)
                .filter(|seg| self.unseen.contains(seg) || self.sentinel_short(*seg))
                .map(|seg| segments.get(seg).upstream())
                .filter(|&u| p.has_hosts(u))
                .collect();
            wanted.sort_unstable();
            wanted.dedup();
        }
        let mut gone: Vec<SwitchIx> = self
            .entry
            .keys()
            .copied()
            .filter(|u| !wanted.contains(u))
            .collect();
        gone.sort_unstable();
        for u in gone {
            self.entry.remove(&u);
            self.used(u, HH, -1);
            ops.push(RuleOp::RemoveHh {
                switch: u,
                path_bf: ENTRY_BF,
            });
            self.stats.hh_rules_removed += 1;
        }
        for u in wanted {
            // Still short of flows on one of its segments that deliver none: lower η, not when
            // they all have β predicted flows already (every report would be one too many).
            // Sentinels alone never lower it: a segment with few heavy flows would otherwise
            // bring its entry rule down to reporting every flow that comes in.
            let starving = self.unseen.iter().any(|&seg| {
                segments.get(seg).upstream() == u
                    && self.per_segment.get(&seg).copied().unwrap_or(0) < self.params.beta
            });
            if let Some(rule) = self.entry.get_mut(&u) {
                if rule.useful == 0 && starving && rule.eta > 0 {
                    rule.eta /= 2;
                    ops.push(RuleOp::InstallHh {
                        switch: u,
                        path_bf: ENTRY_BF,
                        eta: rule.eta,
                    });
                }
                rule.useful = 0;
                continue;
            }
            if !self.room(u, HH) {
                self.stats.refused_full += 1;
                continue;
            }
            self.used(u, HH, 1);
            let eta = self.params.eta;
            self.entry.insert(u, EntryRule { eta, useful: 0 });
            ops.push(RuleOp::InstallHh {
                switch: u,
                path_bf: ENTRY_BF,
                eta,
            });
            self.stats.hh_rules_installed += 1;
        }
    }

    /// Whether `r` came from an entry rule.
    pub(super) fn is_entry_report(&self, r: &HhReport) -> bool {
        r.path_bf == ENTRY_BF && self.entry.contains_key(&r.switch)
    }

    /// Entry reports: a flow the forwarding sends onto a segment without flows is monitored
    /// there, expected downstream from its first packet counted.
    pub(super) fn on_entry_reports(
        &mut self,
        reports: &[&HhReport],
        segments: &Segments,
        codec: &PathBfCodec,
        ops: &mut Vec<RuleOp>,
    ) {
        let Some(p) = self.predictor.clone() else {
            self.stats.reports_ignored += reports.len() as u32;
            return;
        };
        for r in reports {
            self.stats.reports += 1;
            match self.monitor_predicted(&p, r.switch, r.flow, segments, codec, ops) {
                None => self.stats.reports_ignored += 1,
                Some(true) => {
                    if let Some(rule) = self.entry.get_mut(&r.switch) {
                        rule.useful += 1;
                    }
                }
                // A full table (counted where it refused), or a DSM rule to remove first.
                Some(false) => {}
            }
        }
    }

    /// Flows counted arriving at a monitor this epoch that the forwarding sends on from it onto
    /// an unseen segment: monitored there and expected at once. This reaches the segments that
    /// start at a monitor without hosts (a core), whose entry is another segment's end.
    pub(super) fn predict_from_arrivals(
        &mut self,
        det: &EpochDetection,
        segments: &Segments,
        codec: &PathBfCodec,
        ops: &mut Vec<RuleOp>,
    ) {
        let Some(p) = self.predictor.clone() else {
            return;
        };
        if self.watching.is_some() {
            return;
        }
        let starts: std::collections::HashSet<SwitchIx> = (0..segments.len() as SegmentId)
            .filter(|seg| self.unseen.contains(seg) || self.sentinel_short(*seg))
            .map(|s| segments.get(s).upstream())
            .collect();
        if starts.is_empty() {
            return;
        }
        let mut arrivals: Vec<(SwitchIx, crate::FlowId)> = det
            .entries
            .iter()
            .filter(|e| e.lost < e.sent)
            .map(|e| (segments.get(e.segment).downstream(), e.flow))
            .filter(|(at, _)| starts.contains(at))
            .collect();
        arrivals.sort_unstable();
        arrivals.dedup();
        for (at, flow) in arrivals {
            self.monitor_predicted(&p, at, flow, segments, codec, ops);
        }
    }

    /// Whether `seg` keeps fewer sentinel flows than asked for while flows can be predicted:
    /// flows monitored because the forwarding sends them its way, not because they arrived.
    /// A fault that drops a share of a segment's flows entirely from the start (a bad ECMP
    /// member, a corrupted TCAM entry) leaves the segment delivering the others, so selection
    /// by arrival never picks one it swallows; a sentinel is picked before it could be lost.
    pub(super) fn sentinel_short(&self, seg: SegmentId) -> bool {
        self.predictor.is_some()
            && self.watching.is_none()
            && self.sentinels_on.get(&seg).copied().unwrap_or(0) < self.params.sentinels
    }

    /// Counts each segment's sentinels, once per epoch before selection asks for more.
    pub(super) fn count_sentinels(&mut self) {
        self.sentinels_on.clear();
        for (&(_, seg), m) in &self.flows {
            if m.sentinel {
                *self.sentinels_on.entry(seg).or_default() += 1;
            }
        }
    }

    /// Monitors `flow`, seen at monitor `from`, on the segment the forwarding sends it onto if
    /// that segment is unseen and short of β flows, or short of sentinels; expected at once.
    /// `None` when the flow is not for such a segment, `Some(false)` when it cannot be monitored
    /// there now ([`FlowSelector::start_monitoring`]).
    fn monitor_predicted(
        &mut self,
        p: &Predictor,
        from: SwitchIx,
        flow: crate::FlowId,
        segments: &Segments,
        codec: &PathBfCodec,
        ops: &mut Vec<RuleOp>,
    ) -> Option<bool> {
        let seg = p.next_segment(segments, from, &flow)?;
        let have = self.per_segment.get(&seg).copied().unwrap_or(0);
        let for_unseen = self.unseen.contains(&seg) && have < self.params.beta;
        let for_sentinel = self.sentinel_short(seg) && have < self.params.max_flows_per_segment;
        if self.flows.contains_key(&(flow, seg)) || !(for_unseen || for_sentinel) {
            return None;
        }
        let bf = codec.segment_bf[seg as usize];
        if !self.start_monitoring(segments, seg, flow, bf, true, ops) {
            return Some(false);
        }
        if let Some(m) = self.flows.get_mut(&(flow, seg)) {
            m.predicted = true;
            m.sentinel = true;
        }
        *self.sentinels_on.entry(seg).or_default() += 1;
        self.stats.predicted += 1;
        Some(true)
    }
}
