//! Starting the epoch loop: afresh at epoch 0, or going on from what an earlier controller left
//! on the switches (a restart, or a standby taking over). Apart from the loop itself because it
//! runs once and is the only place that adopts another controller's rules.

use super::timing::resume_epoch;
use super::Controller;
use crate::report::EpochReport;
use canary_core::fabric::Fabric;
use canary_core::select::predict::Predictor;
use canary_core::select::RuleCapacity;
use canary_core::topo::SwitchIx;
use std::collections::HashSet;
use std::sync::Arc;

impl Controller {
    /// Starts epoch 0: every monitor counts in it and every segment asks for flows, within what
    /// the switches' tables hold.
    pub async fn start<F: Fabric>(&mut self, fabric: &mut F) {
        self.start_after(fabric, None).await;
    }

    /// Starts after `last_reported`, the last epoch already in the report (a controller started
    /// again, or a standby taking over). If the fabric found switches an earlier controller
    /// configured, it goes on from them: the epoch they count in, the flows they monitor. That
    /// epoch began before this controller, so its report will be marked incomplete; the epochs
    /// between `last_reported` and it, which nobody harvested, are returned as reports marked
    /// so, to be written before it.
    pub async fn start_after<F: Fabric>(
        &mut self,
        fabric: &mut F,
        last_reported: Option<u64>,
    ) -> Vec<EpochReport> {
        self.selector
            .set_capacity(RuleCapacity::of(&fabric.capacity()));
        let predictor = fabric
            .own_forwarding()
            .map(|ports| Arc::new(Predictor::new(&self.topo, &ports, &self.codec.masks)));
        self.selector.set_predictor(predictor);
        let first = last_reported.map_or(0, |e| e + 1);
        self.plan_watch(&fabric.capacity(), first);
        let Some(resumed) = fabric.take_resumed().filter(|r| !r.tags.is_empty()) else {
            self.epoch = first;
            let _ = fabric.set_epoch(self.epoch).await;
            let all: HashSet<SwitchIx> = self.topo.monitors().collect();
            let ops =
                self.selector
                    .on_epoch(&Default::default(), &all, &self.segments, &self.codec);
            let _ = fabric.apply(&ops).await;
            self.next_flip = fabric.now() + self.cfg.epoch;
            return vec![];
        };
        let tags: Vec<u16> = resumed.tags.iter().map(|&(_, t)| t).collect();
        self.epoch = resume_epoch(&tags, first);
        self.watching.restart(&mut self.selector, self.epoch);
        tracing::info!(
            epoch = self.epoch,
            rules = resumed.rules.len(),
            "resuming what an earlier controller left on the switches"
        );
        let cleanup = self
            .selector
            .adopt(&resumed.rules, &self.segments, &self.codec);
        // Monitors still in the epoch before (the earlier controller died mid-flip) catch up.
        let _ = fabric.set_epoch(self.epoch).await;
        let _ = fabric.apply(&cleanup).await;
        self.incomplete_next = Some(format!(
            "began before this controller took over ({} switches adopted, {} configured afresh)",
            tags.len(),
            resumed.fresh.len()
        ));
        self.next_flip = fabric.now() + self.cfg.epoch;
        (first..self.epoch)
            .map(|e| {
                EpochReport::missed(
                    e,
                    self.segments.len(),
                    "no controller harvested it (the one running then died)".into(),
                )
            })
            .collect()
    }
}
