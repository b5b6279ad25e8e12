//! What a calibration chose, per localizer, and its one-line-each rendering: the record the
//! run's reports carry, apart from how it was found.

use super::grid::NbSetting;
use canary_core::localize::FlockParams;
use serde::Serialize;
use std::fmt::Write as _;

/// A calibrated localizer's parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum TunedParams {
    Flock(FlockParams),
    NetBouncer(NbSetting),
    Vote007 { threshold: f64 },
}

impl TunedParams {
    pub fn flock(&self) -> Option<FlockParams> {
        match self {
            Self::Flock(p) => Some(*p),
            _ => None,
        }
    }

    pub fn netbouncer(&self) -> Option<NbSetting> {
        match self {
            Self::NetBouncer(p) => Some(*p),
            _ => None,
        }
    }

    pub fn vote007(&self) -> Option<f64> {
        match self {
            Self::Vote007 { threshold } => Some(*threshold),
            _ => None,
        }
    }

    pub(super) fn describe(&self) -> String {
        match self {
            Self::Flock(p) => format!("p_g {:e}, p_b {:e}, rho {:e}", p.p_g, p.p_b, p.rho),
            Self::NetBouncer(p) => format!(
                "lambda {:e}, fail threshold {:e}, bad-flow fraction {}",
                p.lambda, p.fail_threshold, p.bad_flow_fraction
            ),
            Self::Vote007 { threshold } => format!("threshold {threshold:e} of the votes"),
        }
    }
}

/// One localizer's calibration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibrated {
    pub localizer: String,
    pub params: TunedParams,
    /// The minimum precision `P` the rule settled on, and the chosen setting's training means.
    pub min_precision: f64,
    pub precision: f64,
    pub recall: f64,
    pub recall_floor_met: bool,
    /// Settings in the grid.
    pub settings: usize,
}

/// Every calibrated localizer of a run, with the training set they were calibrated on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub seeds: Vec<u64>,
    pub topology: String,
    pub faults: String,
    pub localizers: Vec<Calibrated>,
}

impl Calibration {
    /// The calibrated parameters of localizer `name`, if it was calibrated.
    pub fn get(&self, name: &str) -> Option<&TunedParams> {
        self.localizers
            .iter()
            .find(|c| c.localizer == name)
            .map(|c| &c.params)
    }

    /// One line for the training set, one per localizer.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "calibrated (Flock §5.2: P from 98 % down by 5 %, recall >= 25 %) on {} {}, seeds {}:",
            self.topology,
            self.faults,
            seed_list(&self.seeds)
        );
        for c in &self.localizers {
            let _ = writeln!(
                s,
                "  {:<17} {}; P = {:.0} %, training precision {:.3} recall {:.3}{} ({} settings)",
                c.localizer,
                c.params.describe(),
                c.min_precision * 100.0,
                c.precision,
                c.recall,
                if c.recall_floor_met {
                    ""
                } else {
                    ", below the 25 % floor at every P"
                },
                c.settings
            );
        }
        s
    }
}

/// `101..108` for a contiguous list, else comma-separated.
pub fn seed_list(seeds: &[u64]) -> String {
    match seeds {
        [] => String::new(),
        [a] => a.to_string(),
        [a, .., b] if seeds.windows(2).all(|w| w[1] == w[0] + 1) => format!("{a}..{b}"),
        _ => seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}
