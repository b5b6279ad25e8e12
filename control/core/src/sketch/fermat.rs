//! FermatSketch (ChameleMon, Yang et al., SIGCOMM'23) as configured in the Canary paper's
//! Table I: 3 rows of buckets, each bucket a 104-bit ID sum and a 32-bit count (136 bits).
//!
//! A packet of flow `f` adds 1 to the count and `f` to the ID sum (modulo a prime `P`) of one
//! bucket per row. The meter is linear: subtracting the downstream sketch from the upstream one
//! leaves, in each bucket, the lost packets `c` and `Σ lost_f · f mod P` of the flows mapped
//! there. A bucket is *pure* when one flow is left in it: then `f = idsum · c⁻¹ mod P` (the inverse
//! by Fermat's little theorem, hence the name; we compute the same inverse with extended Euclid),
//! and rehashing `f` must lead back to this bucket. Peeling pure buckets recovers every flow
//! with losses and its lost packets ([`FermatSketch::decode`]); memory grows with the number of
//! flows that lose packets, not with the packets lost.
//!
//! Our choices: `P = 2¹²⁷ − 1`, a Mersenne prime (reduction is a shift and an add). Flow keys
//! have 104 bits, so the 23 spare bits reject most values a mixed bucket yields. Not all: a
//! bucket holding two flows with equal counts (common: most lossy flows lose one packet) yields
//! their average, a valid-looking key, and the rehash passes it with probability `1/width`.
//! With the rehash alone, 15 % of our decodes failed even at 2.4 times the peeling threshold, so
//! a pure candidate must also agree with its buckets in the other rows (see
//! [`FermatSketch::decode`]); with that, decoding fails only when peeling gets stuck. Memory is
//! charged at Table I's 136-bit bucket although the arithmetic uses 127-bit ID sums: this
//! favours the baseline. Should a false pure bucket still slip through, the decoder meets a
//! negative count or leftover buckets and fails with [`DecodeError::Inconsistent`] or
//! [`DecodeError::Stuck`]. One case no check can catch: flows whose weighted mean key is a
//! valid key hashing to their shared bucket in every row look exactly like that one flow (at
//! width 1 this needs only the mean to be a valid key, roughly one chance in the packet count);
//! the decoder then returns an answer consistent with the sketch but not the true one.
//! Hashes are [`super::seeded`], one function per row.

use super::error::DecodeError;
use super::seeded::{flow_from_key, flow_key, index, row_seed};
use crate::flow::FlowId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bits of a FermatSketch bucket in Table I: count (32) + ID (104).
pub const FERMAT_BUCKET_BITS: usize = 32 + 104;

/// The prime modulus, 2¹²⁷ − 1.
pub const P: u128 = (1 << 127) - 1;

/// `x mod P` for any `x < 2¹²⁸`.
fn reduce(x: u128) -> u128 {
    let r = (x & P) + (x >> 127);
    if r >= P {
        r - P
    } else {
        r
    }
}

/// `a + b mod P` for `a, b < P`.
pub fn add_mod(a: u128, b: u128) -> u128 {
    reduce(a + b)
}

/// `a − b mod P` for `a, b < P`.
pub fn sub_mod(a: u128, b: u128) -> u128 {
    if a >= b {
        a - b
    } else {
        a + P - b
    }
}

/// `a · b mod P` for `a, b < P`, by 64-bit limbs and `2¹²⁷ ≡ 1`.
pub fn mul_mod(a: u128, b: u128) -> u128 {
    debug_assert!(a < P && b < P);
    let (a0, a1) = (a as u64 as u128, a >> 64);
    let (b0, b1) = (b as u64 as u128, b >> 64);
    let low = reduce(a0 * b0);
    // (a0·b1 + a1·b0) · 2⁶⁴ (the sum is below 2¹²⁸): with m = mh·2⁶³ + ml,
    // m·2⁶⁴ = mh·2¹²⁷ + ml·2⁶⁴ ≡ mh + ml·2⁶⁴.
    let m = reduce(a0 * b1 + a1 * b0);
    let mid = reduce(((m & ((1 << 63) - 1)) << 64) + (m >> 63));
    // a1·b1 · 2¹²⁸ ≡ 2 · a1·b1 (a1·b1 < 2¹²⁶).
    let high = reduce((a1 * b1) << 1);
    add_mod(add_mod(low, mid), high)
}

/// `a⁻¹ mod P` for `0 < a < P`.
pub fn inv_mod(a: u128) -> u128 {
    debug_assert!(a != 0 && a < P);
    let (mut r0, mut r1) = (P as i128, a as i128);
    let (mut t0, mut t1) = (0i128, 1i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (t0, t1) = (t1, t0 - q * t1);
    }
    debug_assert_eq!(r0, 1, "P is prime");
    t0.rem_euclid(P as i128) as u128
}

/// Shape of a FermatSketch: `rows` × `width` buckets and the seed of its hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FermatConfig {
    pub rows: usize,
    pub width: usize,
    pub seed: u64,
}

impl FermatConfig {
    /// Table I: 3 rows (3 hash functions).
    pub fn new(width: usize, seed: u64) -> Self {
        FermatConfig {
            rows: 3,
            width: width.max(1),
            seed,
        }
    }

    pub fn memory_bits(&self) -> usize {
        self.rows * self.width * FERMAT_BUCKET_BITS
    }
}

/// One bucket: the count and the ID sum modulo [`P`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FermatBucket {
    pub id_sum: u128,
    pub count: u32,
}

/// One switch's FermatSketch, or the difference of two.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FermatSketch {
    config: FermatConfig,
    buckets: Vec<FermatBucket>,
}

fn bucket_of(config: &FermatConfig, key: u128, row: usize) -> usize {
    row * config.width + index(row_seed(config.seed, row), key, config.width)
}

impl FermatSketch {
    pub fn new(config: FermatConfig) -> Self {
        FermatSketch {
            config,
            buckets: vec![FermatBucket::default(); config.rows * config.width],
        }
    }

    pub fn config(&self) -> FermatConfig {
        self.config
    }

    pub fn buckets(&self) -> &[FermatBucket] {
        &self.buckets
    }

    /// One packet of `flow`.
    pub fn insert(&mut self, flow: &FlowId) {
        self.insert_n(flow, 1);
    }

    /// `n` packets of `flow`, exactly as `n` calls of [`FermatSketch::insert`].
    pub fn insert_n(&mut self, flow: &FlowId, n: u32) {
        if n == 0 {
            return;
        }
        let key = flow_key(flow);
        let add = mul_mod(n as u128, key);
        for row in 0..self.config.rows {
            let b = &mut self.buckets[bucket_of(&self.config, key, row)];
            b.count = b.count.wrapping_add(n);
            b.id_sum = add_mod(b.id_sum, add);
        }
    }

    /// `self` (upstream) minus `down` (downstream): a sketch of the lost packets.
    pub fn subtract(&self, down: &FermatSketch) -> Result<FermatSketch, DecodeError> {
        if self.config != down.config {
            return Err(DecodeError::Mismatch("FermatSketches"));
        }
        let mut buckets = Vec::with_capacity(self.buckets.len());
        for (i, (u, d)) in self.buckets.iter().zip(&down.buckets).enumerate() {
            let count = u.count.wrapping_sub(d.count);
            if count > u32::MAX / 2 {
                return Err(DecodeError::Inconsistent {
                    row: i / self.config.width,
                    bucket: i % self.config.width,
                    what: "more packets downstream than upstream",
                });
            }
            buckets.push(FermatBucket {
                id_sum: sub_mod(u.id_sum, d.id_sum),
                count,
            });
        }
        Ok(FermatSketch {
            config: self.config,
            buckets,
        })
    }

    /// The flow a bucket holds if it is pure: `f = idsum / count` is a flow key that hashes back
    /// to this bucket, and every other row agrees (its bucket of `f` holds at least `count`
    /// packets, and exactly `count · f` when it holds exactly `count`). A bucket holding two
    /// flows with equal counts yields their average, a plausible key; the rehash rejects it
    /// with probability `1 − 1/width` and the other rows catch most of the rest.
    fn pure(&self, b: &[FermatBucket], i: usize) -> Option<u128> {
        let FermatBucket { id_sum, count } = b[i];
        if count == 0 {
            return None;
        }
        let key = mul_mod(id_sum, inv_mod(count as u128));
        let row = i / self.config.width;
        if flow_from_key(key).is_none() || bucket_of(&self.config, key, row) != i {
            return None;
        }
        let whole = mul_mod(count as u128, key);
        let agrees = (0..self.config.rows).filter(|&r| r != row).all(|r| {
            let o = b[bucket_of(&self.config, key, r)];
            o.count > count || (o.count == count && o.id_sum == whole)
        });
        agrees.then_some(key)
    }

    /// Every flow in the sketch with its packets (for a difference: the lost packets), or why
    /// not.
    pub fn decode(&self) -> Result<BTreeMap<FlowId, u32>, DecodeError> {
        let cfg = self.config;
        let mut b = self.buckets.clone();
        let mut out = BTreeMap::new();
        let mut queue: Vec<usize> = (0..b.len()).filter(|&i| b[i].count != 0).collect();
        while let Some(i) = queue.pop() {
            let Some(key) = self.pure(&b, i) else {
                continue;
            };
            let c = b[i].count;
            let flow = flow_from_key(key).expect("checked by pure");
            let sub = mul_mod(c as u128, key);
            for row in 0..cfg.rows {
                let j = bucket_of(&cfg, key, row);
                if b[j].count < c {
                    return Err(DecodeError::Inconsistent {
                        row,
                        bucket: j % cfg.width,
                        what: "a decoded flow has fewer packets in another row",
                    });
                }
                b[j].count -= c;
                b[j].id_sum = sub_mod(b[j].id_sum, sub);
                if b[j].count != 0 {
                    queue.push(j);
                }
            }
            if out.insert(flow, c).is_some() {
                return Err(DecodeError::Inconsistent {
                    row: i / cfg.width,
                    bucket: i % cfg.width,
                    what: "a flow decoded twice",
                });
            }
        }
        let left = b.iter().filter(|x| x.count != 0).count();
        if left > 0 {
            return Err(DecodeError::Stuck {
                decoded: out.len(),
                undecoded_buckets: left,
            });
        }
        if let Some(i) = b.iter().position(|x| x.id_sum != 0) {
            return Err(DecodeError::Inconsistent {
                row: i / cfg.width,
                bucket: i % cfg.width,
                what: "an empty bucket with a non-zero ID sum",
            });
        }
        Ok(out)
    }
}
