//! How a synthesized run's segments take turns: the fixed rounds, or the adaptive plan with
//! what it decides by.

use canary_core::schedule::adaptive::{AdaptiveWatch, LinkSegments};
use canary_core::schedule::fresh::LossOnsets;

/// How the segments take turns when the switches cannot count them all at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Watching {
    /// A fixed rotation of rounds; nothing is blamed before the first sweep ends.
    #[default]
    Rounds,
    /// A sweep, and the rest of the room on suspicion (`canary_core::schedule::adaptive`);
    /// localizes from the first epoch, each loss once its links' evidence is as fresh as it.
    /// Opt-in: it trades detection time for far fewer wrong blames at an onset
    /// (`docs/bench.md`, "Adaptive watching").
    Adaptive,
}

/// Epochs a loss waits for its links' other segments before it is localized with what there is.
pub const MAX_WAIT: u64 = 3;

/// The adaptive plan and what it decides by.
pub(super) struct Adaptive {
    pub watch: AdaptiveWatch,
    pub through: LinkSegments,
    pub onsets: LossOnsets,
}
