//! Flow selection (Sec. III-D, Fig. 3): keep at least α packets and β flows counted on every
//! segment by asking the data plane for heavy flows.
//!
//! After each epoch, a segment that counted fewer than α packets or β flows gets an HH rule at
//! its downstream monitor (Step 1-2). Each HH report (Step 3) becomes a DSM rule at the
//! downstream monitor and a USM rule at the upstream one (Step 4); after δ flows the HH rule is
//! removed (Step 5).
//!
//! Our decisions where the paper is silent:
//! * Install order: DSM before USM. The DSM counts only packets the USM marked, so a flow is
//!   never counted downstream without being counted upstream.
//! * Retirement: a flow that yields no minus-meter entry for `retire_after` epochs in a row (it
//!   ended, or it keeps colliding and only pollutes buckets) is retired. Only epochs its rules
//!   were in for the whole of count: not the one it was selected after, nor its rules' first
//!   ([`partial`]). Its USM rule goes first; the DSM rule goes one epoch later, once its marked
//!   packets in flight have drained.
//! * A segment holds at most `max_flows_per_segment` flows, so a segment whose traffic cannot
//!   reach α does not grow its rules without bound.
//! * Adaptive η: an HH rule that brought no report in a whole epoch while its segment stayed
//!   short halves its η (down to 0, the paper's "random flows" setting). Heavy flows crossing a
//!   very lossy link reach the downstream HashPipe thinned out and would otherwise never pass
//!   η, leaving the worst segments unobserved. η returns to its base with the next new rule,
//!   except when segments are watched in rounds: a segment's next round starts from the η its
//!   last round ended with.
//! * Switch memory ([`RuleCapacity`], read from the program): no rule is asked for that a
//!   switch's table cannot hold. When tables run short, the segments furthest short of α and β
//!   come first: HH rules are given out, and reports taken, in order of the segment's shortfall
//!   (`1 - sent/α` plus `1 - flows/β`, each at least 0, from the last epoch). What was refused is
//!   said ([`FlowSelector::take_full`]).

use crate::detect::EpochDetection;
use crate::fabric::{HhReport, RuleOp};
use crate::pathbf::{Decoded, PathBfCodec};
use crate::topo::{SegmentId, Segments, SwitchIx};
use crate::FlowId;
use std::collections::{HashMap, HashSet};

#[derive(Clone, Copy, Debug)]
struct HhRule {
    /// Flows still to select.
    remaining: u32,
    eta: u32,
    /// Reports it brought since the last epoch.
    reports: u32,
}

#[derive(Clone, Debug)]
struct Monitored {
    segment: SegmentId,
    upstream: SwitchIx,
    downstream: SwitchIx,
    path_bf: u32,
    idle_epochs: u32,
    /// The selection that started it ([`FlowSelector::selections`]).
    selected_at: u64,
    /// Its DSM has counted it on this segment since its rules were installed and the
    /// forwarding last changed on its way: its absence downstream is loss ([`FlowSelector::expected`]).
    verified: bool,
    /// Monitored because the forwarding sends it this way ([`predict`]), not yet counted
    /// arriving: its segment still has no flow seen to arrive.
    predicted: bool,
    /// Monitored because the forwarding sends it this way, whether or not it has arrived since:
    /// one of the segment's sentinels ([`FlowSelector::sentinel_short`]).
    sentinel: bool,
}

#[derive(Clone, Debug)]
pub struct FlowSelector {
    params: SelectionParams,
    /// Keyed by flow *and* segment: a flow crossing two segments (edge→agg→core, then
    /// core→agg→edge) is selected on each by that segment's own HH rule, as Sec. III-D selects
    /// per segment.
    flows: HashMap<(FlowId, SegmentId), Monitored>,
    /// Monitored segments whose USM rule is (switch, flow): one USM rule serves them all (a
    /// flow that changed path can start two segments at one switch).
    usm_users: HashMap<(SwitchIx, FlowId), u32>,
    per_segment: HashMap<SegmentId, u32>,
    /// Active HH rules by segment.
    hh: HashMap<SegmentId, HhRule>,
    deferred: Deferred,
    capacity: RuleCapacity,
    /// Rules per switch: (USM, DSM, HH), as the selector has asked for them (DSM removals held
    /// back still count: the rule is still there).
    usage: HashMap<SwitchIx, [usize; 3]>,
    /// How short each segment was of α and β at the last epoch (0: not short).
    shortfall: HashMap<SegmentId, f64>,
    full: std::collections::BTreeMap<FullTable, u32>,
    /// The segments served now, when the switches watch them in rounds
    /// ([`crate::schedule::WatchPlan`]); `None`: all.
    watching: Option<HashSet<SegmentId>>,
    /// The η an HH rule had come down to when its round ended, for the segment's next round
    /// (adaptive η takes several epochs to reach the flows through a very lossy link).
    eta_when_left: HashMap<SegmentId, u32>,
    /// Flows a segment had when its round ended (flow, pathBF), installed again when its next
    /// round begins: finding flows through HH reports takes an epoch a round cannot spare.
    parked: HashMap<SegmentId, Vec<(FlowId, u32, bool)>>,
    /// Switches whose forwarding changed during the epoch being harvested (taken by the next
    /// [`FlowSelector::on_epoch`]).
    unsettled: HashSet<SwitchIx>,
    /// (flow, segment) pairs whose DSM rule was asked for while the flow's USM rule upstream
    /// already counted (it serves another segment): their first epoch's counts disagree by the
    /// packets sent before the DSM rule was in ([`FlowSelector::take_half_counted`]).
    half_counted: HashSet<(FlowId, SegmentId)>,
    /// Half-counted pairs of the epoch after the next: retired pairs whose held-back DSM
    /// removal goes out in it while their USM rule keeps counting ([`partial`]).
    half_counted_next: HashSet<(FlowId, SegmentId)>,
    /// Selections made ([`FlowSelector::on_epoch`] calls): a flow's age in epochs.
    selections: u64,
    /// DSM rules (switch, flow, pathBF) whose install failed and that nothing showed on the
    /// switch since: they may be missing ([`FlowSelector::on_failed`]).
    dsm_unsure: HashSet<(SwitchIx, FlowId, u32)>,
    /// The forwarding the controller installed, while it is the fabric's ([`predict`]).
    predictor: Option<std::sync::Arc<predict::Predictor>>,
    /// Entry rules by switch ([`entry`]).
    entry: HashMap<SwitchIx, entry::EntryRule>,
    /// Segments without a monitored flow whose HH rule brought none in the last epoch.
    unseen: HashSet<SegmentId>,
    /// Sentinel flows per segment, counted when the epoch's selection starts.
    sentinels_on: HashMap<SegmentId, u32>,
    pub stats: SelectionStats,
}

impl FlowSelector {
    pub fn new(params: SelectionParams) -> Self {
        Self::with_capacity(params, RuleCapacity::UNLIMITED)
    }

    /// A selector that never asks a switch for more rules than `capacity`.
    pub fn with_capacity(params: SelectionParams, capacity: RuleCapacity) -> Self {
        Self {
            params,
            flows: HashMap::new(),
            usm_users: HashMap::new(),
            per_segment: HashMap::new(),
            hh: HashMap::new(),
            deferred: Deferred::default(),
            capacity,
            usage: HashMap::new(),
            shortfall: HashMap::new(),
            full: Default::default(),
            watching: None,
            eta_when_left: HashMap::new(),
            parked: HashMap::new(),
            unsettled: HashSet::new(),
            half_counted: HashSet::new(),
            half_counted_next: HashSet::new(),
            selections: 0,
            dsm_unsure: HashSet::new(),
            predictor: None,
            entry: HashMap::new(),
            unseen: HashSet::new(),
            sentinels_on: HashMap::new(),
            stats: SelectionStats::default(),
        }
    }

    pub fn params(&self) -> &SelectionParams {
        &self.params
    }

    /// Monitored (flow, segment) pairs, each with its DSM rule and a USM rule upstream.
    pub fn monitored(&self) -> usize {
        self.flows.len()
    }

    pub fn hh_rules(&self) -> usize {
        self.hh.len()
    }

    /// DSM removals held back one epoch; call after the drain that followed the parity flip.
    pub fn take_deferred(&mut self) -> Vec<RuleOp> {
        let ops = self.deferred.take();
        self.count_ops(&ops);
        self.removals_sent(&ops);
        ops
    }

    /// HH reports → DSM then USM rules; HH rules removed once δ flows are selected.
    pub fn on_reports(
        &mut self,
        reports: &[HhReport],
        segments: &Segments,
        codec: &PathBfCodec,
    ) -> Vec<RuleOp> {
        let mut ops = Vec::new();
        let (entries, rest): (Vec<&HhReport>, Vec<&HhReport>) =
            reports.iter().partition(|r| self.is_entry_report(r));
        self.on_entry_reports(&entries, segments, codec, &mut ops);
        // The segments furthest short first: they get the table space there is.
        let mut decoded: Vec<(&HhReport, Option<SegmentId>)> = rest
            .into_iter()
            .map(|r| match codec.decode(r.switch, r.path_bf) {
                Decoded::Segment(seg) => (r, Some(seg)),
                _ => (r, None),
            })
            .collect();
        let short = |s: &Option<SegmentId>| {
            s.and_then(|s| self.shortfall.get(&s))
                .copied()
                .unwrap_or(0.0)
        };
        decoded.sort_by(|a, b| short(&b.1).total_cmp(&short(&a.1)));
        self.moved_by_reports(&decoded, segments);
        for (r, seg) in decoded {
            self.stats.reports += 1;
            let Some(seg) = seg else {
                self.stats.reports_ignored += 1;
                continue;
            };
            let full = self.per_segment.get(&seg).copied().unwrap_or(0)
                >= self.params.max_flows_per_segment;
            if self.flows.contains_key(&(r.flow, seg)) || full || !self.hh.contains_key(&seg) {
                self.stats.reports_ignored += 1;
                continue;
            }
            if !self.start_monitoring(segments, seg, r.flow, r.path_bf, false, &mut ops) {
                continue;
            }
            let s = segments.get(seg);
            let rule = self.hh.get_mut(&seg).expect("checked above");
            rule.remaining -= 1;
            rule.reports += 1;
            if rule.remaining == 0 {
                self.hh.remove(&seg);
                ops.push(RuleOp::RemoveHh {
                    switch: s.downstream(),
                    path_bf: r.path_bf,
                });
                self.used(s.downstream(), HH, -1);
                self.stats.hh_rules_removed += 1;
            }
        }
        ops
    }

    /// After an epoch's detection: retire idle flows, ask for flows where counts fell short.
    /// `answered` are the switches harvested this epoch: a flow whose switch did not answer is
    /// not idle, just unseen.
    pub fn on_epoch(
        &mut self,
        det: &EpochDetection,
        answered: &HashSet<SwitchIx>,
        segments: &Segments,
        codec: &PathBfCodec,
    ) -> Vec<RuleOp> {
        let mut ops = self.unwatched_hh_rules(segments, codec);
        let seen: HashSet<(FlowId, SegmentId)> =
            det.entries.iter().map(|e| (e.flow, e.segment)).collect();
        self.verify(det, segments);
        let mut retired = Vec::new();
        let mut round_over = Vec::new();
        let watching = self.watching.take();
        let is_watched = |s: SegmentId| watching.as_ref().is_none_or(|w| w.contains(&s));
        let now = self.selections;
        for (&key, m) in self.flows.iter_mut() {
            if !is_watched(key.1) {
                // Its round is over: its rules make room for the next round's flows.
                retired.push(key);
                round_over.push((key.1, key.0, m.path_bf, m.verified));
            } else if seen.contains(&key) {
                m.idle_epochs = 0;
            } else if !partial::whole_epoch(m.selected_at, now) {
                // Its rules were not in for the whole epoch: not counted says nothing.
            } else if answered.contains(&m.upstream) && answered.contains(&m.downstream) {
                m.idle_epochs += 1;
                if m.idle_epochs >= self.params.retire_after {
                    retired.push(key);
                }
            }
        }
        self.watching = watching;
        retired.sort_unstable();
        for key in retired {
            let m = self.flows.remove(&key).expect("listed above");
            let flow = key.0;
            if self.release_usm(m.upstream, flow) {
                ops.push(RuleOp::RemoveUsm {
                    switch: m.upstream,
                    flow,
                });
                self.used(m.upstream, USM, -1);
            } else {
                self.half_counted_next.insert(key);
            }
            self.deferred.push(RuleOp::RemoveDsm {
                switch: m.downstream,
                flow,
                path_bf: m.path_bf,
            });
            *self
                .per_segment
                .get_mut(&m.segment)
                .expect("counted on insert") -= 1;
            self.stats.flows_retired += 1;
        }
        self.park(round_over);
        ops.extend(self.unpark(segments));
        self.ask_where_short(det, answered, segments, codec, &mut ops);
        self.predict_from_arrivals(det, segments, codec, &mut ops);
        self.selections += 1;
        ops
    }
}

mod absence;
mod ask;
mod capacity;
mod deferred;
mod entry;
mod monitoring;
mod params;
mod partial;
pub mod predict;
mod recovery;
mod rounds;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_predict;

pub use capacity::{FullTable, RuleCapacity};
use capacity::{HH, USM};
use deferred::Deferred;
pub use params::{SelectionParams, SelectionStats};
