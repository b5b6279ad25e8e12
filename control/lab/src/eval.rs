//! `canary eval`: every localizer of the papers on one simulated fabric with one set of faults
//! (each on the telemetry its own system collects; docs/eval.md), scored on directed links.
//!
//! The topology, the faults and the per-link loss vector come from the seed exactly as
//! [`canary_controller::simulate::run_full`] draws them, so every localizer sees the same lossy links. Each
//! system then collects its own telemetry with its own seeded random stream:
//! * `canary`: the full pipeline on the packet simulator (its summary verdict);
//!   `canary-cd1` (one CD on Canary's segments) and `flock-canary` (Flock fed Canary's segments)
//!   reuse that run's observations;
//! * `netbouncer`, `netbouncer-stage`, `flock`: the same bounce probes (`--probes` per path), or a
//!   Flock trace read back with `--flock-trace`;
//! * `netbouncer-paper`: the same probes, NetBouncer as its own paper runs it (DFD, x ≤ 0.999);
//! * `007`: one epoch of TCP flows with traceroutes; `flock-a2`: Flock fed that epoch's traced
//!   retransmitting flows (the Flock paper's A2 input); `detector`: the probe matrix, probed.
//!
//! Inference time is the wall-clock time of the localizer's `localize` call only.
//!
//! With [`EvalOptions::calibration`] set (by [`calibrate::run`], `--calibrate`), `flock`,
//! `flock-a2`, `netbouncer-paper` and `007` run with the parameters the Flock paper's §5.2 rule
//! chose on training seeds instead of their defaults, and every report records them.

pub mod axis;
pub mod calibrate;
mod kind;
pub mod over_time;
mod params;
pub mod plot;
mod report;
pub mod sweep;
mod table;
mod telemetry;
pub mod trace;

pub use kind::{parse_kinds, Kind};
pub use report::{score_verdict, BlamedReport, EvalReport, LocalizerReport, Reports, StageScore};
pub use table::render_table;
pub use telemetry::{draw_fabric, stream};

use crate::{Error, Result};
use canary_controller::run_document::FaultReport;
use canary_controller::simulate::{self, FullRun, SimulateOptions};
use canary_core::fault::{self, Fault};
use canary_core::localize::netbouncer::ProbePath;
use canary_core::localize::vote007::{per_flow_blame, tally};
use canary_core::localize::{
    probe_matrix, CdOnSegments, Detector, Flock, FlockInput, Localizer, NetBouncer, PmcParams,
    Verdict, Vote007Params,
};
use canary_core::topo::{LinkIx, Routing, Topology};
use canary_sim::matrix_probes::{probe_paths, PmProbeParams};
use canary_sim::tcp007::{Epoch007, Tcp007Params};
use params::{canary_params, flock_for, nb_params, vote007_for};
use report::from_summary;
use std::path::{Path, PathBuf};
use std::time::Instant;
use telemetry::{bounce_input, draw_background, tcp_epoch, STREAM_DETECTOR};

#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// Topology, faults, seed, epochs, α and groups of Canary's run.
    pub sim: SimulateOptions,
    pub localizers: Vec<Kind>,
    /// Bounce and probe-matrix probes per path.
    pub probes: u32,
    /// 007's (and Flock(A2)'s) TCP epoch: connections per host, packets per flow.
    pub tcp: Tcp007Params,
    /// deTector's probe-matrix coverage α and identifiability β.
    pub pmc: PmcParams,
    /// NetBouncer's regulariser weight λ (all three NetBouncer variants); the paper's is 1.
    pub nb_lambda: f64,
    /// Write the bounce probes as a Flock trace here.
    pub export_flock_trace: Option<PathBuf>,
    /// Feed NetBouncer(-stage) and Flock from this Flock trace instead of simulated probes.
    pub flock_trace: Option<PathBuf>,
    /// Parameters calibrated on training seeds (Flock paper §5.2) for `flock`, `flock-a2`,
    /// `netbouncer-paper` and `007`; `None`: every localizer keeps its fixed defaults.
    pub calibration: Option<calibrate::Calibration>,
}

impl Default for EvalOptions {
    /// `canary eval`'s defaults.
    fn default() -> Self {
        Self {
            sim: SimulateOptions::default(),
            localizers: vec![Kind::NetBouncer],
            probes: 100,
            tcp: Tcp007Params::default(),
            pmc: PmcParams::default(),
            nb_lambda: 1.0,
            export_flock_trace: None,
            flock_trace: None,
            calibration: None,
        }
    }
}

fn timed<L: Localizer>(l: &L, topo: &Topology, input: &L::Input) -> (Verdict, f64) {
    let t = Instant::now();
    let v = l.localize(topo, input);
    (v, t.elapsed().as_secs_f64() * 1e3)
}

/// Runs every asked-for localizer on one seed.
pub fn run(opts: &EvalOptions) -> Result<EvalReport> {
    let t = Telemetry::collect(opts)?;
    let mut reports = Vec::new();
    for &k in &opts.localizers {
        reports.push((k.name().to_string(), t.report(k)));
    }
    if fault::scheduled(&t.faults) {
        t.add_over_time(&mut reports)?;
    }
    Ok(EvalReport {
        topology: t.topo.name.clone(),
        seed: opts.sim.seed,
        faults: t
            .faults
            .iter()
            .map(|f| FaultReport::of(&t.topo, f))
            .collect(),
        localizers: Reports(reports),
        calibration: opts.calibration.clone(),
    })
}

/// One seed's fabric and the telemetry the asked-for localizers read, each drawn only when one
/// of them needs it.
struct Telemetry<'a> {
    opts: &'a EvalOptions,
    topo: Topology,
    faults: Vec<Fault>,
    loss: Vec<f64>,
    /// The faulty links.
    truth: Vec<LinkIx>,
    /// Canary's run on the packet simulator.
    full: Option<FullRun>,
    /// The bounce probes (or those of `--flock-trace`); empty when nobody needs them.
    probes: Vec<ProbePath>,
    /// 007's epoch of traced TCP flows.
    tcp_epoch: Option<Epoch007>,
}

impl<'a> Telemetry<'a> {
    fn collect(opts: &'a EvalOptions) -> Result<Self> {
        let (topo, faults, loss) = draw_fabric(&opts.sim)?;
        let truth: Vec<LinkIx> = faults.iter().map(|f| f.link).collect();
        let full = if opts.localizers.iter().any(|k| k.needs_canary_run()) {
            let full = simulate::run_full(&opts.sim, |_| {})?;
            // Canary's run must have drawn the very faults the other systems see.
            if full.faults != faults || full.loss != loss {
                return Err(Error::FaultsDiffer {
                    seed: opts.sim.seed,
                });
            }
            Some(full)
        } else {
            None
        };
        let needs_probes = opts.localizers.iter().any(|k| k.needs_probes());
        let probes = if needs_probes || opts.export_flock_trace.is_some() {
            bounce_input(opts, &topo, &faults, &loss)?
        } else {
            Vec::new()
        };
        if let Some(path) = &opts.export_flock_trace {
            export_flock_trace(path, &topo, &probes, &faults)?;
        }
        let tcp_epoch = opts
            .localizers
            .iter()
            .any(|k| k.needs_tcp_epoch())
            .then(|| tcp_epoch(opts, &topo, &loss));
        Ok(Telemetry {
            opts,
            topo,
            faults,
            loss,
            truth,
            full,
            probes,
            tcp_epoch,
        })
    }

    fn full(&self) -> &FullRun {
        self.full.as_ref().expect("ran")
    }

    fn tcp_epoch(&self) -> &Epoch007 {
        self.tcp_epoch.as_ref().expect("simulated")
    }

    /// Localizer `k` run on its own telemetry, scored.
    fn report(&self, k: Kind) -> LocalizerReport {
        let (opts, topo, truth) = (self.opts, &self.topo, &self.truth);
        match k {
            Kind::Canary => from_summary(&self.full().result.summary),
            Kind::CanaryCd1 => {
                let l = CdOnSegments {
                    params: canary_params(&opts.sim),
                };
                let (v, ms) = timed(&l, topo, &self.full().observations);
                score_verdict(topo, truth, &v, ms)
            }
            Kind::FlockCanary => {
                let obs = &self.full().observations;
                let input = FlockInput::from_segments(obs.segments.iter().map(|s| {
                    let lost = if s.success < 1.0 { s.lost } else { 0 };
                    (s.links.as_slice(), s.sent, lost)
                }));
                let (v, ms) = timed(&Flock::default(), topo, &input);
                score_verdict(topo, truth, &v, ms)
            }
            Kind::NetBouncer | Kind::NetBouncerStage | Kind::NetBouncerPaper => {
                let (v, ms) = timed(&NetBouncer::new(nb_params(k, opts)), topo, &self.probes);
                self.with_bounce_stats(score_verdict(topo, truth, &v, ms))
            }
            Kind::Flock => {
                let input = FlockInput::from_probes(&self.probes);
                let (v, ms) = timed(&flock_for(k, opts), topo, &input);
                self.with_bounce_stats(score_verdict(topo, truth, &v, ms))
            }
            Kind::FlockA2 => {
                let input = FlockInput::from_flows_a2(&self.tcp_epoch().reports);
                let (v, ms) = timed(&flock_for(k, opts), topo, &input);
                score_verdict(topo, truth, &v, ms)
            }
            Kind::Vote007 => {
                let epoch = self.tcp_epoch();
                let z = vote007_for(opts);
                let (v, ms) = timed(&z, topo, &epoch.reports);
                let mut r = score_verdict(topo, truth, &v, ms);
                r.per_flow_accuracy = per_flow_accuracy(topo, truth, epoch, &z.params);
                r
            }
            Kind::Detector => self.detector(),
        }
    }

    /// A report on the bounce probes, with how many paths and probes they were.
    fn with_bounce_stats(&self, mut r: LocalizerReport) -> LocalizerReport {
        r.probe_paths = Some(self.probes.len());
        r.probes_sent = Some(self.probes.iter().map(|p| u64::from(p.sent)).sum());
        r
    }

    /// deTector: probes the probe matrix on its own stream, then localizes.
    fn detector(&self) -> LocalizerReport {
        let (opts, topo) = (self.opts, &self.topo);
        let routing = Routing::new(topo);
        let m = probe_matrix(topo, &routing, &opts.pmc);
        let params = PmProbeParams {
            probes: opts.probes,
            ..Default::default()
        };
        let mut rng = stream(opts.sim.seed, STREAM_DETECTOR);
        let input = probe_paths(topo, &m.paths, &self.loss, &params, &mut rng);
        let (v, ms) = timed(&Detector::default(), topo, &input);
        let mut r = score_verdict(topo, &self.truth, &v, ms);
        r.probe_paths = Some(m.paths.len());
        r.probes_sent = Some(input.iter().map(|p| u64::from(p.sent)).sum());
        r
    }

    /// Faults that come and go: each report (one per asked-for localizer, in that order) gets
    /// when its localizer first and last blamed each fault.
    fn add_over_time(&self, reports: &mut [(String, LocalizerReport)]) -> Result<()> {
        let (opts, topo, faults) = (self.opts, &self.topo, &self.faults);
        let bg = draw_background(&opts.sim)?;
        for (&k, (_, r)) in opts.localizers.iter().zip(reports) {
            r.over_time = match k {
                Kind::Canary => Some(over_time::Timing::of_report(
                    &self.full().result.summary.over_time,
                )),
                _ => over_time::verdicts(k, opts, topo, faults, &bg, opts.sim.epochs)
                    .map(|v| over_time::timing(topo, faults, &v)),
            };
        }
        Ok(())
    }
}

/// Writes the bounce probes as a Flock trace at `path`, and beside it the companion topology
/// file Flock's reader needs.
fn export_flock_trace(
    path: &Path,
    topo: &Topology,
    probes: &[ProbePath],
    faults: &[Fault],
) -> Result<()> {
    let text = trace::write_probes(topo, probes, faults).to_text();
    std::fs::write(path, text).map_err(|source| Error::Write {
        what: "Flock trace",
        path: path.to_path_buf(),
        source,
    })?;
    let topo_path = trace::topology_path(path);
    std::fs::write(&topo_path, trace::topology_text(topo)).map_err(|source| Error::Write {
        what: "Flock topology",
        path: topo_path,
        source,
    })
}

/// 007's per-flow accuracy (paper §6): among the traced flows whose drops a faulty link caused
/// most ("failure drops"; flows whose worst link is healthy are noise drops), the share whose
/// per-flow culprit is that link. `None` when there is no such flow.
fn per_flow_accuracy(
    topo: &Topology,
    truth: &[LinkIx],
    epoch: &Epoch007,
    params: &Vote007Params,
) -> Option<f64> {
    let votes = tally(topo.links.len(), &epoch.reports, params);
    let blame = per_flow_blame(&votes, &epoch.reports, params);
    let (mut n, mut ok) = (0u32, 0u32);
    for (b, culprit) in blame.iter().zip(&epoch.max_drop_link) {
        if let (Some(b), Some(c)) = (b, culprit) {
            if truth.contains(c) {
                n += 1;
                ok += u32::from(b == c);
            }
        }
    }
    (n > 0).then(|| f64::from(ok) / f64::from(n))
}
