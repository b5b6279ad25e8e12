//! `canary eval --sweep AXIS=V1,V2,…`: the same evaluation at every value of one parameter (and
//! every seed of `--seeds`), with the mean precision, recall and F1 of each localizer per value:
//! the figures the comparison papers draw (accuracy against probes per path, loss rate, number of
//! failed links, fat-tree size, background noise, connections per host).
//!
//! Every point of a sweep uses the same seeds, so the same fabric and the same fault *links*
//! (the fault draw does not depend on the swept value, except for `faults` and `k` which change
//! what is drawn).

use super::calibrate::{self, CalibrateSpec, Calibration};
use super::{EvalOptions, EvalReport, LocalizerReport, StageScore};
use crate::{Error, Result};
use serde::Serialize;
use std::fmt::Write as _;
use std::str::FromStr;

/// The parameter a sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// Bounce and probe-matrix probes per path (`--probes`).
    Probes,
    /// The loss rate of every injected fault (`--faults SPEC@V`).
    Loss,
    /// The number of faulty links (`--faults links:N` or `oneway:N`).
    Faults,
    /// The fat-tree's k (`--topology fattree:K`).
    K,
    /// Background loss on healthy links, U(0, V) (`--noise`).
    Noise,
    /// 007's TCP connections per host per epoch (`--flows`).
    Flows,
}

impl Axis {
    const ALL: [Axis; 6] = [
        Axis::Probes,
        Axis::Loss,
        Axis::Faults,
        Axis::K,
        Axis::Noise,
        Axis::Flows,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Axis::Probes => "probes",
            Axis::Loss => "loss",
            Axis::Faults => "faults",
            Axis::K => "k",
            Axis::Noise => "noise",
            Axis::Flows => "flows",
        }
    }

    /// What the figure's x axis says.
    pub fn label(self) -> &'static str {
        match self {
            Axis::Probes => "probes per path",
            Axis::Loss => "loss rate of each faulty link",
            Axis::Faults => "faulty links",
            Axis::K => "fat-tree k",
            Axis::Noise => "max loss rate of healthy links",
            Axis::Flows => "connections per host per epoch",
        }
    }

    /// Drawn on a logarithmic x axis.
    pub fn log_scale(self) -> bool {
        matches!(self, Axis::Probes | Axis::Loss | Axis::Noise | Axis::Flows)
    }

    /// Sets this axis to `v` in `opts`.
    pub fn apply(self, v: f64, opts: &mut EvalOptions) -> Result<()> {
        let arg = format!("--sweep {}", self.name());
        let whole = |what: &str| -> Result<u64> {
            if v < 1.0 || v.fract() != 0.0 {
                let message = format!("{what} must be a whole number ≥ 1, not {v}");
                return Err(Error::arg(&arg, message));
            }
            Ok(v as u64)
        };
        match self {
            Axis::Probes => opts.probes = whole("probes per path")? as u32,
            Axis::Flows => opts.tcp.conns_per_host = whole("connections per host")? as u32,
            Axis::K => opts.sim.topology = format!("fattree:{}", whole("k")?),
            Axis::Noise => {
                if !(0.0..=1.0).contains(&v) {
                    return Err(Error::arg(arg, format!("{v} is not a loss rate")));
                }
                opts.sim.noise = v;
            }
            Axis::Loss => {
                if !(0.0..=1.0).contains(&v) {
                    return Err(Error::arg(arg, format!("{v} is not a loss rate")));
                }
                let body = opts.sim.faults.split('@').next().unwrap_or_default();
                if !["random:", "links:", "oneway:"]
                    .iter()
                    .any(|p| body.starts_with(p))
                {
                    let message = format!(
                        "needs random faults (--faults random:P%, links:N or oneway:N), not `{}`",
                        opts.sim.faults
                    );
                    return Err(Error::arg(arg, message));
                }
                opts.sim.faults = format!("{body}@{v}");
            }
            Axis::Faults => {
                let n = whole("the number of faulty links")?;
                let spec = opts.sim.faults.clone();
                let (body, rates) = match spec.split_once('@') {
                    Some((b, r)) => (b, format!("@{r}")),
                    None => (spec.as_str(), String::new()),
                };
                let Some((kind, _)) = body
                    .split_once(':')
                    .filter(|(k, _)| *k == "links" || *k == "oneway")
                else {
                    let message = format!(
                        "needs --faults links:N or oneway:N (optionally @RATE), not `{spec}`"
                    );
                    return Err(Error::arg(arg, message));
                };
                opts.sim.faults = format!("{kind}:{n}{rates}");
            }
        }
        Ok(())
    }
}

impl FromStr for Axis {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Axis::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Axis::ALL.iter().map(|a| a.name()).collect();
                let message = format!("unknown axis `{s}` (known: {})", names.join(", "));
                Error::arg("--sweep", message)
            })
    }
}

/// `AXIS=V1,V2,…`.
pub fn parse_sweep(spec: &str) -> Result<(Axis, Vec<f64>)> {
    let arg = || format!("--sweep {spec}");
    let (axis, values) = spec
        .split_once('=')
        .ok_or_else(|| Error::arg(arg(), "write AXIS=V1,V2,…"))?;
    let axis: Axis = axis.trim().parse()?;
    let values = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| Error::arg(arg(), format!("`{v}` is not a number")))
        })
        .collect::<Result<Vec<_>>>()?;
    if values.is_empty() {
        return Err(Error::arg(arg(), "give at least one value"));
    }
    Ok((axis, values))
}

/// Means over the seeds of one point, for one localizer.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PointMean {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Mean true positives, false positives and false negatives (directed links).
    pub tp: f64,
    pub fp: f64,
    #[serde(rename = "fn")]
    pub fn_: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_paths: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes_sent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_flow_accuracy: Option<f64>,
}

impl PointMean {
    fn of(xs: &[&LocalizerReport]) -> Self {
        let n = xs.len().max(1) as f64;
        let m = |f: &dyn Fn(&LocalizerReport) -> f64| xs.iter().map(|x| f(x)).sum::<f64>() / n;
        let opt = |f: &dyn Fn(&LocalizerReport) -> Option<f64>| {
            let v: Vec<f64> = xs.iter().filter_map(|x| f(x)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        Self {
            precision: m(&|x| x.precision),
            recall: m(&|x| x.recall),
            f1: m(&|x| x.f1),
            tp: m(&|x| x.tp as f64),
            fp: m(&|x| x.fp as f64),
            fn_: m(&|x| x.fn_ as f64),
            probe_paths: opt(&|x| x.probe_paths.map(|v| v as f64)),
            probes_sent: opt(&|x| x.probes_sent.map(|v| v as f64)),
            per_flow_accuracy: opt(&|x| x.per_flow_accuracy),
        }
    }

    pub fn score(&self) -> StageScore {
        StageScore {
            precision: self.precision,
            recall: self.recall,
            f1: self.f1,
        }
    }
}

/// One value of the swept parameter: every seed's report and the means.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub value: f64,
    /// The fault spec and topology this point ran with.
    pub faults: String,
    pub topology: String,
    /// Mean over the seeds per localizer, in the order asked for (a JSON object).
    #[serde(serialize_with = "super::sweep::ordered_map")]
    pub mean: Vec<(String, PointMean)>,
    pub runs: Vec<EvalReport>,
}

impl Point {
    pub fn new(value: f64, opts: &EvalOptions, runs: Vec<EvalReport>) -> Self {
        let names = super::sweep::names(&runs);
        let mean = names
            .into_iter()
            .map(|n| {
                let xs: Vec<&LocalizerReport> =
                    runs.iter().filter_map(|r| r.localizers.get(&n)).collect();
                (n, PointMean::of(&xs))
            })
            .collect();
        Self {
            value,
            faults: opts.sim.faults.clone(),
            topology: opts.sim.topology.clone(),
            mean,
            runs,
        }
    }

    pub fn get(&self, name: &str) -> Option<&PointMean> {
        self.mean.iter().find(|(n, _)| n == name).map(|(_, m)| m)
    }
}

/// The `--json` document of `--sweep`.
#[derive(Clone, Debug, Serialize)]
pub struct AxisReport {
    pub axis: Axis,
    pub seeds: Vec<u64>,
    pub points: Vec<Point>,
}

impl AxisReport {
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for p in &self.points {
            for (n, _) in &p.mean {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        names
    }

    /// Per localizer, its mean score at every value (for the figure).
    pub fn series(&self) -> Vec<(String, Vec<(f64, StageScore)>)> {
        self.names()
            .into_iter()
            .map(|n| {
                let pts = self
                    .points
                    .iter()
                    .filter_map(|p| p.get(&n).map(|m| (p.value, m.score())))
                    .collect();
                (n, pts)
            })
            .collect()
    }

    /// One row per value: each localizer's mean F1 (precision/recall), then its mean FP and FN,
    /// probe paths, and 007's per-flow accuracy where they apply.
    pub fn render(&self) -> String {
        let names = self.names();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "sweep {} over seeds {:?}: mean F1 (precision/recall) | FP FN (directed links)",
            self.axis.name(),
            self.seeds
        );
        let _ = write!(s, "{:>8}", self.axis.name());
        for n in &names {
            let _ = write!(s, " {:>28}", n);
        }
        s.push('\n');
        for p in &self.points {
            let _ = write!(s, "{:>8}", fmt_value(p.value));
            for n in &names {
                let cell = p.get(n).map_or_else(String::new, |m| {
                    format!(
                        "{:.3} ({:.2}/{:.2}) | {:.1} {:.1}",
                        m.f1, m.precision, m.recall, m.fp, m.fn_
                    )
                });
                let _ = write!(s, " {:>28}", cell);
            }
            s.push('\n');
        }
        let extras: Vec<String> = self
            .points
            .iter()
            .flat_map(|p| {
                p.mean.iter().filter_map(move |(n, m)| {
                    let mut e = Vec::new();
                    if let Some(x) = m.probe_paths {
                        e.push(format!("{x:.0} probe paths"));
                    }
                    if let Some(x) = m.probes_sent {
                        e.push(format!("{x:.0} probes"));
                    }
                    if let Some(x) = m.per_flow_accuracy {
                        e.push(format!("per-flow accuracy {x:.3}"));
                    }
                    (!e.is_empty()).then(|| {
                        format!(
                            "{}={} {n}: {}",
                            self.axis.name(),
                            fmt_value(p.value),
                            e.join(", ")
                        )
                    })
                })
            })
            .collect();
        for e in extras {
            s.push_str(&e);
            s.push('\n');
        }
        // Each calibration once, labelled with the values it served.
        let mut i = 0;
        while i < self.points.len() {
            let mut j = i + 1;
            while j < self.points.len()
                && point_calibration(&self.points[j]) == point_calibration(&self.points[i])
            {
                j += 1;
            }
            if let Some(c) = point_calibration(&self.points[i]) {
                let (a, b) = (self.points[i].value, self.points[j - 1].value);
                let values = if j - i > 1 {
                    format!("{}..{}", fmt_value(a), fmt_value(b))
                } else {
                    fmt_value(a)
                };
                let _ = write!(s, "{}={values}: {}", self.axis.name(), c.render());
            }
            i = j;
        }
        s
    }
}

/// The calibration a point's runs used (the same for every seed of the point).
fn point_calibration(p: &Point) -> Option<&Calibration> {
    p.runs.first().and_then(|r| r.calibration.as_ref())
}

fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e9 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

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
