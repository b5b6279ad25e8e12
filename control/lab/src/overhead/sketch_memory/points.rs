//! One loss rate, structure by structure: the narrowest width at which the structure decodes
//! the trials' losses often enough, and its decode time at that width.

use super::encode::{canary_bits, canary_trial, fermats, flowradars};
use super::search::{min_width, success};
use super::trial::{Lost, Trial};
use super::{mean, median, Point};
use crate::overhead::link::Line2;
use crate::{Error, Result};
use canary_core::sketch::fermat::FermatConfig;
use canary_core::sketch::flowradar::{self, FlowRadarConfig};
use canary_core::sketch::lossradar::{LossRadar, LossRadarConfig, LossRadarDiff, PacketId};
use std::collections::HashSet;
use std::time::Instant;

/// The trials with what the link drops at one loss rate.
pub(super) struct AtLoss<'a> {
    pub(super) trials: &'a [Trial],
    pub(super) lost: Vec<Lost>,
    /// Required decoding success rate.
    pub(super) target: f64,
    /// Trials timed at the width found.
    pub(super) timing: usize,
}

impl AtLoss<'_> {
    fn n(&self) -> usize {
        self.trials.len()
    }

    fn seed(&self, i: usize) -> u64 {
        self.trials[i].seed
    }

    /// FlowRadar: every flow at both ends.
    pub(super) fn flowradar(&self, flows: usize) -> Option<Point> {
        let (trials, lost) = (self.trials, &self.lost);
        let found = min_width((flows * 2) / 5, 1 << 22, |w| {
            success(self.n(), self.target, |i| {
                let cfg = FlowRadarConfig::new(w, self.seed(i));
                let (up, down) = flowradars(&trials[i], &lost[i], cfg);
                flowradar::losses(&up, &down).is_ok_and(|l| l == lost[i].truth)
            })
        });
        found.map(|(w, r)| {
            let cfg = |i| FlowRadarConfig::new(w, self.seed(i));
            let times = (0..self.timing)
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
        })
    }

    /// LossRadar: lost packets. The search uses the difference meter built from the lost
    /// packets; the timing trials build it the long way and check it is the same.
    pub(super) fn lossradar(&self) -> Result<Option<Point>> {
        let lost = &self.lost;
        let lost_pkts = mean(lost.iter().map(|l| l.packets.len() as f64));
        let found = min_width(((lost_pkts * 0.42) as usize).max(1), 1 << 24, |w| {
            success(self.n(), self.target, |i| {
                let cfg = LossRadarConfig::new(w, self.seed(i));
                LossRadarDiff::of_lost(cfg, &lost[i].packets)
                    .decode()
                    .is_ok_and(|d| d == lost[i].packets)
            })
        });
        found
            .map(|(w, r)| -> Result<Point> {
                let mut times = Vec::new();
                for (t, l) in self.trials.iter().zip(lost).take(self.timing.min(3)) {
                    let cfg = LossRadarConfig::new(w, t.seed);
                    times.push(timed_lossradar(t, l, cfg, w)?);
                }
                Ok(Point {
                    width: w,
                    memory_bytes: LossRadarConfig::new(w, 0).memory_bits() as f64 / 8.0,
                    success_rate: r,
                    decode_us: median(times),
                    items: lost_pkts,
                })
            })
            .transpose()
    }

    /// FermatSketch: lossy flows.
    pub(super) fn fermat(&self) -> Option<Point> {
        let (trials, lost) = (self.trials, &self.lost);
        let lossy = mean(lost.iter().map(|l| l.truth.len() as f64));
        let found = min_width(((lossy * 0.42) as usize).max(1), 1 << 22, |w| {
            success(self.n(), self.target, |i| {
                let cfg = FermatConfig::new(w, self.seed(i));
                let (up, down) = fermats(&trials[i], &lost[i], cfg);
                up.subtract(&down)
                    .and_then(|d| d.decode())
                    .is_ok_and(|d| d == lost[i].truth)
            })
        });
        found.map(|(w, r)| {
            let cfg = |i| FermatConfig::new(w, self.seed(i));
            let times = (0..self.timing)
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
        })
    }

    /// Canary: the monitored flows' meters, widths a power of two.
    pub(super) fn canary(&self, line: &Line2) -> Option<Point> {
        let (trials, lost) = (self.trials, &self.lost);
        for e in 0..=16 {
            let w = 1usize << e;
            if let Some(r) = success(self.n(), self.target, |i| {
                canary_trial(line, &trials[i], &lost[i], w).0
            }) {
                let times = (0..self.timing)
                    .map(|i| canary_trial(line, &trials[i], &lost[i], w).2)
                    .collect();
                return Some(Point {
                    width: w,
                    memory_bytes: canary_bits(w) as f64 / 8.0,
                    success_rate: r,
                    decode_us: median(times),
                    items: mean(lost.iter().map(|l| l.monitored.len() as f64)),
                });
            }
        }
        None
    }

    /// Share of trials in which Canary's monitored flows showed a loss, at the width found.
    pub(super) fn detection_rate(&self, line: &Line2, canary: Option<&Point>) -> f64 {
        canary.map_or(0.0, |c| {
            mean((0..self.n()).map(|i| {
                let saw = canary_trial(line, &self.trials[i], &self.lost[i], c.width).1;
                if saw {
                    1.0
                } else {
                    0.0
                }
            }))
        })
    }
}

/// Encodes every packet of trial `t` at both switches into LossRadars of shape `cfg`, subtracts
/// and decodes, and returns the decode time (µs); the difference must equal the shortcut
/// [`LossRadarDiff::of_lost`] the search used.
fn timed_lossradar(t: &Trial, l: &Lost, cfg: LossRadarConfig, w: usize) -> Result<f64> {
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
    let time = t0.elapsed().as_secs_f64() * 1e6;
    if diff != LossRadarDiff::of_lost(cfg, &l.packets) {
        return Err(Error::LossRadarShortcut { width: w });
    }
    Ok(time)
}
