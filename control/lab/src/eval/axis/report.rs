//! What a sweep reports: each localizer's means over the seeds at every value, the `--json`
//! document and the table for people; apart from running the sweep.

use super::Axis;
use crate::eval::calibrate::Calibration;
use crate::eval::{sweep, EvalOptions, EvalReport, LocalizerReport, StageScore};
use serde::Serialize;
use std::fmt::Write as _;

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
    #[serde(serialize_with = "sweep::ordered_map")]
    pub mean: Vec<(String, PointMean)>,
    pub runs: Vec<EvalReport>,
}

impl Point {
    pub fn new(value: f64, opts: &EvalOptions, runs: Vec<EvalReport>) -> Self {
        let names = sweep::names(&runs);
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
