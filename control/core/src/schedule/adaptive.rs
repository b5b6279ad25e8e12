//! Watching where the suspicion is: a sweep that never stops, and the rest of the budget on the
//! segments that lost packets and on the other segments of their links.
//!
//! The fixed plan ([`WatchPlan`]) watches a segment once a period and nothing in between, so a
//! link seen losing in one round is localized from its other segments' counts of up to a period
//! ago. Here every epoch's watch is built from three parts, in this order, each fitted into what
//! the switches still hold (a segment takes a USM slot at its upstream monitor and a DSM slot at
//! its downstream one):
//!
//! 1. **The sweep's due part.** The rounds of a plan coloured for half the slots ("half-rounds",
//!    at most s/2 per switch): the leftover of the half-round begun the epoch before, else the
//!    next half-round. It always fits, since it is placed first and needs at most half.
//! 2. **The focus** ([`AdaptiveWatch::focus_after`]), asked for by the epoch before: other segments of
//!    the links of a loss not yet localized (so that the loss can be placed in the next epoch),
//!    then the lossy segments again, then segments that lost a few packets.
//! 3. **The sweep ahead.** The next half-round's segments, wherever they still fit; what does
//!    not fit is the next epoch's due part.
//!
//! Every epoch completes at least one half-round, so every segment is watched at least once in
//! any [`AdaptiveWatch::bound`] epochs (the half-rounds and one, about twice the fixed plan's rounds);
//! when nothing is in focus two half-rounds fit in an epoch and a sweep takes about the fixed
//! plan's period.

use super::fresh::Freshness;
use super::{segment_ends, switches_of, LastShown, WatchBudget, WatchPlan};
use crate::topo::{LinkIx, SegmentId, Segments, SwitchIx};

/// The segments through each directed link.
#[derive(Clone, Debug, Default)]
pub struct LinkSegments {
    through: Vec<Vec<SegmentId>>,
}

impl LinkSegments {
    pub fn new(segments: &Segments, links: usize) -> Self {
        let mut through = vec![Vec::new(); links];
        for (id, s) in segments.list.iter().enumerate() {
            for &l in &s.links {
                if let Some(v) = through.get_mut(l as usize) {
                    v.push(id as SegmentId);
                }
            }
        }
        LinkSegments { through }
    }

    pub fn through(&self, link: LinkIx) -> &[SegmentId] {
        self.through.get(link as usize).map_or(&[], Vec::as_slice)
    }

    pub fn links(&self) -> usize {
        self.through.len()
    }
}

/// Other segments asked for per link of a loss not yet localized.
pub const PROBES_PER_LINK: usize = 2;

/// The adaptive watch plan: its sweep, what is in focus, and what each switch holds.
#[derive(Clone, Debug)]
pub struct AdaptiveWatch {
    half: WatchPlan,
    slots: usize,
    ends: Vec<(SwitchIx, SwitchIx)>,
    switches: usize,
    /// The next half-round the sweep begins.
    next_half: usize,
    /// What the sweep ahead could not place: the next epoch's due part.
    carried: Vec<SegmentId>,
    focus: Vec<SegmentId>,
}

impl AdaptiveWatch {
    pub fn new(segments: &Segments, budget: WatchBudget) -> Self {
        let slots = budget.segments_per_monitor.max(1);
        let half_budget = WatchBudget {
            segments_per_monitor: (slots / 2).max(1),
        };
        let ends = segment_ends(segments);
        let switches = switches_of(&ends);
        AdaptiveWatch {
            half: WatchPlan::of_ends(&ends, half_budget, 1),
            slots,
            ends,
            switches,
            next_half: 0,
            carried: Vec::new(),
            focus: Vec::new(),
        }
    }

    /// Every segment is watched at least once in any `bound` consecutive epochs, whatever the
    /// focus asks for: the half-rounds, and one more for a half-round split over two epochs.
    pub fn bound(&self) -> u64 {
        self.half.rounds() as u64 + 1
    }

    /// Half-rounds the sweep has begun.
    pub fn half_sweeps_begun(&self) -> usize {
        self.next_half
    }

    /// The half-rounds of the sweep.
    pub fn half_rounds(&self) -> usize {
        self.half.rounds()
    }

    #[cfg(test)]
    pub(crate) fn set_focus_for_test(&mut self, focus: Vec<SegmentId>) {
        self.focus = focus;
    }

    /// The segments to watch in the next epoch, ascending; advances the sweep.
    pub fn next_watch(&mut self) -> Vec<SegmentId> {
        let mut fit = Fit::new(self.switches, self.slots, self.ends.len());
        let due = if self.carried.is_empty() {
            let r = self
                .half
                .round(self.next_half % self.half.rounds())
                .to_vec();
            self.next_half += 1;
            r
        } else {
            std::mem::take(&mut self.carried)
        };
        for &s in &due {
            // At most s/2 per switch, placed first: it always fits.
            let placed = fit.place(s, self.ends[s as usize]);
            debug_assert!(placed, "the sweep's due part fits");
        }
        for &s in &self.focus {
            if let Some(&e) = self.ends.get(s as usize) {
                fit.place(s, e);
            }
        }
        let ahead = self.half.round(self.next_half % self.half.rounds());
        self.next_half += 1;
        for &s in ahead {
            if !fit.place(s, self.ends[s as usize]) {
                self.carried.push(s);
            }
        }
        let mut watched = fit.watched;
        watched.sort_unstable();
        watched
    }

    /// The next epoch's focus after `fresh`: for each loss held back, other segments of its
    /// links (the evidence it waits for); then every lossy segment again; then the segments
    /// that lost a few packets, to count more of them.
    pub fn focus_after(&mut self, fresh: &Freshness, shown: &LastShown, through: &LinkSegments) {
        let mut focus = Vec::new();
        for (s, links, waited) in &fresh.waiting {
            for &l in links {
                focus.extend(probes(through.through(l), *s, *waited));
            }
        }
        let view = &shown.view().segments;
        focus.extend(view.iter().filter(|o| o.success < 1.0).map(|o| o.segment));
        focus.extend(view.iter().filter(|o| o.set_aside()).map(|o| o.segment));
        self.focus = focus;
    }
}

/// Up to [`PROBES_PER_LINK`] of a link's segments other than `except`, from a place that
/// depends on `except` (so that different losses probe from different switches and spread over
/// the slots) and moves on each epoch the loss has waited (a probe that came back lossy through
/// another link settled nothing).
fn probes(
    segs: &[SegmentId],
    except: SegmentId,
    waited: u64,
) -> impl Iterator<Item = SegmentId> + '_ {
    let start = if segs.is_empty() {
        0
    } else {
        (except as usize)
            .wrapping_mul(7919)
            .wrapping_add(waited as usize * PROBES_PER_LINK)
            % segs.len()
    };
    segs.iter()
        .cycle()
        .skip(start)
        .take(segs.len())
        .copied()
        .filter(move |&s| s != except)
        .take(PROBES_PER_LINK)
}

/// The slots one epoch's watch has taken at each switch.
struct Fit {
    starts: Vec<u32>,
    ends: Vec<u32>,
    slots: u32,
    taken: Vec<bool>,
    watched: Vec<SegmentId>,
}

impl Fit {
    fn new(switches: usize, slots: usize, segments: usize) -> Self {
        Fit {
            starts: vec![0; switches],
            ends: vec![0; switches],
            slots: slots.min(u32::MAX as usize) as u32,
            taken: vec![false; segments],
            watched: Vec::new(),
        }
    }

    /// Takes `s` if both its ends have a slot left (or it is taken already).
    fn place(&mut self, s: SegmentId, (u, d): (SwitchIx, SwitchIx)) -> bool {
        if self.taken[s as usize] {
            return true;
        }
        let (u, d) = (u as usize, d as usize);
        if self.starts[u] >= self.slots || self.ends[d] >= self.slots {
            return false;
        }
        self.starts[u] += 1;
        self.ends[d] += 1;
        self.taken[s as usize] = true;
        self.watched.push(s);
        true
    }
}
