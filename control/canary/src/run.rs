//! `canary run`: the controller of real switches.

use crate::args::{ClusterArgs, PipelineArgs};
use anyhow::Result;
use canary_controller::daemon::{self, RunOptions, Target};
use canary_controller::report::render_summary;
use canary_switch::drivers::bmv2::Bmv2Options;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    /// `fattree:K` or a YAML topology file.
    #[arg(long)]
    topology: String,
    #[arg(long, value_enum, default_value = "bmv2")]
    target: Target,
    /// Where each switch answers and which port faces which neighbor (YAML).
    #[arg(long)]
    switches: PathBuf,
    /// Directory with canary.json and canary.p4info.bin (bmv2/build.sh); default: compile now.
    #[arg(long)]
    p4: Option<PathBuf>,
    #[arg(long, default_value_t = 1000)]
    epoch_ms: u64,
    /// Epochs to run; 0 runs until Ctrl-C or SIGTERM.
    #[arg(long, default_value_t = 0)]
    epochs: u32,
    /// Wait after a parity flip for packets still in flight, milliseconds. BMv2 queues
    /// packets for tens of milliseconds per hop under load; Tofino needs microseconds.
    #[arg(long, default_value_t = 200)]
    drain_ms: u64,
    /// Append one JSON line per epoch to this file.
    #[arg(long)]
    report: Option<PathBuf>,
    /// At exit, write the run (as `canary simulate --json` does).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Injected faults (YAML) to score the run against, e.g. on a testbed.
    #[arg(long)]
    faults: Option<String>,
    /// Serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9464.
    #[arg(long)]
    metrics: Option<String>,
    /// Serve the live fabric page at http://ADDR/, e.g. 127.0.0.1:8080.
    #[arg(long)]
    http: Option<String>,
    #[command(flatten)]
    pipeline: PipelineArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// P4Runtime election id; the highest one connected is the primary and the only writer.
    #[arg(long, default_value_t = 1)]
    election_id: u64,
    /// P4Runtime role (empty: the default role). With a role, Canary attaches to switches whose
    /// pipeline and forwarding another controller owns, and writes only its own tables.
    #[arg(long, default_value = "")]
    role: String,
    /// A switch whose harvest takes longer is skipped for the epoch (default: 80% of the epoch).
    #[arg(long)]
    harvest_deadline_ms: Option<u64>,
    /// Seconds to wait at start for switches that are not up yet.
    #[arg(long, default_value_t = 30)]
    connect_timeout_s: u64,
    /// Configure every switch afresh, wiping what an earlier controller left (by default a
    /// switch still holding it is adopted: meters, rules and monitored flows kept).
    #[arg(long)]
    fresh: bool,
    /// Tofino: the program's name as bf_switchd loaded it.
    #[arg(long, default_value = "canary")]
    p4_name: String,
    /// Tofino: this controller's BF Runtime client id.
    #[arg(long, default_value_t = 1)]
    client_id: u32,
    /// Print only the summary.
    #[arg(long, short)]
    quiet: bool,
}

pub fn command(a: RunArgs) -> Result<()> {
    let epoch = Duration::from_millis(a.epoch_ms);
    let p = &a.pipeline;
    let opts = RunOptions {
        topology: a.topology,
        monitors: p.monitors,
        target: a.target,
        switches: a.switches,
        p4: a.p4,
        epoch,
        epochs: a.epochs,
        drain: Duration::from_millis(a.drain_ms),
        report: a.report,
        json: a.json,
        faults: a.faults,
        metrics: a.metrics,
        http: a.http,
        selection: p.selection(),
        groups: p.groups,
        floor: p.floor,
        window: p.window,
        min_lossy_epochs: p.min_lossy_epochs,
        decision: p.decision.params()?,
        watch_dwell: p.watch_rounds,
        report_observations: p.report_observations,
        bmv2: Bmv2Options {
            election_id: u128::from(a.election_id),
            attach: !a.role.is_empty(),
            role: a.role,
            ..Default::default()
        },
        tofino: canary_switch::drivers::tofino::TofinoOptions {
            p4_name: a.p4_name,
            client_id: a.client_id,
            ..Default::default()
        },
        harvest_deadline: a
            .harvest_deadline_ms
            .map(Duration::from_millis)
            .unwrap_or(epoch.mul_f64(0.8)),
        connect_patience: Duration::from_secs(a.connect_timeout_s),
        fresh: a.fresh,
        quiet: a.quiet,
        cluster: a.cluster.config()?,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let faults = opts.faults.is_some();
    let result = rt.block_on(daemon::run(opts, daemon::shutdown_signal(), |_| {}))?;
    let n = if faults { result.faults.len() } else { 0 };
    print!("{}", render_summary(&result.summary, n));
    Ok(())
}
