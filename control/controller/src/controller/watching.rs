//! How the segments are watched, chosen once when the loop starts: every segment every epoch,
//! or in rounds when the switches' meters cannot count them all at once
//! (`canary_core::schedule`). The loop asks the mode; it never branches on it.

use super::Controller;
use crate::report::WatchReport;
use canary_core::detect::{observations, Observations, SegmentCount, Window, WindowCount};
use canary_core::schedule::{LastShown, WatchBudget, WatchPlan};
use canary_core::select::FlowSelector;
use canary_core::topo::{SegmentId, Segments};
use std::collections::BTreeMap;

/// Which segments the switches count, and so what a segment's evidence is.
pub(super) enum Watching {
    /// Every segment every epoch: its evidence is the window's.
    Always,
    /// In rounds: its evidence is its latest watch, however old.
    InRounds(Rounds),
}

pub(super) struct Rounds {
    plan: WatchPlan,
    /// The epoch the plan started in.
    start: u64,
    /// Each segment's latest watch.
    shown: LastShown,
}

impl Watching {
    /// Each segment's counts to decide on, `counts` (this epoch's) noted.
    pub(super) fn totals(
        &mut self,
        epoch: u64,
        counts: &BTreeMap<SegmentId, SegmentCount>,
        window: &Window,
    ) -> BTreeMap<SegmentId, WindowCount> {
        match self {
            Watching::Always => window.totals(),
            Watching::InRounds(r) => {
                r.shown.record(epoch, counts);
                r.shown.totals()
            }
        }
    }

    /// The paper's n′ of n rule on each segment's evidence, `counts` (this epoch's) noted.
    pub(super) fn floor_observations(
        &mut self,
        epoch: u64,
        counts: &BTreeMap<SegmentId, SegmentCount>,
        window: &Window,
        segments: &Segments,
        min_lossy_epochs: u32,
    ) -> Observations {
        match self {
            Watching::Always => observations(segments, &window.totals(), min_lossy_epochs),
            Watching::InRounds(r) => r
                .shown
                .observe(epoch, counts, segments, min_lossy_epochs)
                .clone(),
        }
    }

    /// Whether `segment` is counted in `epoch`.
    pub(super) fn watches(&self, segment: SegmentId, epoch: u64) -> bool {
        match self {
            Watching::Always => true,
            Watching::InRounds(r) => r.plan.round_of(segment) == r.plan.round_at(epoch),
        }
    }

    /// Not every round has had its turn yet by the end of `epoch`.
    pub(super) fn first_sweep(&self, epoch: u64) -> bool {
        match self {
            Watching::Always => false,
            Watching::InRounds(r) => epoch + 1 < r.start + r.plan.period(),
        }
    }

    /// Every segment's evidence is counted over the same epochs (not so in rounds, where a
    /// pin can be older than the loss).
    pub(super) fn same_epochs(&self) -> bool {
        matches!(self, Watching::Always)
    }

    /// How many epochs old `segment`'s evidence is in `epoch`, in rounds.
    pub(super) fn age(&self, segment: SegmentId, epoch: u64) -> Option<u64> {
        match self {
            Watching::Always => None,
            Watching::InRounds(r) => r.shown.age(segment, epoch),
        }
    }

    /// Points flow selection at the segments counted in `epoch`.
    pub(super) fn steer(&self, selector: &mut FlowSelector, epoch: u64) {
        if let Watching::InRounds(r) = self {
            selector.set_watching(Some(r.plan.watched_at(epoch)));
        }
    }

    /// Starts the plan over at `epoch` (the epoch the switches were found counting in).
    pub(super) fn restart(&mut self, selector: &mut FlowSelector, epoch: u64) {
        if let Watching::InRounds(r) = self {
            r.start = epoch;
        }
        self.steer(selector, epoch);
    }

    pub(super) fn report(&self, epoch: u64) -> Option<WatchReport> {
        let Watching::InRounds(r) = self else {
            return None;
        };
        let p = &r.plan;
        Some(WatchReport {
            round: p.round_at(epoch),
            rounds: p.rounds(),
            dwell: p.dwell(),
            watched: p.watched_at(epoch).len(),
            evidence: r.shown.ages(epoch),
            first_sweep_until: self.first_sweep(epoch).then(|| r.start + p.period() - 1),
        })
    }
}

impl Controller {
    /// Rounds of segments from `first` on, when the switches' meters cannot count β flows of
    /// every segment at once and the configuration allows it.
    pub(super) fn plan_watch(&mut self, capacity: &canary_core::capacity::Capacity, first: u64) {
        let Some(dwell) = self.cfg.watch_round_epochs else {
            return;
        };
        let budget = WatchBudget::of(capacity, self.cfg.selection.beta);
        let plan = WatchPlan::new(&self.segments, budget, dwell);
        if plan.rounds() <= 1 {
            return;
        }
        tracing::info!(
            rounds = plan.rounds(),
            dwell,
            per_monitor = budget.segments_per_monitor,
            "the switches' meters cannot count every segment at once: watching in rounds, \
             every segment every {} epochs",
            plan.period()
        );
        self.watching = Watching::InRounds(Rounds {
            plan,
            start: first,
            shown: LastShown::new(self.segments.len()),
        });
        self.watching.steer(&mut self.selector, first);
    }
}
