//! The `canary` command.

use anyhow::{Context, Result};
use canary::daemon::{self, RunOptions, Target};
use canary::eval;
use canary::report::{render_epoch, render_summary};
use canary::setup::{load_topology, prepare};
use canary::simulate::{self, SimulateOptions};
use canary_core::decide::DecisionParams;
use canary_core::pathbf::PathBfParams;
use canary_core::select::SelectionParams;
use canary_core::topo::MonitorPlacement;
use canary_switch::drivers::bmv2::Bmv2Options;
use clap::{Args, Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "canary",
    version,
    about = "Find faulty links in a data-center fabric from the traffic it carries"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the full pipeline on a simulated fabric and score it against injected faults.
    Simulate(SimulateArgs),
    /// Control real switches: push the pipeline, run epochs, report lossy links.
    Run(Box<RunArgs>),
    /// Run every localizer of the papers on one simulated fabric and score them side by side.
    Eval(EvalArgs),
    /// Memory and decoding cost against FlowRadar, LossRadar and FermatSketch (Fig. 6, Table II),
    /// flow selection under churn (Fig. 7), heavy hitters against HashPipe (Fig. 11).
    Overhead(OverheadArgs),
    /// Check that every segment's pathBF decodes; reassign switch IDs where it does not.
    Audit(AuditArgs),
    /// Print a topology as YAML (e.g. `canary topology fattree:8 > k8.yaml`).
    Topology {
        spec: String,
        #[arg(long)]
        monitors: Option<MonitorPlacement>,
    },
    /// Draw a fabric as SVG with a run's injected faults and blamed links marked.
    Draw(canary::draw::DrawArgs),
    /// Serve the live page for a finished run's JSON.
    View(canary::view::ViewArgs),
    /// Send heavy-tailed UDP traffic from one testbed host and count what it receives.
    Traffic(canary::traffic_gen::TrafficArgs),
    /// Serve P4Runtime with roles in front of a switch whose own server has none (BMv2), so
    /// Canary (`run --role canary`) and the fabric's controller can each be primary.
    RoleGateway(RoleGatewayArgs),
}

#[derive(Args)]
struct RoleGatewayArgs {
    /// Where controllers connect, e.g. 127.0.0.1:9559.
    #[arg(long)]
    listen: String,
    /// The switch's P4Runtime server, e.g. 127.0.0.1:50001.
    #[arg(long)]
    switch: String,
    #[arg(long, default_value_t = 1)]
    device_id: u64,
    /// The gateway's election id on the switch: it must be the switch's only primary.
    #[arg(long, default_value_t = u64::MAX)]
    election_id: u64,
}

fn role_gateway(a: RoleGatewayArgs) -> anyhow::Result<()> {
    use anyhow::Context;
    use canary_switch::role_gateway::{GatewayConfig, RoleGateway};
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(&a.listen)
            .await
            .with_context(|| format!("--listen {}: cannot listen", a.listen))?;
        let gw = RoleGateway::new(GatewayConfig {
            upstream: a.switch.clone(),
            device_id: a.device_id,
            election_id: u128::from(a.election_id),
            timeout: Duration::from_secs(2),
        });
        eprintln!(
            "role gateway: P4Runtime with roles on {} for switch {}",
            a.listen, a.switch
        );
        let served = gw.serve(listener);
        tokio::select! {
            _ = served => anyhow::bail!("the P4Runtime server stopped"),
            _ = canary::daemon::shutdown_signal() => Ok(()),
        }
    })
}

/// How a segment is judged lossy, for `simulate` and `run`.
#[derive(Args, Clone, Debug)]
struct DecisionArgs {
    /// `sequential`: a test of each segment against the background loss, accumulating evidence
    /// over epochs, with the false-alarm rate below; `floor`: the paper's rule (loss above
    /// --floor in --min-lossy-epochs of --window epochs).
    #[arg(long, default_value = "sequential", value_parser = ["sequential", "floor"])]
    decision: String,
    /// Sequential: the most a healthy link loses, per packet.
    #[arg(long, default_value_t = DecisionParams::default().background)]
    background: f64,
    /// Sequential: expected false alarms per epoch over the whole fabric.
    #[arg(long, default_value_t = DecisionParams::default().false_alarms)]
    false_alarms: f64,
}

impl DecisionArgs {
    fn params(&self) -> Result<Option<DecisionParams>> {
        if self.decision == "floor" {
            return Ok(None);
        }
        let p = DecisionParams {
            background: self.background,
            false_alarms: self.false_alarms,
        };
        p.validate()
            .map_err(|e| anyhow::anyhow!("--{}", e.replacen('_', "-", 1)))?;
        Ok(Some(p))
    }
}

#[derive(Args)]
struct SimulateArgs {
    /// `fattree:K` or a YAML topology file.
    #[arg(long, default_value = "fattree:4")]
    topology: String,
    /// A YAML fault file, `random:P%` (P% of undirected links, the paper's loss mix), or `none`.
    #[arg(long, default_value = "random:10%")]
    faults: String,
    #[arg(long, default_value_t = 10)]
    epochs: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Packets to count per segment and epoch.
    #[arg(long, default_value_t = 1000)]
    alpha: u64,
    /// Flows to count per segment and epoch.
    #[arg(long, default_value_t = 20)]
    beta: u32,
    /// Flows selected per HH rule.
    #[arg(long, default_value_t = 20)]
    delta: u32,
    /// HashPipe count a flow must exceed to be reported.
    #[arg(long, default_value_t = 16)]
    eta: u32,
    /// Loss-rate groups (stages) of the multi-stage localization.
    #[arg(long, default_value_t = 5)]
    groups: usize,
    /// Split lossy segments into equal-count groups instead of fixed loss ranges (Fig. 9).
    #[arg(long)]
    quantile_groups: bool,
    /// Segments losing less than this are taken as loss-free.
    #[arg(long, default_value_t = 0.001)]
    floor: f64,
    /// Meter placement: `bottom` or `top+bottom` (default for fat-trees; a file may set its own).
    #[arg(long)]
    monitors: Option<MonitorPlacement>,
    /// Background loss: every healthy link drops at a rate drawn from U(0, P).
    #[arg(long, default_value_t = 0.0)]
    noise: f64,
    /// Epoch length in milliseconds.
    #[arg(long, default_value_t = 100)]
    epoch_ms: u64,
    /// n: epochs aggregated per localization.
    #[arg(long, default_value_t = 5)]
    window: usize,
    /// n′: epochs of the window a segment must lose packets in to count as lossy.
    #[arg(long, default_value_t = 1)]
    min_lossy_epochs: u32,
    #[command(flatten)]
    decision: DecisionArgs,
    /// Long, fast flows each simulated host keeps open.
    #[arg(long, default_value_t = 80)]
    elephants_per_host: u32,
    /// Short flows each simulated host keeps open.
    #[arg(long, default_value_t = 120)]
    mice_per_host: u32,
    /// Share of the simulated flows carried over IPv6, 0 to 1.
    #[arg(long, default_value_t = 0.0, value_parser = share)]
    ipv6: f64,
    /// Write the whole run as JSON.
    #[arg(long)]
    json: Option<String>,
    /// Serve the live page at ADDR (e.g. 127.0.0.1:8080) while the run goes, and after it
    /// until Ctrl-C.
    #[arg(long)]
    serve: Option<String>,
    /// With --serve: wait this long after each epoch so the page can be followed (default: the
    /// epoch length).
    #[arg(long)]
    pace_ms: Option<u64>,
    /// Print only the summary.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct EvalArgs {
    /// `fattree:K` or a YAML topology file.
    #[arg(long, default_value = "fattree:8")]
    topology: String,
    /// A YAML fault file, `random:P%`, or `none`.
    #[arg(long, default_value = "random:10%")]
    faults: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run every seed of an inclusive range (`1..10`) and print per-seed F1 and the mean.
    #[arg(long)]
    seeds: Option<String>,
    /// Vary one parameter, `AXIS=V1,V2,…` with AXIS one of probes, loss, faults, k, noise,
    /// flows; every value runs every seed of `--seeds` (or `--seed`). `--svg` then draws
    /// precision, recall and F1 against the axis.
    #[arg(long)]
    sweep: Option<String>,
    /// Comma-separated: canary, canary-cd1, flock-canary, netbouncer, netbouncer-stage,
    /// netbouncer-paper, flock, flock-a2, 007, detector.
    #[arg(
        long,
        default_value = "canary,netbouncer,netbouncer-stage,flock,007,detector"
    )]
    localizers: String,
    /// Write the scored verdicts as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Canary: packets to count per segment and epoch.
    #[arg(long, default_value_t = 1000)]
    alpha: u64,
    /// Canary: loss-rate groups (stages).
    #[arg(long, default_value_t = 5)]
    groups: usize,
    /// Bounce and probe-matrix probes per path.
    #[arg(long, default_value_t = 100)]
    probes: u32,
    /// Background loss: every healthy link drops at a rate drawn from U(0, P).
    #[arg(long, default_value_t = 0.0)]
    noise: f64,
    /// 007 and Flock(A2): TCP connections each host opens in the 30-s epoch.
    #[arg(long, default_value_t = 60)]
    flows: u32,
    /// deTector: every link on at least this many probe paths (α-coverage).
    #[arg(long, default_value_t = 2)]
    pmc_alpha: u32,
    /// deTector: any this many simultaneous link failures identifiable (β-identifiability).
    #[arg(long, default_value_t = 1)]
    pmc_beta: u32,
    /// NetBouncer (all three variants): weight λ of CD's regulariser (the paper's: 1).
    #[arg(long, default_value_t = 1.0)]
    nb_lambda: f64,
    /// Canary: epochs to simulate.
    #[arg(long, default_value_t = 10)]
    epochs: u32,
    /// Write the bounce probes in Flock's trace format, and its companion topology file
    /// (`a b` per undirected link) as FILE.topo.
    #[arg(long)]
    export_flock_trace: Option<PathBuf>,
    /// Feed NetBouncer(-stage) and Flock from this Flock trace instead of simulated probes.
    #[arg(long)]
    flock_trace: Option<PathBuf>,
    /// Draw per-stage precision, recall and F1 (the paper's Fig. 8) as SVG.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Calibrate flock, flock-a2, netbouncer-paper and 007 first (Flock paper §5.2: grid
    /// search, highest recall at precision > P, P from 98 % down by 5 % until recall >= 25 %) on
    /// these training seeds (`A..B`, disjoint from the test seeds), then evaluate with the chosen
    /// parameters. With `--sweep`, at every value.
    #[arg(long, value_name = "SEEDS")]
    calibrate: Option<String>,
    /// The training set's fault spec (default: `--faults`, i.e. the evaluated one).
    #[arg(long, value_name = "SPEC", requires = "calibrate")]
    calibrate_faults: Option<String>,
}

#[derive(Args)]
struct OverheadArgs {
    /// Comma-separated parts: fig6, table2, fig7, fig11.
    #[arg(long, default_value = "fig6,table2,fig7,fig11")]
    only: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Fig. 6: trials per memory point (99 % success needs at most 1 failure in 100).
    #[arg(long, default_value_t = 100)]
    trials: usize,
    /// Fig. 6: comma-separated link loss rates.
    #[arg(long, default_value = "1e-4,1e-3,1e-2,1e-1")]
    losses: String,
    /// Fig. 6: flows through the link per 100 ms epoch.
    #[arg(long, default_value_t = 10_000)]
    flows: usize,
    /// Fig. 6: Pareto shape of the flow sizes (the minimum is set to keep the mean at ≈ 80 packets).
    #[arg(long, default_value_t = 1.2)]
    size_shape: f64,
    /// Fig. 7 and 11: epochs of 100 ms.
    #[arg(long, default_value_t = 300)]
    epochs: u32,
    /// Fig. 7 and 11: flow arrivals per second of the synthetic trace.
    #[arg(long, default_value_t = 30_000.0)]
    arrivals: f64,
    /// Fig. 7 and 11: read this pcap (classic libpcap) instead of the synthetic trace.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Write the figures as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw fig6.svg, fig7.svg and fig11.svg into this directory.
    #[arg(long)]
    svg_dir: Option<PathBuf>,
}

#[derive(Args)]
struct AuditArgs {
    #[arg(long, default_value = "fattree:4")]
    topology: String,
    #[arg(long)]
    monitors: Option<MonitorPlacement>,
    #[arg(long, default_value_t = 32)]
    pathbf_bits: u32,
    #[arg(long, default_value_t = 3)]
    pathbf_hashes: u32,
    #[arg(long)]
    json: Option<String>,
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        None => simulate_cmd(SimulateArgs::parse_from(["simulate"])),
        Some(Command::Simulate(a)) => simulate_cmd(a),
        Some(Command::Run(a)) => run_cmd(*a),
        Some(Command::Eval(a)) => eval_cmd(a),
        Some(Command::Audit(a)) => audit_cmd(a),
        Some(Command::Overhead(a)) => overhead_cmd(a),
        Some(Command::Draw(a)) => canary::draw::main(&a),
        Some(Command::View(a)) => canary::view::main(&a),
        Some(Command::Traffic(a)) => canary::traffic_gen::main(&a),
        Some(Command::RoleGateway(a)) => role_gateway(a),
        Some(Command::Topology { spec, monitors }) => {
            let t = load_topology(&spec, monitors)?;
            // The placement the topology has: the file's own unless --monitors overrides it.
            print!(
                "{}",
                canary_core::topo::yaml::to_yaml(&t, t.monitor_placement())
            );
            Ok(())
        }
    }
}

impl SimulateArgs {
    fn parse_from<'a>(args: impl IntoIterator<Item = &'a str>) -> Self {
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            a: SimulateArgs,
        }
        Wrap::parse_from(args).a
    }
}

fn simulate_cmd(a: SimulateArgs) -> Result<()> {
    let opts = SimulateOptions {
        topology: a.topology,
        faults: a.faults,
        epochs: a.epochs,
        seed: a.seed,
        selection: SelectionParams {
            alpha: a.alpha,
            beta: a.beta,
            delta: a.delta,
            ..Default::default()
        },
        eta: a.eta,
        groups: a.groups,
        quantile_groups: a.quantile_groups,
        floor: a.floor,
        monitors: a.monitors,
        noise: a.noise,
        epoch: Duration::from_millis(a.epoch_ms),
        window: a.window,
        min_lossy_epochs: a.min_lossy_epochs,
        decision: a.decision.params()?,
        elephants_per_host: a.elephants_per_host,
        mice_per_host: a.mice_per_host,
        ipv6_share: a.ipv6,
        pathbf: PathBfParams::default(),
    };
    let bar = indicatif::ProgressBar::new(opts.epochs as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} epoch {pos}/{len} {wide_bar} {elapsed}")
            .expect("valid template"),
    );
    let quiet = a.quiet;
    let out = std::io::stdout();
    let served = match &a.serve {
        Some(addr) => Some(canary::view::Served::start(&opts.topology, addr)?),
        None => None,
    };
    let pace = Duration::from_millis(a.pace_ms.unwrap_or(a.epoch_ms));
    let result = simulate::run(&opts, |r| {
        if let Some(s) = &served {
            s.page.push(r);
            std::thread::sleep(pace);
        }
        bar.inc(1);
        if !quiet {
            bar.suspend(|| {
                let _ = write!(out.lock(), "{}", render_epoch(r, 8));
            });
        }
    })?;
    bar.finish_and_clear();
    print!("{}", render_summary(&result.summary, result.faults.len()));
    if let Some(path) = a.json {
        let f = std::fs::File::create(&path).with_context(|| format!("cannot write {path}"))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(f), &result)?;
    }
    if let Some(s) = served {
        s.until_shutdown();
    }
    Ok(())
}

#[derive(Args)]
struct RunArgs {
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
    #[arg(long, default_value_t = 1000)]
    alpha: u64,
    #[arg(long, default_value_t = 20)]
    beta: u32,
    #[arg(long, default_value_t = 20)]
    delta: u32,
    #[arg(long, default_value_t = 16)]
    eta: u32,
    #[arg(long, default_value_t = 5)]
    groups: usize,
    #[arg(long, default_value_t = 0.001)]
    floor: f64,
    #[arg(long)]
    monitors: Option<MonitorPlacement>,
    #[arg(long, default_value_t = 5)]
    window: usize,
    #[arg(long, default_value_t = 1)]
    min_lossy_epochs: u32,
    #[command(flatten)]
    decision: DecisionArgs,
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

fn run_cmd(a: RunArgs) -> Result<()> {
    let epoch = Duration::from_millis(a.epoch_ms);
    let opts = RunOptions {
        topology: a.topology,
        monitors: a.monitors,
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
        selection: SelectionParams {
            alpha: a.alpha,
            beta: a.beta,
            delta: a.delta,
            eta: a.eta,
            ..Default::default()
        },
        groups: a.groups,
        floor: a.floor,
        window: a.window,
        min_lossy_epochs: a.min_lossy_epochs,
        decision: a.decision.params()?,
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

fn eval_cmd(a: EvalArgs) -> Result<()> {
    if !(a.nb_lambda.is_finite() && a.nb_lambda >= 0.0) {
        anyhow::bail!(
            "--nb-lambda must be a finite number >= 0, got {}",
            a.nb_lambda
        );
    }
    let mut opts = eval::EvalOptions {
        sim: SimulateOptions {
            topology: a.topology,
            faults: a.faults,
            epochs: a.epochs,
            seed: a.seed,
            groups: a.groups,
            noise: a.noise,
            selection: SelectionParams {
                alpha: a.alpha,
                ..Default::default()
            },
            ..Default::default()
        },
        localizers: eval::parse_kinds(&a.localizers)?,
        probes: a.probes,
        tcp: canary_sim::tcp007::Tcp007Params {
            conns_per_host: a.flows,
            ..Default::default()
        },
        pmc: canary_core::localize::PmcParams {
            alpha: a.pmc_alpha,
            beta: a.pmc_beta,
            ..Default::default()
        },
        nb_lambda: a.nb_lambda,
        export_flock_trace: a.export_flock_trace,
        flock_trace: a.flock_trace,
        calibration: None,
    };
    let test_seeds = match &a.seeds {
        Some(s) => eval::sweep::parse_seeds(s)?,
        None => vec![a.seed],
    };
    let calibrate = match &a.calibrate {
        Some(s) => {
            let spec = eval::calibrate::CalibrateSpec {
                seeds: eval::sweep::parse_seeds(s)
                    .map_err(|e| anyhow::anyhow!("--calibrate: {e}"))?,
                faults: a.calibrate_faults.clone(),
            };
            spec.check_disjoint(&test_seeds)?;
            if !opts
                .localizers
                .iter()
                .any(|&k| eval::calibrate::calibrated_kind(k))
            {
                eprintln!(
                    "warning: --calibrate tunes flock, flock-a2, netbouncer-paper and 007; none \
                     of them is in --localizers"
                );
            }
            Some(spec)
        }
        None => None,
    };
    let calibrated_title = |title: String| match &calibrate {
        Some(c) => format!(
            "{title}, calibrated on seeds {}",
            eval::calibrate::seed_list(&c.seeds)
        ),
        None => title,
    };
    let write_json = |path: &PathBuf, text: String| {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    if let Some(spec) = &a.sweep {
        if opts.export_flock_trace.is_some() || opts.flock_trace.is_some() {
            anyhow::bail!("--sweep simulates every point's probes: drop the Flock trace options");
        }
        let (axis, values) = eval::axis::parse_sweep(spec)?;
        let seeds = test_seeds;
        let mut shown = None;
        let report =
            eval::axis::run_axis(&opts, axis, &values, &seeds, calibrate.as_ref(), |v, r| {
                eprintln!("{}={v}", axis.name());
                if let Some(c) = r
                    .calibration
                    .as_ref()
                    .filter(|&c| shown.as_ref() != Some(c))
                {
                    eprint!("{}", c.render());
                    shown = Some(c.clone());
                }
                eprint!("{}", eval::render_table(r));
            })?;
        print!("{}", report.render());
        if let Some(path) = &a.json {
            write_json(path, serde_json::to_string_pretty(&report)?)?;
        }
        if let Some(path) = &a.svg {
            let title = calibrated_title(format!(
                "{} {}, seeds {} (mean)",
                opts.sim.topology,
                opts.sim.faults,
                a.seeds.as_deref().unwrap_or(&a.seed.to_string())
            ));
            eval::plot::render_sweep_svg(
                path,
                &title,
                axis.label(),
                axis.log_scale(),
                &report.series(),
            )?;
        }
        return Ok(());
    }
    if let Some(spec) = &calibrate {
        opts.calibration = eval::calibrate::run(&opts, spec)?;
        if let Some(c) = &opts.calibration {
            eprint!("{}", c.render());
        }
    }
    let Some(seeds) = a.seeds else {
        let r = eval::run(&opts)?;
        if let Some(c) = &r.calibration {
            print!("{}", c.render());
        }
        print!("{}", eval::render_table(&r));
        if let Some(path) = &a.json {
            write_json(path, serde_json::to_string_pretty(&r)?)?;
        }
        if let Some(path) = &a.svg {
            let series: Vec<_> = r
                .localizers
                .0
                .iter()
                .map(|(n, x)| (n.clone(), x.stages.clone()))
                .collect();
            let title = calibrated_title(format!("{} seed {}", r.topology, r.seed));
            eval::plot::render_svg(path, &title, &series)?;
        }
        return Ok(());
    };
    if opts.export_flock_trace.is_some() {
        anyhow::bail!("--export-flock-trace writes one seed's probes: use it without --seeds");
    }
    let mut runs = Vec::new();
    for seed in eval::sweep::parse_seeds(&seeds)? {
        opts.sim.seed = seed;
        let r = eval::run(&opts)?;
        eprint!("{}", eval::render_table(&r));
        runs.push(r);
    }
    let sweep = eval::sweep::SweepReport::new(runs);
    print!("{}", sweep.render());
    if let Some(path) = &a.json {
        write_json(path, serde_json::to_string_pretty(&sweep)?)?;
    }
    if let Some(path) = &a.svg {
        let title = calibrated_title(format!("{} seeds {seeds} (mean)", opts.sim.topology));
        eval::plot::render_svg(path, &title, &sweep.mean_stages())?;
    }
    Ok(())
}

fn overhead_cmd(a: OverheadArgs) -> Result<()> {
    use canary::overhead::{self, fig6::Fig6Options, plot, TraceSpec};
    let mut opts = overhead::OverheadOptions {
        parts: overhead::parse_parts(&a.only)?,
        seed: a.seed,
        epochs: a.epochs,
        ..Default::default()
    };
    opts.fig6 = Fig6Options {
        losses: a
            .losses
            .split(',')
            .map(|x| x.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .with_context(|| format!("--losses {}: not a list of numbers", a.losses))?,
        trials: a.trials,
        seed: a.seed,
        ..Default::default()
    };
    opts.fig6.traffic.flows = a.flows;
    opts.fig6.traffic.size_shape = a.size_shape;
    opts.fig6.traffic.size_min = 14.0 * (a.size_shape - 1.0) / a.size_shape * 6.0;
    opts.trace = match a.pcap {
        Some(p) => TraceSpec::pcap(p)?,
        None => TraceSpec::Synthetic {
            cfg: canary::overhead::traffic::ChurnConfig {
                duration_s: a.epochs as f64 * 0.1,
                arrivals_per_s: a.arrivals,
                ..Default::default()
            },
            seed: a.seed,
        },
    };
    let r = overhead::run(&opts)?;
    print!("{}", overhead::render(&r));
    if let Some(path) = &a.json {
        std::fs::write(path, serde_json::to_string_pretty(&r)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(dir) = &a.svg_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        if let Some(f) = &r.fig6 {
            plot::fig6(&dir.join("fig6.svg"), f)?;
        }
        if let Some(f) = &r.fig7 {
            plot::fig7(&dir.join("fig7.svg"), f)?;
        }
        if let Some(f) = &r.fig11 {
            plot::fig11(&dir.join("fig11.svg"), f)?;
        }
    }
    Ok(())
}

fn audit_cmd(a: AuditArgs) -> Result<()> {
    let params = PathBfParams {
        bits: a.pathbf_bits,
        hashes: a.pathbf_hashes,
    };
    // Checked before anything computes masks with them; the error names the flag.
    params.validate().map_err(|e| {
        let (flag, value) = match e.field() {
            "bits" => ("--pathbf-bits", a.pathbf_bits),
            _ => ("--pathbf-hashes", a.pathbf_hashes),
        };
        anyhow::anyhow!("{flag} {value}: {e}")
    })?;
    let topo = load_topology(&a.topology, a.monitors)?;
    let routing = canary_core::topo::Routing::new(&topo);
    let segments = canary_core::topo::Segments::new(&topo, &routing);
    let before = canary_core::pathbf::audit(&topo, &segments, params)?;
    let prepared = prepare(topo, params);
    println!(
        "topology {}: {} segments, pathBF b={} m={}",
        a.topology, before.segments, params.bits, params.hashes
    );
    println!("undecodable before repair: {}", before.undecodable.len());
    println!(
        "membership test (the paper's decoder), wrong candidates between the same two monitors:"
    );
    println!(
        "  {:>2} {:>9} {:>12} {:>8} {:>12} {:>12}",
        "h", "differing", "candidates", "passed", "observed", "Theorem 1"
    );
    for m in &before.membership {
        println!(
            "  {:>2} {:>9} {:>12} {:>8} {:>12.3e} {:>12.3e}",
            m.h, m.differing, m.candidates, m.passed, m.observed_rate, m.theorem1
        );
    }
    match prepared {
        Ok(p) => {
            println!(
                "after repair: {} undecodable; {} switch IDs reassigned",
                p.audit.undecodable.len(),
                p.audit.reassigned.len()
            );
            for (s, old, new) in &p.audit.reassigned {
                println!("  {:<12} {old:#010x} -> {new:#010x}", p.topo.name_of(*s));
            }
            if let Some(path) = a.json {
                std::fs::write(&path, serde_json::to_string_pretty(&p.audit)?)
                    .with_context(|| format!("cannot write {path}"))?;
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// A share between 0 and 1 (`--ipv6`).
fn share(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("`{s}` is not between 0 and 1"))
    }
}
