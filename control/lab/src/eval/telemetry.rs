//! Each system's telemetry for one seed: the fabric drawn as `run_full` draws it, then every
//! system's probes or flows from its own seeded stream, so no localizer's draw shifts another's.

use super::{trace, EvalOptions};
use crate::{Error, Result};
use canary_controller::setup::{load_faults, load_topology};
use canary_controller::simulate::SimulateOptions;
use canary_core::fault::{self, loss_vector, Fault};
use canary_core::localize::netbouncer::ProbePath;
use canary_core::topo::{LinkIx, Routing, Topology};
use canary_sim::bounce_probes::bounce_probes;
use canary_sim::tcp007::{simulate_epoch, Epoch007};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A random stream for one system's telemetry, independent of the others and of the fault draw.
pub fn stream(seed: u64, tag: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(tag);
    r
}

const STREAM_BOUNCE: u64 = 1;
const STREAM_007: u64 = 2;
pub(super) const STREAM_DETECTOR: u64 = 3;

/// The topology, faults and loss vector of a seed, drawn as `run_full` draws them.
pub fn draw_fabric(sim: &SimulateOptions) -> Result<(Topology, Vec<Fault>, Vec<f64>)> {
    let topo = load_topology(&sim.topology, sim.pipeline.monitors)?;
    let mut rng = ChaCha8Rng::seed_from_u64(sim.seed);
    let faults = load_faults(&sim.faults, &topo, &mut rng)?;
    let loss = loss_vector(&topo, &faults, sim.noise, &mut rng);
    Ok((topo, faults, loss))
}

/// The per-link background loss of a seed, drawn as `run_full` draws it (after the faults).
pub(super) fn draw_background(sim: &SimulateOptions) -> Result<Vec<f64>> {
    let topo = load_topology(&sim.topology, sim.pipeline.monitors)?;
    let mut rng = ChaCha8Rng::seed_from_u64(sim.seed);
    load_faults(&sim.faults, &topo, &mut rng)?;
    Ok(fault::background(&topo, sim.noise, &mut rng))
}

/// Bounce probes for NetBouncer and Flock: simulated, or read from `--flock-trace`.
pub(super) fn bounce_input(
    opts: &EvalOptions,
    topo: &Topology,
    faults: &[Fault],
    loss: &[f64],
) -> Result<Vec<ProbePath>> {
    if let Some(path) = &opts.flock_trace {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            what: "Flock trace",
            path: path.clone(),
            source,
        })?;
        let file = path.display().to_string();
        let probes = trace::read_probes(topo, &text, &file)?;
        // Again for its Failing_link lines (read_probes has accepted the text).
        let parsed =
            canary_core::localize::flock_trace::FlockTrace::parse(&text).map_err(|error| {
                Error::Trace {
                    file: file.clone(),
                    error,
                }
            })?;
        let mut theirs: Vec<LinkIx> = trace::failing_links(topo, &parsed)
            .iter()
            .map(|f| f.link)
            .collect();
        let mut ours: Vec<LinkIx> = faults.iter().map(|f| f.link).collect();
        theirs.sort_unstable();
        ours.sort_unstable();
        if theirs != ours {
            eprintln!(
                "warning: {file}: its Failing_link lines ({}) differ from this run's faults ({}); \
                 scoring against the run's faults",
                theirs.len(),
                ours.len()
            );
        }
        return Ok(probes);
    }
    let mut rng = stream(opts.sim.seed, STREAM_BOUNCE);
    Ok(bounce_probes(topo, loss, opts.probes, &mut rng))
}

/// One 30-s epoch of TCP flows with traceroutes: 007's and Flock(A2)'s input.
pub(super) fn tcp_epoch(opts: &EvalOptions, topo: &Topology, loss: &[f64]) -> Epoch007 {
    let routing = Routing::new(topo);
    let mut rng = stream(opts.sim.seed, STREAM_007);
    let epoch = simulate_epoch(topo, &routing, loss, &opts.tcp, &mut rng);
    tracing::debug!(
        flows = epoch.reports.len(),
        bad = epoch
            .reports
            .iter()
            .filter(|f| f.retransmissions > 0)
            .count(),
        traced = epoch.traced,
        denied_host = epoch.denied_host,
        denied_switch = epoch.denied_switch,
        max_icmp = epoch.max_icmp,
        "007 epoch"
    );
    epoch
}
