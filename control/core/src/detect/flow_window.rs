//! Each thin segment's flows over the window, one count per flow: what a loss on some flows
//! only is weighed with ([`crate::localize`]'s shape-robust weighing).
//!
//! A loss-free segment's packets clear its links of a loss spread over every packet. They
//! clear a link of a loss on some of its flows only as far as their *flows* go: 300 clean
//! packets of three flows say little against a fault that catches half the flows through the
//! link, whatever the packets (on the testbed a fault on half the flows of edge1_0→agg1_1 was
//! put on its neighbour because the link's other segment carried 364 clean packets, all of
//! flows in the healthy half). Per-packet counts cannot tell these apart, so segments with few
//! flows keep one count per flow. A segment with more than [`FLOW_DETAIL`] flows over the
//! window keeps none: its flows clear a share fault about as well as its packets clear a
//! uniform one, and the per-packet counts stand for them.

use super::MmEntry;
use crate::topo::SegmentId;
use crate::FlowId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Most flows a segment keeps one count each of over the window. Against a fault on a share
/// s of a link's flows, n clean flows leave it a chance of (1 − s)^n: at 64 flows, 2·10⁻⁵ for
/// a tenth of the flows, nothing for half.
pub const FLOW_DETAIL: usize = 64;

/// Most epochs a loss's pins gather flows over, from its onset on: the flows a thin segment
/// carries in one window are often too few to clear a link of a fault on some flows, and new
/// flows arrive every epoch.
pub const FLOW_EPOCHS: usize = 20;

/// One monitored flow's packets on a segment over the window, and of them those lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowCount {
    pub sent: u32,
    pub lost: u32,
}

impl FlowCount {
    /// One minus-meter entry's count (packets lost at most those sent, each at most u32::MAX).
    pub(super) fn of(e: &MmEntry) -> Self {
        Self {
            sent: u32::try_from(e.sent).unwrap_or(u32::MAX),
            lost: u32::try_from(e.lost.min(e.sent)).unwrap_or(u32::MAX),
        }
    }

    /// Adds another epoch's count of the same flow.
    pub(super) fn add(&mut self, c: Self) {
        self.sent = self.sent.saturating_add(c.sent);
        self.lost = self.lost.saturating_add(c.lost);
    }
}

/// One segment's flows in one epoch.
#[derive(Clone, Debug, Default)]
enum Slot {
    #[default]
    Unseen,
    Few(Vec<(FlowId, FlowCount)>),
    /// More than [`FLOW_DETAIL`].
    Many,
}

/// The flows of every segment over the last epochs, as [`super::Window`] keeps their totals,
/// but longer: a loss's thin pins gather flows from its onset on ([`FlowWindow::totals`]).
#[derive(Clone, Debug)]
pub struct FlowWindow {
    n: usize,
    /// Each epoch's slots, by segment id (an epoch's entries are millions at k = 32: a look-up
    /// per entry must be an index).
    epochs: VecDeque<(u64, Vec<Slot>)>,
}

impl FlowWindow {
    /// Keeps the last `n` epochs.
    pub fn new(n: usize) -> Self {
        Self {
            n: n.max(1),
            epochs: VecDeque::new(),
        }
    }

    /// Notes `epoch`'s minus-meter entries (those the epoch's counts kept).
    pub fn push<'a>(&mut self, epoch: u64, entries: impl IntoIterator<Item = &'a MmEntry>) {
        let mut slots: Vec<Slot> = Vec::new();
        for e in entries {
            let s = e.segment as usize;
            if slots.len() <= s {
                slots.resize(s + 1, Slot::Unseen);
            }
            let slot = &mut slots[s];
            let c = FlowCount::of(e);
            match slot {
                Slot::Unseen => *slot = Slot::Few(vec![(e.flow, c)]),
                Slot::Few(flows) if flows.len() == FLOW_DETAIL => *slot = Slot::Many,
                Slot::Few(flows) => flows.push((e.flow, c)),
                Slot::Many => {}
            }
        }
        if self.epochs.len() == self.n {
            self.epochs.pop_front();
        }
        self.epochs.push_back((epoch, slots));
    }

    /// The first epoch kept.
    pub fn oldest(&self) -> Option<u64> {
        self.epochs.front().map(|(e, _)| *e)
    }

    /// The flows of each segment of `from` (segment → its first epoch) over its epochs kept
    /// from then on, a flow's epochs added up; only segments that had at most [`FLOW_DETAIL`]
    /// flows in each of those epochs and in all.
    pub fn totals(&self, from: &BTreeMap<SegmentId, u64>) -> BTreeMap<SegmentId, Vec<FlowCount>> {
        let mut by: BTreeMap<SegmentId, Option<BTreeMap<FlowId, FlowCount>>> = BTreeMap::new();
        for (epoch, slots) in &self.epochs {
            for (&s, &first) in from {
                let Some(slot) = slots.get(s as usize).filter(|_| *epoch >= first) else {
                    continue;
                };
                let flows = match slot {
                    Slot::Unseen => continue,
                    Slot::Few(flows) => Some(flows),
                    Slot::Many => None,
                };
                let total = by.entry(s).or_insert_with(|| Some(BTreeMap::new()));
                match (total.as_mut(), flows) {
                    (Some(all), Some(flows)) => {
                        for (f, c) in flows {
                            all.entry(*f).or_default().add(*c);
                        }
                        if all.len() > FLOW_DETAIL {
                            *total = None;
                        }
                    }
                    _ => *total = None,
                }
            }
        }
        by.into_iter()
            .filter_map(|(s, flows)| Some((s, flows?.into_values().collect())))
            .collect()
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

    /// A flow counted in two epochs is one flow of both epochs' packets; the window forgets
    /// its oldest epoch.
    #[test]
    fn a_flows_epochs_add_up_and_the_oldest_is_forgotten() {
        let all = |w: &FlowWindow| w.totals(&BTreeMap::from([(0, 0), (1, 0), (2, 0)]));
        let mut w = FlowWindow::new(2);
        w.push(1, &[e(1, 0, 10, 0), e(2, 0, 5, 1)]);
        w.push(2, &[e(1, 0, 20, 2)]);
        let t = all(&w);
        assert_eq!(
            t[&0],
            vec![
                FlowCount { sent: 30, lost: 2 },
                FlowCount { sent: 5, lost: 1 }
            ]
        );
        w.push(3, &[e(3, 0, 7, 0)]);
        let t = all(&w);
        assert_eq!(
            t[&0],
            vec![
                FlowCount { sent: 20, lost: 2 },
                FlowCount { sent: 7, lost: 0 }
            ]
        );
        // From epoch 3 on only.
        let t = w.totals(&BTreeMap::from([(0, 3)]));
        assert_eq!(t[&0], vec![FlowCount { sent: 7, lost: 0 }]);
    }

    /// A segment with more flows than the detail keeps, in one epoch or over the window,
    /// keeps none; the others keep theirs.
    #[test]
    fn a_segment_of_many_flows_keeps_none() {
        let all = |w: &FlowWindow| w.totals(&BTreeMap::from([(1, 0), (2, 0)]));
        let mut w = FlowWindow::new(3);
        let many: Vec<MmEntry> = (0..=FLOW_DETAIL as u32).map(|f| e(f, 1, 3, 0)).collect();
        w.push(0, many.iter().chain(&[e(1, 2, 4, 0)]));
        let t = all(&w);
        assert!(!t.contains_key(&1));
        assert_eq!(t[&2], vec![FlowCount { sent: 4, lost: 0 }]);
        // Half the detail in each of three epochs, other flows each time: too many in all.
        let mut w = FlowWindow::new(3);
        for epoch in 0..3u32 {
            let half: Vec<MmEntry> = (0..FLOW_DETAIL as u32 / 2)
                .map(|f| e(epoch * 1000 + f, 1, 3, 0))
                .collect();
            w.push(u64::from(epoch), &half);
        }
        assert!(!all(&w).contains_key(&1));
    }
}
