//! `canary worker`: one partition of the stages of a run on a cluster (see `canary run
//! --cluster`, `canary simulate --cluster`).

use anyhow::Result;
use canary_controller::cluster::worker::{self, Role, WorkerOptions};
use canary_controller::cluster::ClusterConfig;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct WorkerArgs {
    /// The cluster's NATS servers (with JetStream): one URL, e.g. nats://127.0.0.1:4222, or
    /// several, comma separated (the worker reconnects to another when its server dies).
    #[arg(long, value_name = "URL[,URL...]")]
    cluster: String,
    /// The run to work for (the controller's `--run`).
    #[arg(long, default_value = "canary")]
    run: String,
    /// The stages to take part in, e.g. `harvest` or `join,localize`. (`--role` is its old
    /// name, kept: `canary run --role` is a P4Runtime role.)
    #[arg(long, alias = "role", value_delimiter = ',', required = true)]
    stages: Vec<Role>,
    /// The partition of each stage this worker takes (0-based).
    #[arg(long, default_value_t = 0)]
    partition: u32,
    /// With the `report` stage: the report file, one JSON line per epoch.
    #[arg(long)]
    report: Option<PathBuf>,
}

pub fn command(a: WorkerArgs) -> Result<()> {
    let opts = WorkerOptions {
        cluster: ClusterConfig::new(&a.cluster, &a.run)?,
        roles: a.stages,
        partition: a.partition,
        report: a.report,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        tokio::select! {
            r = worker::run(opts) => Ok(r?),
            _ = tokio::signal::ctrl_c() => Ok(()),
        }
    })
}
