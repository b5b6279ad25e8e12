//! The controller's side of the cluster: it hands each epoch's registers to the harvest
//! partitions and its observations to the localizer partitions, and takes back the joins and
//! the diagnoses, in the order a single process would have made them.

mod collect;
mod start;

use super::nats::{publish_stored, Inputs};
use super::wire::{self, Localize, Parts, Registers, Verdicts, WireSnapshot};
use super::{ClusterConfig, Result};
use crate::controller::Controller;
use crate::report::{ClusterReport, EpochReport};
use async_nats::jetstream::Context;
use canary_core::detect::{DsmEntry, EpochDetection, Observations, ObservedSegment};
use canary_core::fabric::MeterSnapshot;
use canary_core::localize::{Canary, CanaryParams, SubVerdict, Verdict};
use canary_core::pathbf::PathBfParams;
use canary_core::topo::SwitchIx;
use collect::{collect, merge_joins};
use std::time::Instant;

/// The stages of an epoch on the cluster's workers.
pub struct ClusterStages {
    cfg: ClusterConfig,
    js: Context,
    parts: Parts,
    canary: CanaryParams,
    joined: Inputs,
    verdicts: Inputs,
    /// This epoch's registers, by harvest partition, as the switches answered.
    regs: Vec<Vec<WireSnapshot>>,
    /// What the last epoch waited for.
    last: ClusterReport,
    /// What made the next epoch late before it began (its report's publishing, tried again).
    carried: Vec<String>,
}

impl ClusterStages {
    /// Starts the run on the cluster for `ctl` (its topology, segments, codec and localizer)
    /// and hands its epochs' work to it.
    pub async fn attach(
        ctl: &mut Controller,
        cluster: &ClusterConfig,
        parts: Parts,
        pathbf: PathBfParams,
    ) -> Result<()> {
        let stages = Self::start(
            cluster.clone(),
            &ctl.topo,
            &ctl.segments,
            &ctl.codec,
            pathbf,
            ctl.cfg.canary.clone(),
            parts,
        )
        .await?;
        ctl.set_cluster(stages);
        Ok(())
    }

    /// One switch's harvest of this epoch, kept (without its empty buckets) until
    /// [`ClusterStages::detect`] sends it to its harvest partition.
    /// Takes one switch's harvest for its harvest partition, with the records of the flows
    /// expected there that it proves vanished (`detect::vanished`: their absence is loss).
    pub fn harvested(&mut self, snap: &MeterSnapshot, vanished: Vec<DsmEntry>) {
        let h = snap.switch % self.parts.harvest;
        let mut w = WireSnapshot::of(snap);
        w.vanished = vanished;
        self.regs[h as usize].push(w);
    }

    /// The switches harvested this epoch so far.
    pub fn answered(&self) -> impl Iterator<Item = SwitchIx> + '_ {
        self.regs.iter().flatten().map(|s| s.switch)
    }

    /// The epoch's minus meters: the registers to the harvest partitions, the joins back.
    /// Waits, however long, for every join partition: an epoch is late, never lost.
    pub async fn detect(&mut self, epoch: u64) -> EpochDetection {
        let t = Instant::now();
        self.last = ClusterReport {
            redelivered: std::mem::take(&mut self.carried),
            ..Default::default()
        };
        let mut out = Vec::new();
        for h in 0..self.parts.harvest {
            let mut switches = std::mem::take(&mut self.regs[h as usize]);
            switches.sort_by_key(|s| s.switch);
            let bytes = wire::encode(&Registers {
                epoch,
                part: h,
                switches,
            });
            out.push((self.cfg.regs(h), format!("{epoch}.regs.{h}"), bytes));
        }
        let again = self.publish_all(out).await;
        self.last.redelivered.extend(again);
        let parts = collect(&mut self.joined, epoch, self.parts.join, &mut self.last).await;
        self.last.detect_ms = t.elapsed().as_secs_f64() * 1e3;
        merge_joins(parts)
    }

    /// The verdict on `obs`: each localizer partition's sub-problems there, the diagnoses back.
    /// `ties`: the epoch's [`CanaryParams::likelihood_ties`]; `incumbents`: the links blamed
    /// the epoch before (`Canary::incumbents`).
    pub async fn localize(
        &mut self,
        epoch: u64,
        obs: &Observations,
        ties: bool,
        incumbents: &[u32],
    ) -> Verdict {
        let t = Instant::now();
        let n = self.parts.localize;
        let mut by_part: Vec<Vec<ObservedSegment>> = vec![Vec::new(); n as usize];
        for s in &obs.segments {
            by_part[(s.subproblem % n) as usize].push(s.clone());
        }
        let out = by_part
            .into_iter()
            .enumerate()
            .map(|(l, segments)| {
                let l = l as u32;
                let bytes = wire::encode(&Localize {
                    epoch,
                    part: l,
                    ties,
                    incumbents: incumbents.to_vec(),
                    segments: segments.into_iter().map(Into::into).collect(),
                });
                (self.cfg.localize(l), format!("{epoch}.localize.{l}"), bytes)
            })
            .collect();
        let again = self.publish_all(out).await;
        self.last.redelivered.extend(again);
        let parts = collect(&mut self.verdicts, epoch, n, &mut self.last).await;
        self.last.localize_ms = t.elapsed().as_secs_f64() * 1e3;
        let subs: Vec<SubVerdict> = parts.into_iter().flat_map(|v: Verdicts| v.subs).collect();
        Canary {
            params: self.canary.clone(),
            ..Default::default()
        }
        .verdict(subs)
    }

    /// What this epoch waited for on the cluster.
    pub fn epoch_report(&self) -> ClusterReport {
        self.last.clone()
    }

    /// Hands the epoch's report to the reporter.
    pub async fn report(&mut self, r: &EpochReport) {
        let line = serde_json::to_vec(r).expect("a report serialises");
        let id = format!("{}.report", r.epoch);
        let again = self.publish_all(vec![(self.cfg.reports(), id, line)]).await;
        self.carried.extend(again);
    }

    /// Publishes every message, trying again (with the same IDs, so nothing is stored twice)
    /// until a server stores it, however long that takes; the messages tried again.
    async fn publish_all(&mut self, msgs: Vec<(String, String, Vec<u8>)>) -> Vec<String> {
        let mut again = Vec::new();
        for (subject, id, bytes) in msgs {
            self.last.bytes_out += bytes.len() as u64;
            let tries = publish_stored(&self.js, &subject, &id, None, |_| bytes.clone()).await;
            if tries.is_ok_and(|n| n > 0) {
                again.push(format!("{id}: published again"));
            }
        }
        again
    }
}
