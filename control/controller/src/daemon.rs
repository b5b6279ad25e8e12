//! `canary run`: the controller on real switches.
//!
//! Configures every switch (pipeline, forwarding, configuration), then runs the same epoch loop
//! as the simulator ([`Controller`](crate::controller::Controller)) over the generic fabric
//! ([`SwitchFabric`]) of the target's driver: start the next epoch, wait for packets in flight,
//! harvest, detect, localize, select flows. The target only decides which driver the fabric
//! gets; nothing below it branches on the target. Each epoch appends one JSON line to the report
//! file (flushed, so it can be tailed while the daemon runs), prints the table, and updates the
//! Prometheus metrics.

mod fabric_loop;
mod p4;
mod sink;

pub use p4::{load_p4, P4Artifacts, BMV2_FILES};

use crate::cluster::wire::Parts;
use crate::cluster::ClusterConfig;
use crate::config::{Pipeline, RunConfig};
use crate::controller::ControllerConfig;
use crate::error::{Error, Result};
use crate::incidents::{self, Journal, TrackConfig};
use crate::metrics::{self, Metrics};
use crate::report::EpochReport;
use crate::report_file::ReportFile;
use crate::setup::{load_topology, prepare};
use crate::simulate::SimulationResult;
use crate::standby;
use canary_core::fault::{self, Fault};
use canary_core::pathbf::PathBfParams;
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Options, Bmv2Program};
use canary_switch::drivers::tofino::{self, TofinoDriver, TofinoOptions};
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use canary_switch::switches::{port_map, SwitchesFile};
use fabric_loop::{run_fabric, Ended};
use sink::Sink;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// BMv2 simple_switch_grpc: P4Runtime + Thrift register harvest.
    Bmv2,
    /// Tofino: bf_switchd over BF Runtime (gRPC), the program loaded by bf_switchd.
    Tofino,
}

/// A run as the daemon takes it: the checked configuration ([`RunConfig`]) with its times and
/// the drivers' options worked out.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub topology: String,
    pub target: Target,
    pub switches: PathBuf,
    /// BMv2: the compiled program's directory (canary.json, canary.p4info.bin).
    pub p4: Option<PathBuf>,
    pub epoch: Duration,
    /// 0: until shut down.
    pub epochs: u32,
    pub drain: Duration,
    pub report: Option<PathBuf>,
    pub json: Option<PathBuf>,
    /// The incidents' database (`None`: none kept).
    pub incidents: Option<PathBuf>,
    /// Injected faults, to score the run against (testbeds).
    pub faults: Option<String>,
    pub metrics: Option<String>,
    /// Serve the live page here.
    pub http: Option<String>,
    pub pipeline: Pipeline,
    pub bmv2: Bmv2Options,
    pub tofino: TofinoOptions,
    /// A switch whose harvest takes longer is left out of the epoch.
    pub harvest_deadline: Duration,
    /// How long to wait at start for switches that are not up yet.
    pub connect_patience: Duration,
    /// Configure every switch afresh, even one that holds what an earlier controller left
    /// (which is otherwise adopted: its meters, rules and monitored flows kept).
    pub fresh: bool,
    pub quiet: bool,
    /// Run decoding, joins and localization on a cluster's workers.
    pub cluster: Option<(ClusterConfig, Parts)>,
}

impl RunOptions {
    /// The options of a configuration that passed [`RunConfig::check`].
    pub fn of(c: &RunConfig) -> Result<Self> {
        let required = |v: Option<String>, key: &str| {
            v.ok_or_else(|| Error::given(format!("--{key}"), "required"))
        };
        Ok(Self {
            topology: required(c.topology.clone(), "topology")?,
            target: c.target,
            switches: required(
                c.switches.as_ref().map(|p| p.display().to_string()),
                "switches",
            )?
            .into(),
            p4: c.p4.clone(),
            epoch: c.epoch(),
            epochs: c.epochs,
            drain: Duration::from_millis(c.drain_ms),
            report: c.report.clone(),
            json: c.json.clone(),
            incidents: match c.incidents.as_deref() {
                Some("none") => None,
                Some(p) => Some(p.into()),
                None => c.report.as_deref().map(incidents::default_path),
            },
            faults: c.faults.clone(),
            metrics: c.metrics.clone(),
            http: c.http.clone(),
            pipeline: c.pipeline.clone(),
            bmv2: Bmv2Options {
                election_id: u128::from(c.election_id),
                attach: !c.role.is_empty(),
                role: c.role.clone(),
                ..Default::default()
            },
            tofino: TofinoOptions {
                p4_name: c.p4_name.clone(),
                client_id: c.client_id,
                ..Default::default()
            },
            harvest_deadline: c.harvest_deadline(),
            connect_patience: Duration::from_secs(c.connect_timeout_s),
            fresh: c.fresh,
            quiet: c.quiet,
            cluster: c.cluster.config()?,
        })
    }
}

/// Runs the daemon until `opts.epochs` epochs are done or `shutdown` resolves. Returns the same
/// document `canary simulate --json` writes (faults: the injected truth, if given).
pub async fn run(
    opts: RunOptions,
    shutdown: impl Future<Output = ()>,
    on_epoch: impl FnMut(&EpochReport),
) -> Result<SimulationResult> {
    // Polled once now, so that its signal handlers are in place before anything is logged or
    // waited on: a SIGTERM from then on stops the daemon cleanly (exit 3 before the first epoch)
    // instead of killing it. A test sending SIGTERM after the first log line raced this.
    tokio::pin!(shutdown);
    let early = futures::poll!(shutdown.as_mut()).is_ready();
    let shutdown = async move {
        if !early {
            shutdown.await
        }
    };
    if opts.target == Target::Tofino && !opts.bmv2.role.is_empty() {
        return Err(Error::given(
            "--role",
            "a P4Runtime role, and BF Runtime has none: on Tofino, Canary binds to the program \
             bf_switchd loaded and configures the switch itself",
        ));
    }
    let topo = load_topology(&opts.topology, opts.pipeline.monitors)?;
    let faults: Vec<Fault> = match &opts.faults {
        None => vec![],
        Some(f) if f == "none" => vec![],
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .map_err(|e| Error::io(format!("cannot read fault file {f}"), e))?;
            fault::parse(f, &text, &topo)?
        }
    };
    let prep = prepare(topo, PathBfParams::default())?;
    let switches_path = opts.switches.display().to_string();
    let bound = SwitchesFile::load(&switches_path)
        .and_then(|f| f.bind(&switches_path, &prep.topo))
        .map_err(Error::switches)?;
    let ports = port_map(&bound);
    let fabric_opts = FabricOptions {
        harvest_deadline: opts.harvest_deadline,
        // With a role, another controller owns the pipeline and forwarding.
        attach_only: opts.target == Target::Bmv2 && opts.bmv2.attach,
        adopt: !opts.fresh,
    };
    let mut report = opts.report.as_deref().map(ReportFile::open).transpose()?;
    let journal = match &opts.incidents {
        Some(p) => Some(Journal::open(p, TrackConfig::default())?),
        None => None,
    };
    let metrics = Arc::new(Metrics::new());
    if let Some(addr) = &opts.metrics {
        let bound = metrics::serve(addr, metrics.clone()).await?;
        tracing::info!("metrics on http://{bound}/metrics");
        if !opts.quiet {
            eprintln!("metrics: http://{bound}/metrics");
        }
    }
    metrics.set_epoch_length(opts.epoch);
    let page = match &opts.http {
        Some(addr) => {
            let page = crate::page::Page::new(&prep.topo);
            let bound = crate::page::serve(addr, page.clone()).await?;
            if !opts.quiet {
                eprintln!("the page: http://{bound}/");
            }
            Some(page)
        }
        None => None,
    };
    tokio::pin!(shutdown);
    let mut sink = Sink {
        report: report.as_mut(),
        journal,
        metrics,
        page,
        on_epoch,
        epochs: Vec::new(),
    };
    match opts.target {
        Target::Bmv2 => {
            let dir = opts.p4.as_deref().ok_or_else(|| {
                Error::given(
                    "--p4",
                    "required with --target bmv2: the compiled program's directory",
                )
            })?;
            let p4 = load_p4(dir)?;
            let program = Arc::new(
                Bmv2Program::new(p4.p4info.clone(), p4.device_config.clone())
                    .map_err(Error::switches)?,
            );
            let drivers = |election_id: u128| -> Vec<Bmv2Driver> {
                let mut bopts = opts.bmv2.clone();
                bopts.election_id = election_id;
                bound
                    .iter()
                    .map(|b| {
                        let s = b.ix as usize;
                        let monitor = prep.topo.switches[s].monitor;
                        Bmv2Driver::new(b.clone(), monitor, program.clone(), bopts.clone())
                            .with_mask(prep.codec.masks[s])
                    })
                    .collect()
            };
            let capacity = program.program.capacity();
            // Primary while no other controller is; standby, taking over when it stops, while
            // one is (P4Runtime arbitration, `standby`).
            let probe = drivers(standby::PROBE_ELECTION_ID).swap_remove(0);
            let every =
                (opts.epoch / 4).clamp(Duration::from_millis(50), Duration::from_millis(500));
            loop {
                let generation = tokio::select! {
                    g = standby::wait_until_no_primary(&probe, every, opts.connect_patience, opts.quiet) => g,
                    _ = &mut shutdown => return Ok(sink.result(&prep, &faults, &opts)),
                };
                let election_id = standby::election_id(generation, opts.bmv2.election_id);
                let fabric = SwitchFabric::new(
                    &prep.topo,
                    &ports,
                    &prep.codec.masks,
                    drivers(election_id),
                    capacity,
                    fabric_opts.clone(),
                );
                match run_fabric(
                    &opts,
                    prep.clone(),
                    &faults,
                    fabric,
                    &mut shutdown,
                    &mut sink,
                )
                .await?
                {
                    Ended::Done(result) => return Ok(*result),
                    Ended::Demoted(why) => {
                        tracing::warn!("another controller took over ({why}): standing by");
                        if !opts.quiet {
                            eprintln!("another controller took over ({why}): standing by");
                        }
                    }
                }
            }
        }
        Target::Tofino => {
            // The program is bf_switchd's: its contract comes from the first switch that
            // answers, and every switch must run the same build.
            let deadline = tokio::time::Instant::now() + opts.connect_patience;
            let program = loop {
                let attempt = tokio::select! {
                    r = tofino::fetch_program(&bound[0], &opts.tofino) => r,
                    _ = &mut shutdown => return Ok(sink.result(&prep, &faults, &opts)),
                };
                match attempt {
                    Ok(p) => break Arc::new(p),
                    Err(e) if tokio::time::Instant::now() < deadline => {
                        tracing::info!(switch = %bound[0].name, "waiting for switch: {e}");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    Err(e) => {
                        return Err(Error::ProgramUnreadable {
                            switch: bound[0].name.clone(),
                            error: Box::new(e.into()),
                        })
                    }
                }
            };
            let drivers = bound
                .iter()
                .map(|b| {
                    let s = b.ix as usize;
                    let monitor = prep.topo.switches[s].monitor;
                    let mask = prep.codec.masks[s];
                    TofinoDriver::new(
                        b.clone(),
                        monitor,
                        mask,
                        program.clone(),
                        opts.tofino.clone(),
                    )
                })
                .collect();
            let fabric = SwitchFabric::new(
                &prep.topo,
                &ports,
                &prep.codec.masks,
                drivers,
                program.capacity(),
                fabric_opts,
            );
            match run_fabric(
                &opts,
                prep.clone(),
                &faults,
                fabric,
                &mut shutdown,
                &mut sink,
            )
            .await?
            {
                Ended::Done(result) => Ok(*result),
                Ended::Demoted(why) => Err(Error::Demoted(why)),
            }
        }
    }
}

fn controller_config(opts: &RunOptions) -> ControllerConfig {
    opts.pipeline.controller_config(opts.epoch, opts.drain)
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
