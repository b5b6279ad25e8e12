//! The grids each calibrated localizer is searched over (Flock, NetBouncer, 007), with the
//! reasons for their ranges; apart from the rule, which does not care what a setting is.

use canary_core::localize::{FlockParams, NetBouncerParams, Threshold};
use serde::Serialize;

/// `x` rounded to 12 significant digits, so that grid values are the decimals they print as.
fn round12(x: f64) -> f64 {
    format!("{x:.11e}")
        .parse()
        .expect("a formatted number parses")
}

/// 1-2-5 steps per decade from `lo` to `hi` (both included when they are such steps).
pub(super) fn one_two_five(lo: f64, hi: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi * (1.0 + 1e-9) {
        for m in [1.0, 2.0, 5.0] {
            let x = round12(m * decade);
            if x >= lo * (1.0 - 1e-9) && x <= hi * (1.0 + 1e-9) {
                v.push(x);
            }
        }
        decade *= 10.0;
    }
    v
}

/// Flock's grid. The paper: "equally-spaced values in a reasonable range" of each parameter; its
/// authors' code (`reproduce_results.cpp`) spaces `p_b` and `p_g` linearly within one decade
/// (2e-3…1e-2 and 1e-4…8e-4) and the log prior irregularly (−5 … −200). Our inputs span more
/// decades (A1 round trips of 100 probes on 4 undirected links against A2 flows of 100 packets;
/// noise from 1e-6 to 1e-4; faults from 1e-3 to 1), so we space all three logarithmically:
/// * `p_g` ∈ 1e-5 … 1e-3 (1-2-5): a good path's per-packet loss, from below the quietest noise
///   we run to above a 4-link round trip at noise 1e-4 (≈ 4e-4 on average);
/// * `p_b` ∈ 1e-3 … 5e-2 (1-2-5), only `p_b > p_g`: a bad path's loss, the faulty links' rates
///   (0.1 % … 1 % one way, up to 2 % round trip) with room above;
/// * `ρ` = 10^−e for e ∈ {1, 2, 3, 4, 5, 6, 8, 10, 15}: log priors from −2.2 to −34.5, covering
///   the authors' chosen −4, −15 and −35.
///
/// Order: `p_g` outer, `p_b`, `ρ` inner, each ascending (ties go to the first).
pub fn flock_grid() -> Vec<FlockParams> {
    let rhos = [1, 2, 3, 4, 5, 6, 8, 10, 15].map(|e: i32| 10f64.powi(-e));
    let mut g = Vec::new();
    for p_g in one_two_five(1e-5, 1e-3) {
        for p_b in one_two_five(1e-3, 5e-2).into_iter().filter(|&b| b > p_g) {
            for rho in rhos {
                g.push(FlockParams { p_g, p_b, rho });
            }
        }
    }
    g
}

/// One NetBouncer setting, in the Flock authors' terms (their `net_bouncer.cpp` parameters).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NbSetting {
    /// CD's regulariser weight λ.
    pub lambda: f64,
    /// A link is bad when its estimated round-trip loss `1 − x` is at least this (the paper's
    /// simulation threshold x ≤ 0.999 is 1e-3).
    pub fail_threshold: f64,
    /// Device-failure detection flags a switch when more than this share of its probe paths lost
    /// a probe; 1 = only the paper's strict rule (no loss-free path at all).
    pub bad_flow_fraction: f64,
}

impl NbSetting {
    /// `netbouncer-paper` (DFD on) with this setting.
    pub fn params(&self) -> NetBouncerParams {
        let mut p = NetBouncerParams::paper();
        p.cd.lambda = self.lambda;
        p.threshold = Threshold::AtMost(1.0 - self.fail_threshold);
        p.dfd_min_clean_fraction = 1.0 - self.bad_flow_fraction;
        p
    }
}

/// NetBouncer's grid: λ ∈ 1e-3 … 1 (1-3 per decade: the authors chose 0.001 for A1 and 0.011
/// for INT, the paper's own is 1); fail threshold ∈ 5e-4 … 5e-2 (1-2-5: the paper's 1e-3, the
/// authors' 2e-3 and 7e-3); bad-flow fraction ∈ {1 (strict), 0.5, 0.25, 0.125} (the authors
/// chose 0.075 and 0.125; with link faults only, flagging a device blames all its links).
/// Order: λ outer, fail threshold, fraction inner.
pub fn netbouncer_grid() -> Vec<NbSetting> {
    let lambdas = [1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0];
    let mut g = Vec::new();
    for lambda in lambdas {
        for fail_threshold in one_two_five(5e-4, 5e-2) {
            for bad_flow_fraction in [1.0, 0.5, 0.25, 0.125] {
                g.push(NbSetting {
                    lambda,
                    fail_threshold,
                    bad_flow_fraction,
                });
            }
        }
    }
    g
}

/// 007's grid: Algorithm 1's threshold as a share of the votes cast, 1e-4 … 0.3 at 1, 1.5, 2,
/// 3, 5, 7 per decade (the authors swept 1e-4 … 0.3 linearly in steps of 2e-4 and chose 0.0023
/// for uniform traffic, 0.0083 for skewed; the 007 paper's own is 0.01). Ascending.
pub fn vote007_grid() -> Vec<f64> {
    let mut g = Vec::new();
    for e in -4..0 {
        for m in [1.0, 1.5, 2.0, 3.0, 5.0, 7.0] {
            let x = round12(m * 10f64.powi(e));
            if x <= 0.3 {
                g.push(x);
            }
        }
    }
    g
}
