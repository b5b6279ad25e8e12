//! `canary run`: the controller on real switches.
//!
//! Configures every switch (pipeline, forwarding, configuration), then runs the same epoch loop
//! as the simulator ([`Controller`]) over the generic fabric ([`SwitchFabric`]) of the target's
//! driver: start the next epoch, wait for packets in flight, harvest, detect, localize, select
//! flows. The target only decides which driver the fabric gets; nothing below it branches on
//! the target. Each epoch appends one JSON line to the report file (flushed, so it can be tailed
//! while the daemon runs), prints the table, and updates the Prometheus metrics.

use crate::controller::{Controller, ControllerConfig};
use crate::metrics::{self, Metrics};
use crate::report::{render_epoch, EpochReport};
use crate::setup::{load_topology, prepare};
use crate::simulate::SimulationResult;
use anyhow::{bail, Context, Result};
use canary_core::fault::{self, Fault};
use canary_core::localize::{CanaryParams, Grouping};
use canary_core::pathbf::PathBfParams;
use canary_core::select::SelectionParams;
use canary_core::topo::MonitorPlacement;
use canary_switch::driver::SwitchDriver;
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Options, Bmv2Program};
use canary_switch::drivers::tofino::{self, TofinoDriver, TofinoOptions};
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use canary_switch::p4info::P4InfoIndex;
use canary_switch::switches::{port_map, SwitchesFile};
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// BMv2 simple_switch_grpc: P4Runtime + Thrift register harvest.
    Bmv2,
    /// Tofino: bf_switchd over BF Runtime (gRPC), the program loaded by bf_switchd.
    Tofino,
}

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub topology: String,
    pub monitors: Option<MonitorPlacement>,
    pub target: Target,
    pub switches: PathBuf,
    /// Directory with canary.json and canary.p4info.bin; `None`: compile p4src now.
    pub p4: Option<PathBuf>,
    pub epoch: Duration,
    /// 0: until shut down.
    pub epochs: u32,
    pub drain: Duration,
    pub report: Option<PathBuf>,
    pub json: Option<PathBuf>,
    /// Injected faults, to score the run against (testbeds).
    pub faults: Option<String>,
    pub metrics: Option<String>,
    pub selection: SelectionParams,
    pub groups: usize,
    pub floor: f64,
    pub window: usize,
    pub min_lossy_epochs: u32,
    pub bmv2: Bmv2Options,
    pub tofino: TofinoOptions,
    /// A switch whose harvest takes longer is left out of the epoch.
    pub harvest_deadline: Duration,
    /// How long to wait at start for switches that are not up yet.
    pub connect_patience: Duration,
    pub quiet: bool,
}

/// The compiled program: BMv2 JSON and binary P4Info.
pub struct P4Artifacts {
    pub device_config: Vec<u8>,
    pub p4info: P4InfoIndex,
    _tmp: Option<tempfile::TempDir>,
}

/// Reads `dir`, or compiles `p4src/` with `bmv2/build.sh` when no directory is given.
pub fn load_p4(dir: Option<&Path>) -> Result<P4Artifacts> {
    let (dir, tmp) = match dir {
        Some(d) => (d.to_path_buf(), None),
        None => {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bmv2/build.sh");
            if !script.exists() {
                bail!("no --p4 DIR given and no bmv2/build.sh next to this build to compile one");
            }
            let tmp = tempfile::tempdir()?;
            let out = std::process::Command::new(&script)
                .arg(tmp.path())
                .output()
                .with_context(|| format!("running {}", script.display()))?;
            let json = tmp.path().join("canary.json");
            if !out.status.success() || !json.exists() {
                bail!(
                    "compiling the P4 program failed (is p4c on PATH?):\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            (tmp.path().to_path_buf(), Some(tmp))
        }
    };
    let json = dir.join("canary.json");
    let device_config = std::fs::read(&json)
        .with_context(|| format!("cannot read the BMv2 JSON {}", json.display()))?;
    let p4info = P4InfoIndex::load(&dir.join("canary.p4info.bin"))?;
    Ok(P4Artifacts {
        device_config,
        p4info,
        _tmp: tmp,
    })
}

/// Appends one JSON line per epoch, flushed each time.
struct ReportFile(std::io::BufWriter<std::fs::File>, PathBuf);

impl ReportFile {
    fn open(path: &Path) -> Result<Self> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("--report {}: cannot open for appending", path.display()))?;
        Ok(Self(std::io::BufWriter::new(f), path.to_path_buf()))
    }

    fn append(&mut self, r: &EpochReport) -> Result<()> {
        serde_json::to_writer(&mut self.0, r)?;
        self.0.write_all(b"\n")?;
        self.0
            .flush()
            .with_context(|| format!("writing {}", self.1.display()))
    }
}

/// Runs the daemon until `opts.epochs` epochs are done or `shutdown` resolves. Returns the same
/// document `canary simulate --json` writes (faults: the injected truth, if given).
pub async fn run(
    opts: RunOptions,
    shutdown: impl Future<Output = ()>,
    on_epoch: impl FnMut(&EpochReport),
) -> Result<SimulationResult> {
    if opts.target == Target::Tofino && !opts.bmv2.role.is_empty() {
        bail!(
            "--role is a P4Runtime role and BF Runtime has none: on Tofino, Canary binds to \
             the program bf_switchd loaded and configures the switch itself"
        );
    }
    let topo = load_topology(&opts.topology, opts.monitors)?;
    let faults: Vec<Fault> = match &opts.faults {
        None => vec![],
        Some(f) if f == "none" => vec![],
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("cannot read fault file {f}"))?;
            fault::parse(f, &text, &topo)?
        }
    };
    let prep = prepare(topo, PathBfParams::default())?;
    let switches_path = opts.switches.display().to_string();
    let bound = SwitchesFile::load(&switches_path)?.bind(&switches_path, &prep.topo)?;
    let ports = port_map(&bound);
    let fabric_opts = FabricOptions {
        harvest_deadline: opts.harvest_deadline,
        // With a role, another controller owns the pipeline and forwarding.
        attach_only: opts.target == Target::Bmv2 && opts.bmv2.attach,
    };
    match opts.target {
        Target::Bmv2 => {
            let p4 = load_p4(opts.p4.as_deref())?;
            let program = Arc::new(Bmv2Program::new(
                p4.p4info.clone(),
                p4.device_config.clone(),
            )?);
            let drivers = bound
                .into_iter()
                .map(|b| {
                    let s = b.ix as usize;
                    let monitor = prep.topo.switches[s].monitor;
                    Bmv2Driver::new(b, monitor, program.clone(), opts.bmv2.clone())
                        .with_mask(prep.codec.masks[s])
                })
                .collect();
            let capacity = program.program.capacity();
            let fabric = SwitchFabric::new(
                &prep.topo,
                &ports,
                &prep.codec.masks,
                drivers,
                capacity,
                fabric_opts,
            );
            run_fabric(opts, prep, faults, fabric, shutdown, on_epoch).await
        }
        Target::Tofino => {
            // The program is bf_switchd's: its contract comes from the first switch that
            // answers, and every switch must run the same build.
            let deadline = tokio::time::Instant::now() + opts.connect_patience;
            let program = loop {
                match tofino::fetch_program(&bound[0], &opts.tofino).await {
                    Ok(p) => break Arc::new(p),
                    Err(e) if tokio::time::Instant::now() < deadline => {
                        tracing::info!("waiting for {}: {e}", bound[0].name);
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    Err(e) => bail!("cannot read the program from {}: {e}", bound[0].name),
                }
            };
            let drivers = bound
                .into_iter()
                .map(|b| {
                    let s = b.ix as usize;
                    let monitor = prep.topo.switches[s].monitor;
                    let mask = prep.codec.masks[s];
                    TofinoDriver::new(b, monitor, mask, program.clone(), opts.tofino.clone())
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
            run_fabric(opts, prep, faults, fabric, shutdown, on_epoch).await
        }
    }
}

/// The daemon over a fabric of any target's switches.
async fn run_fabric<D: SwitchDriver>(
    opts: RunOptions,
    prep: crate::setup::Prepared,
    faults: Vec<Fault>,
    mut fabric: SwitchFabric<D>,
    shutdown: impl Future<Output = ()>,
    mut on_epoch: impl FnMut(&EpochReport),
) -> Result<SimulationResult> {
    let metrics = Arc::new(Metrics::new());
    if let Some(addr) = &opts.metrics {
        let bound = metrics::serve(addr, metrics.clone()).await?;
        tracing::info!("metrics on http://{bound}/metrics");
        if !opts.quiet {
            eprintln!("metrics: http://{bound}/metrics");
        }
    }
    let mut report = opts.report.as_deref().map(ReportFile::open).transpose()?;
    fabric.connect(opts.connect_patience).await?;
    if !opts.quiet {
        eprintln!(
            "configured {} switches of {}; epochs of {:?}",
            prep.topo.switches.len(),
            prep.topo.name,
            opts.epoch
        );
    }
    let canary = CanaryParams {
        floor: opts.floor,
        groups: Grouping::fixed_n(opts.groups, opts.floor),
        ..Default::default()
    };
    let cfg = ControllerConfig {
        epoch: opts.epoch,
        drain: opts.drain,
        window: opts.window,
        min_lossy_epochs: opts.min_lossy_epochs,
        selection: opts.selection,
        canary,
    };
    let mut ctl = Controller::new(prep.topo, prep.segments, prep.codec, cfg);
    let mut epochs = Vec::new();
    tokio::pin!(shutdown);
    ctl.start(&mut fabric).await;
    loop {
        if opts.epochs > 0 && epochs.len() >= opts.epochs as usize {
            break;
        }
        let r = tokio::select! {
            r = ctl.run_epoch(&mut fabric) => r,
            _ = &mut shutdown => {
                tracing::info!("shutting down");
                break;
            }
        };
        metrics.observe(&ctl, &r, fabric.counters.digests_dropped);
        if let Some(f) = report.as_mut() {
            f.append(&r)?;
        }
        on_epoch(&r);
        if !opts.quiet {
            print!("{}", render_epoch(&r, 8));
            let _ = std::io::stdout().flush();
        }
        epochs.push(r);
    }
    let result = SimulationResult::of_run(&ctl, &faults, 0, epochs);
    if let Some(path) = &opts.json {
        let f = std::fs::File::create(path)
            .with_context(|| format!("--json {}: cannot write", path.display()))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(f), &result)?;
    }
    tracing::info!(counters = ?fabric.counters, "fabric counters");
    Ok(result)
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
