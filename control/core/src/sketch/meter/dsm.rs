//! The downstream meter's own operations: Algorithm 1, and reading every clean flow out.

use super::{positions, Dsm, MeterConfig};
use crate::flow::FlowId;
use crate::sketch::hash::FlowHashes;
use serde::{Deserialize, Serialize};

impl Default for Dsm {
    fn default() -> Self {
        Self::new(MeterConfig::default()).expect("default config is valid")
    }
}

/// A flow read from a clean DSM bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DsmRecord {
    pub flow: FlowId,
    pub path_bf: u32,
    pub count: u32,
}

impl Dsm {
    /// Algorithm 1 (UpdateDSM) for one packet of `flow` carrying `path_bf`.
    pub fn update(&mut self, flow: &FlowId, h: FlowHashes, path_bf: u32) {
        self.update_n(flow, h, path_bf, 1);
    }

    /// Exactly `n` consecutive [`Dsm::update`]s of the same packet key and pathBF.
    pub fn update_n(&mut self, flow: &FlowId, h: FlowHashes, path_bf: u32, n: u32) {
        if n == 0 {
            return;
        }
        for pos in positions(self.config, h) {
            self.write(pos, |b| b.update_n(flow, path_bf, n));
        }
    }

    /// Whether the meter shows that no packet of `flow` was counted: one of its buckets is empty,
    /// or clean and holding another flow. A counted packet would have left every one of its
    /// buckets holding the flow or dirty (Algorithm 1), so a single such bucket is proof; when
    /// every bucket is dirty nothing can be said.
    pub fn proves_absent(&self, flow: &FlowId, h: FlowHashes) -> bool {
        positions(self.config, h).any(|pos| {
            let b = &self.buckets[pos];
            match b.flow {
                None => true,
                Some(resident) => !b.dirty && resident != *flow,
            }
        })
    }

    /// One record per flow with at least one clean bucket, sorted by flow; flows whose clean
    /// buckets disagree are left out (see [`Dsm::clean_flows_checked`]).
    pub fn clean_flows(&self) -> Vec<DsmRecord> {
        self.clean_flows_checked().0
    }

    /// [`Dsm::clean_flows`], and how many flows were left out because their clean buckets
    /// disagree: on a switch, the meter was read while a packet was still being counted.
    pub fn clean_flows_checked(&self) -> (Vec<DsmRecord>, u64) {
        // Visit non-empty buckets in memory order (a harvest of wide meters is mostly empty and
        // random access into it is what costs), keep clean ones, then one record per flow.
        let mut used = self.used.clone();
        used.sort_unstable();
        let mut all: Vec<DsmRecord> = used
            .iter()
            .map(|&i| &self.buckets[i as usize])
            .filter(|b| !b.dirty)
            .filter_map(|b| {
                b.flow.map(|flow| DsmRecord {
                    flow,
                    path_bf: b.path_bf,
                    count: b.count,
                })
            })
            .collect();
        all.sort_unstable_by_key(|r| r.flow);
        let mut out = Vec::with_capacity(all.len());
        let mut torn = 0;
        for group in all.chunk_by(|a, b| a.flow == b.flow) {
            if group.iter().all(|r| r == &group[0]) {
                out.push(group[0]);
            } else {
                torn += 1;
            }
        }
        (out, torn)
    }
}
