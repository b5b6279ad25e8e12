//! The controller's settings.

use canary_core::decide::DecisionParams;
use canary_core::localize::{CanaryParams, Grouping};
use canary_core::select::SelectionParams;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct ControllerConfig {
    pub epoch: Duration,
    /// Wait after a parity flip before harvesting.
    pub drain: Duration,
    /// n: epochs aggregated per localization.
    pub window: usize,
    /// n′: a segment counts as lossy only with losses in at least this many epochs of the window
    /// (the paper's rule, when `decision` is `None`).
    pub min_lossy_epochs: u32,
    /// Which segments are lossy: a sequential test against the background loss, or `None` for
    /// the paper's loss floor and n′ of n rule.
    pub decision: Option<DecisionParams>,
    pub selection: SelectionParams,
    pub canary: CanaryParams,
    /// `Some(d)`: when the switches' meters cannot count β flows of every segment at once,
    /// watch the segments in rounds of `d` epochs (`canary_core::schedule`) and localize from
    /// each segment's latest watch. `None`: every segment every epoch.
    pub watch_round_epochs: Option<u32>,
    /// Put every segment the localizer weighed into each epoch's report
    /// ([`crate::report::EpochReport::observations`]): enough to replay its verdict.
    pub report_observations: bool,
    /// Read the downstream switches of segments that lost packets again before judging the
    /// epoch ([`super::Controller::recheck_late`]): on for real switches, which may hold a
    /// packet longer than the drain; off in the simulator, whose drain covers every packet in
    /// flight by construction.
    pub recheck_late: bool,
}

impl Default for ControllerConfig {
    /// The pipeline's defaults ([`crate::config::Pipeline`]), in 100 ms epochs drained for 1 ms.
    fn default() -> Self {
        crate::config::Pipeline::default()
            .controller_config(Duration::from_millis(100), Duration::from_millis(1))
    }
}

/// Canary's localizer parameters: `groups` loss ranges (or equal-count groups), and the floor
/// below which a link's loss is noise: `floor`, or under the sequential decision the background
/// loss (a declared segment is already beyond it).
pub fn localizer_params(
    groups: usize,
    quantile: bool,
    floor: f64,
    decision: Option<DecisionParams>,
) -> CanaryParams {
    let floor = decision.map_or(floor, |d| d.background);
    CanaryParams {
        floor,
        groups: if quantile {
            Grouping::Quantile(groups)
        } else {
            Grouping::fixed_n(groups, floor)
        },
        ..Default::default()
    }
}
