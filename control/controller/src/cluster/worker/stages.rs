//! The stages a worker runs, each on its partition's durable consumer until its run ends.
//!
//! Every input is acknowledged after its output is stored, so a worker killed at any point
//! leaves the input to its successor. A server's death costs a stage a publish tried again
//! (with the same message ID) or its pull taken up again; the result says so (`retries`).

use super::reads::Readers;
use super::{Run, WorkerOptions};
use crate::cluster::nats::{publish_stored, Inputs};
use crate::cluster::wire::{
    self, HarvestInput, Harvested, Joined, Localize, Records, Registers, Verdicts,
};
use crate::cluster::{js_err, ClusterConfig, ClusterError, Result};
use crate::report::EpochReport;
use crate::report_file::ReportFile;
use async_nats::jetstream::{self, AckKind, Context};
use canary_core::detect::{join, partition_of, SwitchRecords};
use canary_core::localize::Canary;
use canary_core::topo::SwitchIx;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a worker tries to store an output before it joins the run again (its input is
/// handed out again then): longer than a leader election, short enough to notice a new run.
const PUBLISH_PATIENCE: Duration = Duration::from_secs(30);

/// How many times JetStream has handed out `msg`.
fn delivered(msg: &jetstream::Message) -> u64 {
    msg.info().map_or(1, |i| i.delivered.max(1) as u64)
}

/// Drops an input that is not what its subject carries: it would fail the same way every time.
async fn refuse(msg: &jetstream::Message, e: ClusterError) -> Result<()> {
    tracing::error!("{e}: dropped");
    msg.ack_with(AckKind::Term).await.map_err(js_err)
}

/// Acknowledges an input whose output is stored. An acknowledgement lost with a server only
/// hands the input out again, and its output is then a repeat the next stage drops.
async fn done(msg: &jetstream::Message) {
    if let Err(e) = msg.ack().await {
        tracing::warn!("acknowledging {}: {e}", msg.subject);
    }
}

/// Publishes a stage's output until it is stored, for a while (then the worker joins the run
/// again); `output(n)` is the output tried again `n` times. The times it tried again.
async fn output(
    js: &Context,
    subject: String,
    id: String,
    output: impl FnMut(u32) -> Vec<u8>,
) -> Result<u32> {
    publish_stored(js, &subject, &id, Some(PUBLISH_PATIENCE), output).await
}

/// A durable consumer of this worker's, which ends when its run does.
async fn inputs(js: &Context, cfg: &ClusterConfig, name: &str, subject: String) -> Result<Inputs> {
    Inputs::open(js, cfg, name, subject, 0, false).await
}

pub(super) async fn harvest(js: &Context, run: &Run, opts: &WorkerOptions) -> Result<()> {
    let (cfg, h) = (&opts.cluster, opts.partition);
    let parts = run.setup.parts.join;
    let subject = cfg.regs(h);
    let mut input = inputs(js, cfg, &format!("harvest-{h}"), subject.clone()).await?;
    let mut readers = run.setup.reads.clone().map(|r| Readers::new(r, h));
    while let Some(msg) = input.next().await {
        let task: HarvestInput = match wire::decode(&subject, &msg.payload) {
            Ok(r) => r,
            Err(e) => {
                refuse(&msg, e).await?;
                continue;
            }
        };
        let (epoch, (chunk, chunks), records, outcomes) = match task {
            HarvestInput::Registers(regs) => {
                (regs.epoch, (0, 1), decoded(run, &subject, regs), None)
            }
            HarvestInput::Reads(orders) => {
                let Some(readers) = readers.as_mut() else {
                    let e = ClusterError::Setup(format!(
                        "{subject}: reads asked for, and the run's setup names no switches"
                    ));
                    refuse(&msg, e).await?;
                    continue;
                };
                let again = delivered(&msg) > 1;
                let segs = (&run.segments, &run.codec);
                let (records, outcomes) = readers.read(js, cfg, segs, &orders, again).await;
                let chunk = (orders.chunk, orders.chunks);
                (orders.epoch, chunk, records, Some((orders.index, outcomes)))
            }
        };
        let mut out: Vec<Vec<SwitchRecords>> = vec![Vec::new(); parts as usize];
        for records in records {
            for (j, part) in records.split(|s| partition_of(s, parts)) {
                out[j as usize].push(part);
            }
        }
        let (d, mut retries) = (delivered(&msg), input.taken_up());
        for (j, records) in out.into_iter().enumerate() {
            let j = j as u32;
            let mut rec = Records {
                epoch,
                from: h,
                chunk,
                chunks,
                part: j,
                delivered: d,
                retries,
                records,
            };
            let id = format!("{epoch}.records.{h}.{chunk}.{j}");
            let before = retries;
            retries += output(js, cfg.records(j), id, |n| {
                rec.retries = before + n;
                wire::encode(&rec)
            })
            .await?;
        }
        if let Some((index, outcomes)) = outcomes {
            let mut answer = Harvested {
                epoch,
                part: index,
                delivered: d,
                retries,
                outcomes,
            };
            let id = format!("{epoch}.harvested.{index}");
            output(js, cfg.harvested(), id, |n| {
                answer.retries = retries + n;
                wire::encode(&answer)
            })
            .await?;
        }
        done(&msg).await;
    }
    Ok(())
}

/// The records of the registers the controller read, its vanished flows with them.
fn decoded(run: &Run, subject: &str, regs: Registers) -> Vec<SwitchRecords> {
    let mut out = Vec::new();
    for snap in regs.switches {
        let (snap, vanished) = match snap.snapshot(subject) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("{e}: switch left out");
                continue;
            }
        };
        let mut records = SwitchRecords::decode(&run.segments, &run.codec, &snap);
        records.dsm.extend(vanished);
        out.push(records);
    }
    out
}

/// An epoch's inputs held by a join partition until every harvest partition's part is in,
/// by (harvest partition, chunk).
#[derive(Default)]
struct Held {
    parts: BTreeMap<(u32, u32), (Records, jetstream::Message)>,
}

impl Held {
    /// Whether every chunk of every one of the `harvest` partitions is in.
    fn complete(&self, harvest: u32) -> bool {
        (0..harvest).all(|h| {
            let mut of_h = self.parts.range((h, 0)..(h + 1, 0));
            match of_h.next() {
                Some((_, (r, _))) => 1 + of_h.count() == r.chunks as usize,
                None => false,
            }
        })
    }
}

pub(super) async fn join_part(js: &Context, run: &Run, opts: &WorkerOptions) -> Result<()> {
    let (cfg, j) = (&opts.cluster, opts.partition);
    let harvest_parts = run.setup.parts.harvest;
    let subject = cfg.records(j);
    let mut input = inputs(js, cfg, &format!("join-{j}"), subject.clone()).await?;
    let mut held: BTreeMap<u64, Held> = BTreeMap::new();
    // The last epoch this worker joined: the controller hands out an epoch only once every
    // join partition has joined the one before, so records of it or earlier are repeats.
    let mut joined: Option<u64> = None;
    // Inputs held longer than the ack wait would be handed out again: keep them ours.
    let mut keep = tokio::time::interval(cfg.ack_wait / 3);
    loop {
        let msg = tokio::select! {
            m = input.next() => m,
            _ = keep.tick() => {
                for h in held.values() {
                    for (_, m) in h.parts.values() {
                        if let Err(e) = m.ack_with(AckKind::Progress).await {
                            tracing::warn!("keeping {}: {e}", m.subject);
                        }
                    }
                }
                continue;
            }
        };
        let Some(msg) = msg else { return Ok(()) };
        let rec: Records = match wire::decode(&subject, &msg.payload) {
            Ok(r) => r,
            Err(e) => {
                refuse(&msg, e).await?;
                continue;
            }
        };
        let epoch = rec.epoch;
        let repeat = joined.is_some_and(|e| epoch <= e)
            || held
                .get(&epoch)
                .is_some_and(|h| h.parts.contains_key(&(rec.from, rec.chunk)));
        if repeat || rec.from >= harvest_parts || rec.chunk >= rec.chunks {
            // The same part again (its harvest worker died after publishing it, or its
            // acknowledgement was lost with a server).
            done(&msg).await;
            continue;
        }
        let slot = held.entry(epoch).or_default();
        slot.parts.insert((rec.from, rec.chunk), (rec, msg));
        if !slot.complete(harvest_parts) {
            continue;
        }
        let slot = held.remove(&epoch).expect("just filled");
        let retries = input.taken_up();
        join_epoch(js, run, opts, epoch, &slot, retries).await?;
        for (_, msg) in slot.parts.values() {
            done(msg).await;
        }
        joined = Some(epoch);
        // Epochs before this one never fill: what is held of them is repeats.
        let stale: Vec<u64> = held.range(..epoch).map(|(&e, _)| e).collect();
        for e in stale {
            for (_, msg) in held
                .remove(&e)
                .into_iter()
                .flat_map(|h| h.parts.into_values())
            {
                done(&msg).await;
            }
        }
    }
}

/// Joins an epoch's records from every harvest partition and publishes the join.
async fn join_epoch(
    js: &Context,
    run: &Run,
    opts: &WorkerOptions,
    epoch: u64,
    slot: &Held,
    retries: u32,
) -> Result<()> {
    let (cfg, j) = (&opts.cluster, opts.partition);
    let mut delivered_max = 1;
    let mut retries_max = retries;
    let mut records: Vec<SwitchRecords> = Vec::new();
    for (rec, msg) in slot.parts.values() {
        delivered_max = delivered_max.max(rec.delivered).max(delivered(msg));
        retries_max = retries_max.max(rec.retries);
        records.extend(rec.records.iter().cloned());
    }
    // In switch order, as the controller's own join takes them.
    records.sort_by_key(|r| r.switch);
    let det = join(&run.segments, &records);
    let answered: Vec<SwitchIx> = records
        .iter()
        .filter(|r| r.answered)
        .map(|r| r.switch)
        .collect();
    let mut joined = Joined {
        epoch,
        part: j,
        delivered: delivered_max,
        retries: retries_max,
        entries: answered.into_iter().zip(det.entries.into_parts()).collect(),
        segments: det.segments,
        anomalies: det.anomalies,
        torn_at: det.torn_at,
        vanished: det.vanished,
    };
    let id = format!("{epoch}.joined.{j}");
    output(js, cfg.joined(), id, |n| {
        joined.retries = retries_max + n;
        wire::encode(&joined)
    })
    .await?;
    Ok(())
}

pub(super) async fn localize(js: &Context, run: &Run, opts: &WorkerOptions) -> Result<()> {
    let (cfg, l) = (&opts.cluster, opts.partition);
    let subject = cfg.localize(l);
    let mut input = inputs(js, cfg, &format!("localize-{l}"), subject.clone()).await?;
    let mut canary = Canary {
        params: run.setup.canary.clone(),
        ..Default::default()
    };
    while let Some(msg) = input.next().await {
        let task: Localize = match wire::decode(&subject, &msg.payload) {
            Ok(t) => t,
            Err(e) => {
                refuse(&msg, e).await?;
                continue;
            }
        };
        let epoch = task.epoch;
        canary.params.likelihood_ties = task.ties;
        canary.incumbents = task.incumbents.clone();
        let subs = canary.diagnose(&task.observations());
        let retries = input.taken_up();
        let mut out = Verdicts {
            epoch,
            part: l,
            delivered: delivered(&msg),
            retries,
            subs,
        };
        let id = format!("{epoch}.verdicts.{l}");
        output(js, cfg.verdicts(), id, |n| {
            out.retries = retries + n;
            wire::encode(&out)
        })
        .await?;
        done(&msg).await;
    }
    Ok(())
}

pub(super) async fn report(js: &Context, opts: &WorkerOptions) -> Result<()> {
    let cfg = &opts.cluster;
    let path = opts
        .report
        .clone()
        .ok_or_else(|| ClusterError::Setup("the report stage needs --report FILE".into()))?;
    let mut file = ReportFile::open(&path).map_err(|e| ClusterError::Io(format!("{e:#}")))?;
    let subject = cfg.reports();
    // Handed each report only once the one before is written, so that a report lost in flight
    // (with a server) is not overtaken by the next.
    let mut input = Inputs::open(js, cfg, "reporter", subject.clone(), 1, false).await?;
    while let Some(msg) = input.next().await {
        let r: EpochReport = match serde_json::from_slice(&msg.payload) {
            Ok(r) => r,
            Err(e) => {
                let e = ClusterError::Decode {
                    subject: subject.clone(),
                    what: "epoch report".into(),
                    error: e.to_string(),
                };
                refuse(&msg, e).await?;
                continue;
            }
        };
        // An epoch the file holds already is not written again.
        file.append(&r)
            .map_err(|e| ClusterError::Io(format!("{e:#}")))?;
        done(&msg).await;
    }
    Ok(())
}
