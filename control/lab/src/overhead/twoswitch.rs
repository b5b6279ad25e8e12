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
    let p = &line.prepared;
    let (segments, codec) = (&p.segments, &p.codec);
    let all: HashSet<_> = [line.up, line.down].into_iter().collect();
    let mut selector = FlowSelector::new(cfg.selection);
    let switch = |s: u32| {
        let mut m = SwitchModel::new(Capacity::unlimited(cfg.meters, cfg.hashpipe));
        m.set_config(SwitchConfig {
            monitor: true,
            mask: codec.masks[s as usize],
            epoch: epoch_tag(0),
        });
        m
    };
    let (mut s1, mut s2) = (switch(line.up), switch(line.down));
    let mut reported: HashSet<FlowId> = HashSet::new();
    let mut reports: Vec<HhReport> = Vec::new();
    let mut active: HashSet<FlowId> = HashSet::new();
    // Flows by HashPipe fingerprint, to read HashPipe's estimate as flows.
    let mut by_fp: HashMap<u32, FlowId> = HashMap::new();
    let mut out = LoopRun::default();

    // Applies rule changes to the switch they are for; counts the installs on the segment
    // s1 → s2 (the reverse segment carries no traffic).
    let apply = |ops: &[RuleOp], s1: &mut SwitchModel, s2: &mut SwitchModel| -> u32 {
        let mut installed = 0;
        for op in ops {
            let sw = if op.switch() == line.up {
                &mut *s1
            } else {
                &mut *s2
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
    };

    let start = selector.on_epoch(&Default::default(), &all, segments, codec);
    apply(&start, &mut s1, &mut s2);

    let mut trace = trace.peekable();
    for e in 0..cfg.epochs as u64 {
        let tag = epoch_tag(e);
        for sw in [&mut s1, &mut s2] {
            let mut c = sw.config();
            c.epoch = tag;
            sw.set_config(c);
        }
        let end = (e + 1) * cfg.epoch_ns;
        let mut stat = EpochStat::default();
        while let Some(pkt) = trace.next_if(|p| p.t_ns < end) {
            stat.packets += 1;
            *out.truth.entry(pkt.flow).or_default() += 1;
            let h = FlowHashes::of(&pkt.flow);
            by_fp.insert(fingerprint(h), pkt.flow);
            // From h1 through s1 (shim pushed, USM, mark) to s2 and on to h2.
            let mut shim = Shim::default();
            s1.monitor(&pkt.flow, h, &mut shim, false);
            if shim.counted {
                active.insert(pkt.flow);
            }
            if let Some(d) = s2.monitor(&pkt.flow, h, &mut shim, true) {
                if reported.insert(d.flow) {
                    reports.push(HhReport {
                        switch: line.down,
                        flow: d.flow,
                        path_bf: d.path_bf,
                    });
                }
            }
        }
        // End of epoch: harvest (HashPipe too), detect, select.
        for (_, _, fp, c) in s2.hashpipe().entries() {
            if let Some(&f) = by_fp.get(&fp) {
                *out.estimate.entry(f).or_default() += c as u64;
            }
        }
        let (usm, _) = s1.meters_of(tag);
        let (_, dsm) = s2.meters_of(tag);
        let snaps = line.snapshots(usm, dsm);
        s2.clear_hashpipe();
        let mut installed = 0;
        let deferred = selector.take_deferred();
        installed += apply(&deferred, &mut s1, &mut s2);
        let det = minus_meters(segments, codec, &snaps);
        for en in &det.entries {
            *out.estimate.entry(en.flow).or_default() += en.sent - en.lost;
        }
        let mut ops = selector.on_reports(&std::mem::take(&mut reports), segments, codec);
        ops.extend(selector.on_epoch(&det, &all, segments, codec));
        installed += apply(&ops, &mut s1, &mut s2);
        reported.clear();
        stat.packets_counted = det.segments.get(&line.segment).map_or(0, |c| c.sent);
        stat.active_flows = active.len() as u32;
        stat.monitored_flows = s1.rule_counts().0 as u32;
        stat.rules_installed = installed;
        active.clear();
        out.epochs.push(stat);
    }
    out
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
