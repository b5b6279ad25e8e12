//! Fault localization over observed segments (or probe paths).
//!
//! * [`cd`]: NetBouncer's coordinate-descent solver for
//!   `min Σ_j (y_j − Π_{i∈p_j} x_i)² + λ Σ_i x_i(1 − x_i)`, `0 ≤ x ≤ 1`.
//! * [`canary`]: Canary's multi-stage localization (paper Sec. III-F: group lossy segments by
//!   loss rate, map each group's success rates to `[0, 0.8]` with eq. 4, run CD per group with
//!   already-blamed links removed), the single-CD NetBouncer baseline, and a rayon driver over
//!   independent sub-problems.
//! * [`redundant`]: drops a blamed link the other blamed links already explain (our decision).
//! * [`sick`]: a transit switch all of whose segments are lossy is named as the device, with
//!   every link in and out (our decision, after NetBouncer's device failures).
//! * [`groups`]: the grouping (fixed paper ranges or equal-count quantiles) and the mapping.
//! * [`netbouncer`]: NetBouncer (DFD + CD on undirected links) and NetBouncer-stage over bounce
//!   probes; [`flock`]: Flock's greedy MLE with JLE; [`flock_trace`]: Flock's trace text format.
//! * [`vote007`]: 007's voting over traced retransmitting flows and its Algorithm 1.
//! * [`detector`]: deTector's probe-matrix construction (PMC) and a reconstructed PLL.
//!
//! What this module does NOT do: build sub-problems from meters or topologies (links and
//! segments are plain indices here; the topology layer names them), filter noise across epochs
//! (the `n`/`n′` rule), or time anything.

mod after_stages;
pub mod canary;
pub mod cd;
pub mod detector;
pub mod flock;
pub mod flock_trace;
pub mod groups;
pub mod netbouncer;
mod pins;
pub mod redundant;
pub mod segments;
mod settle;
mod shapes;
pub mod sick;
mod unexplained;
pub mod vote007;

/// A measured segment over `links` of `sent` packets that lost `lost` (the tests' shorthand).
#[cfg(test)]
pub(crate) fn seg(links: Vec<u32>, sent: f64, lost: f64) -> SegmentObs {
    SegmentObs {
        links,
        success: 1.0 - lost / sent,
        sent,
        flows: Vec::new(),
    }
}

#[cfg(test)]
mod tests_canary;
#[cfg(test)]
mod tests_cd;
#[cfg(test)]
mod tests_detector;
#[cfg(test)]
mod tests_nbflock;
#[cfg(test)]
mod tests_onset;
#[cfg(test)]
mod tests_vote007;

pub use canary::{
    estimate_losses, localize_all, multi_stage, single_cd, Blame, CanaryParams, Diagnosis,
    SegmentObs, StageSnapshot, SubProblem,
};
pub use cd::{cd_update, CdParams, CdProblem, CdSolution};
pub use detector::{
    probe_matrix, Detector, DetectorParams, PathProbe, PmcParams, ProbeMatrix, SetCount,
};
pub use flock::{Flock, FlockFlow, FlockInput, FlockParams, Granularity};
pub use groups::{map_success, Grouping, Mapping};
pub use netbouncer::{bounce_plan, NbReport, NetBouncer, NetBouncerParams, ProbePath, Threshold};
pub use segments::{Canary, CdOnSegments, SubVerdict};
pub use sick::{name_sick_switches, sick_switches};
pub use vote007::{FlowReport007, Vote007, Vote007Params, VoteTotal};

use crate::topo::{LinkIx, Topology};
use serde::{Deserialize, Serialize};

/// A link a localizer blames, on the topology's directed links. Localizers that reason about
/// undirected links (NetBouncer, deTector) blame both directions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlamedLink {
    pub link: LinkIx,
    /// Estimated loss rate (or the localizer's score where it has no loss estimate).
    pub loss: f64,
    /// Stage or round that found it (0 for single-stage localizers).
    pub stage: usize,
}

/// A localizer's answer for the whole fabric.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub blamed: Vec<BlamedLink>,
    /// Links blamed after each stage, cumulative (one entry for single-stage localizers).
    pub stages: Vec<Vec<LinkIx>>,
    /// Losses the counts could not place on one link, each with its candidate links: nothing
    /// is blamed for them (Canary only, `settle`).
    #[serde(default)]
    pub undecided: Vec<Vec<LinkIx>>,
}

/// Every localizer: Canary, NetBouncer(-stage), Flock, 007, deTector. Each consumes the
/// observations its own system collects.
pub trait Localizer {
    type Input;
    fn name(&self) -> &'static str;
    fn localize(&self, topo: &Topology, input: &Self::Input) -> Verdict;
}
