//! The controller's side of the cluster: it hands each epoch's registers to the harvest
//! partitions and its observations to the localizer partitions, and takes back the joins and
//! the diagnoses, in the order a single process would have made them.

mod collect;
mod reads;
mod start;

pub use reads::ClusterReads;
use reads::ReadsShared;

use super::nats::{publish_stored, Inputs};
use super::wire::{
    self, HarvestInput, Localize, Parts, Registers, SwitchReads, Verdicts, WireSnapshot,
};
use super::{ClusterConfig, Result};
use crate::controller::Controller;
use crate::report::{ClusterReport, EpochReport};
use async_nats::jetstream::Context;
use canary_core::detect::{DsmEntry, EpochDetection, Expected, Observations, ObservedSegment};
use canary_core::fabric::MeterSnapshot;
use canary_core::localize::{Canary, CanaryParams, SubVerdict, Verdict};
use canary_core::pathbf::PathBfParams;
use canary_core::topo::SwitchIx;
use collect::{collect, merge_joins};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
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
    /// Set when the harvest workers read the switches themselves ([`ClusterReads`]).
    reads: Option<Arc<Mutex<ReadsShared>>>,
}

impl ClusterStages {
    /// Starts the run on the cluster for `ctl` (its topology, segments, codec and localizer)
    /// and hands its epochs' work to it. With `reads`, the harvest workers read the switches
    /// themselves: the reads to hand the fabric ([`SwitchFabric::read_elsewhere`]).
    ///
    /// [`SwitchFabric::read_elsewhere`]: canary_switch::fabric::SwitchFabric::read_elsewhere
    pub async fn attach(
        ctl: &mut Controller,
        cluster: &ClusterConfig,
        parts: Parts,
        pathbf: PathBfParams,
        reads: Option<SwitchReads>,
    ) -> Result<Option<ClusterReads>> {
        let setup = wire::Setup {
            topology: wire::WireTopology::of(&ctl.topo),
            pathbf,
            canary: ctl.cfg.canary.clone(),
            parts,
            segments: ctl.segments.len(),
            segment_bf_sum: ctl.codec.segment_bf.iter().map(|&b| u64::from(b)).sum(),
            reads: reads.clone(),
        };
        let mut stages = Self::start(cluster.clone(), setup).await?;
        let remote = match reads {
            None => None,
            Some(_) => {
                let shared = Arc::new(Mutex::new(ReadsShared::default()));
                stages.reads = Some(shared.clone());
                let harvested = Inputs::open(
                    &stages.js,
                    cluster,
                    "controller-harvested",
                    cluster.harvested(),
                    0,
                    true,
                )
                .await?;
                Some(ClusterReads {
                    cfg: cluster.clone(),
                    js: stages.js.clone(),
                    harvest_parts: parts.harvest,
                    shared,
                    harvested,
                    ids: HashMap::new(),
                })
            }
        };
        ctl.set_cluster(stages);
        Ok(remote)
    }

    /// Before the harvest of an epoch: the flows expected at each monitor, and the monitors
    /// that missed the flip, for the reads the workers make.
    pub fn expecting<H: std::hash::BuildHasher>(
        &mut self,
        expected: &HashMap<SwitchIx, Vec<Expected>, H>,
        skip: &HashSet<SwitchIx>,
    ) {
        if let Some(r) = &self.reads {
            let mut sh = reads::lock(r);
            sh.expected = expected.iter().map(|(&s, e)| (s, e.clone())).collect();
            sh.skip = skip.clone();
        }
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
    pub fn answered(&self) -> Vec<SwitchIx> {
        match &self.reads {
            Some(r) => reads::lock(r).answered.clone(),
            None => self.regs.iter().flatten().map(|s| s.switch).collect(),
        }
    }

    /// The epoch's minus meters: the registers to the harvest partitions, the joins back.
    /// Waits, however long, for every join partition: an epoch is late, never lost.
    pub async fn detect(&mut self, epoch: u64) -> EpochDetection {
        let t = Instant::now();
        self.last = ClusterReport {
            redelivered: std::mem::take(&mut self.carried),
            ..Default::default()
        };
        let mut read_ms = 0.0;
        if let Some(r) = &self.reads {
            // The workers read the switches and sent the join partitions their records.
            let done = std::mem::take(&mut reads::lock(r).report);
            self.last.redelivered.extend(done.redelivered);
            self.last.bytes_out += done.bytes_out;
            self.last.bytes_in += done.bytes_in;
            read_ms = done.detect_ms;
        }
        let mut out = Vec::new();
        for h in (0..self.parts.harvest).filter(|_| self.reads.is_none()) {
            let mut switches = std::mem::take(&mut self.regs[h as usize]);
            switches.sort_by_key(|s| s.switch);
            let bytes = wire::encode(&HarvestInput::Registers(Registers {
                epoch,
                part: h,
                switches,
            }));
            out.push((self.cfg.regs(h), format!("{epoch}.regs.{h}"), bytes));
        }
        let again = self.publish_all(out).await;
        self.last.redelivered.extend(again);
        let parts = collect(&mut self.joined, epoch, self.parts.join, &mut self.last).await;
        self.last.detect_ms = read_ms + t.elapsed().as_secs_f64() * 1e3;
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
