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
pub mod over_time;
pub mod plot;
pub mod sweep;
pub mod trace;

use crate::{Error, Result};
use canary_controller::report::Summary;
use canary_controller::setup::{load_faults, load_topology};
use canary_controller::simulate::{self, FaultReport, SimulateOptions};
use canary_core::fault::{self, loss_vector, Fault};
use canary_core::localize::netbouncer::ProbePath;
use canary_core::localize::vote007::{per_flow_blame, tally};
use canary_core::localize::Vote007Params;
use canary_core::localize::{
    probe_matrix, CanaryParams, CdOnSegments, Detector, Flock, FlockInput, Localizer, NetBouncer,
    NetBouncerParams, PmcParams, Verdict, Vote007,
};
use canary_core::score::Score;
use canary_core::topo::{LinkIx, Routing, Topology};
use canary_sim::bounce_probes::bounce_probes;
use canary_sim::matrix_probes::{probe_paths, PmProbeParams};
use canary_sim::tcp007::{simulate_epoch, Epoch007, Tcp007Params};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

/// The localizers `canary eval` knows, by their command-line names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Canary,
    CanaryCd1,
    FlockCanary,
    NetBouncer,
    NetBouncerStage,
    NetBouncerPaper,
    Flock,
    FlockA2,
    Vote007,
    Detector,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Canary,
        Kind::CanaryCd1,
        Kind::FlockCanary,
        Kind::NetBouncer,
        Kind::NetBouncerStage,
        Kind::NetBouncerPaper,
        Kind::Flock,
        Kind::FlockA2,
        Kind::Vote007,
        Kind::Detector,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Canary => "canary",
            Kind::CanaryCd1 => "canary-cd1",
            Kind::FlockCanary => "flock-canary",
            Kind::NetBouncer => "netbouncer",
            Kind::NetBouncerStage => "netbouncer-stage",
            Kind::NetBouncerPaper => "netbouncer-paper",
            Kind::Flock => "flock",
            Kind::FlockA2 => "flock-a2",
            Kind::Vote007 => "007",
            Kind::Detector => "detector",
        }
    }

    /// Needs Canary's packet-level run.
    fn needs_canary_run(self) -> bool {
        matches!(self, Kind::Canary | Kind::CanaryCd1 | Kind::FlockCanary)
    }

    /// Fed bounce probes (or a Flock trace).
    fn needs_probes(self) -> bool {
        matches!(
            self,
            Kind::NetBouncer | Kind::NetBouncerStage | Kind::NetBouncerPaper | Kind::Flock
        )
    }

    /// Fed 007's TCP epoch.
    fn needs_tcp_epoch(self) -> bool {
        matches!(self, Kind::Vote007 | Kind::FlockA2)
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown localizer `{s}` (known: {})", names.join(", "))
            })
    }
}

/// Parses `canary,netbouncer,...`.
pub fn parse_kinds(list: &str) -> Result<Vec<Kind>> {
    let mut kinds = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let k: Kind = name
            .parse()
            .map_err(|e: String| Error::arg("--localizers", e))?;
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    if kinds.is_empty() {
        return Err(Error::arg("--localizers", "name at least one localizer"));
    }
    Ok(kinds)
}

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

/// A blamed directed link, by switch names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlamedReport {
    pub link: [String; 2],
    pub loss: f64,
}

/// Precision, recall and F1 of one stage's cumulative verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageScore {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

impl From<&Score> for StageScore {
    fn from(s: &Score) -> Self {
        Self {
            precision: s.precision,
            recall: s.recall,
            f1: s.f1,
        }
    }
}

/// One localizer's verdict, scored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalizerReport {
    pub blamed: Vec<BlamedReport>,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub inference_ms: f64,
    pub stages: Vec<StageScore>,
    /// Probe paths the system probed (NetBouncer's bounce plan, deTector's probe matrix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_paths: Option<usize>,
    /// Probe packets sent in all (deTector: confirmation probes included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes_sent: Option<u64>,
    /// 007 only: share of the traced flows whose drops a faulty link caused most (the paper's
    /// "failure drops") for which 007's per-flow culprit is that link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_flow_accuracy: Option<f64>,
    /// On a fault schedule: time to detect and to clear, each epoch localized on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_time: Option<over_time::Timing>,
    #[serde(skip)]
    pub tp: usize,
    #[serde(skip)]
    pub fp: usize,
    #[serde(skip)]
    pub fn_: usize,
}

/// Localizer reports in the order they were asked for (serialised as a JSON object).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reports(pub Vec<(String, LocalizerReport)>);

impl Serialize for Reports {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl Reports {
    pub fn get(&self, name: &str) -> Option<&LocalizerReport> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

/// The `--json` document of one seed.
#[derive(Clone, Debug, Serialize)]
pub struct EvalReport {
    pub topology: String,
    pub seed: u64,
    pub faults: Vec<FaultReport>,
    pub localizers: Reports,
    /// The calibrated parameters these localizers ran with (`--calibrate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<calibrate::Calibration>,
}

/// A random stream for one system's telemetry, independent of the others and of the fault draw.
pub fn stream(seed: u64, tag: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(tag);
    r
}

const STREAM_BOUNCE: u64 = 1;
const STREAM_007: u64 = 2;
const STREAM_DETECTOR: u64 = 3;

/// Scores a verdict on directed links; blamed links are listed once each.
pub fn score_verdict(topo: &Topology, truth: &[LinkIx], v: &Verdict, ms: f64) -> LocalizerReport {
    let mut seen = std::collections::HashSet::new();
    let blamed: Vec<BlamedReport> = v
        .blamed
        .iter()
        .filter(|b| seen.insert(b.link))
        .map(|b| {
            let [x, y] = topo.link_names(b.link);
            BlamedReport {
                link: [x.into(), y.into()],
                loss: b.loss,
            }
        })
        .collect();
    let links: Vec<LinkIx> = v.blamed.iter().map(|b| b.link).collect();
    let n = topo.links.len();
    let s = Score::of(&links, truth, n);
    LocalizerReport {
        blamed,
        precision: s.precision,
        recall: s.recall,
        f1: s.f1,
        inference_ms: ms,
        stages: v
            .stages
            .iter()
            .map(|st| (&Score::of(st, truth, n)).into())
            .collect(),
        probe_paths: None,
        probes_sent: None,
        per_flow_accuracy: None,
        over_time: None,
        tp: s.tp,
        fp: s.fp,
        fn_: s.fn_,
    }
}

fn from_summary(s: &Summary) -> LocalizerReport {
    LocalizerReport {
        blamed: s
            .blamed
            .iter()
            .map(|b| BlamedReport {
                link: b.link.clone(),
                loss: b.loss,
            })
            .collect(),
        precision: s.precision,
        recall: s.recall,
        f1: s.f1,
        inference_ms: s.localize_ms,
        stages: s.stages.iter().map(Into::into).collect(),
        probe_paths: None,
        probes_sent: None,
        per_flow_accuracy: None,
        over_time: None,
        tp: s.tp,
        fp: s.fp,
        fn_: s.fn_,
    }
}

fn timed<L: Localizer>(l: &L, topo: &Topology, input: &L::Input) -> (Verdict, f64) {
    let t = Instant::now();
    let v = l.localize(topo, input);
    (v, t.elapsed().as_secs_f64() * 1e3)
}

/// The topology, faults and loss vector of a seed, drawn as `run_full` draws them.
pub fn draw_fabric(sim: &SimulateOptions) -> Result<(Topology, Vec<Fault>, Vec<f64>)> {
    let topo = load_topology(&sim.topology, sim.monitors)?;
    let mut rng = ChaCha8Rng::seed_from_u64(sim.seed);
    let faults = load_faults(&sim.faults, &topo, &mut rng)?;
    let loss = loss_vector(&topo, &faults, sim.noise, &mut rng);
    Ok((topo, faults, loss))
}

/// The per-link background loss of a seed, drawn as `run_full` draws it (after the faults).
fn draw_background(sim: &SimulateOptions) -> Result<Vec<f64>> {
    let topo = load_topology(&sim.topology, sim.monitors)?;
    let mut rng = ChaCha8Rng::seed_from_u64(sim.seed);
    load_faults(&sim.faults, &topo, &mut rng)?;
    Ok(fault::background(&topo, sim.noise, &mut rng))
}

/// A localizer's calibrated parameters, if `--calibrate` chose some for it.
fn tuned(k: Kind, opts: &EvalOptions) -> Option<&calibrate::TunedParams> {
    opts.calibration.as_ref().and_then(|c| c.get(k.name()))
}

/// NetBouncer's parameters for the variant `k` (default, staged, or the paper's, calibrated).
fn nb_params(k: Kind, opts: &EvalOptions) -> NetBouncerParams {
    let mut params = match k {
        Kind::NetBouncer => NetBouncerParams::default(),
        Kind::NetBouncerStage => NetBouncerParams::staged(),
        _ => NetBouncerParams::paper(),
    };
    params.cd.lambda = opts.nb_lambda;
    if k == Kind::NetBouncerPaper {
        if let Some(c) = tuned(k, opts).and_then(|t| t.netbouncer()) {
            params = c.params();
        }
    }
    params
}

fn flock_for(k: Kind, opts: &EvalOptions) -> Flock {
    Flock {
        params: tuned(k, opts).and_then(|t| t.flock()).unwrap_or_default(),
    }
}

fn vote007_for(opts: &EvalOptions) -> Vote007 {
    let mut z = Vote007::default();
    if let Some(t) = tuned(Kind::Vote007, opts).and_then(|t| t.vote007()) {
        z.params.threshold = t;
    }
    z
}

/// Bounce probes for NetBouncer and Flock: simulated, or read from `--flock-trace`.
fn bounce_input(
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
fn tcp_epoch(opts: &EvalOptions, topo: &Topology, loss: &[f64]) -> Epoch007 {
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

/// Canary's localizer parameters as `run_full` sets them (groups and floor).
fn canary_params(sim: &SimulateOptions) -> CanaryParams {
    canary_controller::controller::localizer_params(
        sim.groups,
        sim.quantile_groups,
        sim.floor,
        sim.decision,
    )
}

/// The table for people: one row per localizer.
pub fn render_table(r: &EvalReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} seed {}: {} faulty directed links",
        r.topology,
        r.seed,
        r.faults.len()
    );
    let _ = writeln!(
        s,
        "{:<17} {:>4} {:>4} {:>4} {:>9} {:>7} {:>6} {:>13}",
        "localizer", "TP", "FP", "FN", "precision", "recall", "F1", "inference ms"
    );
    for (name, x) in &r.localizers.0 {
        let _ = writeln!(
            s,
            "{:<17} {:>4} {:>4} {:>4} {:>9.3} {:>7.3} {:>6.3} {:>13.2}",
            name, x.tp, x.fp, x.fn_, x.precision, x.recall, x.f1, x.inference_ms
        );
    }
    if r.localizers.0.iter().any(|(_, x)| x.over_time.is_some()) {
        let _ = writeln!(
            s,
            "over time, each epoch on its own telemetry (episodes: fault onsets; repairs):\n\
             {:<17} {:>9} {:>12} {:>9} {:>11} {:>13}",
            "localizer", "detected", "mean detect", "cleared", "mean clear", "FP link-ep."
        );
        let mean = |m: Option<f64>| m.map_or("—".to_string(), |m| format!("{m:.1}"));
        for (name, x) in &r.localizers.0 {
            match &x.over_time {
                Some(t) => {
                    let _ = writeln!(
                        s,
                        "{:<17} {:>9} {:>12} {:>9} {:>11} {:>13}",
                        name,
                        format!("{}/{}", t.detected, t.episodes),
                        mean(t.mean_detect),
                        format!("{}/{}", t.cleared, t.repairs),
                        mean(t.mean_clear),
                        t.false_positive_link_epochs
                    );
                }
                None => {
                    let _ = writeln!(s, "{name:<17} (runs on Canary's whole-run observations)");
                }
            }
        }
    }
    s
}
