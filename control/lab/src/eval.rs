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
use canary_controller::simulate::{self, FaultReport, SimulateOptions};
use canary_core::fault;
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
use std::path::PathBuf;
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
    let (topo, faults, loss) = draw_fabric(&opts.sim)?;
    let truth: Vec<LinkIx> = faults.iter().map(|f| f.link).collect();
    let full = if opts.localizers.iter().any(|k| k.needs_canary_run()) {
        let full = simulate::run_full(&opts.sim, |_| {})?;
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
        let text = trace::write_probes(&topo, &probes, &faults).to_text();
        std::fs::write(path, text).map_err(|source| Error::Write {
            what: "Flock trace",
            path: path.clone(),
            source,
        })?;
        // The companion topology file Flock's reader needs beside the trace.
        let topo_path = trace::topology_path(path);
        std::fs::write(&topo_path, trace::topology_text(&topo)).map_err(|source| Error::Write {
            what: "Flock topology",
            path: topo_path,
            source,
        })?;
    }
    let tcp_epoch = opts
        .localizers
        .iter()
        .any(|k| k.needs_tcp_epoch())
        .then(|| tcp_epoch(opts, &topo, &loss));
    let bounce_stats = |r: &mut LocalizerReport| {
        r.probe_paths = Some(probes.len());
        r.probes_sent = Some(probes.iter().map(|p| u64::from(p.sent)).sum());
    };
    let flock = |k: Kind| flock_for(k, opts);
    let mut reports = Vec::new();
    for &k in &opts.localizers {
        let r = match k {
            Kind::Canary => from_summary(&full.as_ref().expect("ran").result.summary),
            Kind::CanaryCd1 => {
                let obs = &full.as_ref().expect("ran").observations;
                let l = CdOnSegments {
                    params: canary_params(&opts.sim),
                };
                let (v, ms) = timed(&l, &topo, obs);
                score_verdict(&topo, &truth, &v, ms)
            }
            Kind::FlockCanary => {
                let obs = &full.as_ref().expect("ran").observations;
                let input = FlockInput::from_segments(obs.segments.iter().map(|s| {
                    let lost = if s.success < 1.0 { s.lost } else { 0 };
                    (s.links.as_slice(), s.sent, lost)
                }));
                let (v, ms) = timed(&Flock::default(), &topo, &input);
                score_verdict(&topo, &truth, &v, ms)
            }
            Kind::NetBouncer | Kind::NetBouncerStage | Kind::NetBouncerPaper => {
                let (v, ms) = timed(&NetBouncer::new(nb_params(k, opts)), &topo, &probes);
                let mut r = score_verdict(&topo, &truth, &v, ms);
                bounce_stats(&mut r);
                r
            }
            Kind::Flock => {
                let input = FlockInput::from_probes(&probes);
                let (v, ms) = timed(&flock(k), &topo, &input);
                let mut r = score_verdict(&topo, &truth, &v, ms);
                bounce_stats(&mut r);
                r
            }
            Kind::FlockA2 => {
                let epoch = tcp_epoch.as_ref().expect("simulated");
                let input = FlockInput::from_flows_a2(&epoch.reports);
                let (v, ms) = timed(&flock(k), &topo, &input);
                score_verdict(&topo, &truth, &v, ms)
            }
            Kind::Vote007 => {
                let epoch = tcp_epoch.as_ref().expect("simulated");
                let z = vote007_for(opts);
                let (v, ms) = timed(&z, &topo, &epoch.reports);
                let mut r = score_verdict(&topo, &truth, &v, ms);
                r.per_flow_accuracy = per_flow_accuracy(&topo, &truth, epoch, &z.params);
                r
            }
            Kind::Detector => {
                let routing = Routing::new(&topo);
                let m = probe_matrix(&topo, &routing, &opts.pmc);
                let params = PmProbeParams {
                    probes: opts.probes,
                    ..Default::default()
                };
                let mut rng = stream(opts.sim.seed, STREAM_DETECTOR);
                let input = probe_paths(&topo, &m.paths, &loss, &params, &mut rng);
                let (v, ms) = timed(&Detector::default(), &topo, &input);
                let mut r = score_verdict(&topo, &truth, &v, ms);
                r.probe_paths = Some(m.paths.len());
                r.probes_sent = Some(input.iter().map(|p| u64::from(p.sent)).sum());
                r
            }
        };
        reports.push((k.name().to_string(), r));
    }
    if fault::scheduled(&faults) {
        let bg = draw_background(&opts.sim)?;
        // One report per asked-for localizer, in that order.
        for (&k, (_, r)) in opts.localizers.iter().zip(&mut reports) {
            r.over_time = match k {
                Kind::Canary => Some(over_time::Timing::of_report(
                    &full.as_ref().expect("ran").result.summary.over_time,
                )),
                _ => over_time::verdicts(k, opts, &topo, &faults, &bg, opts.sim.epochs)
                    .map(|v| over_time::timing(&topo, &faults, &v)),
            };
        }
    }
    Ok(EvalReport {
        topology: topo.name.clone(),
        seed: opts.sim.seed,
        faults: faults.iter().map(|f| FaultReport::of(&topo, f)).collect(),
        localizers: Reports(reports),
        calibration: opts.calibration.clone(),
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
