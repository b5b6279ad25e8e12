//! A segment's counts in a report, and in an epoch's report the flows behind its loss.

use super::{is_zero, round};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SegmentReport {
    pub segment: Vec<String>,
    pub sent: u64,
    pub lost: u64,
    #[serde(serialize_with = "round::loss")]
    pub loss: f64,
    pub used: bool,
    /// Epochs since these counts were taken, when segments are watched in rounds (0: this
    /// epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age: Option<u64>,
    /// In an epoch's report: how many flows lost packets on it in this epoch, and the ones
    /// that lost the most (at most [`FLOWS_SHOWN`]): the evidence behind its loss, down to
    /// the 5-tuples an operator can trace.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub flows_lossy: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowLoss>,
}

/// The most flows a lossy segment's report lists.
pub const FLOWS_SHOWN: usize = 5;

/// One flow's packets on a segment in one epoch: counted upstream, and of them not counted
/// downstream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowLoss {
    /// `src:sport->dst:dport/proto`.
    pub flow: String,
    pub sent: u64,
    pub lost: u64,
}
