//! Data-center scale inside the program's switch memory.
//!
//! The packet simulator stops at k = 16; this runs k up to 48 at the meter level. Every epoch the
//! watch plan ([`canary_core::schedule`]) picks the segments the switches' real meters (the
//! program's 3 × 1024) and tables can count; the watched segments get β flows each, synthesized
//! into those meters ([`canary_sim::synth::synth_watched`]); the controller's own detection reads
//! them (minus meters), keeps each segment's latest watch ([`LastShown`]) and localizes from every
//! segment's latest evidence. What is timed is what the controller does with one epoch's meters:
//! minus meters, the evidence update, success probabilities and Canary.
//!
//! What stands in for the switches: each watched segment counts β fresh flows of α/β packets
//! (flow selection is assumed to have found them, and seen them arrive), drawn through the
//! links' loss rates; a fault on a share of flows drops only those flows' packets, and a flow
//! that lost every packet is charged to its segment (absence is loss).

use crate::{Error, Result};
use canary_controller::report::EpochReport;
pub use canary_controller::run_document::synthesized::{
    ScaleEpoch, ScaleFault, ScaleRun, ScaleSetup,
};
use canary_controller::run_document::RunDocument;
use canary_controller::setup::{load_faults, load_topology, prepare, Prepared};
use canary_core::capacity::Capacity;
use canary_core::detect::minus_meters_expecting;
use canary_core::fault::{active_links, background, link_losses, Fault};
use canary_core::localize::{Canary, CanaryParams, Localizer};
use canary_core::schedule::adaptive::{AdaptiveWatch, LinkSegments};
use canary_core::schedule::fresh::{freshness, LossOnsets};
use canary_core::schedule::{LastShown, WatchBudget, WatchPlan};
use canary_core::score::Score;
use canary_core::topo::SegmentId;
use canary_core::topo::{LinkIx, MonitorPlacement, Topology};
use canary_sim::synth::{synth_watched, SynthConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;
use watching::Adaptive;
pub use watching::{Watching, MAX_WAIT};

/// Canary's F1 at every k of the paper's Fig. 10 was above this.
pub const PAPER_F1: f64 = 0.95;

#[derive(Clone, Debug)]
pub struct ScaleOptions {
    pub topology: String,
    pub faults: String,
    pub noise: f64,
    pub epochs: u32,
    pub seed: u64,
    /// What every switch holds (default: the program's).
    pub capacity: Capacity,
    /// β and α per watched segment.
    pub synth: SynthConfig,
    /// Epochs each round of the watch plan lasts.
    pub dwell: u32,
    pub canary: CanaryParams,
    /// Localize before every round has had its turn (the controller does not: a lossy
    /// segment's neighbours may not be counted yet).
    pub blame_in_first_sweep: bool,
    /// Every fault starts at this epoch (`None`: as the fault spec says), to time the detection
    /// of a fault that begins after the first sweep.
    pub faults_from: Option<u64>,
    pub watching: Watching,
}

impl Default for ScaleOptions {
    fn default() -> Self {
        Self {
            topology: "fattree:8".into(),
            faults: "random:10%".into(),
            noise: 0.0,
            epochs: 10,
            seed: 1,
            capacity: Capacity::of_program(),
            synth: SynthConfig::default(),
            dwell: 1,
            canary: CanaryParams::default(),
            blame_in_first_sweep: false,
            faults_from: None,
            watching: Watching::default(),
        }
    }
}

/// A synthesized run, as its document: every epoch's report, the summary, and what the run
/// measured of itself (`synthesized`: the watch plan, each epoch's cost, each fault's time to
/// detect).
pub fn run(opts: &ScaleOptions, on_epoch: impl FnMut(&ScaleEpoch)) -> Result<RunDocument> {
    let r = run_parts(opts, on_epoch)?;
    Ok(document::of_run(
        &r.topo, opts.seed, &r.faults, r.reports, r.measured,
    ))
}

/// What a synthesized run measures of itself, without its document.
pub fn measure(opts: &ScaleOptions, on_epoch: impl FnMut(&ScaleEpoch)) -> Result<ScaleRun> {
    Ok(run_parts(opts, on_epoch)?.measured)
}

struct Parts {
    measured: ScaleRun,
    reports: Vec<EpochReport>,
    topo: Topology,
    faults: Vec<Fault>,
}

fn run_parts(opts: &ScaleOptions, mut on_epoch: impl FnMut(&ScaleEpoch)) -> Result<Parts> {
    let t = Instant::now();
    let topo = load_topology(&opts.topology, Some(MonitorPlacement::TopAndBottom))?;
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut faults = load_faults(&opts.faults, &topo, &mut rng)?;
    if let Some(from) = opts.faults_from {
        for f in &mut faults {
            f.when.from = from;
        }
    }
    let bg = background(&topo, opts.noise, &mut rng);
    let prep = prepare(topo, Default::default())?;
    let prepare_s = t.elapsed().as_secs_f64();
    if prep.segments.is_empty() {
        return Err(Error::NoSegments {
            topology: opts.topology.clone(),
        });
    }

    let t = Instant::now();
    let budget = WatchBudget::of(&opts.capacity, opts.synth.flows_per_segment);
    let plan = WatchPlan::new(&prep.segments, budget, opts.dwell);
    let adaptive = (opts.watching == Watching::Adaptive).then(|| Adaptive {
        watch: AdaptiveWatch::new(&prep.segments, budget),
        through: LinkSegments::new(&prep.segments, prep.topo.links.len()),
        onsets: LossOnsets::new(prep.segments.len()),
    });
    let (rounds, period) = match &adaptive {
        Some(a) => (a.watch.half_rounds(), a.watch.bound()),
        None => (plan.rounds(), plan.period()),
    };
    let setup = ScaleSetup {
        topology: opts.topology.clone(),
        switches: prep.topo.switches.len(),
        hosts: prep.topo.hosts.len(),
        monitors: prep.topo.monitors().count(),
        segments: prep.segments.len(),
        links: prep.topo.links.len(),
        meters: opts.capacity.meter,
        segments_per_monitor: budget.segments_per_monitor,
        rounds,
        period,
        adaptive: adaptive.is_some(),
        prepare_s,
        plan_ms: t.elapsed().as_secs_f64() * 1e3,
    };

    let mut controller = Controller::new(opts, &prep, &plan, adaptive, faults, bg);
    let mut epochs = Vec::with_capacity(opts.epochs as usize);
    let mut reports = Vec::with_capacity(opts.epochs as usize);
    for e in 0..u64::from(opts.epochs) {
        let (epoch, report) = controller.epoch(e, &mut rng)?;
        on_epoch(&epoch);
        epochs.push(epoch);
        reports.push(report);
    }

    let links = prep.topo.links.len();
    let after_first_period = pooled(
        epochs
            .iter()
            .filter(|e| e.epoch + 1 >= period)
            .map(|e| e.score),
        links,
    );
    let measured = ScaleRun {
        setup,
        faults: controller.faults(),
        accurate_from: accurate_from(&epochs),
        epochs,
        after_first_period,
        peak_rss_mb: peak_rss_mb(),
    };
    let faults = controller.faults;
    Ok(Parts {
        measured,
        reports,
        topo: prep.topo,
        faults,
    })
}

/// The switches' meters and the controller, one epoch at a time.
struct Controller<'a> {
    opts: &'a ScaleOptions,
    prep: &'a Prepared,
    plan: &'a WatchPlan,
    adaptive: Option<Adaptive>,
    canary: Canary,
    shown: LastShown,
    faults: Vec<Fault>,
    /// Each link's background loss.
    bg: Vec<f64>,
    /// Per fault: the first epoch that blamed it.
    first_blamed: Vec<Option<u64>>,
}

impl<'a> Controller<'a> {
    fn new(
        opts: &'a ScaleOptions,
        prep: &'a Prepared,
        plan: &'a WatchPlan,
        adaptive: Option<Adaptive>,
        faults: Vec<Fault>,
        bg: Vec<f64>,
    ) -> Self {
        // Pins weighed by likelihood only when they and the losses are of the same epochs: not
        // when segments take turns (`CanaryParams::likelihood_ties`).
        let mut params = opts.canary.clone();
        params.likelihood_ties &= plan.rounds() <= 1;
        Controller {
            opts,
            prep,
            plan,
            // No blame is held from epoch to epoch here (`canary run` and `simulate` hold them).
            canary: Canary {
                params,
                incumbents: Vec::new(),
            },
            // The adaptive plan watches a lossy segment on and on: it shows its last 2–4 epochs.
            shown: match adaptive {
                Some(_) => LastShown::new(prep.segments.len()).with_window(2),
                None => LastShown::new(prep.segments.len()),
            },
            adaptive,
            first_blamed: vec![None; faults.len()],
            faults,
            bg,
        }
    }

    /// Epoch `e`: the watched segments' meters synthesized, then what the controller does with
    /// them, timed; with its report.
    fn epoch(&mut self, e: u64, rng: &mut ChaCha8Rng) -> Result<(ScaleEpoch, EpochReport)> {
        let (opts, prep) = (self.opts, self.prep);
        let (topo, segments, codec) = (&prep.topo, &prep.segments, &prep.codec);
        let loss = link_losses(&self.bg, &self.faults, e);
        let watched: Vec<SegmentId> = match &mut self.adaptive {
            Some(a) => a.watch.next_watch(),
            None => self.plan.watched_at(e).to_vec(),
        };
        let synth = synth_watched(
            topo,
            segments,
            codec,
            &loss,
            &opts.synth,
            opts.capacity.meter,
            &watched,
            rng,
        )
        .map_err(|source| Error::Meters {
            topology: opts.topology.clone(),
            meters: "the meters of the capacity",
            source,
        })?;

        let t = Instant::now();
        let det = minus_meters_expecting(segments, codec, &synth.snapshots, &synth.expected);
        let minus_meters_ms = t.elapsed().as_secs_f64() * 1e3;
        self.shown.observe(e, &det.segments, segments, 1);
        let detect_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let first_sweep =
            self.adaptive.is_none() && !opts.blame_in_first_sweep && e + 1 < self.plan.period();
        let (verdict, waiting, stale) = match &mut self.adaptive {
            Some(a) => {
                a.onsets.update(e, &watched, &self.shown);
                let fresh = freshness(&self.shown, &a.onsets, &a.through, e, MAX_WAIT);
                let canary = &self.canary;
                let v = self
                    .shown
                    .with_held_out(&fresh.held_out, |obs| canary.localize(topo, obs));
                a.watch.focus_after(&fresh, &self.shown, &a.through);
                (v, fresh.waiting.len(), fresh.stale)
            }
            None if first_sweep => (Default::default(), 0, 0),
            None => (self.canary.localize(topo, self.shown.view()), 0, 0),
        };
        let localize_ms = t.elapsed().as_secs_f64() * 1e3;

        let blamed: Vec<LinkIx> = verdict.blamed.iter().map(|b| b.link).collect();
        for (i, f) in self.faults.iter().enumerate() {
            if self.first_blamed[i].is_none() && f.active(e) && blamed.contains(&f.link) {
                self.first_blamed[i] = Some(e);
            }
        }
        let measured = ScaleEpoch {
            epoch: e,
            watched: watched.len(),
            flows_sent: synth.flows,
            flows_counted: det.flows(),
            evidence: self.shown.ages(e),
            waiting,
            stale,
            score: Score::of(&blamed, &active_links(&self.faults, e), topo.links.len()),
            blamed,
            minus_meters_ms,
            detect_ms,
            localize_ms,
            epoch_ms: detect_ms + localize_ms,
        };
        let report = document::epoch_report(
            topo,
            segments.len(),
            &verdict,
            match &self.adaptive {
                Some(a) => document::Round {
                    round: a.watch.half_sweeps_begun() % a.watch.half_rounds(),
                    rounds: a.watch.half_rounds(),
                    dwell: 1,
                    first_sweep_until: None,
                },
                None => document::Round::of_plan(self.plan, e, first_sweep),
            },
            &measured,
        );
        Ok((measured, report))
    }

    /// Each fault with when it was first blamed.
    fn faults(&self) -> Vec<ScaleFault> {
        self.faults
            .iter()
            .zip(&self.first_blamed)
            .map(|(f, first)| scale_fault(&self.prep.topo, f, *first))
            .collect()
    }
}

/// The first epoch from which every epoch's F1 is at least [`PAPER_F1`].
fn accurate_from(epochs: &[ScaleEpoch]) -> Option<u64> {
    epochs
        .iter()
        .rposition(|e| e.score.f1 < PAPER_F1)
        .map_or(Some(0), |last_bad| {
            (last_bad + 1 < epochs.len()).then_some(last_bad as u64 + 1)
        })
}

fn scale_fault(topo: &canary_core::topo::Topology, f: &Fault, first: Option<u64>) -> ScaleFault {
    let [a, b] = topo.link_names(f.link);
    let onset = f.when.from;
    ScaleFault {
        link: [a.into(), b.into()],
        loss: f.loss,
        time_to_detect: first.map(|e| e.saturating_sub(onset) + 1),
    }
}

/// Scores summed over epochs of a fabric of `links` directed links.
fn pooled(scores: impl Iterator<Item = Score>, links: usize) -> Score {
    let (mut tp, mut fp, mut fn_, mut tn) = (0, 0, 0, 0);
    for s in scores {
        tp += s.tp;
        fp += s.fp;
        fn_ += s.fn_;
        tn += links.saturating_sub(s.tp + s.fp + s.fn_);
    }
    Score::from_counts(tp, fp, fn_, tn)
}

/// The process's peak resident memory (`VmHWM`), where Linux reports it.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

mod document;
mod watching;

#[cfg(test)]
mod tests;
