//! The upstream meter's own operations: Algorithm 2, and looking a flow's count up.

use super::{positions, MeterConfig, Usm, UsmBucket};
use crate::flow::FlowId;
use crate::sketch::hash::FlowHashes;

impl Default for Usm {
    fn default() -> Self {
        Self::new(MeterConfig::default()).expect("default config is valid")
    }
}

impl Usm {
    /// Algorithm 2 (UpdateUSM). The paper's listing is lost in extraction; reconstructed as
    /// Algorithm 1 without the pathBF field: a bucket turns dirty when a second flow hits it.
    pub fn update(&mut self, flow: &FlowId, h: FlowHashes) {
        self.update_n(flow, h, 1);
    }

    /// Exactly `n` consecutive [`Usm::update`]s of the same packet key.
    pub fn update_n(&mut self, flow: &FlowId, h: FlowHashes, n: u32) {
        if n == 0 {
            return;
        }
        for pos in positions(self.config, h) {
            self.write(pos, |b| b.update_n(flow, n));
        }
    }

    /// The count of any clean bucket holding `flow` (all of them agree), if there is one.
    pub fn clean_count(&self, flow: &FlowId, h: FlowHashes) -> Option<u32> {
        match self.clean_lookup(flow, h) {
            CleanLookup::Count(c) => Some(c),
            CleanLookup::Missing | CleanLookup::Torn => None,
        }
    }

    /// The flow's count from its clean buckets, checking that they agree. On a switch they can
    /// disagree only when the meter was read while still counting (rows are separate register
    /// arrays, read one after the other).
    pub fn clean_lookup(&self, flow: &FlowId, h: FlowHashes) -> CleanLookup {
        lookup_in(
            positions(self.config, h).map(|pos| &self.buckets[pos]),
            flow,
        )
    }
}

/// [`Usm::clean_lookup`] over the flow's buckets.
fn lookup_in<'a>(buckets: impl Iterator<Item = &'a UsmBucket>, flow: &FlowId) -> CleanLookup {
    let mut found = CleanLookup::Missing;
    for b in buckets {
        if b.dirty || b.flow != Some(*flow) {
            continue;
        }
        found = match found {
            CleanLookup::Missing => CleanLookup::Count(b.count),
            CleanLookup::Count(c) if c == b.count => found,
            _ => return CleanLookup::Torn,
        };
    }
    found
}

/// What a USM says about one flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CleanLookup {
    /// No clean bucket holds the flow.
    Missing,
    Count(u32),
    /// Clean buckets hold different counts: read while counting.
    Torn,
}
