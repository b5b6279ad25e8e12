//! The last step of [`Controller::epoch_in_span`]: the finished epoch's report, from what its
//! phases found.

use super::phases::{Blamed, Counted};
use super::Controller;
use crate::report::{EpochReport, Phases, RuleCounts};
use canary_core::fabric::{Fabric, Parity};
use canary_core::select::SelectionStats;
use canary_core::topo::SwitchIx;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

/// An epoch's findings, from its phases, for its report.
pub(super) struct Finished {
    /// The epoch counted (the switches count in the next one since the flip).
    pub(super) epoch: u64,
    pub(super) flipped_at: Duration,
    pub(super) drain: Duration,
    pub(super) unreachable: HashSet<SwitchIx>,
    /// The switches whose segments sit the epoch out, and why.
    pub(super) events: BTreeMap<SwitchIx, String>,
    pub(super) rules: RuleCounts,
    pub(super) selection: SelectionStats,
    pub(super) counted: Counted,
    pub(super) blamed: Blamed,
    pub(super) phases: Phases,
}

impl Controller {
    /// The epoch's report (the controller's epoch not advanced yet).
    pub(super) fn epoch_report<F: Fabric>(&mut self, fabric: &F, e: Finished) -> EpochReport {
        let Counted {
            det,
            incomplete,
            segments_skipped,
            obs,
            changes,
        } = e.counted;
        let short = self.short_segments(&det);
        let mut unreachable: Vec<String> = e
            .unreachable
            .iter()
            .map(|&s| self.topo.name_of(s).to_string())
            .collect();
        unreachable.sort();
        let blamed = self.link_reports(&e.blamed.verdict, &obs, Some(&det.entries));
        EpochReport {
            epoch: self.epoch,
            parity: Parity::of_epoch(e.epoch),
            at_s: e.flipped_at.as_secs_f64(),
            at: None,
            packets_counted: det.packets(),
            packets_lost: det.lost(),
            flows_counted: det.flows(),
            flows_counted_v6: det.flows_v6(),
            flows_monitored: self.selector.monitored(),
            segments_total: self.segments.len(),
            segments_observed: det.segments.len(),
            segments_short: short,
            window_epochs: self.window.len(),
            lossy_segments: self.segment_reports(&obs, &det.entries),
            segment_changes: self.segment_changes(&changes),
            cables: crate::report::cables(&self.topo, &self.ports, &blamed),
            blamed,
            devices: self.device_reports(&e.blamed.links),
            cleared: self.cleared_reports(&e.blamed.cleared, &e.blamed.corrected),
            undecided: self.undecided_reports(&e.blamed),
            selection: e.selection,
            hh_rules: self.selector.hh_rules(),
            rules: e.rules,
            anomalies: det.anomalies,
            unreachable,
            disturbed: self.switch_events(&e.events),
            out_of_service: fabric
                .out_of_service()
                .into_iter()
                .map(|l| self.topo.link_names(l).map(str::to_string))
                .collect(),
            flows_vanished: det.vanished,
            segments_skipped,
            drain_ms: ms(e.drain),
            tables_full: self.tables_full(),
            phases_ms: e.phases,
            incomplete,
            watch: self.watching.report(self.epoch),
            evidence_map: self.evidence_report(&det.segments, &obs),
            cluster: self.stages.epoch_report(),
            observations: self.cfg.report_observations.then_some(obs),
        }
    }
}

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
