//! Seeded hashing for the comparison sketches (FlowRadar, LossRadar, FermatSketch, the original
//! 6-stage HashPipe). These are not part of the P4 contract of [`super::hash`]: they stand for
//! the independent hash functions the baselines' papers assume, and take arbitrary table widths.
//!
//! A key (up to 128 bits) is hashed with SplitMix64's finaliser chained over its two 64-bit
//! halves and a per-function seed; an index in `0..n` is taken from the 64-bit hash by
//! multiply-shift (Lemire's fast range), so widths need not be powers of two. Unlike salted
//! copies of one CRC (affine over GF(2), see [`super::hash`]), differently seeded copies of this
//! non-linear mix behave as independent functions.

use crate::flow::FlowId;

/// SplitMix64's finaliser.
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The 64-bit hash of `key` under function `seed`.
pub fn hash128(seed: u64, key: u128) -> u64 {
    let lo = key as u64;
    let hi = (key >> 64) as u64;
    mix64(mix64(seed ^ lo) ^ hi.rotate_left(17) ^ seed.rotate_left(32))
}

/// Maps a 64-bit hash uniformly onto `0..n` (multiply-shift).
pub fn range(h: u64, n: usize) -> usize {
    ((h as u128 * n as u128) >> 64) as usize
}

/// Index of `key` in a row of width `n` under function `seed`.
pub fn index(seed: u64, key: u128, n: usize) -> usize {
    range(hash128(seed, key), n)
}

/// Seed of row `row` of a sketch seeded with `seed` (distinct rows, distinct functions).
pub fn row_seed(seed: u64, row: usize) -> u64 {
    mix64(seed ^ (0xA076_1D64_78BD_642F_u64.wrapping_mul(row as u64 + 1)))
}

/// Number of bits of a flow key ([`FlowId::to_bytes`] as an integer).
pub const FLOW_KEY_BITS: u32 = 104;

/// An IPv4 flow's 104-bit wire form as an integer (big-endian: srcAddr is the most
/// significant). The comparison sketches are the paper's, on its 104-bit IPv4 flow IDs.
///
/// # Panics
/// On an IPv6 flow.
pub fn flow_key(flow: &FlowId) -> u128 {
    flow.v4_bytes()
        .expect("the comparison sketches key IPv4 flows")
        .iter()
        .fold(0u128, |acc, &b| (acc << 8) | b as u128)
}

/// The flow whose [`flow_key`] is `key`; `None` if `key` has more than 104 bits.
pub fn flow_from_key(key: u128) -> Option<FlowId> {
    if key >> FLOW_KEY_BITS != 0 {
        return None;
    }
    let b = |i: u32| (key >> (8 * (12 - i))) as u8;
    Some(FlowId::v4(
        u32::from_be_bytes([b(0), b(1), b(2), b(3)]),
        u32::from_be_bytes([b(4), b(5), b(6), b(7)]),
        b(8),
        u16::from_be_bytes([b(9), b(10)]),
        u16::from_be_bytes([b(11), b(12)]),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_key_round_trips_and_rejects_wide_keys() {
        let f = FlowId::v4(0x0a00_0001, 0xc0a8_0102, 17, 53, 65535);
        let k = flow_key(&f);
        assert!(k < 1 << 104);
        assert_eq!(flow_from_key(k), Some(f));
        assert_eq!(flow_from_key(1 << 104), None);
    }

    #[test]
    fn range_covers_the_width_evenly() {
        let n = 7;
        let mut seen = [0u32; 7];
        for k in 0..70_000u128 {
            seen[index(3, k, n)] += 1;
        }
        for c in seen {
            assert!((9_000..11_000).contains(&c), "{seen:?}");
        }
    }
}
