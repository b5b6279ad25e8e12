//! Each thin segment's flows over a whole run, one count per flow: what the run's verdict
//! weighs a loss on some flows only with, as each epoch's verdict does over its window
//! ([`super::FlowWindow`]).
//!
//! Without them the run's verdict, on the run's per-packet totals, can contradict every epoch's:
//! on the testbed (issue 32) a fault on half the flows of edge1_0→agg1_1 caught two flows, both
//! on the segment through agg1_1→core2. Each epoch weighed the links' clean *flows* and left the
//! loss undecided between the two links; the run, by clean *packets* (247 on the faulty link's
//! other segments, 99 on its neighbour's), blamed the neighbour.
//!
//! A segment keeps its flows while it has at most [`FLOW_DETAIL`] over the run, and none after:
//! the per-packet counts then stand for them, as in the window. Memory is bounded by the
//! segments times [`FLOW_DETAIL`].

use super::flow_window::{FlowCount, FLOW_DETAIL};
use super::MmEntry;
use crate::topo::SegmentId;
use crate::FlowId;
use std::collections::BTreeMap;

/// One segment's flows so far.
#[derive(Clone, Debug, Default)]
enum Slot {
    #[default]
    Unseen,
    Few(BTreeMap<FlowId, FlowCount>),
    /// More than [`FLOW_DETAIL`].
    Many,
}

/// The flows of every segment over every epoch pushed.
#[derive(Clone, Debug, Default)]
pub struct RunFlows {
    /// By segment id: a look-up per entry must be an index.
    slots: Vec<Slot>,
    /// Some epoch's counts went into the run's totals without their flows: the flows would
    /// cover fewer packets than the totals, and none are given.
    partial: bool,
}

impl RunFlows {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an epoch's minus-meter entries (those whose segments' counts the run's totals
    /// took).
    pub fn push<'a>(&mut self, entries: impl IntoIterator<Item = &'a MmEntry>) {
        if self.partial {
            return;
        }
        for e in entries {
            let s = e.segment as usize;
            if self.slots.len() <= s {
                self.slots.resize(s + 1, Slot::Unseen);
            }
            let slot = &mut self.slots[s];
            if let Slot::Unseen = slot {
                *slot = Slot::Few(BTreeMap::new());
            }
            let Slot::Few(flows) = slot else {
                continue;
            };
            flows.entry(e.flow).or_default().add(FlowCount::of(e));
            if flows.len() > FLOW_DETAIL {
                *slot = Slot::Many;
            }
        }
    }

    /// An epoch's counts went into the run's totals without their flows (counted in rounds,
    /// where flows are not kept): from now on no segment has flows.
    pub fn lose_track(&mut self) {
        self.partial = true;
        self.slots = Vec::new();
    }

    /// The flows of `segment` over the run, when it had at most [`FLOW_DETAIL`]; empty when
    /// it had more, none, or the run lost track.
    pub fn of(&self, segment: SegmentId) -> Vec<FlowCount> {
        match self.slots.get(segment as usize) {
            Some(Slot::Few(flows)) => flows.values().copied().collect(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(flow: u32, segment: SegmentId, sent: u64, lost: u64) -> MmEntry {
        MmEntry {
            flow: FlowId::v4(flow, 1, 17, 1, 2),
            segment,
            sent,
            lost,
        }
    }

    /// A flow's epochs add up however many epochs there are; a segment that passes the detail
    /// keeps none; a run that lost track gives none.
    #[test]
    fn a_runs_flows_add_up_until_there_are_too_many_or_the_run_lost_track() {
        let mut r = RunFlows::new();
        for epoch in 0..30 {
            r.push(&[e(1, 0, 10, u64::from(epoch == 3)), e(2, 0, 5, 0)]);
        }
        assert_eq!(
            r.of(0),
            vec![
                FlowCount { sent: 300, lost: 1 },
                FlowCount { sent: 150, lost: 0 }
            ]
        );
        assert!(r.of(7).is_empty());
        let many: Vec<MmEntry> = (0..=FLOW_DETAIL as u32).map(|f| e(f, 1, 3, 0)).collect();
        r.push(&many);
        assert!(r.of(1).is_empty());
        r.push(&[e(9, 1, 3, 0)]);
        assert!(r.of(1).is_empty(), "a segment of many flows stays so");
        r.lose_track();
        r.push(&[e(1, 0, 10, 0)]);
        assert!(r.of(0).is_empty());
    }
}
