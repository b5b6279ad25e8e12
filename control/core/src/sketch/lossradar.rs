//! LossRadar (Li et al., CoNEXT'16) as configured in the Canary paper's Table I: a meter of 3
//! rows of buckets, each bucket a 120-bit xorSum of packet IDs and a 32-bit count (152 bits).
//!
//! Every packet is added to one bucket per row at both ends of a link. Subtracting the
//! downstream meter from the upstream one cancels every delivered packet and leaves exactly the
//! lost ones (an IBLT of the lost packets): buckets with count 1 are *pure*, their xorSum is a lost
//! packet's ID, which is then removed from its other rows ([`LossRadarDiff::decode`]). Memory
//! therefore grows with the number of lost packets.
//!
//! A packet ID is the flow's 104-bit 5-tuple and a 16-bit per-packet identifier (the IPv4 ID in
//! the LossRadar paper): 120 bits. Hashes are [`super::seeded`], one function per row.

use super::error::DecodeError;
use super::seeded::{flow_from_key, flow_key, index, row_seed, FLOW_KEY_BITS};
use crate::flow::FlowId;
use serde::{Deserialize, Serialize};

/// Bits of a LossRadar bucket: count (32) + xorSum (120).
pub const LOSSRADAR_BUCKET_BITS: usize = 32 + 120;

/// One packet: its flow and a 16-bit identifier unique among the flow's packets in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PacketId {
    pub flow: FlowId,
    pub ipid: u16,
}

impl PacketId {
    /// The 120-bit packet ID: 5-tuple, then the identifier.
    pub fn key(&self) -> u128 {
        (flow_key(&self.flow) << 16) | self.ipid as u128
    }

    /// The packet whose [`PacketId::key`] is `key`; `None` if `key` has more than 120 bits.
    pub fn from_key(key: u128) -> Option<Self> {
        let flow = flow_from_key(key >> 16).filter(|_| key >> (FLOW_KEY_BITS + 16) == 0)?;
        Some(PacketId {
            flow,
            ipid: key as u16,
        })
    }
}

/// Shape of a LossRadar meter: `rows` × `width` buckets and the seed of its hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LossRadarConfig {
    pub rows: usize,
    pub width: usize,
    pub seed: u64,
}

impl LossRadarConfig {
    /// Table I: 3 rows.
    pub fn new(width: usize, seed: u64) -> Self {
        LossRadarConfig {
            rows: 3,
            width: width.max(1),
            seed,
        }
    }

    pub fn memory_bits(&self) -> usize {
        self.rows * self.width * LOSSRADAR_BUCKET_BITS
    }
}

/// One bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossRadarBucket {
    pub xor_sum: u128,
    pub count: u32,
}

/// One switch's LossRadar meter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossRadar {
    config: LossRadarConfig,
    buckets: Vec<LossRadarBucket>,
}

fn bucket_of(config: &LossRadarConfig, key: u128, row: usize) -> usize {
    row * config.width + index(row_seed(config.seed, row), key, config.width)
}

impl LossRadar {
    pub fn new(config: LossRadarConfig) -> Self {
        LossRadar {
            config,
            buckets: vec![LossRadarBucket::default(); config.rows * config.width],
        }
    }

    pub fn config(&self) -> LossRadarConfig {
        self.config
    }

    pub fn buckets(&self) -> &[LossRadarBucket] {
        &self.buckets
    }

    /// One packet.
    pub fn insert(&mut self, packet: &PacketId) {
        let key = packet.key();
        for row in 0..self.config.rows {
            let b = &mut self.buckets[bucket_of(&self.config, key, row)];
            b.xor_sum ^= key;
            b.count = b.count.wrapping_add(1);
        }
    }

    /// `self` (upstream) minus `down` (downstream): the lost packets' meter.
    pub fn subtract(&self, down: &LossRadar) -> Result<LossRadarDiff, DecodeError> {
        if self.config != down.config {
            return Err(DecodeError::Mismatch("LossRadar meters"));
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
            buckets.push(LossRadarBucket {
                xor_sum: u.xor_sum ^ d.xor_sum,
                count,
            });
        }
        Ok(LossRadarDiff {
            config: self.config,
            buckets,
        })
    }
}

/// An upstream meter minus its downstream meter: the lost packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossRadarDiff {
    config: LossRadarConfig,
    buckets: Vec<LossRadarBucket>,
}

impl LossRadarDiff {
    /// A difference meter built directly from a set of lost packets. Equal, bucket for bucket,
    /// to inserting every sent packet upstream, every delivered one downstream and subtracting
    /// (the meters are linear); used to search memory sizes without re-encoding delivered traffic.
    pub fn of_lost(config: LossRadarConfig, lost: &[PacketId]) -> Self {
        let mut m = LossRadar::new(config);
        for p in lost {
            m.insert(p);
        }
        LossRadarDiff {
            config,
            buckets: m.buckets,
        }
    }

    pub fn buckets(&self) -> &[LossRadarBucket] {
        &self.buckets
    }

    /// Every lost packet (sorted), or why not.
    pub fn decode(&self) -> Result<Vec<PacketId>, DecodeError> {
        let cfg = self.config;
        let mut b = self.buckets.clone();
        let mut out = Vec::new();
        let mut queue: Vec<usize> = (0..b.len()).filter(|&i| b[i].count == 1).collect();
        while let Some(i) = queue.pop() {
            if b[i].count != 1 {
                continue;
            }
            let key = b[i].xor_sum;
            let packet =
                PacketId::from_key(key).filter(|_| bucket_of(&cfg, key, i / cfg.width) == i);
            let Some(packet) = packet else {
                return Err(DecodeError::Inconsistent {
                    row: i / cfg.width,
                    bucket: i % cfg.width,
                    what: "a count-1 bucket holds no packet of this bucket",
                });
            };
            out.push(packet);
            for row in 0..cfg.rows {
                let j = bucket_of(&cfg, key, row);
                if b[j].count == 0 {
                    return Err(DecodeError::Inconsistent {
                        row,
                        bucket: j % cfg.width,
                        what: "a decoded packet is missing from another row",
                    });
                }
                b[j].xor_sum ^= key;
                b[j].count -= 1;
                if b[j].count == 1 {
                    queue.push(j);
                }
            }
        }
        let left = b.iter().filter(|x| x.count != 0).count();
        if left > 0 {
            return Err(DecodeError::Stuck {
                decoded: out.len(),
                undecoded_buckets: left,
            });
        }
        if let Some(i) = b.iter().position(|x| x.xor_sum != 0) {
            return Err(DecodeError::Inconsistent {
                row: i / cfg.width,
                bucket: i % cfg.width,
                what: "an empty bucket with a non-zero xorSum",
            });
        }
        out.sort_unstable();
        Ok(out)
    }
}
