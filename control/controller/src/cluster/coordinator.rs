//! The controller's side of the cluster: it hands each epoch's registers to the harvest
//! partitions and its observations to the localizer partitions, and takes back the joins and
//! the diagnoses, in the order a single process would have made them.

use super::wire::{self, Joined, Localize, Parts, Registers, Setup, Verdicts, WireSnapshot};
use super::{connect, js_err, publish, ClusterConfig, ClusterError, Result};
use crate::controller::Controller;
use crate::report::{ClusterReport, EpochReport};
use async_nats::jetstream::consumer::{self, pull};
use async_nats::jetstream::{self, Context};
use canary_core::detect::{DsmEntry, EpochDetection, MmEntries, Observations, ObservedSegment};
use canary_core::fabric::MeterSnapshot;
use canary_core::localize::{Canary, CanaryParams, SubVerdict, Verdict};
use canary_core::pathbf::{PathBfCodec, PathBfParams};
use canary_core::topo::{Segments, SwitchIx, Topology};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The stages of an epoch on the cluster's workers.
pub struct ClusterStages {
    cfg: ClusterConfig,
    js: Context,
    parts: Parts,
    canary: CanaryParams,
    joined: pull::Stream,
    verdicts: pull::Stream,
    /// This epoch's registers, by harvest partition, as the switches answered.
    regs: Vec<Vec<WireSnapshot>>,
    /// What the last epoch waited for.
    last: ClusterReport,
}

/// Something every stage result carries.
trait Part {
    fn epoch(&self) -> u64;
    fn part(&self) -> u32;
    fn delivered(&self) -> u64;
}

/// Stage results carry their epoch, their partition and how often their input was handed out.
macro_rules! parts {
    ($($t:ty),*) => {$(
        impl Part for $t {
            fn epoch(&self) -> u64 {
                self.epoch
            }
            fn part(&self) -> u32 {
                self.part
            }
            fn delivered(&self) -> u64 {
                self.delivered
            }
        }
    )*};
}

parts!(Joined, Verdicts);

impl ClusterStages {
    /// Starts run `cfg.run` afresh on the cluster (a stream of that name left by an earlier run
    /// is deleted) and publishes what the workers need to know of it.
    pub async fn start(
        cfg: ClusterConfig,
        topo: &Topology,
        segments: &Segments,
        codec: &PathBfCodec,
        pathbf: PathBfParams,
        canary: CanaryParams,
        parts: Parts,
    ) -> Result<Self> {
        if parts.harvest == 0 || parts.join == 0 || parts.localize == 0 {
            return Err(ClusterError::Setup(format!(
                "--partitions {},{},{}: every stage needs at least one partition",
                parts.harvest, parts.join, parts.localize
            )));
        }
        let js = connect(&cfg.url, Duration::from_secs(10)).await?;
        if js.get_stream(cfg.stream()).await.is_ok() {
            js.delete_stream(cfg.stream()).await.map_err(js_err)?;
        }
        let stream = js
            .get_or_create_stream(cfg.stream_config())
            .await
            .map_err(js_err)?;
        let setup = Setup {
            topology: wire::WireTopology::of(topo),
            pathbf,
            canary: canary.clone(),
            parts,
            segments: segments.len(),
            segment_bf_sum: codec.segment_bf.iter().map(|&b| u64::from(b)).sum(),
        };
        publish(
            &js,
            cfg.setup_subject(),
            "setup".into(),
            wire::encode(&setup),
        )
        .await?;
        let joined = own_consumer(&stream, "controller-joined", cfg.joined(), cfg.ack_wait).await?;
        let verdicts =
            own_consumer(&stream, "controller-verdicts", cfg.verdicts(), cfg.ack_wait).await?;
        Ok(ClusterStages {
            regs: vec![Vec::new(); parts.harvest as usize],
            cfg,
            js,
            parts,
            canary,
            joined,
            verdicts,
            last: ClusterReport::default(),
        })
    }

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
        self.last = ClusterReport::default();
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
        self.publish_all(out).await;
        let (parts, redelivered) = self.collect::<Joined>(true, epoch, self.parts.join).await;
        self.last.detect_ms = t.elapsed().as_secs_f64() * 1e3;
        self.last.redelivered.extend(
            redelivered
                .into_iter()
                .map(|p| format!("harvest or join for join partition {p}")),
        );
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
        self.publish_all(out).await;
        let (parts, redelivered) = self.collect::<Verdicts>(false, epoch, n).await;
        self.last.localize_ms = t.elapsed().as_secs_f64() * 1e3;
        self.last.redelivered.extend(
            redelivered
                .into_iter()
                .map(|p| format!("localizer partition {p}")),
        );
        let subs: Vec<SubVerdict> = parts.into_iter().flat_map(|v| v.subs).collect();
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
        self.publish_all(vec![(self.cfg.reports(), id, line)]).await;
    }

    /// Publishes every message, trying again (with the same IDs, so nothing is stored twice)
    /// while the server does not answer.
    async fn publish_all(&mut self, msgs: Vec<(String, String, Vec<u8>)>) {
        for (subject, id, bytes) in msgs {
            self.last.bytes_out += bytes.len() as u64;
            let mut tries = 0u32;
            while let Err(e) = publish(&self.js, subject.clone(), id.clone(), bytes.clone()).await {
                tries += 1;
                tracing::error!("publishing {id} on {subject} (try {tries}): {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }

    /// The `n` parts of `epoch` from the joins (`joins`) or the localizers, and which parts'
    /// inputs were handed out more than once. Tries again on a broken consumer.
    async fn collect<T: Part + DeserializeOwned>(
        &mut self,
        joins: bool,
        epoch: u64,
        n: u32,
    ) -> (Vec<T>, Vec<u32>) {
        let (name, subject) = if joins {
            ("controller-joined", self.cfg.joined())
        } else {
            ("controller-verdicts", self.cfg.verdicts())
        };
        let mut got: BTreeMap<u32, T> = BTreeMap::new();
        loop {
            let stream = if joins {
                &mut self.joined
            } else {
                &mut self.verdicts
            };
            match collect_into(stream, &subject, epoch, n, &mut got).await {
                Ok(bytes) => {
                    self.last.bytes_in += bytes;
                    break;
                }
                Err(e) => {
                    tracing::error!("taking {subject}: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let again = match self.js.get_stream(self.cfg.stream()).await {
                        Ok(s) => own_consumer(&s, name, subject.clone(), self.cfg.ack_wait).await,
                        Err(e) => Err(js_err(e)),
                    };
                    match again {
                        Ok(s) if joins => self.joined = s,
                        Ok(s) => self.verdicts = s,
                        Err(e) => tracing::error!("{subject}: {e}"),
                    }
                }
            }
        }
        let redelivered = got
            .values()
            .filter(|p| p.delivered() > 1)
            .map(|p| p.part())
            .collect();
        (got.into_values().collect(), redelivered)
    }
}

/// A durable consumer of the controller's own on `subject`.
async fn own_consumer(
    stream: &jetstream::stream::Stream,
    name: &str,
    subject: String,
    ack_wait: Duration,
) -> Result<pull::Stream> {
    let c = stream
        .get_or_create_consumer(
            name,
            pull::Config {
                durable_name: Some(name.to_string()),
                filter_subject: subject,
                ack_policy: consumer::AckPolicy::Explicit,
                ack_wait,
                deliver_policy: consumer::DeliverPolicy::All,
                ..Default::default()
            },
        )
        .await
        .map_err(js_err)?;
    c.messages().await.map_err(js_err)
}

/// Takes parts of `epoch` from `stream` into `got` until it holds the `n` parts; the bytes
/// taken. A repeat of a part (its worker died after publishing it) and parts of epochs already
/// done are dropped.
async fn collect_into<T: Part + DeserializeOwned>(
    stream: &mut pull::Stream,
    subject: &str,
    epoch: u64,
    n: u32,
    got: &mut BTreeMap<u32, T>,
) -> Result<u64> {
    let mut bytes = 0u64;
    let started = Instant::now();
    while got.len() < n as usize {
        let msg = match tokio::time::timeout(Duration::from_secs(10), stream.next()).await {
            Err(_) => {
                let missing: Vec<u32> = (0..n).filter(|p| !got.contains_key(p)).collect();
                tracing::warn!(
                    epoch,
                    "waited {:.0} s for {subject} of partitions {missing:?}: is a worker of \
                     each running?",
                    started.elapsed().as_secs_f64()
                );
                continue;
            }
            Ok(None) => return Err(js_err(format!("{subject}: the consumer's stream ended"))),
            Ok(Some(m)) => m.map_err(js_err)?,
        };
        bytes += msg.payload.len() as u64;
        let part: Option<T> = match wire::decode(subject, &msg.payload) {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::error!("{e}: dropped");
                None
            }
        };
        msg.ack().await.map_err(js_err)?;
        match part {
            Some(p) if p.epoch() == epoch && p.part() < n => {
                got.entry(p.part()).or_insert(p);
            }
            Some(p) if p.epoch() > epoch => tracing::error!(
                "{subject}: a part of epoch {} while epoch {epoch} is under way: is another \
                 controller running this run?",
                p.epoch()
            ),
            _ => {}
        }
    }
    Ok(bytes)
}

/// The join partitions' shares as one epoch's detection, entries in upstream switch order as a
/// single process's join gives them.
fn merge_joins(parts: Vec<Joined>) -> EpochDetection {
    let mut det = EpochDetection::default();
    let mut groups: Vec<(SwitchIx, Vec<canary_core::detect::MmEntry>)> = Vec::new();
    for p in parts {
        groups.extend(p.entries);
        det.segments.extend(p.segments);
        det.anomalies.add(&p.anomalies);
        det.vanished += p.vanished;
        for (s, t) in p.torn_at {
            *det.torn_at.entry(s).or_default() += t;
        }
    }
    groups.sort_by_key(|g| g.0);
    det.entries = MmEntries::from_parts(groups.into_iter().map(|g| g.1).collect());
    det
}
