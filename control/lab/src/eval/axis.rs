//! `canary eval --sweep AXIS=V1,V2,…`: the same evaluation at every value of one parameter (and
//! every seed of `--seeds`), with the mean precision, recall and F1 of each localizer per value:
//! the figures the comparison papers draw (accuracy against probes per path, loss rate, number of
//! failed links, fat-tree size, background noise, connections per host).
//!
//! Every point of a sweep uses the same seeds, so the same fabric and the same fault *links*
//! (the fault draw does not depend on the swept value, except for `faults` and `k` which change
//! what is drawn).

mod parameter;
mod report;

pub use parameter::{parse_sweep, Axis};
pub use report::{AxisReport, Point, PointMean};

use super::calibrate::{self, CalibrateSpec, Calibration};
use super::{EvalOptions, EvalReport};
use crate::Result;

/// Runs `opts` at every value of `axis` and every seed. With `calibrate_on`, the calibrated
/// localizers are first calibrated at each value on the training seeds (once for all values
/// when the training set does not change with the value, e.g. `--calibrate-faults` with a
/// `loss` or `faults` sweep).
pub fn run_axis(
    base: &EvalOptions,
    axis: Axis,
    values: &[f64],
    seeds: &[u64],
    calibrate_on: Option<&CalibrateSpec>,
    mut progress: impl FnMut(f64, &EvalReport),
) -> Result<AxisReport> {
    let mut points = Vec::new();
    let mut last: Option<(EvalOptions, Option<Calibration>)> = None;
    for &v in values {
        let mut opts = base.clone();
        axis.apply(v, &mut opts)?;
        if let Some(spec) = calibrate_on {
            let training = spec.training_options(&opts);
            opts.calibration = match &last {
                Some((t, c)) if calibrate::same_training(t, &training) => c.clone(),
                _ => {
                    let c = calibrate::run(&opts, spec)?;
                    last = Some((training, c.clone()));
                    c
                }
            };
        }
        let mut runs = Vec::new();
        for &seed in seeds {
            opts.sim.seed = seed;
            let r = super::run(&opts)?;
            progress(v, &r);
            runs.push(r);
        }
        points.push(Point::new(v, &opts, runs));
    }
    Ok(AxisReport {
        axis,
        seeds: seeds.to_vec(),
        points,
    })
}

#[cfg(test)]
mod tests;
