//! The original HashPipe (Sivaraman et al., SOSR'17) with any number of stages and entries,
//! the heavy-hitter baseline of the Canary paper's Fig. 11 (6 stages).
//!
//! Same stage rules as Canary's lightweight [`super::HashPipe`] (stage 0 always inserts, later
//! stages keep the heavier of resident and carried entry), but indices come from independent
//! seeded hashes ([`super::seeded`]) so widths need not be powers of two and stages are not
//! limited to the three CRC slices of the P4 contract.

use super::seeded::{flow_key, index, row_seed};
use super::HASHPIPE_ENTRY_BITS;
use crate::flow::FlowId;
use std::collections::HashMap;

#[derive(Clone, Debug)]
pub struct OriginalHashPipe {
    stages: usize,
    entries: usize,
    seed: u64,
    slots: Vec<Option<(FlowId, u32)>>,
}

impl OriginalHashPipe {
    /// `stages × entries` empty slots (both at least 1).
    pub fn new(stages: usize, entries: usize, seed: u64) -> Self {
        let (stages, entries) = (stages.max(1), entries.max(1));
        OriginalHashPipe {
            stages,
            entries,
            seed,
            slots: vec![None; stages * entries],
        }
    }

    /// Switch memory in bits: every entry is a flow ID and a counter.
    pub fn memory_bits(&self) -> usize {
        self.stages * self.entries * HASHPIPE_ENTRY_BITS
    }

    fn pos(&self, flow: &FlowId, stage: usize) -> usize {
        stage * self.entries + index(row_seed(self.seed, stage), flow_key(flow), self.entries)
    }

    /// One packet of `flow`.
    pub fn update(&mut self, flow: &FlowId) {
        let first = self.pos(flow, 0);
        let mut carry = match self.slots[first] {
            Some((f, ref mut c)) if f == *flow => {
                *c = c.saturating_add(1);
                return;
            }
            resident => {
                self.slots[first] = Some((*flow, 1));
                resident
            }
        };
        for stage in 1..self.stages {
            let Some((cf, cc)) = carry else { return };
            let pos = self.pos(&cf, stage);
            match self.slots[pos] {
                None => {
                    self.slots[pos] = Some((cf, cc));
                    return;
                }
                Some((f, ref mut c)) if f == cf => {
                    *c = c.saturating_add(cc);
                    return;
                }
                Some((f, c)) if c < cc => {
                    self.slots[pos] = Some((cf, cc));
                    carry = Some((f, c));
                }
                Some(_) => {}
            }
        }
    }

    /// Each flow held, with the sum of its counts over the stages.
    pub fn estimates(&self) -> HashMap<FlowId, u64> {
        let mut out = HashMap::new();
        for (f, c) in self.slots.iter().flatten() {
            *out.entry(*f).or_insert(0) += *c as u64;
        }
        out
    }
}
