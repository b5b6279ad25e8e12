//! Scoring a verdict against injected truth, on directed links.

use crate::topo::LinkIx;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub tp: usize,
    pub fp: usize,
    #[serde(rename = "fn")]
    pub fn_: usize,
    /// 1 when nothing is blamed (Flock's convention).
    pub precision: f64,
    /// 1 when there is no fault.
    pub recall: f64,
    pub f1: f64,
    /// (TP + TN) / all links (the paper's Fig. 8a; it does not define it further).
    pub accuracy: f64,
}

impl Score {
    pub fn of(blamed: &[LinkIx], truth: &[LinkIx], n_links: usize) -> Self {
        let b: HashSet<LinkIx> = blamed.iter().copied().collect();
        let t: HashSet<LinkIx> = truth.iter().copied().collect();
        let tp = b.intersection(&t).count();
        let fp = b.len() - tp;
        let fn_ = t.len() - tp;
        Self::from_counts(tp, fp, fn_, n_links.saturating_sub(tp + fp + fn_))
    }

    /// The score of these counts (summed over epochs, say).
    pub fn from_counts(tp: usize, fp: usize, fn_: usize, tn: usize) -> Self {
        let precision = if tp + fp == 0 {
            1.0
        } else {
            tp as f64 / (tp + fp) as f64
        };
        let recall = if tp + fn_ == 0 {
            1.0
        } else {
            tp as f64 / (tp + fn_) as f64
        };
        let f1 = if precision + recall == 0.0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        };
        let all = tp + fp + fn_ + tn;
        let accuracy = if all == 0 {
            1.0
        } else {
            (tp + tn) as f64 / all as f64
        };
        Self {
            tp,
            fp,
            fn_,
            precision,
            recall,
            f1,
            accuracy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn papers_f1_arithmetic() {
        let truth: Vec<u32> = (0..26).collect();
        let f1 = |tp: u32, fp: u32| {
            let mut b: Vec<u32> = (0..tp).collect();
            b.extend(100..100 + fp);
            Score::of(&b, &truth, 256).f1
        };
        assert!((f1(15, 0) - 0.7317).abs() < 1e-4);
        assert!((f1(18, 0) - 0.8182).abs() < 1e-4);
        assert!((f1(22, 1) - 0.8980).abs() < 1e-4);
        assert_eq!(Score::of(&[], &[], 10).f1, 1.0);
    }
}

/// The Wilson score interval of a proportion `p` observed over `n` trials, at `z` standard
/// deviations (1.96: 95 %). Unlike `p ± z·sqrt(p(1−p)/n)` it stays inside [0, 1] and is not
/// zero-width at p = 0 or 1, which matters for losses of a few packets.
pub fn wilson(p: f64, n: u64, z: f64) -> [f64; 2] {
    if n == 0 {
        return [0.0, 1.0];
    }
    let p = p.clamp(0.0, 1.0);
    let n = n as f64;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    [(centre - half).max(0.0), (centre + half).min(1.0)]
}

#[cfg(test)]
mod wilson_tests {
    use super::wilson;

    #[test]
    fn wilson_intervals_match_the_textbook_and_stay_in_range() {
        // 10 lost of 100: [0.0552, 0.1744] (Wilson 1927; Newcombe 1998, table I method 3).
        let [lo, hi] = wilson(0.1, 100, 1.96);
        assert!(
            (lo - 0.0552).abs() < 5e-4 && (hi - 0.1744).abs() < 5e-4,
            "{lo} {hi}"
        );
        // Nothing lost of 20 still leaves room for some loss.
        let [lo, hi] = wilson(0.0, 20, 1.96);
        assert!(lo == 0.0 && (hi - 0.1611).abs() < 5e-4, "{hi}");
        // More packets, a narrower band.
        let narrow = wilson(0.1, 10_000, 1.96);
        assert!(narrow[1] - narrow[0] < 0.013);
        assert_eq!(wilson(0.3, 0, 1.96), [0.0, 1.0]);
    }
}

mod over_time;
pub use over_time::{over_time, FaultTiming, OverTime};

mod devices;
pub use devices::{as_scored, devices, Device};
