//! Watching segments in rounds when the switches' meters cannot count them all at once
//! (`canary_core::schedule`): the plan, the first sweep, and what the report says of them.

use super::Controller;
use crate::report::WatchReport;
use canary_core::schedule::{WatchBudget, WatchPlan};

impl Controller {
    /// Rounds of segments, when the switches' meters cannot count β flows of every segment at
    /// once and the configuration allows it.
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
        self.selector.set_watching(Some(plan.watched_at(first)));
        self.plan = Some(plan);
        self.watch_start = first;
    }

    /// Watching in rounds, and not every round has had its turn yet.
    pub(super) fn first_sweep(&self) -> bool {
        self.plan
            .as_ref()
            .is_some_and(|p| self.epoch + 1 < self.watch_start + p.period())
    }

    pub(super) fn watch_report(&self) -> Option<WatchReport> {
        let p = self.plan.as_ref()?;
        Some(WatchReport {
            round: p.round_at(self.epoch),
            rounds: p.rounds(),
            dwell: p.dwell(),
            watched: p.watched_at(self.epoch).len(),
            evidence: self.shown.ages(self.epoch),
            first_sweep_until: self
                .first_sweep()
                .then(|| self.watch_start + p.period() - 1),
        })
    }
}
