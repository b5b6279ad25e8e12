//! Canary on the two-switch network driven by a packet trace: both switches are the reference
//! model of the data plane (`canary_core::model`: s1's USM and marking, s2's DSM, HashPipe and
//! HH table) and, after every epoch, the controller's steps in its order: harvest, minus meters,
//! HH reports → DSM then USM rules, retirement and new HH rules by the real [`FlowSelector`].
//! Used by Fig. 7 (flow selection under traffic dynamics) and Fig. 11 (heavy hitters).
//!
//! Simplifications against the fabric simulator: no loss and no packets in flight (a packet
//! crosses both switches at its trace time); reports are handled at the end of the epoch they
//! arrive in, as the controller does.

use super::link::Line2;
use super::traffic::TracePacket;
use canary_core::capacity::Capacity;
use canary_core::detect::minus_meters;
use canary_core::fabric::{HhReport, RuleOp};
use canary_core::model::{epoch_tag, Shim, SwitchConfig, SwitchModel};
use canary_core::select::{FlowSelector, SelectionParams};
use canary_core::sketch::{fingerprint, FlowHashes, HashPipeConfig, MeterConfig};
use canary_core::topo::SwitchIx;
use canary_core::FlowId;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopConfig {
    pub selection: SelectionParams,
    pub meters: MeterConfig,
    pub hashpipe: HashPipeConfig,
    pub epoch_ns: u64,
    pub epochs: u32,
}

/// What one epoch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochStat {
    /// Packets the minus meter counted on the segment.
    pub packets_counted: u64,
    /// Monitored flows that sent at least one packet this epoch.
    pub active_flows: u32,
    /// Flows with rules at the end of the epoch.
    pub monitored_flows: u32,
    /// Match+action rules installed after this epoch (DSM, USM and HH tables).
    pub rules_installed: u32,
    /// Packets on the link.
    pub packets: u64,
}

/// A run's per-epoch figures, and for heavy hitters the true per-flow packet counts and
/// Canary's estimate (DSM counts plus HashPipe counts, summed over epochs).
#[derive(Clone, Debug, Default)]
pub struct LoopRun {
    pub epochs: Vec<EpochStat>,
    pub truth: HashMap<FlowId, u64>,
    pub estimate: HashMap<FlowId, u64>,
}

/// Runs `cfg.epochs` epochs of `trace` (packets in time order, times from 0).
pub fn run(line: &Line2, cfg: &LoopConfig, trace: impl Iterator<Item = TracePacket>) -> LoopRun {
    let mut l = Loop::new(line, cfg);
    let mut trace = trace.peekable();
    for e in 0..cfg.epochs as u64 {
        let tag = epoch_tag(e);
        for sw in [&mut l.s1, &mut l.s2] {
            let mut c = sw.config();
            c.epoch = tag;
            sw.set_config(c);
        }
        let end = (e + 1) * cfg.epoch_ns;
        let mut stat = EpochStat::default();
        while let Some(pkt) = trace.next_if(|p| p.t_ns < end) {
            l.forward(&pkt, &mut stat);
        }
        l.end_epoch(tag, &mut stat);
        l.out.epochs.push(stat);
    }
    l.out
}

/// The two switches, the controller's flow selection, and what the run has seen so far.
struct Loop<'a> {
    line: &'a Line2,
    /// Both monitors of the line.
    all: HashSet<SwitchIx>,
    selector: FlowSelector,
    /// Upstream and downstream switch.
    s1: SwitchModel,
    s2: SwitchModel,
    /// Flows reported this epoch, and the reports the controller gets at its end.
    reported: HashSet<FlowId>,
    reports: Vec<HhReport>,
    /// Monitored flows that sent this epoch.
    active: HashSet<FlowId>,
    /// Flows by HashPipe fingerprint, to read HashPipe's estimate as flows.
    by_fp: HashMap<u32, FlowId>,
    out: LoopRun,
}

impl<'a> Loop<'a> {
    /// Both switches monitoring, with the rules flow selection starts with.
    fn new(line: &'a Line2, cfg: &LoopConfig) -> Self {
        let p = &line.prepared;
        let (segments, codec) = (&p.segments, &p.codec);
        let switch = |s: SwitchIx| {
            let mut m = SwitchModel::new(Capacity::unlimited(cfg.meters, cfg.hashpipe));
            m.set_config(SwitchConfig {
                monitor: true,
                mask: codec.masks[s as usize],
                epoch: epoch_tag(0),
            });
            m
        };
        let mut l = Loop {
            line,
            all: [line.up, line.down].into_iter().collect(),
            selector: FlowSelector::new(cfg.selection),
            s1: switch(line.up),
            s2: switch(line.down),
            reported: HashSet::new(),
            reports: Vec::new(),
            active: HashSet::new(),
            by_fp: HashMap::new(),
            out: LoopRun::default(),
        };
        let start = l
            .selector
            .on_epoch(&Default::default(), &l.all, segments, codec);
        l.apply(&start);
        l
    }

    /// Applies rule changes to the switch they are for; counts the installs on the segment
    /// s1 → s2 (the reverse segment carries no traffic).
    fn apply(&mut self, ops: &[RuleOp]) -> u32 {
        let line = self.line;
        let mut installed = 0;
        for op in ops {
            let sw = if op.switch() == line.up {
                &mut self.s1
            } else {
                &mut self.s2
            };
            sw.apply(op).expect("unlimited tables");
            let ours = match *op {
                RuleOp::InstallDsm { switch, .. } => switch == line.down,
                RuleOp::InstallUsm { switch, .. } => switch == line.up,
                RuleOp::InstallHh {
                    switch, path_bf, ..
                } => switch == line.down && path_bf == line.path_bf,
                _ => false,
            };
            installed += u32::from(ours);
        }
        installed
    }

    /// One packet from h1 through s1 (shim pushed, USM, mark) to s2 and on to h2.
    fn forward(&mut self, pkt: &TracePacket, stat: &mut EpochStat) {
        stat.packets += 1;
        *self.out.truth.entry(pkt.flow).or_default() += 1;
        let h = FlowHashes::of(&pkt.flow);
        self.by_fp.insert(fingerprint(h), pkt.flow);
        let mut shim = Shim::default();
        self.s1.monitor(&pkt.flow, h, &mut shim, false);
        if shim.counted {
            self.active.insert(pkt.flow);
        }
        if let Some(d) = self.s2.monitor(&pkt.flow, h, &mut shim, true) {
            if self.reported.insert(d.flow) {
                self.reports.push(HhReport {
                    switch: self.line.down,
                    flow: d.flow,
                    path_bf: d.path_bf,
                });
            }
        }
    }

    /// End of epoch `tag`: harvest (HashPipe too), detect, select.
    fn end_epoch(&mut self, tag: u16, stat: &mut EpochStat) {
        let line = self.line;
        let (segments, codec) = (&line.prepared.segments, &line.prepared.codec);
        for (_, _, fp, c) in self.s2.hashpipe().entries() {
            if let Some(&f) = self.by_fp.get(&fp) {
                *self.out.estimate.entry(f).or_default() += c as u64;
            }
        }
        let (usm, _) = self.s1.meters_of(tag);
        let (_, dsm) = self.s2.meters_of(tag);
        let snaps = line.snapshots(usm, dsm);
        self.s2.clear_hashpipe();
        let mut installed = 0;
        let deferred = self.selector.take_deferred();
        installed += self.apply(&deferred);
        let det = minus_meters(segments, codec, &snaps);
        for en in &det.entries {
            *self.out.estimate.entry(en.flow).or_default() += en.sent - en.lost;
        }
        let reports = std::mem::take(&mut self.reports);
        let mut ops = self.selector.on_reports(&reports, segments, codec);
        ops.extend(self.selector.on_epoch(&det, &self.all, segments, codec));
        installed += self.apply(&ops);
        self.reported.clear();
        stat.packets_counted = det.segments.get(&line.segment).map_or(0, |c| c.sent);
        stat.active_flows = self.active.len() as u32;
        stat.monitored_flows = self.s1.rule_counts().0 as u32;
        stat.rules_installed = installed;
        self.active.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overhead::traffic::{ChurnConfig, ChurnTrace};

    fn cfg(eta: u32, epochs: u32) -> LoopConfig {
        LoopConfig {
            selection: SelectionParams {
                eta,
                adaptive_eta: false,
                ..Default::default()
            },
            meters: MeterConfig::default(),
            hashpipe: HashPipeConfig::default(),
            epoch_ns: 100_000_000,
            epochs,
        }
    }

    #[test]
    fn selection_reaches_alpha_and_beta_on_steady_traffic() {
        let line = Line2::new().unwrap();
        let churn = ChurnConfig {
            duration_s: 2.0,
            warmup_s: 10.0,
            ..Default::default()
        };
        let r = run(&line, &cfg(16, 20), ChurnTrace::new(churn, 3));
        assert_eq!(r.epochs.len(), 20);
        assert!(r.epochs[0].rules_installed >= 1, "the first HH rule");
        let late = &r.epochs[10..];
        assert!(
            late.iter().filter(|e| e.packets_counted >= 1000).count() >= 8,
            "{late:?}"
        );
        assert!(late.iter().all(|e| e.active_flows >= 1));
        // Without loss, Canary's estimate of a monitored flow never exceeds the truth.
        for (f, &est) in &r.estimate {
            assert!(est <= r.truth[f], "{f}: {est} > {}", r.truth[f]);
        }
    }
}
