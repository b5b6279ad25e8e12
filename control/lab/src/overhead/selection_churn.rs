//! Fig. 7: flow selection under traffic dynamics. The two-switch network runs Canary's loop
//! ([`super::twoswitch`]) over a trace for 300 epochs of 100 ms with α = 1000, β = 20, δ = 20 and
//! η ∈ {0, 8, 16, 32} (η = 0: the first packets of any flow qualify, i.e. random flows), η fixed
//! as in the paper (our adaptive-η extension off). Per epoch: packets counted, active monitored
//! flows, and rules installed; the figure shows their distributions.

use super::link::Line2;
use super::twoswitch::{self, EpochStat, LoopConfig};
use super::TraceSpec;
use crate::Result;
use canary_core::select::SelectionParams;
use canary_core::sketch::{HashPipeConfig, MeterConfig};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub eta: u32,
    pub epochs: Vec<EpochStat>,
    /// Share of epochs that counted fewer than α packets.
    pub share_below_alpha: f64,
    pub mean_packets_counted: f64,
    pub mean_active_flows: f64,
    /// Share of epochs after which no rule was installed.
    pub share_no_rules: f64,
    pub mean_rules: f64,
    pub total_rules: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionChurn {
    pub trace: String,
    pub alpha: u64,
    pub beta: u32,
    pub delta: u32,
    pub epochs: u32,
    pub mean_packets_per_epoch: f64,
    pub series: Vec<Series>,
}

pub fn run(line: &Line2, trace: &TraceSpec, etas: &[u32], epochs: u32) -> Result<SelectionChurn> {
    let base = SelectionParams {
        adaptive_eta: false,
        ..Default::default()
    };
    let series: Vec<Series> = etas
        .par_iter()
        .map(|&eta| {
            let cfg = LoopConfig {
                selection: SelectionParams { eta, ..base },
                meters: MeterConfig::default(),
                hashpipe: HashPipeConfig::default(),
                epoch_ns: 100_000_000,
                epochs,
            };
            let r = twoswitch::run(line, &cfg, trace.packets());
            summarise(eta, base.alpha, r.epochs)
        })
        .collect();
    let mean_packets = series.first().map_or(0.0, |s| {
        s.epochs.iter().map(|e| e.packets as f64).sum::<f64>() / s.epochs.len().max(1) as f64
    });
    Ok(SelectionChurn {
        trace: trace.describe(),
        alpha: base.alpha,
        beta: base.beta,
        delta: base.delta,
        epochs,
        mean_packets_per_epoch: mean_packets,
        series,
    })
}

fn summarise(eta: u32, alpha: u64, epochs: Vec<EpochStat>) -> Series {
    let n = epochs.len().max(1) as f64;
    let share = |f: &dyn Fn(&EpochStat) -> bool| epochs.iter().filter(|e| f(e)).count() as f64 / n;
    let mean = |f: &dyn Fn(&EpochStat) -> f64| epochs.iter().map(f).sum::<f64>() / n;
    Series {
        eta,
        share_below_alpha: share(&|e| e.packets_counted < alpha),
        mean_packets_counted: mean(&|e| e.packets_counted as f64),
        mean_active_flows: mean(&|e| e.active_flows as f64),
        share_no_rules: share(&|e| e.rules_installed == 0),
        mean_rules: mean(&|e| e.rules_installed as f64),
        total_rules: epochs.iter().map(|e| e.rules_installed as u64).sum(),
        epochs,
    }
}
