//! Asking for flows where an epoch's counts fell short of α and β: HH rules, furthest short first,
//! and adaptive η.

use super::capacity::HH;
use super::FlowSelector;
use super::HhRule;
use crate::detect::EpochDetection;
use crate::fabric::RuleOp;
use crate::pathbf::PathBfCodec;
use crate::topo::{SegmentId, Segments, SwitchIx};
use std::collections::HashSet;

impl FlowSelector {
    /// How short every answered segment is; an HH rule for each short one, the furthest short
    /// first while its downstream switch has room.
    pub(super) fn ask_where_short(
        &mut self,
        det: &EpochDetection,
        answered: &HashSet<SwitchIx>,
        segments: &Segments,
        codec: &PathBfCodec,
        ops: &mut Vec<RuleOp>,
    ) {
        let (alpha, beta) = (
            self.params.alpha.max(1) as f64,
            self.params.beta.max(1) as f64,
        );
        self.shortfall.clear();
        let mut order: Vec<(f64, usize)> = Vec::new();
        for (i, seg) in segments.list.iter().enumerate() {
            if !answered.contains(&seg.downstream()) || !self.watched(i as SegmentId) {
                continue;
            }
            let c = det
                .segments
                .get(&(i as SegmentId))
                .copied()
                .unwrap_or_default();
            let by =
                (1.0 - c.sent as f64 / alpha).max(0.0) + (1.0 - f64::from(c.flows) / beta).max(0.0);
            self.shortfall.insert(i as SegmentId, by);
            order.push((by, i));
        }
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        // Segments with a flow counted arriving: the others deliver nothing we have seen, and
        // flows predicted onto them keep coming until one arrives.
        let arrived: HashSet<SegmentId> = self
            .flows
            .iter()
            .filter(|(_, m)| !m.predicted)
            .map(|(&(_, seg), _)| seg)
            .collect();
        self.unseen.clear();
        for (_, i) in order {
            let seg = &segments.list[i];
            let id = i as SegmentId;
            let c = det.segments.get(&id).copied().unwrap_or_default();
            let short = c.sent < self.params.alpha || c.flows < self.params.beta;
            let path_bf = codec.segment_bf[i];
            let have = self.per_segment.get(&id).copied().unwrap_or(0);
            if let Some(rule) = self.hh.get_mut(&id) {
                if short && !arrived.contains(&id) && rule.reports == 0 {
                    self.unseen.insert(id);
                }
                if self.params.adaptive_eta && short && rule.reports == 0 && rule.eta > 0 {
                    rule.eta /= 2;
                    let eta = rule.eta;
                    ops.push(RuleOp::InstallHh {
                        switch: seg.downstream(),
                        path_bf,
                        eta,
                    });
                }
                rule.reports = 0;
                continue;
            }
            if short && have < self.params.max_flows_per_segment {
                if !self.room(seg.downstream(), HH) {
                    self.stats.refused_full += 1;
                    continue;
                }
                self.used(seg.downstream(), HH, 1);
                let eta = self.eta_when_left.remove(&id).unwrap_or(self.params.eta);
                self.hh.insert(
                    id,
                    HhRule {
                        remaining: self.params.delta,
                        eta,
                        reports: 0,
                    },
                );
                ops.push(RuleOp::InstallHh {
                    switch: seg.downstream(),
                    path_bf,
                    eta,
                });
                self.stats.hh_rules_installed += 1;
            }
        }
        self.count_sentinels();
        self.ask_at_entries(segments, ops);
    }
}
