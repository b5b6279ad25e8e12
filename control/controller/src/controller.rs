//! The epoch loop, written once for every [`Fabric`]: the simulator and real switches.
//!
//! One epoch, after its traffic (Sec. III-D to III-G):
//! 1. flip every monitor to the next epoch (the other parity); retire flows' USM rules decided
//!    last epoch;
//! 2. wait for the packets of the finished epoch still in flight to reach their DSMs;
//! 3. harvest the finished epoch's counts; remove the DSM rules held back;
//! 4. minus meters (Alg. 3) → segment counts → window of n epochs → success probabilities;
//! 5. localize (multi-stage CD over sub-problems in parallel);
//! 6. flow selection: HH reports → DSM+USM rules, retire idle flows, HH rules where short.

use crate::cluster::ClusterStages;
use crate::report::{EpochReport, Phases, RuleCounts};
use canary_core::decide::{hold, Decider, EvidenceTracker, LinkClearing, LinkTimeline, Release};
use canary_core::detect::{join, SegmentCount, Window, WindowCount};
use canary_core::fabric::{Fabric, Parity};
use canary_core::localize::{Localizer, Verdict};
use canary_core::pathbf::PathBfCodec;
use canary_core::schedule::{LastShown, WatchPlan};
use canary_core::select::{FlowSelector, SelectionStats};
use canary_core::topo::{LinkIx, SegmentId, Segments, SwitchIx, Topology};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};
use tracing::Instrument;

mod config;
mod decision;
mod evidence;
mod harvest;
mod reports;
mod rounds;
mod rules;
mod start;
#[cfg(test)]
mod tests;
mod timing;

pub use config::{localizer_params, ControllerConfig};
use harvest::Harvested;

pub struct Controller {
    pub topo: Topology,
    pub segments: Segments,
    pub codec: PathBfCodec,
    pub cfg: ControllerConfig,
    selector: FlowSelector,
    window: Window,
    decider: Option<Decider>,
    /// The blamed links' pooled all-clear test, and the links blamed in the last epoch with the
    /// least their loss has been.
    link_clearing: Option<LinkClearing>,
    last_blamed: Vec<(LinkIx, f64)>,
    /// The links whose pooled all-clear passed this epoch, and the last epoch's verdict: a
    /// blame holds until a test clears it ([`canary_core::decide::hold`]).
    links_cleared: Vec<LinkIx>,
    last_verdict: Vec<canary_core::localize::BlamedLink>,
    /// The links this epoch's verdict blames by holding ([`canary_core::decide::hold`]).
    held: Vec<LinkIx>,
    timeline: LinkTimeline,
    run_totals: BTreeMap<SegmentId, WindowCount>,
    epoch: u64,
    next_flip: Duration,
    /// Switches whose outage spoils this epoch's segments too, and why: configured again after
    /// the flip, or a monitor that missed the flip into it (it counted in an earlier epoch's
    /// meters, so the marks of this epoch's packets fell outside its DSM's window).
    disturbed_now: BTreeMap<SwitchIx, &'static str>,
    disturbed_next: BTreeMap<SwitchIx, &'static str>,
    /// The last epoch's per-segment counts (what metrics export).
    last: BTreeMap<SegmentId, SegmentCount>,
    /// The drain in use: `cfg.drain`, raised while packets keep arriving after it.
    drain_now: Duration,
    /// Why the next epoch's counts cannot be used (it began under an earlier controller).
    incomplete_next: Option<String>,
    /// The rounds segments are watched in, when the switches cannot count all at once.
    plan: Option<WatchPlan>,
    /// The epoch the plan started in.
    watch_start: u64,
    /// Each segment's latest watch (used when watching in rounds).
    shown: LastShown,
    /// When each segment was last counted: the evidence map of each report.
    evidence: EvidenceTracker,
    /// The epoch's work on a cluster's workers instead of here.
    cluster: Option<ClusterStages>,
}

impl Controller {
    pub fn new(
        topo: Topology,
        segments: Segments,
        codec: PathBfCodec,
        cfg: ControllerConfig,
    ) -> Self {
        let decider = cfg.decision.map(|p| {
            let links: Vec<Vec<LinkIx>> = segments.list.iter().map(|s| s.links.clone()).collect();
            Decider::with_links(&links, topo.links.len(), p)
        });
        let mut evidence = evidence::tracker(&segments, &cfg);
        if let Some(d) = &decider {
            evidence = evidence.with_threshold(d.threshold());
        }
        Self {
            selector: FlowSelector::new(cfg.selection),
            window: Window::new(cfg.window),
            decider,
            link_clearing: cfg.decision.as_ref().map(LinkClearing::new),
            last_blamed: Vec::new(),
            links_cleared: Vec::new(),
            last_verdict: Vec::new(),
            held: Vec::new(),
            timeline: LinkTimeline::default(),
            run_totals: BTreeMap::new(),
            epoch: 0,
            next_flip: Duration::ZERO,
            disturbed_now: BTreeMap::new(),
            disturbed_next: BTreeMap::new(),
            last: BTreeMap::new(),
            drain_now: cfg.drain,
            incomplete_next: None,
            plan: None,
            watch_start: 0,
            shown: LastShown::new(segments.len()),
            evidence,
            cluster: None,
            topo,
            segments,
            codec,
            cfg,
        }
    }

    /// Runs each epoch's decoding, joins and localization on `cluster`'s workers.
    pub fn set_cluster(&mut self, cluster: ClusterStages) {
        self.cluster = Some(cluster);
    }

    /// Per-segment counts of the last epoch.
    pub fn last_counts(&self) -> &BTreeMap<SegmentId, SegmentCount> {
        &self.last
    }

    /// What a test of `link` knowing its loss `q` gains from the last epoch's counts, and the
    /// threshold it must reach; `None` under the paper's n′ rule. Summed from a fault's onset:
    /// the epoch it could first have been decided on the packets counted.
    pub fn information(&self, link: LinkIx, q: f64) -> Option<(f64, f64)> {
        let d = self.decider.as_ref()?;
        Some((d.link_gain(link, &self.last, q), d.threshold()))
    }

    pub fn monitors(&self) -> Vec<SwitchIx> {
        self.topo.monitors().collect()
    }

    /// Flows monitored now (each on one segment).
    pub fn monitored(&self) -> usize {
        self.selector.monitored()
    }

    /// The epoch the controller counts in now.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Runs one epoch to its end and returns its report.
    pub async fn run_epoch<F: Fabric>(&mut self, fabric: &mut F) -> EpochReport {
        // The span goes with the future, so it is entered only while this epoch's code runs
        // (a guard held across `.await` would leak it into whatever the runtime polls between).
        let span = tracing::info_span!("epoch", n = self.epoch);
        self.epoch_in_span(fabric).instrument(span).await
    }

    async fn epoch_in_span<F: Fabric>(&mut self, fabric: &mut F) -> EpochReport {
        let now = fabric.now();
        if self.next_flip > now {
            fabric.wait(self.next_flip - now).await;
        }
        let finished = self.epoch;
        let flipped_at = fabric.now();
        let mut unreachable = self.flip(fabric, finished + 1).await;
        let drain = self.drain_now;
        fabric.wait(drain).await;

        let t0 = Instant::now();
        let Harvested { records, answered } =
            self.harvest(fabric, finished, &mut unreachable).await;
        let mut rules = RuleCounts::default();
        let deferred = self.selector.take_deferred();
        self.apply(fabric, &deferred, &mut rules).await;
        let reports = fabric.take_reports().await;
        let mut events = self.switch_events_of(fabric, &unreachable).await;
        let harvest = t0.elapsed();

        let t1 = Instant::now();
        let mut det = match &mut self.cluster {
            Some(c) => c.detect(finished).await,
            None => join(&self.segments, &records),
        };
        // A meter still counting while it was read means packets of the finished epoch were
        // in flight longer than the drain: its other flows may be short of packets that had not
        // arrived yet, which would read as loss. Its segments sit this epoch out.
        for (&s, &torn) in &det.torn_at {
            events.entry(s).or_insert_with(|| {
                format!(
                    "packets still arriving {} ms after the flip ({torn} flows read mid-count): \
                     left out of this epoch",
                    drain.as_millis()
                )
            });
        }
        det.drop_entries(&self.selector.take_half_counted());
        self.adapt_drain(&det);
        // Packets lost while a switch was down or being configured are no link's fault.
        let before_skip = det.segments.len();
        let incomplete = self.incomplete_next.take();
        if incomplete.is_some() {
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
        let segments_skipped = before_skip - det.segments.len();
        for (s, c) in &det.segments {
            self.run_totals.entry(*s).or_default().add(c);
        }
        self.window.push(det.segments.clone());
        self.last = det.segments.clone();
        let (obs, changes) = self.decide(&det);
        let detect = t1.elapsed();

        let t2 = Instant::now();
        // Before the first sweep, a lossy segment's neighbours may not have been counted yet
        // and could not clear its healthy links: nothing is blamed until every round has had
        // its turn (measured at k = 8: 6-8 wrong links per epoch in the first round, none after).
        let mut verdict = if incomplete.is_some() || self.first_sweep() {
            Verdict::default()
        } else {
            let ties = self.likelihood_ties();
            let incumbents = self.incumbents();
            match &mut self.cluster {
                Some(c) => {
                    let mut v = c.localize(finished, &obs, ties, &incumbents).await;
                    canary_core::localize::name_sick_switches(&self.topo, &obs, &mut v);
                    v
                }
                None => self.localizer().localize(&self.topo, &obs),
            }
        };
        let mut corrected = BTreeMap::new();
        self.held.clear();
        if incomplete.is_none() {
            if let Some(d) = &self.decider {
                let segs = &self.segments;
                let held = hold(
                    &self.last_verdict,
                    &mut verdict.blamed,
                    &self.links_cleared,
                    |l| d.lossy_through(l),
                    |s| segs.get(s).links.as_slice(),
                );
                self.held = held.held;
                for (l, why) in held.released {
                    if let Release::Corrected { to } = why {
                        corrected.insert(l, to);
                    }
                }
            }
            self.last_verdict = verdict.blamed.clone();
        }
        let blamed_links: Vec<_> = verdict.blamed.iter().map(|b| b.link).collect();
        if incomplete.is_none() {
            self.last_blamed = self.least_losses(&verdict, &obs);
        }
        let cleared = self.timeline.update(self.epoch, &blamed_links);
        let localize = t2.elapsed();

        let t3 = Instant::now();
        let before = self.selector.stats;
        // After an incomplete epoch no flow is idle and no segment short: nothing is known.
        let answered: HashSet<SwitchIx> = if incomplete.is_some() {
            HashSet::new()
        } else {
            answered
        };
        if let Some(p) = &self.plan {
            // Rules made now serve the epoch the switches count in since the flip.
            self.selector.set_watching(Some(p.watched_at(finished + 1)));
        }
        let mut ops = self
            .selector
            .on_reports(&reports, &self.segments, &self.codec);
        ops.extend(
            self.selector
                .on_epoch(&det, &answered, &self.segments, &self.codec),
        );
        self.apply(fabric, &ops, &mut rules).await;
        let select = t3.elapsed();

        let short = self.short_segments(&det);
        let mut unreachable: Vec<String> = unreachable
            .iter()
            .map(|&s| self.topo.name_of(s).to_string())
            .collect();
        unreachable.sort();
        let report = EpochReport {
            epoch: self.epoch,
            parity: Parity::of_epoch(finished),
            at_s: flipped_at.as_secs_f64(),
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
            lossy_segments: self.segment_reports(&obs),
            segment_changes: self.segment_changes(&changes),
            blamed: self.link_reports(&verdict, &obs, Some(&det.entries)),
            devices: self.device_reports(&blamed_links),
            cleared: self.cleared_reports(&cleared, &corrected),
            selection: diff(self.selector.stats, before),
            hh_rules: self.selector.hh_rules(),
            rules,
            anomalies: det.anomalies,
            unreachable,
            disturbed: self.switch_events(&events),
            out_of_service: fabric
                .out_of_service()
                .into_iter()
                .map(|l| self.topo.link_names(l).map(str::to_string))
                .collect(),
            flows_vanished: det.vanished,
            segments_skipped,
            drain_ms: ms(drain),
            tables_full: self.tables_full(),
            phases_ms: Phases {
                harvest: ms(harvest),
                detect: ms(detect),
                localize: ms(localize),
                select: ms(select),
            },
            incomplete,
            watch: self.watch_report(),
            evidence_map: self.evidence_report(&det.segments, &obs),
            cluster: self.cluster.as_ref().map(|c| c.epoch_report()),
            observations: self.cfg.report_observations.then_some(obs),
        };
        if let Some(c) = &mut self.cluster {
            c.report(&report).await;
        }
        self.epoch += 1;
        // An epoch that overran (slow harvests under load) is not paid back with a short one.
        self.next_flip = (self.next_flip + self.cfg.epoch).max(fabric.now());
        report
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
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
    }
}
