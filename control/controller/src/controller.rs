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
use canary_core::decide::{Decider, EvidenceTracker, LinkClearing, LinkTimeline};
use canary_core::detect::{FlowWindow, RunFlows, SegmentCount, Window, WindowCount, FLOW_EPOCHS};
use canary_core::fabric::Fabric;
use canary_core::pathbf::PathBfCodec;
use canary_core::select::FlowSelector;
use canary_core::topo::{LinkIx, PortMap, SegmentId, Segments, SwitchIx, Topology};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tracing::Instrument;

mod config;
mod decision;
mod epoch_report;
mod evidence;
mod harvest;
mod phases;
mod recheck;
mod reports;
mod rules;
mod stages;
mod start;
#[cfg(test)]
mod tests;
mod timing;
mod watching;

pub use config::{localizer_params, ControllerConfig};
use decision::Judge;
use epoch_report::{ms, Finished};
use harvest::Harvested;
use stages::Stages;
use watching::Watching;

pub struct Controller {
    pub topo: Topology,
    /// The switches' ports (the switches file's; the simulator's canonical numbering): the
    /// report names the cables to look at by them.
    pub ports: PortMap,
    pub segments: Segments,
    pub codec: PathBfCodec,
    pub cfg: ControllerConfig,
    selector: FlowSelector,
    window: Window,
    /// The window's flows of each thin segment, when every segment is watched every epoch:
    /// what a loss on some flows only is weighed with.
    flow_window: FlowWindow,
    /// How segments are judged lossy, and blames held.
    judge: Judge,
    /// The last epoch's verdict: under the sequential decision a blame holds until a test
    /// clears it ([`canary_core::decide::hold`]).
    last_verdict: Vec<canary_core::localize::BlamedLink>,
    /// The links this epoch's verdict blames by holding ([`canary_core::decide::hold`]).
    held: Vec<LinkIx>,
    timeline: LinkTimeline,
    run_totals: BTreeMap<SegmentId, WindowCount>,
    /// The flows of `run_totals`' thin segments, for the run's verdict.
    run_flows: RunFlows,
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
    /// Every segment every epoch, or in rounds when the switches cannot count all at once.
    watching: Watching,
    /// When each segment was last counted: the evidence map of each report.
    evidence: EvidenceTracker,
    /// Where the epoch's decoding, joins and localization run.
    stages: Stages,
}

impl Controller {
    pub fn new(
        topo: Topology,
        segments: Segments,
        codec: PathBfCodec,
        cfg: ControllerConfig,
    ) -> Self {
        let mut evidence = evidence::tracker(&segments, &cfg);
        let judge = match cfg.decision {
            Some(p) => {
                let links: Vec<Vec<LinkIx>> =
                    segments.list.iter().map(|s| s.links.clone()).collect();
                let decider = Decider::with_links(&links, topo.links.len(), p);
                evidence = evidence.with_threshold(decider.threshold());
                Judge::sequential(decider, LinkClearing::new(&p))
            }
            None => Judge::Floor {
                min_lossy_epochs: cfg.min_lossy_epochs,
            },
        };
        Self {
            selector: FlowSelector::new(cfg.selection),
            window: Window::new(cfg.window),
            flow_window: FlowWindow::new(FLOW_EPOCHS.max(cfg.window)),
            judge,
            last_verdict: Vec::new(),
            held: Vec::new(),
            timeline: LinkTimeline::default(),
            run_totals: BTreeMap::new(),
            run_flows: RunFlows::new(),
            epoch: 0,
            next_flip: Duration::ZERO,
            disturbed_now: BTreeMap::new(),
            disturbed_next: BTreeMap::new(),
            last: BTreeMap::new(),
            drain_now: cfg.drain,
            incomplete_next: None,
            watching: Watching::Always,
            evidence,
            stages: Stages::Here,
            ports: PortMap::canonical(&topo),
            topo,
            segments,
            codec,
            cfg,
        }
    }

    /// Runs each epoch's decoding, joins and localization on `cluster`'s workers.
    pub fn set_cluster(&mut self, cluster: ClusterStages) {
        self.stages = Stages::Cluster(Box::new(cluster));
    }

    /// Per-segment counts of the last epoch.
    pub fn last_counts(&self) -> &BTreeMap<SegmentId, SegmentCount> {
        &self.last
    }

    /// What a test of `link` knowing its loss `q` gains from the last epoch's counts, and the
    /// threshold it must reach; `None` under the paper's n′ rule. Summed from a fault's onset:
    /// the epoch it could first have been decided on the packets counted.
    pub fn information(&self, link: LinkIx, q: f64) -> Option<(f64, f64)> {
        self.judge.information(link, &self.last, q)
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

    /// One epoch's steps: flip and drain, harvest, count, localize, select, report.
    async fn epoch_in_span<F: Fabric>(&mut self, fabric: &mut F) -> EpochReport {
        let finished = self.epoch;
        let (flipped_at, mut unreachable) = self.flip_when_due(fabric, finished + 1).await;
        let drain = self.drain_now;
        fabric.wait(drain).await;

        let t0 = Instant::now();
        let Harvested {
            mut records,
            answered,
        } = self.harvest(fabric, finished, &mut unreachable).await;
        let mut rules = RuleCounts::default();
        let deferred = self.selector.take_deferred();
        self.apply(fabric, &deferred, &mut rules).await;
        let reports = fabric.take_reports().await;
        let mut events = self.switch_events_of(fabric, &unreachable).await;
        let harvest = t0.elapsed();

        let t1 = Instant::now();
        let counted = self
            .count(fabric, finished, &mut records, drain, &mut events)
            .await;
        let detect = t1.elapsed();

        let t2 = Instant::now();
        let blamed = self.localize_epoch(finished, &counted).await;
        let localize = t2.elapsed();

        let t3 = Instant::now();
        let selection = self
            .select(fabric, finished, &reports, &counted, answered, &mut rules)
            .await;
        let select = t3.elapsed();

        let found = Finished {
            epoch: finished,
            flipped_at,
            drain,
            unreachable,
            events,
            rules,
            selection,
            counted,
            blamed,
            phases: Phases {
                harvest: ms(harvest),
                detect: ms(detect),
                localize: ms(localize),
                select: ms(select),
            },
        };
        let report = self.epoch_report(fabric, found);
        self.stages.report(&report).await;
        self.epoch += 1;
        // An epoch that overran (slow harvests under load) is not paid back with a short one.
        self.next_flip = (self.next_flip + self.cfg.epoch).max(fabric.now());
        report
    }
}
