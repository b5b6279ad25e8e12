//! HashPipe (Sivaraman et al., SOSR'17), the paper's lightweight 3 stages × 32 entries variant.
//!
//! Stage 0 always installs the arriving key: on a match it increments and stops, otherwise it
//! evicts the resident into the carry and installs the key with count 1. Every later stage, indexed
//! by the hash of the **carried** key: on a key match it adds the carried count and stops; on an
//! empty slot it inserts the carry and stops; if the resident's count is smaller than the carried
//! count the two are swapped (the resident is carried on); otherwise the carry moves on unchanged.
//! The carry is dropped after the last stage.
//!
//! **Our decision on the reported count** (`meta.hh_count`, what the HH table compares with η):
//! when stage 0 holds the packet's own flow (a hit), nothing is carried, so stages 1 and 2 are
//! free to *read* the packet's own key at its own index; the count is the sum of the flow's
//! entries in all stages: what HashPipe retains for it (the paper: "the flow's packet count
//! retained by the HashPipe"). On a stage-0 miss the stages are busy with the carried key and the
//! count is 1. Each register is still accessed once per packet. Summing matters: a heavy flow
//! sharing its stage-0 slot with others is evicted between its bursts, and its history
//! accumulates in the later stages; stage 0 alone would only measure burst length.

use super::error::{check_pow2, check_range, SketchConfigError};
use super::hash::{hashpipe_index, log2, FlowHashes};
use super::meter::MeterConfig;
use serde::{Deserialize, Serialize};

/// Bits of a HashPipe entry in the paper's accounting (Table I): flowID (104) + count (32). The
/// overhead experiments compare memory on the paper's terms; our data plane keeps a 32-bit
/// [`fingerprint`] instead of the flow ID (docs/dataplane.md).
pub const HASHPIPE_ENTRY_BITS: usize = 104 + 32;

/// A flow's HashPipe key: its CRC-32 with bit 0 set, so no fingerprint is 0 (an empty slot).
/// Stages 1-2 index by slices of the carried flow's `c32` above bit 0, which the fingerprint
/// keeps. Two flows are confused only when they share a stage slot and 31 bits of their CRC-32:
/// about 2^-31 per pair of flows in one slot.
pub fn fingerprint(h: FlowHashes) -> u32 {
    h.c32 | 1
}

/// Shape of a HashPipe: `stages` (1..=3) × `entries` (a power of two). `meter_width` is the width
/// of the meters on the same switch: the stage-1/2 slices of `c32` sit beside the meter slices, so
/// `log2(meter_width) + log2(entries) <= 16` is required (all slices disjoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HashPipeConfig {
    pub stages: usize,
    pub entries: usize,
    pub meter_width: usize,
}

impl HashPipeConfig {
    pub const MAX_STAGES: usize = 3;

    /// A validated configuration.
    pub fn new(
        stages: usize,
        entries: usize,
        meter_width: usize,
    ) -> Result<Self, SketchConfigError> {
        let config = HashPipeConfig {
            stages,
            entries,
            meter_width,
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks the constraints of [`HashPipeConfig`].
    pub fn validate(&self) -> Result<(), SketchConfigError> {
        check_range("stages", self.stages, 1, Self::MAX_STAGES)?;
        check_pow2("meter_width", self.meter_width, MeterConfig::MAX_WIDTH)?;
        let max_entries = 1usize << (16 - log2(self.meter_width));
        check_pow2("entries", self.entries, max_entries)
    }
}

impl Default for HashPipeConfig {
    /// The paper's 3 stages × 32 entries, beside 2^10-wide meters.
    fn default() -> Self {
        HashPipeConfig {
            stages: 3,
            entries: 32,
            meter_width: MeterConfig::default().width,
        }
    }
}

/// One occupied HashPipe slot: a flow's [`fingerprint`] and its count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashPipeSlot {
    pub fp: u32,
    pub count: u32,
}

/// The HashPipe: `stages × entries` slots, stage-major.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashPipe {
    config: HashPipeConfig,
    slots: Vec<Option<HashPipeSlot>>,
}

impl Default for HashPipe {
    fn default() -> Self {
        Self::new(HashPipeConfig::default()).expect("default config is valid")
    }
}

impl HashPipe {
    /// An empty HashPipe.
    pub fn new(config: HashPipeConfig) -> Result<Self, SketchConfigError> {
        config.validate()?;
        Ok(HashPipe {
            config,
            slots: vec![None; config.stages * config.entries],
        })
    }

    pub fn config(&self) -> HashPipeConfig {
        self.config
    }

    /// Empties every slot.
    pub fn reset(&mut self) {
        self.slots.fill(None);
    }

    fn pos(&self, fp: u32, c16: u16, stage: usize) -> usize {
        let HashPipeConfig {
            entries,
            meter_width,
            ..
        } = self.config;
        // Stages 1-2 read only c32 (the fingerprint); stage 0 only c16.
        let h = FlowHashes { c32: fp, c16 };
        stage * entries + hashpipe_index(h, stage, entries, meter_width)
    }

    /// Processes one packet of the flow whose hashes are `h`; returns the count HashPipe retains
    /// for the flow on a stage-0 hit, 1 on a miss (see the module doc).
    pub fn update(&mut self, h: FlowHashes) -> u32 {
        let fp = fingerprint(h);
        let first = self.pos(fp, h.c16, 0);
        let (own, mut carry) = match self.slots[first] {
            Some(ref mut s) if s.fp == fp => {
                s.count = s.count.wrapping_add(1);
                let mut total = s.count;
                for stage in 1..self.config.stages {
                    if let Some(r) = self.slots[self.pos(fp, 0, stage)] {
                        if r.fp == fp {
                            total = total.wrapping_add(r.count);
                        }
                    }
                }
                return total;
            }
            resident => {
                self.slots[first] = Some(HashPipeSlot { fp, count: 1 });
                (1, resident)
            }
        };
        for stage in 1..self.config.stages {
            let Some(c) = carry else { break };
            let pos = self.pos(c.fp, 0, stage);
            match self.slots[pos] {
                None => {
                    self.slots[pos] = Some(c);
                    carry = None;
                }
                Some(ref mut r) if r.fp == c.fp => {
                    r.count = r.count.wrapping_add(c.count);
                    carry = None;
                }
                Some(r) if r.count < c.count => {
                    self.slots[pos] = Some(c);
                    carry = Some(r);
                }
                Some(_) => {}
            }
        }
        own
    }

    /// `n ≥ 1` consecutive packets of one flow: the counts [`HashPipe::update`] returns for the
    /// first and for the last. The first may miss stage 0, but it installs the flow there, so
    /// every later one hits: stage 0 counts them at once, and the `k`-th of them reports the
    /// flow's retained count after the first plus `k`. The state is that of `n` updates.
    pub fn update_n(&mut self, h: FlowHashes, n: u32) -> (u32, u32) {
        let first = self.update(h);
        if n <= 1 {
            return (first, first);
        }
        let fp = fingerprint(h);
        let pos = self.pos(fp, h.c16, 0);
        let s = self.slots[pos]
            .as_mut()
            .expect("the first packet installed its flow in stage 0");
        s.count = s.count.wrapping_add(n - 1);
        let mut total = s.count;
        for stage in 1..self.config.stages {
            if let Some(r) = self.slots[self.pos(fp, 0, stage)] {
                if r.fp == fp {
                    total = total.wrapping_add(r.count);
                }
            }
        }
        (first, total)
    }

    /// Every occupied slot as `(stage, index, fingerprint, count)`, stage-major.
    pub fn entries(&self) -> impl Iterator<Item = (usize, usize, u32, u32)> + '_ {
        let entries = self.config.entries;
        self.slots
            .iter()
            .enumerate()
            .filter_map(move |(i, s)| s.map(|s| (i / entries, i % entries, s.fp, s.count)))
    }

    /// The controller-side estimate of a flow: the sum of its counts over all stages.
    pub fn estimate(&self, h: FlowHashes) -> u32 {
        let fp = fingerprint(h);
        self.entries()
            .filter(|e| e.2 == fp)
            .fold(0u32, |acc, e| acc.wrapping_add(e.3))
    }
}
