//! The search for the narrowest sketch that decodes often enough: a success rate over the
//! trials that stops once the target is out of reach, and a width search around a guess.

use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Success rate of `ok` over the trials, stopping early (and returning `None`) once the target
/// is out of reach.
pub(super) fn success(n: usize, target: f64, ok: impl Fn(usize) -> bool + Sync) -> Option<f64> {
    let allowed = n - (target * n as f64).ceil() as usize;
    let failures = AtomicUsize::new(0);
    (0..n).into_par_iter().for_each(|i| {
        if failures.load(Ordering::Relaxed) > allowed {
            return;
        }
        if !ok(i) {
            failures.fetch_add(1, Ordering::Relaxed);
        }
    });
    let f = failures.into_inner();
    (f <= allowed).then(|| 1.0 - f as f64 / n as f64)
}

/// The smallest width in `1..=max` whose success rate reaches the target, searched from a
/// guess: expand until one passes, then bisect to within 0.5 %.
pub(super) fn min_width(
    guess: usize,
    max: usize,
    rate: impl Fn(usize) -> Option<f64>,
) -> Option<(usize, f64)> {
    let mut hi = guess.clamp(1, max);
    let mut lo;
    let mut best;
    if let Some(r) = rate(hi) {
        best = r;
        lo = hi;
        loop {
            if lo == 1 {
                return Some((1, best));
            }
            lo = (lo / 2).max(1);
            match rate(lo) {
                Some(r) => {
                    hi = lo;
                    best = r;
                }
                None => break,
            }
        }
    } else {
        loop {
            lo = hi;
            if hi == max {
                return None;
            }
            hi = (hi * 2).min(max);
            if let Some(r) = rate(hi) {
                best = r;
                break;
            }
        }
    }
    // rate(lo) fails, rate(hi) passes.
    while hi - lo > (hi / 200).max(1) {
        let mid = lo + (hi - lo) / 2;
        match rate(mid) {
            Some(r) => {
                hi = mid;
                best = r;
            }
            None => lo = mid,
        }
    }
    Some((hi, best))
}
