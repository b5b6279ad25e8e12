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
mod out_of_service;
mod p4;
mod sink;
mod targets;

pub use p4::{load_p4, P4Artifacts, BMV2_FILES};

use crate::cluster::wire::Parts;
use crate::cluster::ClusterConfig;
use crate::config::{Pipeline, RunConfig};
use crate::controller::ControllerConfig;
use crate::error::{Error, Result};
use crate::incidents;
use crate::report::EpochReport;
use crate::report_file::ReportFile;
use crate::run_document::RunDocument;
use crate::setup::{load_topology, prepare, Prepared};
use canary_core::fault::{self, Fault};
use canary_core::pathbf::PathBfParams;
use canary_core::topo::{PortMap, Topology};
use canary_switch::drivers::bmv2::Bmv2Options;
use canary_switch::drivers::tofino::TofinoOptions;
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use canary_switch::switches::{port_map, BoundSwitch, SwitchesFile};
use fabric_loop::{run_fabric, Ended};
use sink::Sink;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;
use targets::{Bmv2Drivers, Drivers, TofinoDrivers};

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
    /// Links out of service in Canary's forwarding (`--out-of-service`).
    pub out_of_service: Option<PathBuf>,
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
            out_of_service: c.out_of_service.clone(),
            metrics: c.metrics.clone(),
            http: c.serve.clone(),
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
) -> Result<RunDocument> {
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
    refuse_role_on_tofino(&opts)?;
    let topo = load_topology(&opts.topology, opts.pipeline.monitors)?;
    let faults = load_faults(&opts, &topo)?;
    let prep = prepare(topo, PathBfParams::default())?;
    let bound = bind_switches(&opts, &prep)?;
    let mut report = opts.report.as_deref().map(ReportFile::open).transpose()?;
    let sink = Sink::open(&opts, &prep, report.as_mut(), on_epoch).await?;
    tokio::pin!(shutdown);
    let mut daemon = Daemon {
        opts: &opts,
        prep: &prep,
        faults: &faults,
        ports: port_map(&bound),
        fabric_opts: fabric_options(&opts),
        shutdown,
        sink,
    };
    // The target's one say: which drivers. Everything after is the same for every target.
    match opts.target {
        Target::Bmv2 => daemon.serve(Bmv2Drivers::new(&opts, &bound, &prep)?).await,
        Target::Tofino => daemon.serve(TofinoDrivers::new(&opts, &bound, &prep)).await,
    }
}

/// A role is P4Runtime's; Tofino has none to bind to.
fn refuse_role_on_tofino(opts: &RunOptions) -> Result<()> {
    if opts.target == Target::Tofino && !opts.bmv2.role.is_empty() {
        return Err(Error::given(
            "--role",
            "a P4Runtime role, and BF Runtime has none: on Tofino, Canary binds to the program \
             bf_switchd loaded and configures the switch itself",
        ));
    }
    Ok(())
}

/// The injected faults to score the run against (none without `--faults`, or with `none`).
/// Links the file takes out of service are not faults (`--out-of-service` enacts them).
fn load_faults(opts: &RunOptions, topo: &Topology) -> Result<Vec<Fault>> {
    Ok(match &opts.faults {
        None => vec![],
        Some(f) if f == "none" => vec![],
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .map_err(|e| Error::io(format!("cannot read fault file {f}"), e))?;
            fault::split_out_of_service(fault::parse(f, &text, topo)?).0
        }
    })
}

/// The switches file, each switch bound to the topology's.
fn bind_switches(opts: &RunOptions, prep: &Prepared) -> Result<Vec<BoundSwitch>> {
    let switches_path = opts.switches.display().to_string();
    SwitchesFile::load(&switches_path)
        .and_then(|f| f.bind(&switches_path, &prep.topo))
        .map_err(Error::switches)
}

fn fabric_options(opts: &RunOptions) -> FabricOptions {
    FabricOptions {
        harvest_deadline: opts.harvest_deadline,
        // With a role, another controller owns the pipeline and forwarding.
        attach_only: opts.target == Target::Bmv2 && opts.bmv2.attach,
        adopt: !opts.fresh,
    }
}

/// The daemon once everything but the switches is set up: what every term on them shares.
struct Daemon<'a, S, F> {
    opts: &'a RunOptions,
    prep: &'a Prepared,
    faults: &'a [Fault],
    ports: PortMap,
    fabric_opts: FabricOptions,
    shutdown: Pin<&'a mut S>,
    sink: Sink<'a, F>,
}

impl<S: Future<Output = ()>, F: FnMut(&EpochReport)> Daemon<'_, S, F> {
    /// This controller's terms as primary, each on a fabric of the target's drivers, until its
    /// epochs are done or it is shut down (or demoted, where the target does not stand by).
    async fn serve<T: Drivers>(&mut self, mut target: T) -> Result<RunDocument> {
        loop {
            let Some(term) = target.next_term(&mut self.shutdown).await? else {
                return Ok(self.sink.result(self.prep, self.faults, self.opts));
            };
            let mut fabric = SwitchFabric::new(
                &self.prep.topo,
                &self.ports,
                &self.prep.codec.masks,
                term.drivers,
                term.capacity,
                self.fabric_opts.clone(),
            );
            if let Some(s) = term.lease {
                fabric.set_lease(s);
            }
            match run_fabric(
                self.opts,
                self.prep.clone(),
                self.faults,
                (fabric, term.reads),
                &mut self.shutdown,
                &mut self.sink,
            )
            .await?
            {
                Ended::Done(result) => return Ok(*result),
                Ended::Demoted(why) => target.demoted(why)?,
            }
        }
    }
}

fn controller_config(opts: &RunOptions) -> ControllerConfig {
    ControllerConfig {
        recheck_late: true,
        ..opts.pipeline.controller_config(opts.epoch, opts.drain)
    }
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
