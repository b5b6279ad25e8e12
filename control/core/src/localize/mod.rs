//! Fault localization over observed segments (or probe paths).
//!
//! * [`cd`]: NetBouncer's coordinate-descent solver for
//!   `min Σ_j (y_j − Π_{i∈p_j} x_i)² + λ Σ_i x_i(1 − x_i)`, `0 ≤ x ≤ 1`.
//! * [`canary`]: Canary's multi-stage localization (paper Sec. III-F: group lossy segments by
//!   loss rate, map each group's success rates to `[0, 0.8]` with eq. 4, run CD per group with
//!   already-blamed links removed), the single-CD NetBouncer baseline, and a rayon driver over
//!   independent sub-problems.
//! * [`groups`]: the grouping (fixed paper ranges or equal-count quantiles) and the mapping.
//!
//! What this module does NOT do: build sub-problems from meters or topologies (links and
//! segments are plain indices here; the topology layer names them), filter noise across epochs
//! (the `n`/`n′` rule), detect faulty devices (NetBouncer's DFD), or time anything.

pub mod canary;
pub mod cd;
pub mod groups;

#[cfg(test)]
mod tests_canary;
#[cfg(test)]
mod tests_cd;

pub use canary::{
    estimate_losses, localize_all, multi_stage, single_cd, Blame, CanaryParams, Diagnosis,
    SegmentObs, StageSnapshot, SubProblem,
};
pub use cd::{cd_update, CdParams, CdProblem, CdSolution};
pub use groups::{map_success, Grouping, Mapping};
