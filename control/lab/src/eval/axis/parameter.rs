//! The parameter a sweep varies: its names, what each value sets in the options, and
//! `--sweep AXIS=V1,V2,…` parsed; apart from running and reporting the sweep.

use crate::eval::EvalOptions;
use crate::{Error, Result};
use serde::Serialize;
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
