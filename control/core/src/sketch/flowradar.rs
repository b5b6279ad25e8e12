//! FlowRadar (Li et al., NSDI'16) as configured in the Canary paper's Table I: a flow filter
//! (Bloom filter, 1/9 of the counting table's memory) and a counting table with 3 hash functions
//! whose cells hold FlowXOR (104 bit), FlowCount (8 bit) and PacketCount (32 bit): 144 bits.
//!
//! A packet whose flow the filter has not seen adds the flow to the filter and XORs its key into
//! its 3 cells, incrementing their FlowCount; every packet increments the PacketCount of its
//! flow's 3 cells. Decoding peels *pure* cells (FlowCount 1: the FlowXOR is a flow key, its
//! PacketCount that flow's packets) and removes the flow from its other cells until none is left.
//! Losses between two switches are the per-flow differences of their two decoded tables
//! ([`losses`]), which needs both tables to decode completely: FlowRadar's memory grows with the
//! number of flows, not with the loss.
//!
//! Our choices: the counting table is split into 3 equal sub-tables, one per hash function (the
//! usual partitioned IBLT; a flow then always has 3 distinct cells). Hashes are
//! [`super::seeded`]. The flow filter uses [`FLOW_FILTER_HASHES`] functions. FlowCount is 8 bits
//! wide and wraps, as the register would.

use super::error::DecodeError;
use super::seeded::{flow_from_key, flow_key, hash128, index, range, row_seed};
use crate::flow::FlowId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bits of a counting-table cell: FlowXOR (104) + FlowCount (8) + PacketCount (32).
pub const FLOWRADAR_CELL_BITS: usize = 104 + 8 + 32;
/// Hash functions of the flow filter: `ln 2 · bits per flow`, the optimum, where the table is
/// just large enough to peel (1.23 cells per flow, so 16 × 1.23 ≈ 20 filter bits per flow). A
/// flow the filter wrongly thinks it has seen is never added to the table, and the decode fails.
pub const FLOW_FILTER_HASHES: usize = 14;

/// Shape of a FlowRadar: `rows` sub-tables of `width` cells, and the seed of its hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FlowRadarConfig {
    pub rows: usize,
    pub width: usize,
    pub seed: u64,
}

impl FlowRadarConfig {
    /// Table I: 3 hash functions.
    pub fn new(width: usize, seed: u64) -> Self {
        FlowRadarConfig {
            rows: 3,
            width: width.max(1),
            seed,
        }
    }

    pub fn cells(&self) -> usize {
        self.rows * self.width
    }

    /// Bits of the flow filter: 1/9 of the counting table (Table I).
    pub fn filter_bits(&self) -> usize {
        (self.cells() * FLOWRADAR_CELL_BITS).div_ceil(9)
    }

    /// Switch memory: counting table plus flow filter, in bits.
    pub fn memory_bits(&self) -> usize {
        self.cells() * FLOWRADAR_CELL_BITS + self.filter_bits()
    }
}

/// One counting-table cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowRadarCell {
    pub flow_xor: u128,
    pub flow_count: u8,
    pub packet_count: u32,
}

/// One switch's FlowRadar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRadar {
    config: FlowRadarConfig,
    filter: Vec<u64>,
    cells: Vec<FlowRadarCell>,
}

impl FlowRadar {
    pub fn new(config: FlowRadarConfig) -> Self {
        FlowRadar {
            config,
            filter: vec![0; config.filter_bits().div_ceil(64)],
            cells: vec![FlowRadarCell::default(); config.cells()],
        }
    }

    pub fn config(&self) -> FlowRadarConfig {
        self.config
    }

    pub fn cells(&self) -> &[FlowRadarCell] {
        &self.cells
    }

    fn cell_of(&self, key: u128, row: usize) -> usize {
        row * self.config.width + index(row_seed(self.config.seed, row), key, self.config.width)
    }

    /// Tests and sets the flow filter; true if the flow was (apparently) already there.
    fn filter_test_and_set(&mut self, key: u128) -> bool {
        let bits = self.config.filter_bits();
        let mut present = true;
        for i in 0..FLOW_FILTER_HASHES {
            let b = range(hash128(!self.config.seed ^ ((i as u64) << 56), key), bits);
            let (w, m) = (b / 64, 1u64 << (b % 64));
            present &= self.filter[w] & m != 0;
            self.filter[w] |= m;
        }
        present
    }

    /// One packet of `flow`.
    pub fn insert(&mut self, flow: &FlowId) {
        self.insert_n(flow, 1);
    }

    /// `n` packets of `flow`, exactly as `n` calls of [`FlowRadar::insert`].
    pub fn insert_n(&mut self, flow: &FlowId, n: u32) {
        if n == 0 {
            return;
        }
        let key = flow_key(flow);
        let new = !self.filter_test_and_set(key);
        for row in 0..self.config.rows {
            let c = self.cell_of(key, row);
            let cell = &mut self.cells[c];
            if new {
                cell.flow_xor ^= key;
                cell.flow_count = cell.flow_count.wrapping_add(1);
            }
            cell.packet_count = cell.packet_count.wrapping_add(n);
        }
    }

    /// Every flow with its packet count, or why not.
    pub fn decode(&self) -> Result<BTreeMap<FlowId, u32>, DecodeError> {
        let mut cells = self.cells.clone();
        let width = self.config.width;
        let mut out = BTreeMap::new();
        let mut queue: Vec<usize> = (0..cells.len())
            .filter(|&i| cells[i].flow_count == 1)
            .collect();
        while let Some(i) = queue.pop() {
            let cell = cells[i];
            if cell.flow_count != 1 {
                continue;
            }
            let (row, col) = (i / width, i % width);
            let key = cell.flow_xor;
            let flow = flow_from_key(key).filter(|_| self.cell_of(key, row) == i);
            let Some(flow) = flow else {
                return Err(DecodeError::Inconsistent {
                    row,
                    bucket: col,
                    what: "a FlowCount-1 cell holds no flow of this cell",
                });
            };
            let packets = cell.packet_count;
            if out.insert(flow, packets).is_some() {
                return Err(DecodeError::Inconsistent {
                    row,
                    bucket: col,
                    what: "a flow decoded twice",
                });
            }
            for r in 0..self.config.rows {
                let j = self.cell_of(key, r);
                let c = &mut cells[j];
                c.flow_xor ^= key;
                c.flow_count = c.flow_count.wrapping_sub(1);
                c.packet_count = c.packet_count.wrapping_sub(packets);
                if c.flow_count == 1 {
                    queue.push(j);
                }
            }
        }
        let left = cells.iter().filter(|c| c.flow_count != 0).count();
        if left > 0 {
            return Err(DecodeError::Stuck {
                decoded: out.len(),
                undecoded_buckets: left,
            });
        }
        if let Some(i) = cells
            .iter()
            .position(|c| c.flow_xor != 0 || c.packet_count != 0)
        {
            return Err(DecodeError::Inconsistent {
                row: i / width,
                bucket: i % width,
                what: "packets left with no flow (a flow-filter false positive)",
            });
        }
        Ok(out)
    }
}

/// Per-flow losses between an upstream and a downstream FlowRadar: both are decoded and their
/// counts subtracted. Flows without loss are left out.
pub fn losses(up: &FlowRadar, down: &FlowRadar) -> Result<BTreeMap<FlowId, u32>, DecodeError> {
    let sent = up.decode()?;
    let received = down.decode()?;
    let mut out = BTreeMap::new();
    for (flow, &n) in &sent {
        let r = received.get(flow).copied().unwrap_or(0);
        if r > n {
            return Err(DecodeError::Inconsistent {
                row: 0,
                bucket: 0,
                what: "a flow received more packets than were sent",
            });
        }
        if n > r {
            out.insert(*flow, n - r);
        }
    }
    if received.keys().any(|f| !sent.contains_key(f)) {
        return Err(DecodeError::Inconsistent {
            row: 0,
            bucket: 0,
            what: "a flow received that was never sent",
        });
    }
    Ok(out)
}
