//! `canary eval --calibrate SEEDS`: the parameter calibration of the Flock paper (§5.2), which
//! that paper applied to Flock and to the baselines it compared (NetBouncer, 007).
//!
//! The rule, as the paper states it: grid over each localizer's hyper-parameters on a simulated
//! *training* set; for a minimum precision `P` take the setting with the highest recall among
//! those whose precision is `> P`; start with `P = 98 %`, and if no setting qualifies or the best
//! recall is below 25 %, lower `P` by 5 % and try again, until a setting is found ([`pick`]).
//! Precision and recall of a setting are the means over the training seeds of each seed's
//! precision and recall ([`Score::of`]: 1 when nothing is blamed, as in the Flock authors'
//! `GetPrecisionRecall`, and their `GetPrecisionRecallParamsFiles` averages over traces the same
//! way). Ties: equal recall (within [`TIE_EPS`]) goes to the higher precision, then to the
//! setting listed first in the grid. `P` steps are whole percents (98, 93, …, 3, −2), so no
//! floating-point drift; at −2 % every setting qualifies, and if even the best recall is below
//! 25 % it is taken anyway ([`Pick::recall_floor_met`] is then false).
//!
//! What is calibrated (the knobs the paper counts): Flock's `p_g`, `p_b`, `ρ` for `flock` (A1,
//! bounce probes) and `flock-a2` (007's traced retransmitting flows); NetBouncer's three
//! (λ, the fail threshold on `1 − x`, the device-failure bad-flow fraction) for
//! `netbouncer-paper`; 007's one (Algorithm 1's vote-share threshold) for `007`. Canary and the
//! Canary-comparison variants (`netbouncer`, `netbouncer-stage`, `flock-canary`) keep their fixed
//! parameters: the Canary paper did not calibrate them. deTector is not in the Flock paper.
//!
//! The training set is the evaluated setting (topology, fault model, noise, probes, TCP flows)
//! on other seeds, optionally with another fault spec (`--calibrate-faults`, e.g. the Flock
//! paper §7.3 reuses §7.1's parameters on single faults of swept drop rate). Everything is
//! seeded, so a calibration is deterministic; grid points run in parallel (rayon), results are
//! collected in grid order.

mod chosen;
mod grid;
mod rule;

pub use chosen::{seed_list, Calibrated, Calibration, TunedParams};
pub use grid::{flock_grid, netbouncer_grid, vote007_grid, NbSetting};
pub use rule::{
    calibrate, grid_scores, pick, GridScore, Pick, MIN_RECALL, START_PCT, STEP_PCT, TIE_EPS,
};

use super::telemetry::{bounce_input, draw_fabric, tcp_epoch};
use super::{EvalOptions, Kind};
use crate::{Error, Result};
use canary_core::localize::netbouncer::ProbePath;
use canary_core::localize::{
    Flock, FlockInput, Localizer, NetBouncer, Verdict, Vote007, Vote007Params,
};
use canary_core::score::Score;
use canary_core::topo::{LinkIx, Topology};
use canary_sim::tcp007::Epoch007;
use rayon::prelude::*;

/// What `--calibrate` asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrateSpec {
    /// Training seeds (disjoint from the test seeds).
    pub seeds: Vec<u64>,
    /// Training fault spec; `None`: the evaluated one.
    pub faults: Option<String>,
}

impl CalibrateSpec {
    /// Fails when a training seed is also a test seed.
    pub fn check_disjoint(&self, test: &[u64]) -> Result<()> {
        let shared: Vec<u64> = self
            .seeds
            .iter()
            .copied()
            .filter(|s| test.contains(s))
            .collect();
        if !shared.is_empty() {
            let message = format!(
                "seeds {} are also test seeds; training and test seeds must be disjoint",
                seed_list(&shared)
            );
            return Err(Error::arg("--calibrate", message));
        }
        Ok(())
    }

    /// The options the training set is simulated with: `opts` with the training fault spec, no
    /// trace files and no calibration.
    pub fn training_options(&self, opts: &EvalOptions) -> EvalOptions {
        let mut t = opts.clone();
        if let Some(f) = &self.faults {
            t.sim.faults = f.clone();
        }
        t.export_flock_trace = None;
        t.flock_trace = None;
        t.calibration = None;
        t
    }
}

/// Whether `a` and `b` simulate the same training set (what calibration depends on).
pub fn same_training(a: &EvalOptions, b: &EvalOptions) -> bool {
    a.sim.topology == b.sim.topology
        && a.sim.faults == b.sim.faults
        && a.sim.noise.to_bits() == b.sim.noise.to_bits()
        && a.probes == b.probes
        && a.tcp == b.tcp
        && a.localizers == b.localizers
}

/// The localizers `--calibrate` tunes.
pub fn calibrated_kind(k: Kind) -> bool {
    matches!(
        k,
        Kind::Flock | Kind::FlockA2 | Kind::NetBouncerPaper | Kind::Vote007
    )
}

/// One training seed's telemetry.
struct Sample {
    topo: Topology,
    truth: Vec<LinkIx>,
    probes: Vec<ProbePath>,
    a1: FlockInput,
    epoch: Option<Epoch007>,
    a2: FlockInput,
}

fn simulate_sample(opts: &EvalOptions, seed: u64) -> Result<Sample> {
    let mut o = opts.clone();
    o.sim.seed = seed;
    let (topo, faults, loss) = draw_fabric(&o.sim)?;
    let truth = faults.iter().map(|f| f.link).collect();
    let wants = |k: Kind| o.localizers.contains(&k);
    let probes = if wants(Kind::Flock) || wants(Kind::NetBouncerPaper) {
        bounce_input(&o, &topo, &faults, &loss)?
    } else {
        Vec::new()
    };
    let a1 = FlockInput::from_probes(&probes);
    let epoch = (wants(Kind::FlockA2) || wants(Kind::Vote007)).then(|| tcp_epoch(&o, &topo, &loss));
    let a2 = epoch
        .as_ref()
        .map(|e| FlockInput::from_flows_a2(&e.reports))
        .unwrap_or_default();
    Ok(Sample {
        topo,
        truth,
        probes,
        a1,
        epoch,
        a2,
    })
}

fn score(topo: &Topology, truth: &[LinkIx], v: &Verdict) -> Score {
    let links: Vec<LinkIx> = v.blamed.iter().map(|b| b.link).collect();
    Score::of(&links, truth, topo.links.len())
}

/// Calibrates every localizer of `opts.localizers` that [`calibrated_kind`] names, on the
/// training set `spec` describes. `None` when there is none to calibrate.
pub fn run(opts: &EvalOptions, spec: &CalibrateSpec) -> Result<Option<Calibration>> {
    let kinds: Vec<Kind> = opts
        .localizers
        .iter()
        .copied()
        .filter(|&k| calibrated_kind(k))
        .collect();
    if kinds.is_empty() {
        return Ok(None);
    }
    if spec.seeds.is_empty() {
        return Err(Error::arg("--calibrate", "name at least one training seed"));
    }
    let mut topts = spec.training_options(opts);
    topts.localizers = kinds.clone();
    let training: Vec<Sample> = spec
        .seeds
        .par_iter()
        .map(|&s| simulate_sample(&topts, s))
        .collect::<Result<_>>()?;
    let mut localizers = Vec::new();
    for k in kinds {
        let (grid, scores): (Vec<TunedParams>, Vec<GridScore>) = match k {
            Kind::Flock | Kind::FlockA2 => {
                let grid = flock_grid();
                let a2 = k == Kind::FlockA2;
                let scores = grid_scores(&grid, &training, |p, t: &Sample| {
                    let input = if a2 { &t.a2 } else { &t.a1 };
                    score(
                        &t.topo,
                        &t.truth,
                        &Flock { params: *p }.localize(&t.topo, input),
                    )
                });
                (grid.into_iter().map(TunedParams::Flock).collect(), scores)
            }
            Kind::NetBouncerPaper => {
                let grid = netbouncer_grid();
                let scores = grid_scores(&grid, &training, |p: &NbSetting, t: &Sample| {
                    let nb = NetBouncer::new(p.params());
                    score(&t.topo, &t.truth, &nb.localize(&t.topo, &t.probes))
                });
                (
                    grid.into_iter().map(TunedParams::NetBouncer).collect(),
                    scores,
                )
            }
            Kind::Vote007 => {
                let grid = vote007_grid();
                let scores = grid_scores(&grid, &training, |&threshold, t: &Sample| {
                    let z = Vote007 {
                        params: Vote007Params {
                            threshold,
                            ..Default::default()
                        },
                    };
                    let reports = &t.epoch.as_ref().expect("simulated").reports;
                    score(&t.topo, &t.truth, &z.localize(&t.topo, reports))
                });
                let grid = grid
                    .into_iter()
                    .map(|threshold| TunedParams::Vote007 { threshold })
                    .collect();
                (grid, scores)
            }
            _ => unreachable!("not a calibrated localizer"),
        };
        for (p, s) in grid.iter().zip(&scores) {
            tracing::debug!(
                localizer = k.name(),
                setting = %p.describe(),
                precision = s.precision,
                recall = s.recall,
                "calibration grid"
            );
        }
        let chosen = pick(&scores).expect("a non-empty grid");
        localizers.push(Calibrated {
            localizer: k.name().to_string(),
            params: grid[chosen.index].clone(),
            min_precision: chosen.min_precision,
            precision: chosen.precision,
            recall: chosen.recall,
            recall_floor_met: chosen.recall_floor_met,
            settings: grid.len(),
        });
    }
    Ok(Some(Calibration {
        seeds: spec.seeds.clone(),
        topology: topts.sim.topology.clone(),
        faults: topts.sim.faults.clone(),
        localizers,
    }))
}

#[cfg(test)]
mod tests;
