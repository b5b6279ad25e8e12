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
use crate::topo::{SegmentId, Segments, SwitchIx};

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

/// Each segment's (upstream, downstream) monitors: the switches whose slots it takes.
pub(crate) fn segment_ends(segments: &Segments) -> Vec<(SwitchIx, SwitchIx)> {
    segments
        .list
        .iter()
        .map(|s| (s.upstream(), s.downstream()))
        .collect()
}

/// Switches the ends name (the highest index and one).
pub(crate) fn switches_of(ends: &[(SwitchIx, SwitchIx)]) -> usize {
    ends.iter()
        .map(|&(u, d)| u.max(d) as usize + 1)
        .max()
        .unwrap_or(0)
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
        Self::of_ends(&segment_ends(segments), budget, dwell)
    }

    /// As [`WatchPlan::new`], for segments given by their (upstream, downstream) ends.
    pub fn of_ends(ends: &[(SwitchIx, SwitchIx)], budget: WatchBudget, dwell: u32) -> Self {
        let slots = budget.segments_per_monitor.max(1);
        let switches = switches_of(ends);
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

pub mod adaptive;
mod coloring;
pub mod fresh;
mod last_shown;
pub use last_shown::{EvidenceAge, LastShown};
#[cfg(test)]
mod tests;
