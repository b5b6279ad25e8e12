//! Fig. 6: minimum memory for a 99 % decoding success rate, and decoding time, of FlowRadar,
//! LossRadar, FermatSketch and Canary on the two-switch network, against the link's loss rate.
//!
//! Each trial draws one epoch of traffic ([`LinkEpoch`](super::traffic::LinkEpoch): 10k flows,
//! 100 ms) and, per loss rate, which packets the link drops (independently, with probability
//! p). A sketch *succeeds* on a trial when its decoder returns exactly the true losses (every
//! lossy flow and its lost packets for FlowRadar and FermatSketch, every lost packet for
//! LossRadar); a decoding error or a wrong answer is a failure. Memory is searched over the
//! width of a row: the minimum width at which at least 99 % of the trials succeed (all trials
//! share their traffic across widths).
//!
//! Memory of each structure, per switch (Table I):
//! * FlowRadar: `3·w` cells of 144 bits plus a flow filter of 1/9 of that.
//! * LossRadar: `3·w` buckets of 152 bits. FermatSketch: `3·w` buckets of 136 bits.
//! * Canary: USM `3·w × 137` bits at the upstream switch, DSM `3·w × 169` bits and HashPipe
//!   `3 × 32 × 136` bits at the downstream switch (the paper's placement), `w` a power of two.
//!
//! What Canary must do at loss rate p: observe the loss. It counts the flows the HashPipe
//! reports (first count above η = 16, in report order) until they carry
//! `N(p) = ⌈ln(0.01) / ln(1 − p)⌉` packets, the fewest for which at least one loss is seen with
//! probability 0.99 (that is, α = N(p) and β = 1). Canary succeeds on a trial when every monitored
//! flow keeps a clean USM and DSM bucket, so the minus meter reads every monitored flow's loss
//! exactly; the JSON also gives the share of trials in which a loss was actually seen.
//!
//! The search encodes FlowRadar and FermatSketch at both switches flow by flow (`insert_n`,
//! equal to packet-by-packet insertion, tested in the core). LossRadar's search builds the
//! difference meter from the lost packets directly ([`LossRadarDiff::of_lost`]); at the width
//! found, the timing trials encode every packet at both switches, subtract, check the result
//! equals that shortcut bucket for bucket, and decode. Decode time is the median over the
//! timing trials of the decoder alone (for Canary, the minus meter).

mod encode;
mod points;
mod search;
mod trial;

pub use encode::canary_bits;
pub use trial::packets_needed;

use super::link::Line2;
use super::traffic::LinkTraffic;
use crate::{Error, Result};
use canary_core::sketch::seeded::mix64;
use points::AtLoss;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use trial::Trial;

#[derive(Clone, Debug)]
pub struct SketchMemoryOptions {
    pub losses: Vec<f64>,
    pub trials: usize,
    pub seed: u64,
    pub traffic: LinkTraffic,
    /// HashPipe count a flow must exceed to be reported (Table III).
    pub eta: u32,
    /// Required decoding success rate.
    pub target: f64,
    /// Trials timed at the width found.
    pub timing_trials: usize,
}

impl Default for SketchMemoryOptions {
    fn default() -> Self {
        SketchMemoryOptions {
            losses: vec![1e-4, 1e-3, 1e-2, 1e-1],
            trials: 100,
            seed: 1,
            traffic: LinkTraffic::default(),
            eta: 16,
            target: 0.99,
            timing_trials: 10,
        }
    }
}

/// One structure at one loss rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Buckets (cells) per row at the minimum.
    pub width: usize,
    /// Memory of one switch: one sketch; for Canary, the USM, DSM and HashPipe a monitor switch
    /// hosts (in the two-switch run the USM sits upstream and the DSM and HashPipe downstream).
    pub memory_bytes: f64,
    pub success_rate: f64,
    /// Median decode time at that width, µs.
    pub decode_us: f64,
    /// Mean number of items decoded per trial: flows (FlowRadar, upstream), lost packets
    /// (LossRadar), lossy flows (FermatSketch), monitored flows (Canary).
    pub items: f64,
}

/// Canary's extra figures at one loss rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CanaryExtra {
    /// N(p): packets to count to see a loss with probability 0.99.
    pub packets_needed: u64,
    /// Share of trials in which the monitored flows showed a loss.
    pub detection_rate: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub loss: f64,
    pub flowradar: Option<Point>,
    pub lossradar: Option<Point>,
    pub fermat: Option<Point>,
    pub canary: Option<Point>,
    pub canary_extra: CanaryExtra,
    /// Canary's memory as a share of FermatSketch's.
    pub canary_over_fermat: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SketchMemory {
    pub traffic: LinkTraffic,
    pub trials: usize,
    pub target: f64,
    pub mean_packets: f64,
    pub rows: Vec<Row>,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

pub fn run(opts: &SketchMemoryOptions) -> Result<SketchMemory> {
    run_with(opts, |_| {})
}

/// [`run`], saying what it is on before each loss rate (`progress`: "loss 0.001, 2 of 4").
pub fn run_with(
    opts: &SketchMemoryOptions,
    mut progress: impl FnMut(&str),
) -> Result<SketchMemory> {
    if opts.trials == 0 {
        return Err(Error::arg("--trials", "must be at least 1"));
    }
    if !opts.losses.iter().all(|&p| p > 0.0 && p < 1.0) {
        return Err(Error::arg("--losses", "loss rates must be in (0, 1)"));
    }
    let line = Line2::new()?;
    let trials: Vec<Trial> = (0..opts.trials)
        .into_par_iter()
        .map(|i| Trial::draw(mix64(opts.seed ^ mix64(i as u64)), &opts.traffic, opts.eta))
        .collect();
    let mean_packets = mean(trials.iter().map(|t| t.epoch.packets() as f64));
    let mut rows = Vec::new();
    for (i, &p) in opts.losses.iter().enumerate() {
        progress(&format!("loss {p}, {} of {}", i + 1, opts.losses.len()));
        rows.push(row(opts, &line, &trials, p)?);
    }
    Ok(SketchMemory {
        traffic: opts.traffic,
        trials: opts.trials,
        target: opts.target,
        mean_packets,
        rows,
    })
}

/// Every structure at loss rate `p`, on the same trials.
fn row(opts: &SketchMemoryOptions, line: &Line2, trials: &[Trial], p: f64) -> Result<Row> {
    let at = AtLoss {
        trials,
        lost: trials.par_iter().map(|t| t.lose(p)).collect(),
        target: opts.target,
        timing: opts.timing_trials.clamp(1, opts.trials),
    };
    let flowradar = at.flowradar(opts.traffic.flows);
    let lossradar = at.lossradar()?;
    let fermat = at.fermat();
    let canary = at.canary(line);
    let seen = at.detection_rate(line, canary.as_ref());
    let canary_over_fermat = match (&canary, &fermat) {
        (Some(c), Some(f)) => Some(c.memory_bytes / f.memory_bytes),
        _ => None,
    };
    Ok(Row {
        loss: p,
        flowradar,
        lossradar,
        fermat,
        canary,
        canary_extra: CanaryExtra {
            packets_needed: packets_needed(p),
            detection_rate: seen,
        },
        canary_over_fermat,
    })
}

#[cfg(test)]
mod tests;
