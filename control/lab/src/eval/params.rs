//! Each localizer's parameters: its fixed defaults, or what `--calibrate` chose for it; one
//! place so the seed's run and the run over time give a localizer the same ones.

use super::{calibrate, EvalOptions, Kind};
use canary_controller::simulate::SimulateOptions;
use canary_core::localize::{CanaryParams, Flock, NetBouncerParams, Vote007};

/// A localizer's calibrated parameters, if `--calibrate` chose some for it.
fn tuned(k: Kind, opts: &EvalOptions) -> Option<&calibrate::TunedParams> {
    opts.calibration.as_ref().and_then(|c| c.get(k.name()))
}

/// NetBouncer's parameters for the variant `k` (default, staged, or the paper's, calibrated).
pub(super) fn nb_params(k: Kind, opts: &EvalOptions) -> NetBouncerParams {
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

pub(super) fn flock_for(k: Kind, opts: &EvalOptions) -> Flock {
    Flock {
        params: tuned(k, opts).and_then(|t| t.flock()).unwrap_or_default(),
    }
}

pub(super) fn vote007_for(opts: &EvalOptions) -> Vote007 {
    let mut z = Vote007::default();
    if let Some(t) = tuned(Kind::Vote007, opts).and_then(|t| t.vote007()) {
        z.params.threshold = t;
    }
    z
}

/// Canary's localizer parameters as `run_full` sets them (groups and floor).
pub(super) fn canary_params(sim: &SimulateOptions) -> CanaryParams {
    sim.pipeline.localizer(sim.quantile_groups)
}
