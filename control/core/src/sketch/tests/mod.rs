//! Tests of the sketch reference model.

mod baseline_tests;
mod hash_tests;
mod hashpipe_tests;
mod meter_tests;
mod prop_tests;

use crate::flow::FlowId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A flow distinguished by its source address only.
pub(super) fn flow(src: u32) -> FlowId {
    FlowId::v4(src, 0x0a00_0001, 6, 1234, 80)
}

/// `n` uniformly random flows from a seeded RNG.
pub(super) fn random_flows(seed: u64, n: usize) -> Vec<FlowId> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            FlowId::v4(
                rng.random(),
                rng.random(),
                rng.random(),
                rng.random(),
                rng.random(),
            )
        })
        .collect()
}
