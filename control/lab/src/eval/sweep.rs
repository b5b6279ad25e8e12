//! `canary eval --seeds A..B`: the same evaluation on every seed from A to B (inclusive), a
//! per-seed F1 table with the mean, and the acceptance check (Canary's F1 at least
//! NetBouncer's and Flock's on every seed).

use super::{EvalReport, StageScore};
use crate::{Error, Result};
use serde::Serialize;
use std::fmt::Write as _;

/// `A..B` or `A..=B` (both inclusive), or a single seed.
pub fn parse_seeds(spec: &str) -> Result<Vec<u64>> {
    let arg = || format!("--seeds {spec}");
    let num = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| Error::arg(arg(), format!("`{s}` is not a seed")))
    };
    let (a, b) = match spec.split_once("..") {
        Some((a, b)) => (num(a)?, num(b.trim_start_matches('='))?),
        None => (num(spec)?, num(spec)?),
    };
    if b < a {
        return Err(Error::arg(arg(), "the range is empty"));
    }
    Ok((a..=b).collect())
}

/// The `--json` document of a sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepReport {
    pub runs: Vec<EvalReport>,
    /// Mean F1 per localizer, in the order asked for (a JSON object).
    #[serde(serialize_with = "ordered_map")]
    pub mean_f1: Vec<(String, f64)>,
}

impl SweepReport {
    pub fn new(runs: Vec<EvalReport>) -> Self {
        let names = names(&runs);
        let mean_f1 = names
            .iter()
            .map(|n| (n.clone(), mean(&runs, n, |r| r.f1)))
            .collect();
        Self { runs, mean_f1 }
    }

    /// Mean per-stage scores per localizer (for the figure).
    pub fn mean_stages(&self) -> Vec<(String, Vec<StageScore>)> {
        names(&self.runs)
            .into_iter()
            .map(|n| {
                let stages = self
                    .runs
                    .iter()
                    .filter_map(|r| r.localizers.get(&n).map(|x| x.stages.len()))
                    .max()
                    .unwrap_or(0);
                let avg = (0..stages)
                    .map(|i| {
                        let at = |f: fn(&StageScore) -> f64| {
                            mean(&self.runs, &n, |x| {
                                x.stages.get(i).or(x.stages.last()).map_or(0.0, f)
                            })
                        };
                        StageScore {
                            precision: at(|s| s.precision),
                            recall: at(|s| s.recall),
                            f1: at(|s| s.f1),
                        }
                    })
                    .collect();
                (n, avg)
            })
            .collect()
    }

    /// Per-seed F1 of every localizer, then the mean, then the acceptance check.
    pub fn render(&self) -> String {
        let names = names(&self.runs);
        let mut s = String::new();
        let _ = write!(s, "{:>5} {:>6}", "seed", "faults");
        for n in &names {
            let _ = write!(s, " {:>16}", n);
        }
        s.push('\n');
        for r in &self.runs {
            let _ = write!(s, "{:>5} {:>6}", r.seed, r.faults.len());
            for n in &names {
                let f1 = r.localizers.get(n).map_or(f64::NAN, |x| x.f1);
                let _ = write!(s, " {:>16.3}", f1);
            }
            s.push('\n');
        }
        let _ = write!(s, "{:>5} {:>6}", "mean", "");
        for (_, m) in &self.mean_f1 {
            let _ = write!(s, " {:>16.3}", m);
        }
        s.push('\n');
        if let Some(line) = self.acceptance() {
            s.push_str(&line);
            s.push('\n');
        }
        if let Some(c) = self.runs.first().and_then(|r| r.calibration.as_ref()) {
            s.push_str(&c.render());
        }
        s
    }

    /// "Canary F1 ≥ NetBouncer's and Flock's on N of M seeds", if all three ran.
    pub fn acceptance(&self) -> Option<String> {
        let f1 = |r: &EvalReport, n: &str| r.localizers.get(n).map(|x| x.f1);
        let mut ok = 0;
        for r in &self.runs {
            let c = f1(r, "canary")?;
            if c >= f1(r, "netbouncer")? && c >= f1(r, "flock")? {
                ok += 1;
            }
        }
        Some(format!(
            "canary F1 >= netbouncer's and flock's on {ok} of {} seeds",
            self.runs.len()
        ))
    }
}

/// Serialises `(name, value)` pairs as a JSON object in their order.
pub(super) fn ordered_map<S: serde::Serializer, V: Serialize>(
    v: &[(String, V)],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(v.len()))?;
    for (k, x) in v {
        m.serialize_entry(k, x)?;
    }
    m.end()
}

pub(super) fn names(runs: &[EvalReport]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in runs {
        for (n, _) in &r.localizers.0 {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names
}

fn mean(runs: &[EvalReport], name: &str, f: impl Fn(&super::LocalizerReport) -> f64) -> f64 {
    let v: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.localizers.get(name).map(&f))
        .collect();
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_ranges_are_inclusive() {
        assert_eq!(parse_seeds("1..10").unwrap(), (1..=10).collect::<Vec<_>>());
        assert_eq!(parse_seeds("3..=4").unwrap(), vec![3, 4]);
        assert_eq!(parse_seeds("7").unwrap(), vec![7]);
        assert!(parse_seeds("5..2").is_err());
        assert!(parse_seeds("a..2").is_err());
    }
}
