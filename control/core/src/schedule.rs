//! Watching segments in turns when a switch cannot count all of its segments' flows at once.
//!
//! A monitor's USM counts the flows of every segment it starts, its DSM those of every segment it
//! ends. At β flows per segment a k = 32 edge switch would count 512 × 20 = 10 240 flows in each,
//! where the program's meters (3 × 1024) keep a clean bucket for only about 256 (Theorem 2 gives
//! P_clean ≥ 0.989 at w ≥ 4 × flows, d = 3, the same rule the meter-level synthesis sizes its
//! meters by). So the segments are split into rounds: in each round no monitor starts or ends
//! more segments than its meters and tables hold ([`WatchBudget`]), and the rounds take turns,
//! `dwell` epochs each. Every segment is watched once every `rounds × dwell` epochs; between two
//! watches localization uses what it last showed ([`LastShown`]).
//!
//! The rounds are found once, and there are as few as can be: R = ⌈D/s⌉, where D is the most
//! segments one switch starts or ends and s its slots. Segments are the edges of a bipartite
//! multigraph (upstream ends on one side, downstream ends on the other); each switch is split into
//! copies of at most R edges, and the copies' graph, of degree ≤ R, is edge-coloured with R
//! colours (König's theorem; [`coloring`]). A colour is a round. First fit, tried first, needed
//! about a third more rounds on fat-trees (k = 32, s = 12: 58 against 43).

use crate::capacity::Capacity;
use crate::detect::{observations, observed, Observations, SegmentCount, WindowCount};
use crate::topo::{SegmentId, Segments, SwitchIx};
use std::collections::BTreeMap;

/// Segments one monitor can start (USM) and end (DSM) in one round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchBudget {
    pub segments_per_monitor: usize,
}

impl WatchBudget {
    /// What a switch of `capacity` holds at `beta` flows per segment: the flows its meters keep
    /// clean (width / 4) and its USM and DSM tables take, whichever is fewer, over β.
    pub fn of(capacity: &Capacity, beta: u32) -> Self {
        let flows = (capacity.meter.width / 4)
            .min(capacity.usm_rules)
            .min(capacity.dsm_rules);
        WatchBudget {
            segments_per_monitor: (flows / beta.max(1) as usize).max(1),
        }
    }

    /// No limit: every segment in every epoch.
    pub const UNLIMITED: WatchBudget = WatchBudget {
        segments_per_monitor: usize::MAX,
    };
}

/// Which segments are watched in which epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchPlan {
    rounds: Vec<Vec<SegmentId>>,
    round_of: Vec<u32>,
    dwell: u32,
    /// ⌈D/s⌉: the rounds no schedule can do without.
    least_rounds: usize,
}

impl WatchPlan {
    /// Rounds for `segments` under `budget`, each lasting `dwell` epochs (at least 1).
    pub fn new(segments: &Segments, budget: WatchBudget, dwell: u32) -> Self {
        let ends: Vec<(SwitchIx, SwitchIx)> = segments
            .list
            .iter()
            .map(|s| (s.upstream(), s.downstream()))
            .collect();
        Self::of_ends(&ends, budget, dwell)
    }

    /// As [`WatchPlan::new`], for segments given by their (upstream, downstream) ends.
    pub fn of_ends(ends: &[(SwitchIx, SwitchIx)], budget: WatchBudget, dwell: u32) -> Self {
        let slots = budget.segments_per_monitor.max(1);
        let switches = ends
            .iter()
            .map(|&(u, d)| u.max(d) as usize + 1)
            .max()
            .unwrap_or(0);
        let mut starts = vec![0usize; switches];
        let mut ended = vec![0usize; switches];
        for &(u, d) in ends {
            starts[u as usize] += 1;
            ended[d as usize] += 1;
        }
        let busiest = starts.iter().chain(&ended).copied().max().unwrap_or(0);
        let rounds_needed = busiest.div_ceil(slots).max(1);

        // Each switch's ends are dealt to copies of it, R to a copy (R the rounds): a switch with
        // deg segments has ⌈deg/R⌉ ≤ s copies. One round per copy and colour then gives each
        // switch at most s segments per round.
        let copies_of = |counts: &[usize]| -> Vec<u32> {
            let mut first = vec![0u32; counts.len() + 1];
            for (i, &c) in counts.iter().enumerate() {
                first[i + 1] = first[i] + c.div_ceil(rounds_needed) as u32;
            }
            first
        };
        let (up_first, down_first) = (copies_of(&starts), copies_of(&ended));
        let mut up_dealt = vec![0usize; switches];
        let mut down_dealt = vec![0usize; switches];
        let edges: Vec<(u32, u32)> = ends
            .iter()
            .map(|&(u, d)| {
                let (u, d) = (u as usize, d as usize);
                let a = up_first[u] + (up_dealt[u] / rounds_needed) as u32;
                let b = down_first[d] + (down_dealt[d] / rounds_needed) as u32;
                up_dealt[u] += 1;
                down_dealt[d] += 1;
                (a, b)
            })
            .collect();
        let colour = coloring::colour_edges(
            &edges,
            up_first[switches] as usize,
            down_first[switches] as usize,
            rounds_needed,
        );
        let mut rounds: Vec<Vec<SegmentId>> = vec![Vec::new(); rounds_needed];
        for (id, &c) in colour.iter().enumerate() {
            rounds[c as usize].push(id as SegmentId);
        }
        WatchPlan {
            rounds,
            round_of: colour,
            dwell: dwell.max(1),
            least_rounds: rounds_needed,
        }
    }

    /// Every segment in every epoch.
    pub fn everything(segments: &Segments) -> Self {
        Self::new(segments, WatchBudget::UNLIMITED, 1)
    }

    pub fn rounds(&self) -> usize {
        self.rounds.len()
    }

    /// ⌈D/s⌉, the fewest rounds any schedule of this budget needs.
    pub fn least_rounds(&self) -> usize {
        self.least_rounds
    }

    pub fn dwell(&self) -> u32 {
        self.dwell
    }

    /// Epochs between two watches of a segment: the bound on the age of its evidence.
    pub fn period(&self) -> u64 {
        self.rounds.len() as u64 * u64::from(self.dwell)
    }

    /// The round `epoch` falls in.
    pub fn round_at(&self, epoch: u64) -> usize {
        ((epoch / u64::from(self.dwell)) % self.rounds.len() as u64) as usize
    }

    /// The segments watched in `epoch`, ascending.
    pub fn watched_at(&self, epoch: u64) -> &[SegmentId] {
        &self.rounds[self.round_at(epoch)]
    }

    pub fn round(&self, r: usize) -> &[SegmentId] {
        &self.rounds[r]
    }

    pub fn round_of(&self, segment: SegmentId) -> usize {
        self.round_of[segment as usize] as usize
    }
}

/// What each segment showed the last time it was watched, and when.
///
/// Counts of consecutive epochs add up (one watch of `dwell` epochs); a segment seen again after a
/// gap starts afresh, so old evidence is replaced, never mixed with new.
#[derive(Clone, Debug, Default)]
pub struct LastShown {
    /// Per segment: (last epoch seen, counts of its latest watch).
    by_segment: Vec<Option<(u64, WindowCount)>>,
    /// The observations of every segment's latest watch, kept from epoch to epoch: an epoch
    /// watches a few segments of millions, so only theirs are made again.
    view: Observations,
    /// Each segment's index in `view`, or `NOT_IN_VIEW`.
    in_view: Vec<u32>,
    view_min_lossy: Option<u32>,
}

const NOT_IN_VIEW: u32 = u32::MAX;

impl LastShown {
    pub fn new(segments: usize) -> Self {
        LastShown {
            by_segment: vec![None; segments],
            view: Observations::default(),
            in_view: vec![NOT_IN_VIEW; segments],
            view_min_lossy: None,
        }
    }

    /// Records `epoch`'s counts and returns the observations of every segment's latest watch:
    /// what [`crate::detect::observations`] gives on [`LastShown::totals`], in the same order.
    pub fn observe(
        &mut self,
        epoch: u64,
        counts: &BTreeMap<SegmentId, SegmentCount>,
        segments: &Segments,
        min_lossy_epochs: u32,
    ) -> &Observations {
        self.store(epoch, counts);
        let mut rebuild = self.view_min_lossy != Some(min_lossy_epochs);
        if !rebuild {
            for &s in counts.keys() {
                let Some(&(_, c)) = self.by_segment.get(s as usize).and_then(Option::as_ref) else {
                    continue;
                };
                let at = self.in_view[s as usize];
                match observed(segments, s, &c, min_lossy_epochs) {
                    Some(o) if at != NOT_IN_VIEW => self.view.segments[at as usize] = o,
                    // A segment enters or leaves the view: its order must be kept.
                    _ if at == NOT_IN_VIEW && c.sent == 0 => {}
                    _ => {
                        rebuild = true;
                        break;
                    }
                }
            }
        }
        if rebuild {
            self.view = observations(segments, &self.totals(), min_lossy_epochs);
            self.in_view.fill(NOT_IN_VIEW);
            for (i, o) in self.view.segments.iter().enumerate() {
                self.in_view[o.segment as usize] = i as u32;
            }
            self.view_min_lossy = Some(min_lossy_epochs);
        }
        &self.view
    }

    /// The counts of `epoch`. Ids past the store's size are ignored.
    pub fn record(&mut self, epoch: u64, counts: &BTreeMap<SegmentId, SegmentCount>) {
        self.store(epoch, counts);
        self.view_min_lossy = None;
    }

    fn store(&mut self, epoch: u64, counts: &BTreeMap<SegmentId, SegmentCount>) {
        for (&s, c) in counts {
            let Some(slot) = self.by_segment.get_mut(s as usize) else {
                continue;
            };
            match slot {
                Some((last, acc)) if *last + 1 == epoch => {
                    acc.add(c);
                    *last = epoch;
                }
                _ => {
                    let mut acc = WindowCount::default();
                    acc.add(c);
                    *slot = Some((epoch, acc));
                }
            }
        }
    }

    /// Every segment's latest counts, for [`crate::detect::observations`].
    pub fn totals(&self) -> BTreeMap<SegmentId, WindowCount> {
        self.by_segment
            .iter()
            .enumerate()
            .filter_map(|(s, v)| v.map(|(_, c)| (s as SegmentId, c)))
            .collect()
    }

    /// Epochs since `segment` was last seen, at `now`; `None` if never.
    pub fn age(&self, segment: SegmentId, now: u64) -> Option<u64> {
        self.by_segment
            .get(segment as usize)
            .copied()
            .flatten()
            .map(|(e, _)| now.saturating_sub(e))
    }

    /// How old the evidence is at `now`, over all segments.
    pub fn ages(&self, now: u64) -> EvidenceAge {
        let mut out = EvidenceAge::default();
        let mut sum = 0u64;
        for v in &self.by_segment {
            match v {
                None => out.never_seen += 1,
                Some((e, _)) => {
                    let age = now.saturating_sub(*e);
                    out.seen += 1;
                    out.oldest = out.oldest.max(age);
                    sum += age;
                }
            }
        }
        out.mean = if out.seen > 0 {
            sum as f64 / out.seen as f64
        } else {
            0.0
        };
        out
    }
}

/// The age of the evidence localization works from, in epochs.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EvidenceAge {
    pub seen: usize,
    pub never_seen: usize,
    pub oldest: u64,
    pub mean: f64,
}

mod coloring;
#[cfg(test)]
mod tests;
