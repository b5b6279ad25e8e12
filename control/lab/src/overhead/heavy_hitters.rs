//! Fig. 11: heavy hitters. Canary (DSM of 3 × w buckets plus the 3 × 32 HashPipe, the flow
//! selection loop of Fig. 7 with η = 16) against the original 6-stage HashPipe given the same
//! memory as Canary's downstream switch, over a 30-s trace (300 epochs).
//!
//! Canary's heavy-hitter list: every flow with its packets counted by the DSM (clean buckets,
//! summed over epochs) plus what the HashPipe held for it at the end of each epoch (it is
//! cleared every epoch; a monitored flow's packets skip it, so nothing is counted twice). The
//! original HashPipe runs over the whole trace without reset. Each reports its k largest; F1
//! is against the true k largest flows of the trace.
//!
//! Memory points (Fig. 11b): DSM width w ∈ {64, 128, 256} against `E` entries per stage with
//! `6 · E · 136 ≈ 3 · w · 169 + 3 · 32 · 136` bits: 56, 96 and 175 entries (the paper: 56, and
//! up to 176).

use super::link::Line2;
use super::twoswitch::{self, LoopConfig};
use super::TraceSpec;
use crate::{Error, Result};
use canary_core::select::SelectionParams;
use canary_core::sketch::hashpipe_orig::OriginalHashPipe;
use canary_core::sketch::{HashPipeConfig, MeterConfig, DSM_BUCKET_BITS, HASHPIPE_ENTRY_BITS};
use canary_core::FlowId;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// F1 of both methods for one top-k task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopK {
    pub k: usize,
    pub canary: f64,
    pub hashpipe: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub dsm_width: usize,
    /// Canary's downstream switch: DSM + 3-stage HashPipe.
    pub canary_bytes: f64,
    pub hashpipe_entries: usize,
    pub hashpipe_bytes: f64,
    /// Flows Canary monitored in the last epoch.
    pub canary_monitored: u32,
    pub topk: Vec<TopK>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeavyHitters {
    pub trace: String,
    pub epochs: u32,
    pub flows: usize,
    pub points: Vec<Point>,
}

/// Entries per stage of a 6-stage HashPipe with the memory of a `3 × w` DSM and the 3 × 32
/// HashPipe.
pub fn equal_entries(w: usize) -> usize {
    let bits = 3 * w * DSM_BUCKET_BITS + 3 * 32 * HASHPIPE_ENTRY_BITS;
    (bits as f64 / (6 * HASHPIPE_ENTRY_BITS) as f64).round() as usize
}

/// The k flows with most packets (ties broken by flow ID).
pub fn top(m: &HashMap<FlowId, u64>, k: usize) -> HashSet<FlowId> {
    let mut v: Vec<(u64, FlowId)> = m.iter().map(|(f, &c)| (c, *f)).collect();
    v.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    v.into_iter().take(k).map(|(_, f)| f).collect()
}

/// F1 of a reported set against the true set.
pub fn f1(reported: &HashSet<FlowId>, truth: &HashSet<FlowId>) -> f64 {
    if reported.is_empty() && truth.is_empty() {
        return 1.0;
    }
    2.0 * reported.intersection(truth).count() as f64 / (reported.len() + truth.len()) as f64
}

pub fn run(
    line: &Line2,
    trace: &TraceSpec,
    widths: &[usize],
    ks: &[usize],
    epochs: u32,
    seed: u64,
) -> Result<HeavyHitters> {
    let points: Vec<(Point, usize)> = widths
        .par_iter()
        .map(|&w| -> Result<(Point, usize)> {
            let at_width = |source| Error::DsmWidth { width: w, source };
            let cfg = LoopConfig {
                selection: SelectionParams {
                    adaptive_eta: false,
                    ..Default::default()
                },
                meters: MeterConfig::new(3, w).map_err(at_width)?,
                hashpipe: HashPipeConfig::new(3, 32, w).map_err(at_width)?,
                epoch_ns: 100_000_000,
                epochs,
            };
            let run = twoswitch::run(line, &cfg, trace.packets());
            let entries = equal_entries(w);
            let mut hp = OriginalHashPipe::new(6, entries, seed);
            let end = epochs as u64 * cfg.epoch_ns;
            for p in trace.packets().take_while(|p| p.t_ns < end) {
                hp.update(&p.flow);
            }
            let hp_est = hp.estimates();
            let topk = ks
                .iter()
                .map(|&k| {
                    let truth = top(&run.truth, k);
                    TopK {
                        k,
                        canary: f1(&top(&run.estimate, k), &truth),
                        hashpipe: f1(&top(&hp_est, k), &truth),
                    }
                })
                .collect();
            let canary_bits = 3 * w * DSM_BUCKET_BITS + 3 * 32 * HASHPIPE_ENTRY_BITS;
            Ok((
                Point {
                    dsm_width: w,
                    canary_bytes: canary_bits as f64 / 8.0,
                    hashpipe_entries: entries,
                    hashpipe_bytes: hp.memory_bits() as f64 / 8.0,
                    canary_monitored: run.epochs.last().map_or(0, |e| e.monitored_flows),
                    topk,
                },
                run.truth.len(),
            ))
        })
        .collect::<Result<_>>()?;
    let flows = points.first().map_or(0, |p| p.1);
    Ok(HeavyHitters {
        trace: trace.describe(),
        epochs,
        flows,
        points: points.into_iter().map(|p| p.0).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_memory_matches_the_papers_entries() {
        // The paper: 56 entries for w = 2^6, "up to 176" for w = 2^8 (we get 175.06).
        assert_eq!(equal_entries(64), 56);
        assert!(equal_entries(256).abs_diff(176) <= 1);
    }

    #[test]
    fn f1_of_sets() {
        let f = |n: u32| FlowId::v4(n, 0, 6, 0, 0);
        let a: HashSet<_> = [f(1), f(2), f(3), f(4)].into();
        let b: HashSet<_> = [f(1), f(2), f(5), f(6)].into();
        assert_eq!(f1(&a, &b), 0.5);
        assert_eq!(f1(&a, &a), 1.0);
        let m: HashMap<FlowId, u64> = [(f(1), 5), (f(2), 9), (f(3), 1)].into();
        assert_eq!(top(&m, 2), [f(1), f(2)].into());
    }
}
