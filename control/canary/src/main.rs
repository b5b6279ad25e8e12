//! The `canary` command: one module per command; this file parses and dispatches.

mod args;
mod audit;
mod decision;
mod eval;
mod faults;
mod harvest_cost;
mod incidents;
mod overhead;
mod progress;
mod role_gateway;
mod run;
mod scale;
mod simulate;
mod worker;

use anyhow::Result;
use canary_controller::config::{LogFormat, RunConfig};
use canary_controller::setup::load_topology;
use canary_core::topo::MonitorPlacement;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::io::IsTerminal;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "canary",
    version,
    about = "Find faulty links in a data-center fabric from the traffic it carries",
    arg_required_else_help = true,
    after_help = "Logging: RUST_LOG sets the level (default: info); `canary run --log-format json` \
                  writes JSON lines. Exit status: 0 done, 1 error, 2 bad command line, 3 `run` \
                  stopped before its first epoch."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the full pipeline on a simulated fabric and score it against injected faults.
    Simulate(simulate::SimulateArgs),
    /// Control real switches: push the pipeline, run epochs, report lossy links.
    Run(Box<RunConfig>),
    /// Run every localizer of the papers on one simulated fabric and score them side by side.
    Eval(eval::EvalArgs),
    /// Memory and decoding cost against FlowRadar, LossRadar and FermatSketch (Fig. 6, Table II),
    /// flow selection under churn (Fig. 7), heavy hitters against HashPipe (Fig. 11).
    Overhead(overhead::OverheadArgs),
    /// Check that every segment's pathBF decodes; reassign switch IDs where it does not.
    Audit(audit::AuditArgs),
    /// List, show or export a run's incidents: the blame episodes of its links and devices.
    Incidents(incidents::IncidentsArgs),
    /// Print a topology as YAML (e.g. `canary topology fattree:8 > k8.yaml`).
    Topology {
        spec: String,
        #[arg(long)]
        monitors: Option<MonitorPlacement>,
    },
    /// Draw a fabric as SVG with a run's injected faults and blamed links marked.
    Draw(canary_controller::draw::DrawArgs),
    /// Serve the live page for a finished run's JSON.
    View(canary_controller::view::ViewArgs),
    /// A fault file as the controller resolves it: each directed link's fault, its schedule and
    /// the faults active in each epoch (the testbed's input).
    Faults(faults::FaultsArgs),
    /// The decision's statistics on given counts: crossed or not, packets needed, p0.
    Decision(decision::DecisionArgs),
    /// Send heavy-tailed UDP traffic from one testbed host and count what it receives.
    Traffic(canary_lab::traffic_gen::TrafficArgs),
    /// Serve P4Runtime with roles in front of a switch whose own server has none (BMv2), so
    /// Canary (`run --role canary`) and the fabric's controller can each be primary.
    RoleGateway(role_gateway::RoleGatewayArgs),
    /// One partition of a run's stages on a cluster.
    Worker(worker::WorkerArgs),
    /// On a testbed fabric `canary run` configured: the frames BMv2 drops while it answers
    /// each of the controller's per-epoch calls alone (testbed/harvest_cost.sh).
    HarvestCost(harvest_cost::HarvestCostArgs),
}

/// The log level when RUST_LOG is not set: info, with the libraries under us quieter.
const DEFAULT_LOG: &str =
    "info,h2=warn,hyper=warn,hyper_util=warn,tower=warn,tonic=warn,async_nats=warn,rustls=warn";

/// Log lines on stderr, coloured only when stderr is a terminal.
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG));
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Text => fmt.init(),
        LogFormat::Json => fmt.json().init(),
    }
}

/// The settings of a subcommand given on the command line (not defaults).
fn given(m: &ArgMatches) -> Vec<String> {
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine))
        .map(|id| id.as_str().to_string())
        .collect()
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Some(Command::Run(flags)) => {
            let sub = matches
                .subcommand_matches("run")
                .expect("the run subcommand");
            match run::load(*flags, &given(sub)) {
                Ok(loaded) => {
                    init_logging(loaded.config.log_format);
                    run::command(loaded)
                }
                Err(e) => {
                    init_logging(LogFormat::Text);
                    Err(e)
                }
            }
        }
        other => {
            init_logging(LogFormat::Text);
            if writes_to_a_pipe_and_ends(&other) {
                // `canary simulate | head`: a reader that has had enough ends the command
                // quietly, as it ends any Unix filter, instead of a panic in `print!`.
                // SAFETY: restores the default action of one signal before any thread starts.
                unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            }
            dispatch(other)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            if e.downcast_ref::<run::NoEpoch>().is_some() {
                ExitCode::from(3)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Commands that print to standard output and end. The daemons (`run`, the gateway, the
/// workers) keep Rust's default of ignoring SIGPIPE: a closed pipe is an error they report, not
/// a reason to die. (Sockets never raise it: the standard library sends with MSG_NOSIGNAL.)
fn writes_to_a_pipe_and_ends(c: &Option<Command>) -> bool {
    !matches!(
        c,
        None | Some(Command::Run(_)) | Some(Command::RoleGateway(_)) | Some(Command::Worker(_))
    )
}

fn dispatch(command: Option<Command>) -> Result<()> {
    match command {
        None | Some(Command::Run(_)) => {
            Cli::command().print_help()?;
            Ok(())
        }
        Some(Command::Simulate(a)) => simulate::command(a),
        Some(Command::Eval(a)) => eval::command(a),
        Some(Command::Audit(a)) => audit::command(a),
        Some(Command::Incidents(a)) => incidents::command(a),
        Some(Command::Overhead(a)) => overhead::command(a),
        Some(Command::Draw(a)) => Ok(canary_controller::draw::main(&a)?),
        Some(Command::View(a)) => Ok(canary_controller::view::main(&a)?),
        Some(Command::Traffic(a)) => Ok(canary_lab::traffic_gen::main(&a)?),
        Some(Command::Faults(a)) => faults::command(a),
        Some(Command::Decision(a)) => decision::command(a),
        Some(Command::RoleGateway(a)) => role_gateway::command(a),
        Some(Command::Worker(a)) => worker::command(a),
        Some(Command::HarvestCost(a)) => harvest_cost::command(a),
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
