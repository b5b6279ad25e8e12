//! `canary worker`: one partition of one or more stages of a run ([`super`]).
//!
//! A worker reads the run's setup from the stream, builds the segments and the pathBF codec
//! the controller uses (and refuses to go on if they differ), then takes its partition's inputs
//! from its durable consumer until it is stopped. Every input is acked after its output is
//! stored, so a worker killed at any point leaves the input to its successor.

use super::wire::{self, Joined, Localize, Records, Registers, Setup, Verdicts};
use super::{connect, js_err, publish, ClusterConfig, ClusterError, Result};
use crate::report::EpochReport;
use crate::report_file::ReportFile;
use async_nats::jetstream::consumer::{self, pull};
use async_nats::jetstream::{self, AckKind, Context};
use canary_core::detect::{join, partition_of, SwitchRecords};
use canary_core::localize::Canary;
use canary_core::pathbf::PathBfCodec;
use canary_core::topo::{Routing, Segments, SwitchIx, Topology};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// A stage a worker can take part in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// Read a harvest partition's registers into records, for the join partitions.
    Harvest,
    /// Join a join partition's records into its segments' minus meters.
    Join,
    /// Solve a localizer partition's sub-problems.
    Localize,
    /// Write the epoch reports to a file, each once.
    Report,
}

#[derive(Clone, Debug)]
pub struct WorkerOptions {
    pub cluster: ClusterConfig,
    pub roles: Vec<Role>,
    /// The partition of each stage this worker takes.
    pub partition: u32,
    /// The report file (role `report`).
    pub report: Option<PathBuf>,
}

/// What the run's setup builds, the same in every process.
struct Run {
    setup: Setup,
    segments: Segments,
    codec: PathBfCodec,
}

/// Runs the worker until it is stopped. A run started again under the same name (its stream
/// made anew) or a server that went away is joined again; a setup this worker cannot work with
/// is an error.
pub async fn run(opts: WorkerOptions) -> Result<()> {
    let js = connect(&opts.cluster.url, Duration::from_secs(60)).await?;
    loop {
        match run_once(&js, &opts).await {
            Err(e @ ClusterError::Setup(_)) => return Err(e),
            Err(e) => {
                tracing::warn!("{e}: joining the run again");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Ok(()) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// The worker's roles for one run, until one of them stops.
async fn run_once(js: &Context, opts: &WorkerOptions) -> Result<()> {
    let run = std::sync::Arc::new(wait_for_setup(js, &opts.cluster).await?);
    let p = run.setup.parts;
    for role in &opts.roles {
        let n = match role {
            Role::Harvest => p.harvest,
            Role::Join => p.join,
            Role::Localize => p.localize,
            Role::Report => 1,
        };
        if opts.partition >= n {
            return Err(ClusterError::Setup(format!(
                "--partition {}: the run has {n} {role:?} partitions (0..{n})",
                opts.partition
            )));
        }
    }
    let mut tasks = Vec::new();
    for &role in &opts.roles {
        let (js, run, opts) = (js.clone(), run.clone(), opts.clone());
        tasks.push(tokio::spawn(async move {
            match role {
                Role::Harvest => harvest(&js, &run, &opts).await,
                Role::Join => join_part(&js, &run, &opts).await,
                Role::Localize => localize(&js, &run, &opts).await,
                Role::Report => report(&js, &opts).await,
            }
        }));
    }
    // The first role to stop (its consumer gone with its stream) stops the others.
    let (first, _, rest) = futures::future::select_all(tasks).await;
    for t in rest {
        t.abort();
    }
    first.map_err(|e| ClusterError::Io(e.to_string()))?
}

/// The run's setup, once the controller has published it.
async fn wait_for_setup(js: &Context, cfg: &ClusterConfig) -> Result<Run> {
    let mut said = false;
    let bytes = loop {
        if let Ok(stream) = js.get_stream(cfg.stream()).await {
            if let Ok(m) = stream
                .get_last_raw_message_by_subject(&cfg.setup_subject())
                .await
            {
                break m.payload;
            }
        }
        if !said {
            tracing::info!(run = cfg.run, "waiting for the controller to start the run");
            said = true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let setup: Setup = wire::decode(&cfg.setup_subject(), &bytes)?;
    let topo: Topology = setup.topology.clone().build()?;
    let routing = Routing::new(&topo);
    let segments = Segments::new(&topo, &routing);
    let codec = PathBfCodec::new(&topo, &segments, setup.pathbf)
        .map_err(|e| ClusterError::Setup(format!("the run's pathBF codec: {e}")))?;
    let sum: u64 = codec.segment_bf.iter().map(|&b| u64::from(b)).sum();
    if segments.len() != setup.segments || sum != setup.segment_bf_sum {
        return Err(ClusterError::Setup(format!(
            "this worker builds {} segments (pathBF sum {sum}) where the controller has {} \
             ({}): it runs another version of canary",
            segments.len(),
            setup.segments,
            setup.segment_bf_sum
        )));
    }
    tracing::info!(
        run = cfg.run,
        switches = topo.switches.len(),
        segments = segments.len(),
        "joined the run"
    );
    Ok(Run {
        setup,
        segments,
        codec,
    })
}

/// The durable consumer `name` of `subject`, and its messages.
async fn inputs(
    js: &Context,
    cfg: &ClusterConfig,
    name: String,
    subject: String,
) -> Result<pull::Stream> {
    let stream = js.get_stream(cfg.stream()).await.map_err(js_err)?;
    let c = stream
        .get_or_create_consumer(
            &name,
            pull::Config {
                durable_name: Some(name.clone()),
                filter_subject: subject,
                ack_policy: consumer::AckPolicy::Explicit,
                ack_wait: cfg.ack_wait,
                deliver_policy: consumer::DeliverPolicy::All,
                ..Default::default()
            },
        )
        .await
        .map_err(js_err)?;
    c.messages().await.map_err(js_err)
}

/// How many times JetStream has handed out `msg`.
fn delivered(msg: &jetstream::Message) -> u64 {
    msg.info().map_or(1, |i| i.delivered.max(1) as u64)
}

/// Drops an input that is not what its subject carries: it would fail the same way every time.
async fn refuse(msg: &jetstream::Message, e: ClusterError) -> Result<()> {
    tracing::error!("{e}: dropped");
    msg.ack_with(AckKind::Term).await.map_err(js_err)
}

async fn harvest(js: &Context, run: &Run, opts: &WorkerOptions) -> Result<()> {
    let (cfg, h) = (&opts.cluster, opts.partition);
    let parts = run.setup.parts.join;
    let subject = cfg.regs(h);
    let mut input = inputs(js, cfg, format!("harvest-{h}"), subject.clone()).await?;
    while let Some(msg) = input.next().await {
        let msg = msg.map_err(js_err)?;
        let regs: Registers = match wire::decode(&subject, &msg.payload) {
            Ok(r) => r,
            Err(e) => {
                refuse(&msg, e).await?;
                continue;
            }
        };
        let mut out: Vec<Vec<SwitchRecords>> = vec![Vec::new(); parts as usize];
        for snap in regs.switches {
            let (snap, vanished) = match snap.snapshot(&subject) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!("{e}: switch left out");
                    continue;
                }
            };
            let mut records = SwitchRecords::decode(&run.segments, &run.codec, &snap);
            records.dsm.extend(vanished);
            for (j, part) in records.split(|s| partition_of(s, parts)) {
                out[j as usize].push(part);
            }
        }
        let d = delivered(&msg);
        for (j, records) in out.into_iter().enumerate() {
            let j = j as u32;
            let bytes = wire::encode(&Records {
                epoch: regs.epoch,
                from: h,
                part: j,
                delivered: d,
                records,
            });
            let id = format!("{}.records.{h}.{j}", regs.epoch);
            publish(js, cfg.records(j), id, bytes).await?;
        }
        msg.ack().await.map_err(js_err)?;
    }
    Ok(())
}

/// An epoch's inputs held by a join partition until every harvest partition's part is in.
#[derive(Default)]
struct Held {
    parts: BTreeMap<u32, (Records, jetstream::Message)>,
}

async fn join_part(js: &Context, run: &Run, opts: &WorkerOptions) -> Result<()> {
    let (cfg, j) = (&opts.cluster, opts.partition);
    let harvest_parts = run.setup.parts.harvest;
    let subject = cfg.records(j);
    let mut input = inputs(js, cfg, format!("join-{j}"), subject.clone()).await?;
    let mut held: BTreeMap<u64, Held> = BTreeMap::new();
    // Inputs held longer than the ack wait would be handed out again: keep them ours.
    let mut keep = tokio::time::interval(cfg.ack_wait / 3);
    loop {
        let msg = tokio::select! {
            m = input.next() => m,
            _ = keep.tick() => {
                for h in held.values() {
                    for (_, m) in h.parts.values() {
                        m.ack_with(AckKind::Progress).await.map_err(js_err)?;
                    }
                }
                continue;
            }
        };
        let Some(msg) = msg else { return Ok(()) };
        let msg = msg.map_err(js_err)?;
        let rec: Records = match wire::decode(&subject, &msg.payload) {
            Ok(r) => r,
            Err(e) => {
                refuse(&msg, e).await?;
                continue;
            }
        };
        let epoch = rec.epoch;
        let slot = held.entry(epoch).or_default();
        if slot.parts.contains_key(&rec.from) || rec.from >= harvest_parts {
            // The same part again (its harvest worker died after publishing it).
            msg.ack().await.map_err(js_err)?;
            continue;
        }
        slot.parts.insert(rec.from, (rec, msg));
        if slot.parts.len() < harvest_parts as usize {
            continue;
        }
        let slot = held.remove(&epoch).expect("just filled");
        let mut delivered_max = 1;
        let mut records: Vec<SwitchRecords> = Vec::new();
        for (rec, msg) in slot.parts.values() {
            delivered_max = delivered_max.max(rec.delivered).max(delivered(msg));
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
        let joined = Joined {
            epoch,
            part: j,
            delivered: delivered_max,
            entries: answered.into_iter().zip(det.entries.into_parts()).collect(),
            segments: det.segments,
            anomalies: det.anomalies,
            torn_at: det.torn_at,
            vanished: det.vanished,
        };
        publish(
            js,
            cfg.joined(),
            format!("{epoch}.joined.{j}"),
            wire::encode(&joined),
        )
        .await?;
        for (_, msg) in slot.parts.values() {
            msg.ack().await.map_err(js_err)?;
        }
    }
}

async fn localize(js: &Context, run: &Run, opts: &WorkerOptions) -> Result<()> {
    let (cfg, l) = (&opts.cluster, opts.partition);
    let subject = cfg.localize(l);
    let mut input = inputs(js, cfg, format!("localize-{l}"), subject.clone()).await?;
    let mut canary = Canary {
        params: run.setup.canary.clone(),
        ..Default::default()
    };
    while let Some(msg) = input.next().await {
        let msg = msg.map_err(js_err)?;
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
        let out = Verdicts {
            epoch,
            part: l,
            delivered: delivered(&msg),
            subs,
        };
        publish(
            js,
            cfg.verdicts(),
            format!("{epoch}.verdicts.{l}"),
            wire::encode(&out),
        )
        .await?;
        msg.ack().await.map_err(js_err)?;
    }
    Ok(())
}

async fn report(js: &Context, opts: &WorkerOptions) -> Result<()> {
    let cfg = &opts.cluster;
    let path = opts
        .report
        .clone()
        .ok_or_else(|| ClusterError::Setup("the report stage needs --report FILE".into()))?;
    let mut file = ReportFile::open(&path).map_err(|e| ClusterError::Io(format!("{e:#}")))?;
    let subject = cfg.reports();
    let mut input = inputs(js, cfg, "reporter".into(), subject.clone()).await?;
    while let Some(msg) = input.next().await {
        let msg = msg.map_err(js_err)?;
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
        msg.ack().await.map_err(js_err)?;
    }
    Ok(())
}
