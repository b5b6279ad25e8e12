//! Epochs in which a monitored flow's rules were not in for the whole epoch: its counts there
//! measure no loss, and its absence there says nothing.
//!
//! A flow selected after epoch E gets its rules during E + 1, so E + 2 is its first whole epoch.
//! Its DSM rule counts only from the install on, so where its USM rule already counted (for
//! another segment of the flow) the first epoch's counts differ by the packets sent before the
//! install. The same holds at the other end: a retired flow whose USM rule stays (another
//! segment still uses it) keeps being counted and marked upstream while its DSM rule goes, a
//! flip later, in the middle of an epoch. Measured on the testbed (the out-of-service test): a
//! flow moved by a drained link was retired on its new segment after its half-counted first
//! epoch, and the epoch of its DSM removal showed 1-4 of its packets lost at the core.

use super::FlowSelector;
use crate::topo::SegmentId;
use crate::FlowId;
use std::collections::HashSet;

/// Whether a flow started at selection `selected_at` had its rules in for the whole epoch the
/// selection `now` follows.
pub(super) fn whole_epoch(selected_at: u64, now: u64) -> bool {
    now >= selected_at + 2
}

impl FlowSelector {
    /// The (flow, segment) pairs whose counts of the epoch now being harvested are no loss
    /// measure: their DSM rule went in, or went, during it while the flow's USM rule counted
    /// the whole epoch. Call once per epoch, before this epoch's selection. A pair retired by a
    /// selection has its DSM removal held back to the next epoch's harvest, so its counts are
    /// partial in the epoch after that: it waits one call in `half_counted_next`.
    pub fn take_half_counted(&mut self) -> HashSet<(FlowId, SegmentId)> {
        let next = std::mem::take(&mut self.half_counted_next);
        std::mem::replace(&mut self.half_counted, next)
    }
}
