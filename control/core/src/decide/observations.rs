//! What the decision hands a localizer: each segment's counts as an observation, lossy or
//! loss-free or set aside, per epoch under the [`Decider`] and once over a whole run.

use super::{link_lossy_in_total, lossy_in_total, total_tests, Decider, DecisionParams};
use crate::detect::{Observations, ObservedSegment, SegmentCount, WindowCount};
use crate::topo::{LinkIx, SegmentId, Segments};
use std::collections::{BTreeMap, BTreeSet};

/// The segments handed to a localizer under the decision: a lossy segment with its counts since
/// its loss began. A segment not declared is loss-free (success 1) when over the window it lost
/// no more than the lowest loss the decision watches for (4 × its healthy loss): background, as
/// the evidence that clears its links. One that lost more is set aside
/// ([`ObservedSegment::set_aside`]): a loss not yet declared, not enough to blame its links nor
/// to clear them. So is a lossy segment half-way to its all-clear ([`Decider::clearing`]).
pub fn decided_observations(
    segments: &Segments,
    window: &BTreeMap<SegmentId, WindowCount>,
    decider: &Decider,
) -> Observations {
    let mut out: BTreeMap<SegmentId, ObservedSegment> = BTreeMap::new();
    for (&s, c) in window.iter().filter(|(_, c)| c.sent > 0) {
        let mut o = observed(segments, s, c.sent, c.lost, false);
        let p0 = decider.p0[s as usize];
        o.background = (c.lost as f64) <= 4.0 * p0 * c.sent as f64;
        out.insert(s, o);
    }
    for (s, l) in decider.lossy().filter(|(_, l)| l.sent > 0) {
        if decider.clearing(l) {
            // Its loss may be over: its counts since the onset, mostly from before, would blame
            // another link of it once its other segments are clear. Neither blames nor clears.
            let mut o = observed(segments, s, l.sent, l.lost, false);
            o.background = false;
            out.insert(s, o);
        } else {
            out.insert(s, observed(segments, s, l.sent, l.lost, true));
        }
    }
    Observations {
        segments: out.into_values().collect(),
    }
}

/// The whole run's counts, each segment tested once ([`lossy_in_total`]) and each link once on
/// the segments through it together ([`link_lossy_in_total`]), as the epochs' tests are: a link
/// whose segments lose more together than healthy ones can declares those of them that lost
/// more than their background ([`Decider::observe_links`]), and the localizer places the loss.
pub fn total_observations(
    segments: &Segments,
    totals: &BTreeMap<SegmentId, WindowCount>,
    params: &DecisionParams,
) -> Observations {
    let count = |c: &WindowCount| SegmentCount {
        sent: c.sent,
        lost: c.lost,
        flows: 0,
    };
    let links_of = |s: SegmentId| segments.get(s).links.as_slice();
    let crossed: BTreeSet<LinkIx> = segments
        .list
        .iter()
        .flat_map(|s| s.links.iter().copied())
        .collect();
    let tests = total_tests(segments.len(), crossed.len(), params);
    let counted = || totals.iter().filter(|(_, c)| c.sent > 0);
    let mut lossy: BTreeSet<SegmentId> = counted()
        .filter(|(&s, c)| lossy_in_total(&count(c), links_of(s).len(), tests, params))
        .map(|(&s, _)| s)
        .collect();
    // Each link's segments not lossy on their own, pooled.
    let mut through: BTreeMap<LinkIx, Vec<SegmentId>> = BTreeMap::new();
    for (&s, _) in counted().filter(|(s, _)| !lossy.contains(s)) {
        for &l in links_of(s) {
            through.entry(l).or_default().push(s);
        }
    }
    let p0 = |s: SegmentId| params.p0(links_of(s).len().max(1));
    for segs in through.values() {
        let pooled: Vec<(SegmentCount, usize)> = segs
            .iter()
            .map(|&s| (count(&totals[&s]), links_of(s).len()))
            .collect();
        if link_lossy_in_total(&pooled, tests, params) {
            let above = |&&s: &&SegmentId| totals[&s].lost as f64 > p0(s) * totals[&s].sent as f64;
            lossy.extend(segs.iter().filter(above));
        }
    }
    let segments = counted()
        .map(|(&s, c)| {
            let is_lossy = lossy.contains(&s);
            let mut o = observed(segments, s, c.sent, c.lost, is_lossy);
            o.background = !is_lossy && (c.lost as f64) <= 4.0 * p0(s) * c.sent as f64;
            o
        })
        .collect();
    Observations { segments }
}

fn observed(
    segments: &Segments,
    s: SegmentId,
    sent: u64,
    lost: u64,
    lossy: bool,
) -> ObservedSegment {
    ObservedSegment {
        segment: s,
        subproblem: segments.subproblem_of[s as usize],
        links: segments.get(s).links.clone(),
        sent,
        lost,
        success: if lossy {
            (sent - lost.min(sent)) as f64 / sent as f64
        } else {
            1.0
        },
        background: false,
        flows: Vec::new(),
    }
}
