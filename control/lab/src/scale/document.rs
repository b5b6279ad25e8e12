//! A synthesized run in the one run-document format (`canary_controller::run_document`), so
//! that `canary view` and `canary draw` read it as they read a packet run.

use canary_controller::report::{EpochReport, LinkReport, Phases, Summary, WatchReport};
use canary_controller::run_document::synthesized::{ScaleEpoch, ScaleRun};
use canary_controller::run_document::{RunDocument, RunKind};
use canary_controller::simulate::over_time_report;
use canary_core::fault::{active_links, Fault};
use canary_core::localize::Verdict;
use canary_core::schedule::WatchPlan;
use canary_core::topo::{LinkIx, Topology};

/// Where the watch plan is in an epoch.
pub(super) struct Round {
    /// 0-based, of `rounds` (the adaptive plan: the sweep's half-round, of its half-rounds).
    pub round: usize,
    pub rounds: usize,
    pub dwell: u32,
    /// Nothing is blamed before this epoch (the fixed plan's first sweep).
    pub first_sweep_until: Option<u64>,
}

impl Round {
    pub fn of_plan(plan: &WatchPlan, epoch: u64, first_sweep: bool) -> Self {
        Round {
            round: plan.round_at(epoch),
            rounds: plan.rounds(),
            dwell: plan.dwell(),
            first_sweep_until: first_sweep.then(|| plan.period() - 1),
        }
    }
}

fn link_report(topo: &Topology, link: LinkIx, loss: f64, stage: Option<usize>) -> LinkReport {
    let [a, b] = topo.link_names(link);
    LinkReport {
        link: [a.into(), b.into()],
        loss,
        stage,
        ci95: None,
        since: None,
        flows: None,
        held: false,
    }
}

/// One synthesized epoch as the controller would report it: what it watched, what it blamed,
/// what it could not place, and what it cost.
pub(super) fn epoch_report(
    topo: &Topology,
    segments: usize,
    verdict: &Verdict,
    round: Round,
    measured: &ScaleEpoch,
) -> EpochReport {
    let e = measured.epoch;
    let mut r = EpochReport::empty(e, segments);
    r.flows_counted = measured.flows_counted;
    r.segments_observed = measured.watched;
    r.blamed = verdict
        .blamed
        .iter()
        .map(|b| link_report(topo, b.link, b.loss, Some(b.stage + 1)))
        .collect();
    r.undecided = verdict
        .undecided
        .iter()
        .map(|set| {
            set.iter()
                .map(|&l| topo.link_names(l).map(String::from))
                .collect()
        })
        .collect();
    r.watch = Some(WatchReport {
        round: round.round,
        rounds: round.rounds,
        dwell: round.dwell,
        watched: measured.watched,
        evidence: measured.evidence,
        first_sweep_until: round.first_sweep_until,
    });
    r.phases_ms = Phases {
        detect: measured.detect_ms,
        localize: measured.localize_ms,
        ..Phases::default()
    };
    r
}

/// The document of a synthesized run. Its summary is the last epoch's verdict, scored over the
/// epochs after the first sweep (link-epochs): a synthesized run localizes epoch by epoch from
/// each segment's latest watch, and has no whole-run localization to give.
pub(super) fn of_run(
    topo: &Topology,
    seed: u64,
    faults: &[Fault],
    reports: Vec<EpochReport>,
    measured: ScaleRun,
) -> RunDocument {
    let last = reports.last();
    let active: Vec<LinkIx> = last.map_or(Vec::new(), |r| active_links(faults, r.epoch));
    let blamed: Vec<LinkReport> = last.map_or(Vec::new(), |r| r.blamed.clone());
    let is_blamed = |l: LinkIx| {
        let [a, b] = topo.link_names(l);
        blamed.iter().any(|x| x.link[0] == a && x.link[1] == b)
    };
    let s = measured.after_first_period;
    let summary = Summary {
        epochs: reports.len(),
        missed: faults
            .iter()
            .filter(|f| active.contains(&f.link) && !is_blamed(f.link))
            .map(|f| link_report(topo, f.link, f.loss, None))
            .collect(),
        false_positives: blamed
            .iter()
            .filter(|b| {
                topo.link_by_names(&b.link[0], &b.link[1])
                    .is_some_and(|l| !active.contains(&l))
            })
            .cloned()
            .collect(),
        blamed,
        precision: s.precision,
        recall: s.recall,
        f1: s.f1,
        tp: s.tp,
        fp: s.fp,
        fn_: s.fn_,
        accuracy: s.accuracy,
        stages: Vec::new(),
        localize_ms: measured.epochs.last().map_or(0.0, |e| e.localize_ms),
        coverage: Vec::new(),
        over_time: over_time_report(topo, faults, &reports),
    };
    let mut doc = RunDocument::new(RunKind::Synthesized, topo, seed, faults, reports, summary);
    doc.synthesized = Some(measured);
    doc
}
