//! Lossy links: each directed link drops packets as a Bernoulli process, drawn as geometric
//! gaps between drops, on the share of flows a fault hits.

use super::gap;
use rand_chacha::ChaCha8Rng;

/// The packets of `alive` (bit `i`: packet `i`, in the order they cross) that `l` lets
/// through, dropping as it drops packets one at a time: the packet `until_drop` further on is
/// dropped and the next gap drawn.
pub(super) fn drop_some(alive: u64, l: &mut LinkDrops, rng: &mut ChaCha8Rng) -> u64 {
    let (mut out, mut rest) = (alive, alive);
    loop {
        let c = u64::from(rest.count_ones());
        if l.until_drop >= c {
            l.until_drop -= c;
            return out;
        }
        let dropped = nth_bit(rest, l.until_drop as u32);
        out &= !dropped;
        // The packets up to the dropped one have passed this link.
        rest &= !(dropped | (dropped - 1));
        l.until_drop = gap(l.p, rng);
    }
}

/// The `n`-th set bit of `x` (from bit 0), as a mask; `n` < the bits set.
fn nth_bit(mut x: u64, n: u32) -> u64 {
    for _ in 0..n {
        x &= x - 1;
    }
    x & x.wrapping_neg()
}

/// Per-link Bernoulli loss, drawn as geometric gaps between drops (one draw per drop), on the
/// packets of the share `flows` of flows ([`hits_flow`]).
pub(super) struct LinkDrops {
    pub p: f64,
    pub flows: f64,
    pub until_drop: u64,
}
