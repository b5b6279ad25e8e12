//! `canary worker`: one partition of one or more stages of a run ([`super`]).
//!
//! A worker reads the run's setup from the stream, builds the segments and the pathBF codec
//! the controller uses (and refuses to go on if they differ), then takes its partition's inputs
//! from its durable consumer until it is stopped ([`stages`]). Every input is acked after its
//! output is stored, so a worker killed at any point leaves the input to its successor.

mod reads;
mod stages;

use super::nats::connect;
use super::wire::{self, Setup};
use super::{ClusterConfig, ClusterError, Result};
use async_nats::jetstream::Context;
use canary_core::pathbf::PathBfCodec;
use canary_core::topo::{Routing, Segments, Topology};
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
    let roles: Vec<String> = opts.roles.iter().map(|r| format!("{r:?}")).collect();
    let who = format!("worker {} {}", roles.join(","), opts.partition);
    let js = connect(&opts.cluster, &who, Duration::from_secs(60)).await?;
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
                Role::Harvest => stages::harvest(&js, &run, &opts).await,
                Role::Join => stages::join_part(&js, &run, &opts).await,
                Role::Localize => stages::localize(&js, &run, &opts).await,
                Role::Report => stages::report(&js, &opts).await,
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
