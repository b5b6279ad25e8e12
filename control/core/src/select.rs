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
//!   ended, or it keeps colliding and only pollutes buckets) is retired. Its USM rule goes first;
//!   the DSM rule goes one epoch later, once its marked packets in flight have drained.
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
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionParams {
    /// Packets to count per segment and epoch.
    pub alpha: u64,
    /// Flows to count per segment and epoch.
    pub beta: u32,
    /// Flows an HH rule selects before it is removed.
    pub delta: u32,
    pub max_flows_per_segment: u32,
    pub retire_after: u32,
    /// HashPipe count a flow must exceed to be reported (Table III: 16).
    pub eta: u32,
    pub adaptive_eta: bool,
}

impl Default for SelectionParams {
    /// Table III: α = 1000, β = 20, δ = 20 (η lives in the data plane's configuration).
    fn default() -> Self {
        Self {
            alpha: 1000,
            beta: 20,
            delta: 20,
            max_flows_per_segment: 100,
            retire_after: 2,
            eta: 16,
            adaptive_eta: true,
        }
    }
}

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
}

/// What selection did in one epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectionStats {
    pub flows_added: u32,
    pub flows_retired: u32,
    pub hh_rules_installed: u32,
    pub hh_rules_removed: u32,
    pub reports: u32,
    pub reports_ignored: u32,
    /// Reports and HH rules refused because a switch's table was full.
    #[serde(default)]
    pub refused_full: u32,
}

/// Rules one switch's tables hold (`usm_table`, `dsm_table`, `hh_table`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleCapacity {
    pub usm: usize,
    pub dsm: usize,
    pub hh: usize,
}

impl RuleCapacity {
    /// No limit.
    pub const UNLIMITED: RuleCapacity = RuleCapacity {
        usm: usize::MAX,
        dsm: usize::MAX,
        hh: usize::MAX,
    };

    pub fn of(c: &crate::capacity::Capacity) -> Self {
        RuleCapacity {
            usm: c.usm_rules,
            dsm: c.dsm_rules,
            hh: c.hh_rules,
        }
    }
}

/// A table that was full when selection wanted a rule in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FullTable {
    pub switch: SwitchIx,
    /// `usm_table`, `dsm_table` or `hh_table`.
    pub table: &'static str,
    pub size: usize,
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
    deferred: Vec<RuleOp>,
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
    parked: HashMap<SegmentId, Vec<(FlowId, u32)>>,
    pub stats: SelectionStats,
}

const USM: usize = 0;
const DSM: usize = 1;
const HH: usize = 2;
const TABLES: [&str; 3] = ["usm_table", "dsm_table", "hh_table"];

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
            deferred: Vec::new(),
            capacity,
            usage: HashMap::new(),
            shortfall: HashMap::new(),
            full: Default::default(),
            watching: None,
            eta_when_left: HashMap::new(),
            parked: HashMap::new(),
            stats: SelectionStats::default(),
        }
    }

    /// Serves only `segments` from the next [`FlowSelector::on_epoch`] on (`None`: all): the
    /// flows of any other segment are retired and its HH rule removed, so a switch's meters
    /// count one round of segments at a time.
    pub fn set_watching(&mut self, segments: Option<&[SegmentId]>) {
        self.watching = segments.map(|s| s.iter().copied().collect());
    }

    fn watched(&self, segment: SegmentId) -> bool {
        self.watching.as_ref().is_none_or(|w| w.contains(&segment))
    }

    /// From now on, never asks a switch for more rules than `capacity`.
    pub fn set_capacity(&mut self, capacity: RuleCapacity) {
        self.capacity = capacity;
    }

    fn cap(&self, table: usize) -> usize {
        [self.capacity.usm, self.capacity.dsm, self.capacity.hh][table]
    }

    /// Whether `switch`'s `table` has room for one more rule; notes it full otherwise.
    fn room(&mut self, switch: SwitchIx, table: usize) -> bool {
        let used = self.usage.get(&switch).map_or(0, |u| u[table]);
        let size = self.cap(table);
        if used < size {
            return true;
        }
        *self
            .full
            .entry(FullTable {
                switch,
                table: TABLES[table],
                size,
            })
            .or_default() += 1;
        false
    }

    fn used(&mut self, switch: SwitchIx, table: usize, delta: isize) {
        let u = &mut self.usage.entry(switch).or_default()[table];
        *u = u.checked_add_signed(delta).expect("rule counts stay >= 0");
    }

    /// Rules per switch and table, as asked for.
    pub fn usage(&self, switch: SwitchIx) -> [usize; 3] {
        self.usage.get(&switch).copied().unwrap_or_default()
    }

    /// Tables that were full since the last call, with how many rules they refused.
    pub fn take_full(&mut self) -> Vec<(FullTable, u32)> {
        std::mem::take(&mut self.full).into_iter().collect()
    }

    /// The rule changes `ops` were applied or given up: keep the per-switch counts (DSM removals
    /// the controller takes from [`FlowSelector::take_deferred`] count when taken).
    fn count_ops(&mut self, ops: &[RuleOp]) {
        for op in ops {
            let (table, delta) = match op {
                RuleOp::InstallUsm { .. } => (USM, 1),
                RuleOp::RemoveUsm { .. } => (USM, -1),
                RuleOp::InstallDsm { .. } => (DSM, 1),
                RuleOp::RemoveDsm { .. } => (DSM, -1),
                RuleOp::InstallHh { .. } => (HH, 0),
                RuleOp::RemoveHh { .. } => (HH, -1),
            };
            if delta != 0 {
                self.used(op.switch(), table, delta);
            }
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

    /// Every rule the selector believes is installed on `switch` (to re-push after a restart).
    pub fn rules_on(
        &self,
        switch: SwitchIx,
        segments: &Segments,
        codec: &PathBfCodec,
    ) -> Vec<RuleOp> {
        let mut ops = Vec::new();
        for (&(flow, _), m) in &self.flows {
            if m.downstream == switch {
                ops.push(RuleOp::InstallDsm {
                    switch,
                    flow,
                    path_bf: m.path_bf,
                });
            }
        }
        for &(s, flow) in self.usm_users.keys() {
            if s == switch {
                ops.push(RuleOp::InstallUsm { switch, flow });
            }
        }
        for (&seg, rule) in &self.hh {
            if segments.get(seg).downstream() == switch {
                ops.push(RuleOp::InstallHh {
                    switch,
                    path_bf: codec.segment_bf[seg as usize],
                    eta: rule.eta,
                });
            }
        }
        ops
    }

    /// Takes over the rules an earlier controller installed, read back from the switches
    /// (`rules`: installs). Every DSM rule whose segment's USM rule is there upstream becomes a
    /// monitored flow; HH rules become active ones. Returns the removals of what makes no
    /// monitored flow: a DSM rule without its USM rule (the earlier controller died between the
    /// two), a USM rule no DSM rule uses, an HH rule on no segment.
    pub fn adopt(
        &mut self,
        rules: &[RuleOp],
        segments: &Segments,
        codec: &PathBfCodec,
    ) -> Vec<RuleOp> {
        let usm: HashSet<(SwitchIx, FlowId)> = rules
            .iter()
            .filter_map(|op| match *op {
                RuleOp::InstallUsm { switch, flow } => Some((switch, flow)),
                _ => None,
            })
            .collect();
        let mut ops = Vec::new();
        for op in rules {
            let RuleOp::InstallDsm {
                switch,
                flow,
                path_bf,
            } = *op
            else {
                continue;
            };
            let seg = match codec.decode(switch, path_bf) {
                Decoded::Segment(seg) if usm.contains(&(segments.get(seg).upstream(), flow)) => seg,
                _ => {
                    ops.push(RuleOp::RemoveDsm {
                        switch,
                        flow,
                        path_bf,
                    });
                    continue;
                }
            };
            let upstream = segments.get(seg).upstream();
            self.flows.insert(
                (flow, seg),
                Monitored {
                    segment: seg,
                    upstream,
                    downstream: switch,
                    path_bf,
                    idle_epochs: 0,
                },
            );
            self.used(switch, DSM, 1);
            *self.per_segment.entry(seg).or_default() += 1;
            let users = self.usm_users.entry((upstream, flow)).or_default();
            *users += 1;
            if *users == 1 {
                self.used(upstream, USM, 1);
            }
        }
        let mut unused: Vec<(SwitchIx, FlowId)> = usm
            .into_iter()
            .filter(|k| !self.usm_users.contains_key(k))
            .collect();
        unused.sort_unstable();
        ops.extend(
            unused
                .into_iter()
                .map(|(switch, flow)| RuleOp::RemoveUsm { switch, flow }),
        );
        for op in rules {
            let RuleOp::InstallHh {
                switch,
                path_bf,
                eta,
            } = *op
            else {
                continue;
            };
            match codec.decode(switch, path_bf) {
                Decoded::Segment(seg) if codec.segment_bf[seg as usize] == path_bf => {
                    let have = self.per_segment.get(&seg).copied().unwrap_or(0);
                    self.hh.insert(
                        seg,
                        HhRule {
                            // How many it had selected before is not on the switch.
                            remaining: self.params.delta.saturating_sub(have).max(1),
                            eta,
                            reports: 0,
                        },
                    );
                    self.used(switch, HH, 1);
                }
                _ => ops.push(RuleOp::RemoveHh { switch, path_bf }),
            }
        }
        ops
    }

    /// DSM removals held back one epoch; call after the drain that followed the parity flip.
    pub fn take_deferred(&mut self) -> Vec<RuleOp> {
        let ops = std::mem::take(&mut self.deferred);
        self.count_ops(&ops);
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
        // The segments furthest short first: they get the table space there is.
        let mut decoded: Vec<(&HhReport, Option<SegmentId>)> = reports
            .iter()
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
            if !self.start_monitoring(segments, seg, r.flow, r.path_bf, &mut ops) {
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
        let mut retired = Vec::new();
        let mut round_over = Vec::new();
        let watching = self.watching.take();
        let is_watched = |s: SegmentId| watching.as_ref().is_none_or(|w| w.contains(&s));
        for (&key, m) in self.flows.iter_mut() {
            if !is_watched(key.1) {
                // Its round is over: its rules make room for the next round's flows.
                retired.push(key);
                round_over.push((key.1, key.0, m.path_bf));
            } else if seen.contains(&key) {
                m.idle_epochs = 0;
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
        round_over.sort_unstable();
        for (seg, flow, path_bf) in round_over {
            let parked = self.parked.entry(seg).or_default();
            if parked.len() < self.params.beta as usize {
                parked.push((flow, path_bf));
            }
        }
        ops.extend(self.unpark(segments));
        // How short every answered segment is; the furthest short are served first.
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
        for (_, i) in order {
            let seg = &segments.list[i];
            let id = i as SegmentId;
            let c = det.segments.get(&id).copied().unwrap_or_default();
            let short = c.sent < self.params.alpha || c.flows < self.params.beta;
            let path_bf = codec.segment_bf[i];
            if let Some(rule) = self.hh.get_mut(&id) {
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
            let have = self.per_segment.get(&id).copied().unwrap_or(0);
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
        ops
    }

    /// Installs again the parked flows of the segments watched now (DSM before USM).
    fn unpark(&mut self, segments: &Segments) -> Vec<RuleOp> {
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
            for (flow, path_bf) in self.parked.remove(&seg).expect("listed") {
                self.start_monitoring(segments, seg, flow, path_bf, &mut ops);
            }
        }
        ops
    }

    /// Monitors `flow` on `seg`: its DSM rule, then a USM rule upstream unless another segment's
    /// flow already has it. False (and counted) when a table is full.
    fn start_monitoring(
        &mut self,
        segments: &Segments,
        seg: SegmentId,
        flow: FlowId,
        path_bf: u32,
        ops: &mut Vec<RuleOp>,
    ) -> bool {
        let s = segments.get(seg);
        let (upstream, downstream) = (s.upstream(), s.downstream());
        let new_usm = !self.usm_users.contains_key(&(upstream, flow));
        if !self.room(downstream, DSM) || (new_usm && !self.room(upstream, USM)) {
            self.stats.refused_full += 1;
            return false;
        }
        ops.push(RuleOp::InstallDsm {
            switch: downstream,
            flow,
            path_bf,
        });
        self.used(downstream, DSM, 1);
        let users = self.usm_users.entry((upstream, flow)).or_default();
        *users += 1;
        if *users == 1 {
            ops.push(RuleOp::InstallUsm {
                switch: upstream,
                flow,
            });
            self.used(upstream, USM, 1);
        }
        self.flows.insert(
            (flow, seg),
            Monitored {
                segment: seg,
                upstream,
                downstream,
                path_bf,
                idle_epochs: 0,
            },
        );
        *self.per_segment.entry(seg).or_default() += 1;
        self.stats.flows_added += 1;
        true
    }

    /// Removes the HH rules of segments not watched now.
    fn unwatched_hh_rules(&mut self, segments: &Segments, codec: &PathBfCodec) -> Vec<RuleOp> {
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

    /// Forgets everything about a switch's rules (it restarted): flows counted there are
    /// dropped (their rules elsewhere removed) and HH rules there are forgotten, so the next
    /// epoch asks again.
    pub fn forget_switch(&mut self, switch: SwitchIx, segments: &Segments) -> Vec<RuleOp> {
        let mut ops = Vec::new();
        let gone: Vec<(FlowId, SegmentId)> = self
            .flows
            .iter()
            .filter(|(_, m)| m.upstream == switch || m.downstream == switch)
            .map(|(&k, _)| k)
            .collect();
        for key in gone {
            let m = self.flows.remove(&key).expect("listed");
            let flow = key.0;
            if self.release_usm(m.upstream, flow) {
                self.used(m.upstream, USM, -1);
                if m.upstream != switch {
                    ops.push(RuleOp::RemoveUsm {
                        switch: m.upstream,
                        flow,
                    });
                }
            }
            if m.downstream != switch {
                self.deferred.push(RuleOp::RemoveDsm {
                    switch: m.downstream,
                    flow,
                    path_bf: m.path_bf,
                });
            } else {
                self.used(switch, DSM, -1);
            }
            *self.per_segment.get_mut(&m.segment).expect("counted") -= 1;
        }
        self.hh
            .retain(|&seg, _| segments.get(seg).downstream() != switch);
        if let Some(u) = self.usage.get_mut(&switch) {
            u[HH] = 0;
        }
        ops
    }

    /// One monitored segment less for the USM rule (switch, flow); true when it was the last
    /// and the rule should go.
    fn release_usm(&mut self, switch: SwitchIx, flow: FlowId) -> bool {
        let users = self
            .usm_users
            .get_mut(&(switch, flow))
            .expect("counted on insert");
        *users -= 1;
        if *users == 0 {
            self.usm_users.remove(&(switch, flow));
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests;
