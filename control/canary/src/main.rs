//! The `canary` command: one module per command; this file parses and dispatches.

mod args;
mod audit;
mod eval;
mod overhead;
mod role_gateway;
mod run;
mod scale;
mod simulate;
mod worker;

use anyhow::Result;
use canary_controller::setup::load_topology;
use canary_core::topo::MonitorPlacement;
use clap::{Parser, Subcommand};

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
    Simulate(simulate::SimulateArgs),
    /// Control real switches: push the pipeline, run epochs, report lossy links.
    Run(Box<run::RunArgs>),
    /// Run every localizer of the papers on one simulated fabric and score them side by side.
    Eval(eval::EvalArgs),
    /// Memory and decoding cost against FlowRadar, LossRadar and FermatSketch (Fig. 6, Table II),
    /// flow selection under churn (Fig. 7), heavy hitters against HashPipe (Fig. 11).
    Overhead(overhead::OverheadArgs),
    /// Check that every segment's pathBF decodes; reassign switch IDs where it does not.
    Audit(audit::AuditArgs),
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
    /// Send heavy-tailed UDP traffic from one testbed host and count what it receives.
    Traffic(canary_lab::traffic_gen::TrafficArgs),
    /// Serve P4Runtime with roles in front of a switch whose own server has none (BMv2), so
    /// Canary (`run --role canary`) and the fabric's controller can each be primary.
    RoleGateway(role_gateway::RoleGatewayArgs),
    /// One partition of a run's stages on a cluster.
    Worker(worker::WorkerArgs),
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        None => simulate::command(simulate::SimulateArgs::parse_from(["simulate"])),
        Some(Command::Simulate(a)) => simulate::command(a),
        Some(Command::Run(a)) => run::command(*a),
        Some(Command::Eval(a)) => eval::command(a),
        Some(Command::Audit(a)) => audit::command(a),
        Some(Command::Overhead(a)) => overhead::command(a),
        Some(Command::Draw(a)) => Ok(canary_controller::draw::main(&a)?),
        Some(Command::View(a)) => Ok(canary_controller::view::main(&a)?),
        Some(Command::Traffic(a)) => Ok(canary_lab::traffic_gen::main(&a)?),
        Some(Command::RoleGateway(a)) => role_gateway::command(a),
        Some(Command::Worker(a)) => worker::command(a),
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
