//! What selection is asked to keep (Table III) and what it did in an epoch.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionParams {
    /// Packets to count per segment and epoch.
    pub alpha: u64,
    /// Flows to count per segment and epoch.
    pub beta: u32,
    /// Flows an HH rule selects before it is removed.
    pub delta: u32,
    pub max_flows_per_segment: u32,
    pub retire_after: u32,
    /// HashPipe count a flow must exceed to be reported (Table III: 16).
    pub eta: u32,
    pub adaptive_eta: bool,
    /// Flows each segment keeps that were monitored because the forwarding sends them its way
    /// (seen entering the fabric), not because they arrived: while the controller's forwarding
    /// is the fabric's, they sample the flows a segment may swallow whole from the start
    /// ([`super::predict`]).
    #[serde(default = "default_sentinels")]
    pub sentinels: u32,
}

fn default_sentinels() -> u32 {
    SelectionParams::default().sentinels
}

impl Default for SelectionParams {
    /// Table III: α = 1000, β = 20, δ = 20 (η lives in the data plane's configuration).
    fn default() -> Self {
        Self {
            alpha: 1000,
            beta: 20,
            delta: 20,
            max_flows_per_segment: 100,
            retire_after: 2,
            eta: 16,
            adaptive_eta: true,
            sentinels: 16,
        }
    }
}

/// What selection did in one epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectionStats {
    pub flows_added: u32,
    pub flows_retired: u32,
    pub hh_rules_installed: u32,
    pub hh_rules_removed: u32,
    pub reports: u32,
    pub reports_ignored: u32,
    /// Reports and HH rules refused because a switch's table was full.
    #[serde(default)]
    pub refused_full: u32,
    /// Flows seen entering the fabric and monitored on the segment the forwarding sends them
    /// onto, which had none ([`super::predict`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub predicted: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
