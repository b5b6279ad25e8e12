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
mod search;
mod trial;

pub use encode::canary_bits;
pub use trial::packets_needed;

use super::link::Line2;
use super::traffic::LinkTraffic;
use crate::{Error, Result};
use canary_core::sketch::fermat::FermatConfig;
use canary_core::sketch::flowradar::{self, FlowRadarConfig};
use canary_core::sketch::lossradar::{LossRadar, LossRadarConfig, LossRadarDiff, PacketId};
use canary_core::sketch::seeded::mix64;
use encode::{canary_trial, fermats, flowradars};
use rayon::prelude::*;
use search::{min_width, success};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Instant;
use trial::{Lost, Trial};

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
    let timing = opts.timing_trials.clamp(1, opts.trials);
    let mut rows = Vec::new();
    for &p in &opts.losses {
        let lost: Vec<Lost> = trials.par_iter().map(|t| t.lose(p)).collect();
        let n = trials.len();
        let target = opts.target;
        let seed = |i: usize| trials[i].seed;

        // FlowRadar: every flow at both ends.
        let flows = opts.traffic.flows;
        let flowradar = min_width((flows * 2) / 5, 1 << 22, |w| {
            success(n, target, |i| {
                let (up, down) = flowradars(&trials[i], &lost[i], FlowRadarConfig::new(w, seed(i)));
                flowradar::losses(&up, &down).is_ok_and(|l| l == lost[i].truth)
            })
        })
        .map(|(w, r)| {
            let cfg = |i| FlowRadarConfig::new(w, seed(i));
            let times = (0..timing)
                .map(|i| {
                    let (up, down) = flowradars(&trials[i], &lost[i], cfg(i));
                    let t0 = Instant::now();
                    let _ = flowradar::losses(&up, &down);
                    t0.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            Point {
                width: w,
                memory_bytes: cfg(0).memory_bits() as f64 / 8.0,
                success_rate: r,
                decode_us: median(times),
                items: flows as f64,
            }
        });

        // LossRadar: lost packets.
        let lost_pkts = mean(lost.iter().map(|l| l.packets.len() as f64));
        let lossradar = min_width(((lost_pkts * 0.42) as usize).max(1), 1 << 24, |w| {
            success(n, target, |i| {
                let cfg = LossRadarConfig::new(w, seed(i));
                LossRadarDiff::of_lost(cfg, &lost[i].packets)
                    .decode()
                    .is_ok_and(|d| d == lost[i].packets)
            })
        })
        .map(|(w, r)| -> Result<Point> {
            let mut times = Vec::new();
            for i in 0..timing.min(3) {
                let (t, l) = (&trials[i], &lost[i]);
                let cfg = LossRadarConfig::new(w, seed(i));
                let (mut up, mut down) = (LossRadar::new(cfg), LossRadar::new(cfg));
                let dropped: HashSet<PacketId> = l.packets.iter().copied().collect();
                for (fi, flow) in t.epoch.flows.iter().enumerate() {
                    for ipid in 0..t.epoch.sizes[fi] {
                        let pkt = PacketId {
                            flow: *flow,
                            ipid: ipid as u16,
                        };
                        up.insert(&pkt);
                        if !dropped.contains(&pkt) {
                            down.insert(&pkt);
                        }
                    }
                }
                let t0 = Instant::now();
                let diff = up
                    .subtract(&down)
                    .map_err(|source| Error::LossRadar { width: w, source })?;
                let _ = diff.decode();
                times.push(t0.elapsed().as_secs_f64() * 1e6);
                if diff != LossRadarDiff::of_lost(cfg, &l.packets) {
                    return Err(Error::LossRadarShortcut { width: w });
                }
            }
            Ok(Point {
                width: w,
                memory_bytes: LossRadarConfig::new(w, 0).memory_bits() as f64 / 8.0,
                success_rate: r,
                decode_us: median(times),
                items: lost_pkts,
            })
        })
        .transpose()?;

        // FermatSketch: lossy flows.
        let lossy = mean(lost.iter().map(|l| l.truth.len() as f64));
        let fermat = min_width(((lossy * 0.42) as usize).max(1), 1 << 22, |w| {
            success(n, target, |i| {
                let (up, down) = fermats(&trials[i], &lost[i], FermatConfig::new(w, seed(i)));
                up.subtract(&down)
                    .and_then(|d| d.decode())
                    .is_ok_and(|d| d == lost[i].truth)
            })
        })
        .map(|(w, r)| {
            let cfg = |i| FermatConfig::new(w, seed(i));
            let times = (0..timing)
                .map(|i| {
                    let (up, down) = fermats(&trials[i], &lost[i], cfg(i));
                    let t0 = Instant::now();
                    let _ = up.subtract(&down).and_then(|d| d.decode());
                    t0.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            Point {
                width: w,
                memory_bytes: cfg(0).memory_bits() as f64 / 8.0,
                success_rate: r,
                decode_us: median(times),
                items: lossy,
            }
        });

        // Canary: the monitored flows' meters, widths a power of two.
        let mut canary = None;
        for e in 0..=16 {
            let w = 1usize << e;
            if let Some(r) = success(n, target, |i| {
                canary_trial(&line, &trials[i], &lost[i], w).0
            }) {
                let times = (0..timing)
                    .map(|i| canary_trial(&line, &trials[i], &lost[i], w).2)
                    .collect();
                canary = Some(Point {
                    width: w,
                    memory_bytes: canary_bits(w) as f64 / 8.0,
                    success_rate: r,
                    decode_us: median(times),
                    items: mean(lost.iter().map(|l| l.monitored.len() as f64)),
                });
                break;
            }
        }
        let seen = canary.as_ref().map_or(0.0, |c| {
            mean((0..n).map(|i| {
                let saw = canary_trial(&line, &trials[i], &lost[i], c.width).1;
                if saw {
                    1.0
                } else {
                    0.0
                }
            }))
        });
        let canary_over_fermat = match (&canary, &fermat) {
            (Some(c), Some(f)) => Some(c.memory_bytes / f.memory_bytes),
            _ => None,
        };
        rows.push(Row {
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
        });
    }
    Ok(SketchMemory {
        traffic: opts.traffic,
        trials: opts.trials,
        target: opts.target,
        mean_packets,
        rows,
    })
}

#[cfg(test)]
mod tests;
