//! The epoch's phases after the harvest, each a step of [`Controller::epoch_in_span`]: count
//! (join the records, leave out what outages spoil, decide), localize (blame links, hold the
//! blames no test cleared), select (flows and their rules for the epoch being counted now).

use super::decision::Decided;
use super::reports::least_losses;
use super::Controller;
use crate::report::RuleCounts;
use canary_core::decide::{Change, Cleared};
use canary_core::detect::{EpochDetection, Observations, SwitchRecords};
use canary_core::fabric::{Fabric, HhReport};
use canary_core::localize::Verdict;
use canary_core::select::SelectionStats;
use canary_core::topo::{LinkIx, SwitchIx};
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

/// What the epoch counted, and what it decided from the counts.
pub(super) struct Counted {
    pub(super) det: EpochDetection,
    /// Why the counts cannot be used (the epoch began under an earlier controller).
    pub(super) incomplete: Option<String>,
    /// Segments left out because a switch on them was disturbed.
    pub(super) segments_skipped: usize,
    pub(super) obs: Observations,
    pub(super) changes: Vec<Change>,
}

/// What the epoch blames, and the blames it ended.
pub(super) struct Blamed {
    pub(super) verdict: Verdict,
    /// Links released because their segments' loss is on another link: link → that link.
    pub(super) corrected: BTreeMap<LinkIx, LinkIx>,
    /// The blamed links, in the verdict's order.
    pub(super) links: Vec<LinkIx>,
    pub(super) cleared: Vec<Cleared>,
}

impl Controller {
    /// Joins the finished epoch's records into segment counts (read again where packets may
    /// have been late: [`Controller::recheck_late`]), leaves out the segments the epoch's
    /// `events` spoil (adding the switches whose meters were read mid-count), and decides
    /// which segments are lossy.
    pub(super) async fn count<F: Fabric>(
        &mut self,
        fabric: &mut F,
        finished: u64,
        records: &mut [SwitchRecords],
        drain: Duration,
        events: &mut BTreeMap<SwitchIx, String>,
    ) -> Counted {
        let det = self.stages.detect(finished, &self.segments, records).await;
        // Within the epoch, so that the next flip is not late.
        let wait = drain.min(self.cfg.epoch / 4);
        let mut det = self
            .recheck_late(fabric, finished, records, det, wait)
            .await;
        sit_out_torn(&det, drain, events);
        det.drop_entries(&self.selector.take_half_counted());
        self.adapt_drain(&det);
        let incomplete = self.incomplete_next.take();
        let segments_skipped = self.leave_out_spoiled(&mut det, incomplete.is_some(), events);
        for (s, c) in &det.segments {
            self.run_totals.entry(*s).or_default().add(c);
        }
        self.window.push(det.segments.clone());
        self.last = det.segments.clone();
        let Decided { mut obs, changes } = self.judge.decide(
            self.epoch,
            &det,
            &self.segments,
            &self.window,
            &mut self.watching,
        );
        self.with_flows(&det, &mut obs);
        Counted {
            det,
            incomplete,
            segments_skipped,
            obs,
            changes,
        }
    }

    /// Gives each thin segment of a sub-problem with a loss its flows (`FlowWindow`) from the
    /// loss's onset on, or over the window if that is longer: what a loss on some flows only
    /// is weighed with. Only when every segment is counted over the same epochs: in rounds a
    /// pin's flows can be older than the loss they are weighed against.
    fn with_flows(&mut self, det: &EpochDetection, obs: &mut Observations) {
        if !self.watching.same_epochs() {
            self.run_flows.lose_track();
            return;
        }
        let kept = || {
            det.entries
                .iter()
                .filter(|e| det.segments.contains_key(&e.segment))
        };
        self.flow_window.push(self.epoch, kept());
        self.run_flows.push(kept());
        let onsets = self.judge.onsets();
        let window_start = (self.epoch + 1).saturating_sub(self.cfg.window as u64);
        let mut start: BTreeMap<u32, u64> = BTreeMap::new();
        for o in obs.segments.iter().filter(|o| o.success < 1.0) {
            let onset = onsets.get(&o.segment).copied().unwrap_or(window_start);
            let e = start.entry(o.subproblem).or_insert(window_start);
            *e = (*e).min(onset);
        }
        let from: BTreeMap<u32, u64> = obs
            .segments
            .iter()
            .filter_map(|o| Some((o.segment, *start.get(&o.subproblem)?)))
            .collect();
        let mut flows = self.flow_window.totals(&from);
        for o in &mut obs.segments {
            o.flows = flows.remove(&o.segment).unwrap_or_default();
        }
    }

    /// Packets lost while a switch was down or being configured are no link's fault: leaves
    /// out the segments through the switches of `events` (all of them if the epoch is
    /// `incomplete`); how many were left out.
    fn leave_out_spoiled(
        &self,
        det: &mut EpochDetection,
        incomplete: bool,
        events: &BTreeMap<SwitchIx, String>,
    ) -> usize {
        let before = det.segments.len();
        if incomplete {
            // Counted partly under the controller before: what it saw is not known whole.
            det.segments.clear();
        } else if !events.is_empty() {
            let segs = &self.segments;
            det.segments.retain(|id, _| {
                !segs
                    .get(*id)
                    .switches
                    .iter()
                    .any(|s| events.contains_key(s))
            });
        }
        before - det.segments.len()
    }

    /// The links the finished epoch blames: localized from its observations, with the earlier
    /// blames no test cleared held.
    pub(super) async fn localize_epoch(&mut self, finished: u64, counted: &Counted) -> Blamed {
        let (obs, incomplete) = (&counted.obs, counted.incomplete.is_some());
        // Before the first sweep, a lossy segment's neighbours may not have been counted yet
        // and could not clear its healthy links: nothing is blamed until every round has had
        // its turn (measured at k = 8: 6-8 wrong links per epoch in the first round, none after).
        let mut verdict = if incomplete || self.watching.first_sweep(self.epoch) {
            Verdict::default()
        } else {
            let localizer = self.localizer();
            (self.stages.localize(finished, obs, localizer, &self.topo)).await
        };
        let mut corrected = BTreeMap::new();
        self.held.clear();
        // An incomplete epoch knows nothing: the blames before it stand for the next one.
        if !incomplete {
            let last = &self.last_verdict;
            (self.held, corrected) = self.judge.hold(last, &mut verdict.blamed, &self.segments);
            self.last_verdict = verdict.blamed.clone();
            self.judge.blamed(|| least_losses(&verdict, obs));
        }
        let links: Vec<_> = verdict.blamed.iter().map(|b| b.link).collect();
        let cleared = self.timeline.update(self.epoch, &links);
        Blamed {
            verdict,
            corrected,
            links,
            cleared,
        }
    }

    /// Flow selection on the switches' reports and the epoch's counts, its rule changes
    /// applied (counted in `rules`); what it did this epoch.
    pub(super) async fn select<F: Fabric>(
        &mut self,
        fabric: &mut F,
        finished: u64,
        reports: &[HhReport],
        counted: &Counted,
        answered: HashSet<SwitchIx>,
        rules: &mut RuleCounts,
    ) -> SelectionStats {
        let before = self.selector.stats;
        // After an incomplete epoch no flow is idle and no segment short: nothing is known.
        let answered: HashSet<SwitchIx> = if counted.incomplete.is_some() {
            HashSet::new()
        } else {
            answered
        };
        // Rules made now serve the epoch the switches count in since the flip.
        self.watching.steer(&mut self.selector, finished + 1);
        let mut ops = self
            .selector
            .on_reports(reports, &self.segments, &self.codec);
        ops.extend(
            self.selector
                .on_epoch(&counted.det, &answered, &self.segments, &self.codec),
        );
        self.apply(fabric, &ops, rules).await;
        diff(self.selector.stats, before)
    }
}

/// A meter still counting while it was read means packets of the finished epoch were in flight
/// longer than the drain: its other flows may be short of packets that had not arrived yet,
/// which would read as loss. Its segments sit this epoch out.
fn sit_out_torn(det: &EpochDetection, drain: Duration, events: &mut BTreeMap<SwitchIx, String>) {
    for (&s, &torn) in &det.torn_at {
        events.entry(s).or_insert_with(|| {
            format!(
                "packets still arriving {} ms after the flip ({torn} flows read mid-count): \
                 left out of this epoch",
                drain.as_millis()
            )
        });
    }
}

fn diff(a: SelectionStats, b: SelectionStats) -> SelectionStats {
    SelectionStats {
        flows_added: a.flows_added - b.flows_added,
        flows_retired: a.flows_retired - b.flows_retired,
        hh_rules_installed: a.hh_rules_installed - b.hh_rules_installed,
        hh_rules_removed: a.hh_rules_removed - b.hh_rules_removed,
        reports: a.reports - b.reports,
        reports_ignored: a.reports_ignored - b.reports_ignored,
        refused_full: a.refused_full - b.refused_full,
        predicted: a.predicted - b.predicted,
    }
}
