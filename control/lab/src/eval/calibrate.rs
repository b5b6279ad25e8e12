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

use super::telemetry::{bounce_input, draw_fabric, tcp_epoch};
use super::{EvalOptions, Kind};
use crate::{Error, Result};
use canary_core::localize::netbouncer::ProbePath;
use canary_core::localize::{
    Flock, FlockInput, FlockParams, Localizer, NetBouncer, NetBouncerParams, Threshold, Verdict,
    Vote007, Vote007Params,
};
use canary_core::score::Score;
use canary_core::topo::{LinkIx, Topology};
use canary_sim::tcp007::Epoch007;
use rayon::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;

/// The first minimum precision, in percent.
pub const START_PCT: i32 = 98;
/// How far `P` drops when no setting qualifies, in percent.
pub const STEP_PCT: i32 = 5;
/// The lowest acceptable recall at a given `P`.
pub const MIN_RECALL: f64 = 0.25;
/// Recalls (and precisions) closer than this are equal for tie-breaking.
pub const TIE_EPS: f64 = 1e-9;

/// Mean precision and recall of one grid setting over the training seeds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GridScore {
    pub precision: f64,
    pub recall: f64,
}

/// The setting the rule chose.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Pick {
    /// Index into the grid.
    pub index: usize,
    /// The minimum precision `P` at which it was chosen (0.98, 0.93, …).
    pub min_precision: f64,
    /// Its training precision and recall.
    pub precision: f64,
    pub recall: f64,
    /// False only when no setting reaches 25 % recall at any `P` (then: the best recall overall).
    pub recall_floor_met: bool,
}

/// Among the settings `eligible` admits, the highest recall; ties: higher precision, then the
/// lowest index.
fn best_recall(scores: &[GridScore], eligible: impl Fn(&GridScore) -> bool) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, s) in scores.iter().enumerate().filter(|(_, s)| eligible(s)) {
        let better = match best {
            None => true,
            Some(b) => {
                let b = &scores[b];
                s.recall > b.recall + TIE_EPS
                    || ((s.recall - b.recall).abs() <= TIE_EPS
                        && s.precision > b.precision + TIE_EPS)
            }
        };
        if better {
            best = Some(i);
        }
    }
    best
}

/// The Flock paper's §5.2 rule over the scores of a grid (see the module docs). `None` only for
/// an empty grid.
pub fn pick(scores: &[GridScore]) -> Option<Pick> {
    if scores.is_empty() {
        return None;
    }
    let mut pct = START_PCT;
    loop {
        let p = f64::from(pct) / 100.0;
        if let Some(i) = best_recall(scores, |s| s.precision > p) {
            let s = scores[i];
            let floor = s.recall >= MIN_RECALL;
            // Below 0 every setting qualifies: lowering P further changes nothing.
            if floor || p < 0.0 {
                return Some(Pick {
                    index: i,
                    min_precision: p,
                    precision: s.precision,
                    recall: s.recall,
                    recall_floor_met: floor,
                });
            }
        }
        pct -= STEP_PCT;
    }
}

/// Scores every setting of `grid` on every training sample (settings in parallel) and returns
/// the mean precision and recall per setting, in grid order.
pub fn grid_scores<P, I, F>(grid: &[P], training: &[I], score: F) -> Vec<GridScore>
where
    P: Sync,
    I: Sync,
    F: Fn(&P, &I) -> Score + Sync,
{
    let n = training.len().max(1) as f64;
    grid.par_iter()
        .map(|p| {
            let (mut precision, mut recall) = (0.0, 0.0);
            for t in training {
                let s = score(p, t);
                precision += s.precision;
                recall += s.recall;
            }
            GridScore {
                precision: precision / n,
                recall: recall / n,
            }
        })
        .collect()
}

/// Runs the grid and the rule: the chosen setting, how it was chosen, and the grid's size.
pub fn calibrate<P, I, F>(grid: &[P], training: &[I], score: F) -> Option<(P, Pick)>
where
    P: Sync + Clone,
    I: Sync,
    F: Fn(&P, &I) -> Score + Sync,
{
    let scores = grid_scores(grid, training, score);
    let chosen = pick(&scores)?;
    Some((grid[chosen.index].clone(), chosen))
}

/// `x` rounded to 12 significant digits, so that grid values are the decimals they print as.
fn round12(x: f64) -> f64 {
    format!("{x:.11e}")
        .parse()
        .expect("a formatted number parses")
}

/// 1-2-5 steps per decade from `lo` to `hi` (both included when they are such steps).
fn one_two_five(lo: f64, hi: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi * (1.0 + 1e-9) {
        for m in [1.0, 2.0, 5.0] {
            let x = round12(m * decade);
            if x >= lo * (1.0 - 1e-9) && x <= hi * (1.0 + 1e-9) {
                v.push(x);
            }
        }
        decade *= 10.0;
    }
    v
}

/// Flock's grid. The paper: "equally-spaced values in a reasonable range" of each parameter; its
/// authors' code (`reproduce_results.cpp`) spaces `p_b` and `p_g` linearly within one decade
/// (2e-3…1e-2 and 1e-4…8e-4) and the log prior irregularly (−5 … −200). Our inputs span more
/// decades (A1 round trips of 100 probes on 4 undirected links against A2 flows of 100 packets;
/// noise from 1e-6 to 1e-4; faults from 1e-3 to 1), so we space all three logarithmically:
/// * `p_g` ∈ 1e-5 … 1e-3 (1-2-5): a good path's per-packet loss, from below the quietest noise
///   we run to above a 4-link round trip at noise 1e-4 (≈ 4e-4 on average);
/// * `p_b` ∈ 1e-3 … 5e-2 (1-2-5), only `p_b > p_g`: a bad path's loss, the faulty links' rates
///   (0.1 % … 1 % one way, up to 2 % round trip) with room above;
/// * `ρ` = 10^−e for e ∈ {1, 2, 3, 4, 5, 6, 8, 10, 15}: log priors from −2.2 to −34.5, covering
///   the authors' chosen −4, −15 and −35.
///
/// Order: `p_g` outer, `p_b`, `ρ` inner, each ascending (ties go to the first).
pub fn flock_grid() -> Vec<FlockParams> {
    let rhos = [1, 2, 3, 4, 5, 6, 8, 10, 15].map(|e: i32| 10f64.powi(-e));
    let mut g = Vec::new();
    for p_g in one_two_five(1e-5, 1e-3) {
        for p_b in one_two_five(1e-3, 5e-2).into_iter().filter(|&b| b > p_g) {
            for rho in rhos {
                g.push(FlockParams { p_g, p_b, rho });
            }
        }
    }
    g
}

/// One NetBouncer setting, in the Flock authors' terms (their `net_bouncer.cpp` parameters).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NbSetting {
    /// CD's regulariser weight λ.
    pub lambda: f64,
    /// A link is bad when its estimated round-trip loss `1 − x` is at least this (the paper's
    /// simulation threshold x ≤ 0.999 is 1e-3).
    pub fail_threshold: f64,
    /// Device-failure detection flags a switch when more than this share of its probe paths lost
    /// a probe; 1 = only the paper's strict rule (no loss-free path at all).
    pub bad_flow_fraction: f64,
}

impl NbSetting {
    /// `netbouncer-paper` (DFD on) with this setting.
    pub fn params(&self) -> NetBouncerParams {
        let mut p = NetBouncerParams::paper();
        p.cd.lambda = self.lambda;
        p.threshold = Threshold::AtMost(1.0 - self.fail_threshold);
        p.dfd_min_clean_fraction = 1.0 - self.bad_flow_fraction;
        p
    }
}

/// NetBouncer's grid: λ ∈ 1e-3 … 1 (1-3 per decade: the authors chose 0.001 for A1 and 0.011
/// for INT, the paper's own is 1); fail threshold ∈ 5e-4 … 5e-2 (1-2-5: the paper's 1e-3, the
/// authors' 2e-3 and 7e-3); bad-flow fraction ∈ {1 (strict), 0.5, 0.25, 0.125} (the authors
/// chose 0.075 and 0.125; with link faults only, flagging a device blames all its links).
/// Order: λ outer, fail threshold, fraction inner.
pub fn netbouncer_grid() -> Vec<NbSetting> {
    let lambdas = [1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0];
    let mut g = Vec::new();
    for lambda in lambdas {
        for fail_threshold in one_two_five(5e-4, 5e-2) {
            for bad_flow_fraction in [1.0, 0.5, 0.25, 0.125] {
                g.push(NbSetting {
                    lambda,
                    fail_threshold,
                    bad_flow_fraction,
                });
            }
        }
    }
    g
}

/// 007's grid: Algorithm 1's threshold as a share of the votes cast, 1e-4 … 0.3 at 1, 1.5, 2,
/// 3, 5, 7 per decade (the authors swept 1e-4 … 0.3 linearly in steps of 2e-4 and chose 0.0023
/// for uniform traffic, 0.0083 for skewed; the 007 paper's own is 0.01). Ascending.
pub fn vote007_grid() -> Vec<f64> {
    let mut g = Vec::new();
    for e in -4..0 {
        for m in [1.0, 1.5, 2.0, 3.0, 5.0, 7.0] {
            let x = round12(m * 10f64.powi(e));
            if x <= 0.3 {
                g.push(x);
            }
        }
    }
    g
}

/// A calibrated localizer's parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum TunedParams {
    Flock(FlockParams),
    NetBouncer(NbSetting),
    Vote007 { threshold: f64 },
}

impl TunedParams {
    pub fn flock(&self) -> Option<FlockParams> {
        match self {
            Self::Flock(p) => Some(*p),
            _ => None,
        }
    }

    pub fn netbouncer(&self) -> Option<NbSetting> {
        match self {
            Self::NetBouncer(p) => Some(*p),
            _ => None,
        }
    }

    pub fn vote007(&self) -> Option<f64> {
        match self {
            Self::Vote007 { threshold } => Some(*threshold),
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Flock(p) => format!("p_g {:e}, p_b {:e}, rho {:e}", p.p_g, p.p_b, p.rho),
            Self::NetBouncer(p) => format!(
                "lambda {:e}, fail threshold {:e}, bad-flow fraction {}",
                p.lambda, p.fail_threshold, p.bad_flow_fraction
            ),
            Self::Vote007 { threshold } => format!("threshold {threshold:e} of the votes"),
        }
    }
}

/// One localizer's calibration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibrated {
    pub localizer: String,
    pub params: TunedParams,
    /// The minimum precision `P` the rule settled on, and the chosen setting's training means.
    pub min_precision: f64,
    pub precision: f64,
    pub recall: f64,
    pub recall_floor_met: bool,
    /// Settings in the grid.
    pub settings: usize,
}

/// Every calibrated localizer of a run, with the training set they were calibrated on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub seeds: Vec<u64>,
    pub topology: String,
    pub faults: String,
    pub localizers: Vec<Calibrated>,
}

impl Calibration {
    /// The calibrated parameters of localizer `name`, if it was calibrated.
    pub fn get(&self, name: &str) -> Option<&TunedParams> {
        self.localizers
            .iter()
            .find(|c| c.localizer == name)
            .map(|c| &c.params)
    }

    /// One line for the training set, one per localizer.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "calibrated (Flock §5.2: P from 98 % down by 5 %, recall >= 25 %) on {} {}, seeds {}:",
            self.topology,
            self.faults,
            seed_list(&self.seeds)
        );
        for c in &self.localizers {
            let _ = writeln!(
                s,
                "  {:<17} {}; P = {:.0} %, training precision {:.3} recall {:.3}{} ({} settings)",
                c.localizer,
                c.params.describe(),
                c.min_precision * 100.0,
                c.precision,
                c.recall,
                if c.recall_floor_met {
                    ""
                } else {
                    ", below the 25 % floor at every P"
                },
                c.settings
            );
        }
        s
    }
}

/// `101..108` for a contiguous list, else comma-separated.
pub fn seed_list(seeds: &[u64]) -> String {
    match seeds {
        [] => String::new(),
        [a] => a.to_string(),
        [a, .., b] if seeds.windows(2).all(|w| w[1] == w[0] + 1) => format!("{a}..{b}"),
        _ => seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}

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
