//! The switch side of an epoch's end: the flip, the harvest (each switch's meters read into
//! records as they arrive), and which switches' segments sit the epoch out.

use super::Controller;
use canary_core::detect::{expected_by_downstream, SwitchRecords};
use canary_core::fabric::{Fabric, SwitchError};
use canary_core::topo::SwitchIx;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

/// What the harvest of one epoch left.
pub(super) struct Harvested {
    /// Every answering monitor's records, in switch order (empty when the cluster decodes).
    pub records: Vec<SwitchRecords>,
    /// The monitors that answered.
    pub answered: HashSet<SwitchIx>,
}

impl Controller {
    /// Waits for the epoch's end, then flips every monitor into `epoch`: when it flipped, and
    /// the switches that did not answer.
    pub(super) async fn flip_when_due<F: Fabric>(
        &mut self,
        fabric: &mut F,
        epoch: u64,
    ) -> (Duration, HashSet<SwitchIx>) {
        let now = fabric.now();
        if self.next_flip > now {
            fabric.wait(self.next_flip - now).await;
        }
        let flipped_at = fabric.now();
        (flipped_at, self.flip(fabric, epoch).await)
    }

    /// Flips every monitor into `epoch`; the switches that did not answer. A monitor that missed
    /// the flip counts the new epoch in an older epoch's meters, so its segments sit that epoch
    /// out as well.
    pub(super) async fn flip<F: Fabric>(
        &mut self,
        fabric: &mut F,
        epoch: u64,
    ) -> HashSet<SwitchIx> {
        let mut unreachable = HashSet::new();
        for (s, r) in fabric.set_epoch(epoch).await {
            if let Err(e) = r {
                tracing::warn!(switch = self.topo.name_of(s), "parity flip failed: {e}");
                unreachable.insert(s);
                if self.topo.switches[s as usize].monitor {
                    self.disturbed_next.insert(
                        s,
                        "missed the flip into this epoch: it counted in an earlier epoch's meters",
                    );
                }
            }
        }
        unreachable
    }

    /// Harvests epoch `finished`. Each switch's meters are read into records as they arrive and
    /// dropped (or, on a cluster, kept for its harvest partition without their empty buckets):
    /// the epoch holds records, never every switch's register image at once. Switches already
    /// `unreachable` are skipped; those whose harvest fails join them.
    pub(super) async fn harvest<F: Fabric>(
        &mut self,
        fabric: &mut F,
        finished: u64,
        unreachable: &mut HashSet<SwitchIx>,
    ) -> Harvested {
        let mut records = Vec::new();
        let mut failed = Vec::new();
        // Flows that moved are not expected where they were: forwarding changes first.
        let moved: HashSet<SwitchIx> = fabric.take_forwarding_changes().await.into_iter().collect();
        self.selector.forwarding_changed(&moved, &self.segments);
        if !moved.is_empty() {
            // The fabric's own control changed the forwarding: the controller's picture of it
            // predicts no flow any more.
            self.selector.set_predictor(None);
        }
        // Flows moved while this epoch (and perhaps the next) counted: what their old segments
        // missed is not loss. Their segments sit both epochs out, as an outage's do.
        for &s in &moved {
            let why = "forwarding changed (the fabric moved flows): left out";
            self.disturbed_now.insert(s, why);
            self.disturbed_next.insert(s, why);
        }
        let expected = expected_by_downstream(&self.segments, &self.selector.expected());
        self.stages.expecting(&expected, unreachable);
        let none = Vec::new();
        let (segments, codec, topo) = (&self.segments, &self.codec, &self.topo);
        let stages = &mut self.stages;
        let skip = &*unreachable;
        fabric
            .harvest_each(finished, &mut |s, r| match r {
                Ok(snap) if !skip.contains(&s) => {
                    let here = expected.get(&s).unwrap_or(&none);
                    stages.take(&snap, here, (segments, codec), &mut records);
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(switch = topo.name_of(s), "harvest failed: {e}");
                    failed.push(s);
                }
            })
            .await;
        unreachable.extend(failed);
        let mut answered = self.stages.answered(&records);
        // Read elsewhere, a switch this controller lost or skipped did not answer either.
        answered.retain(|s| !unreachable.contains(s));
        // In switch order, whatever order they answered in: the same epoch gives the same
        // entries.
        records.sort_by_key(|r| r.switch);
        Harvested { records, answered }
    }

    /// The switches whose segments sit this epoch out, and why: what the fabric saw of them
    /// (down, restarted, late), those that did not answer, and those an earlier epoch's outage
    /// still spoils.
    pub(super) async fn switch_events_of<F: Fabric>(
        &mut self,
        fabric: &mut F,
        unreachable: &HashSet<SwitchIx>,
    ) -> BTreeMap<SwitchIx, String> {
        let mut events: BTreeMap<SwitchIx, String> = BTreeMap::new();
        for (s, e) in fabric.health().await {
            events.entry(s).or_insert_with(|| e.to_string());
            if matches!(e, SwitchError::Restarted(_)) {
                // Its state was pushed again after the flip: the next epoch lost packets too.
                self.disturbed_next
                    .insert(s, "configured again at the start of this epoch");
            }
        }
        for &s in unreachable {
            events
                .entry(s)
                .or_insert_with(|| "did not answer the flip or the harvest".into());
        }
        for (s, why) in std::mem::take(&mut self.disturbed_now) {
            events.entry(s).or_insert_with(|| why.into());
        }
        self.disturbed_now = std::mem::take(&mut self.disturbed_next);
        // A switch that was down or configured again may hold other rules and routes than
        // before: its flows are expected again once seen on their way.
        let touched: HashSet<SwitchIx> = events.keys().copied().collect();
        self.selector.forwarding_changed(&touched, &self.segments);
        events
    }
}
