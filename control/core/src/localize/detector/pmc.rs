//! deTector's probe-matrix construction (PMC, paper §4.2 Algorithm 1) over all shortest
//! ToR-to-ToR paths, on undirected links.
//!
//! The universe is the physical links plus, for β > 1, one virtual link per combination of 2..β
//! physical links, on a path iff any member is (LINKOR). A partition of the universe into *link
//! sets* starts as one set; every chosen path splits each set into the part on the path and the
//! rest. Greedy picks the path of lowest `score = Σ_{physical ℓ ∈ p} w[ℓ] − (link sets on p)`
//! (eq. 1) until every link lies on ≥ α chosen paths (α-coverage) and every universe element is a
//! set of its own (β-identifiability), or nothing useful is left.
//!
//! Choices where the text is open:
//! * [`SetCount::Split`] (default) counts the sets the path would actually split. Only this
//!   reading makes scores non-decreasing (the paper's Observation 2), which the CELF lazy heap
//!   relies on. [`SetCount::Touched`] counts every set with an element on the path (the literal
//!   wording); its scores can fall, so it rescans every candidate each round instead.
//! * A candidate that neither splits a set nor covers a link still short of α is dropped (it can
//!   never become useful again); the paper's loop would otherwise select paths until none remain
//!   when full identifiability is unreachable.
//! * `w[ℓ] ≥ α` ends ℓ's coverage requirement ("at least α paths").
//!
//!
//! Scale (paper §4.3): the lazy CELF heap is Observation 2. Candidates live in flat arrays, not
//! one allocation per path (a k = 32 fat-tree has 32.6 M of them; enumerating them one `Vec` at a
//! time was half of PMC's time at k = 16), are enumerated per source ToR in parallel, and their
//! initial scores are computed in parallel.
//! The greedy itself is unchanged: it picks exactly the path the one-at-a-time loop would.
//! Not done: decomposition into independent sub-problems (Observation 1: a fat-tree's
//! path–link graph is connected, so it has one sub-problem) and symmetry reduction
//! (Observation 3: it changes which paths are chosen).

mod candidates;
mod link_sets;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use rayon::prelude::*;

use crate::topo::{LinkIx, Routing, SwitchIx, Topology};
use candidates::Candidates;
use link_sets::State;

/// Which link sets count in the score's second term.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum SetCount {
    /// Sets the path splits (has some but not all of their elements).
    #[default]
    Split,
    /// Sets with at least one element on the path.
    Touched,
}

/// PMC parameters: α (coverage), β (identifiability).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PmcParams {
    pub alpha: u32,
    pub beta: u32,
    pub set_count: SetCount,
}

impl Default for PmcParams {
    fn default() -> Self {
        Self {
            alpha: 2,
            beta: 1,
            set_count: SetCount::Split,
        }
    }
}

/// The chosen probe paths.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeMatrix {
    /// Chosen ToR-to-ToR paths as switch sequences (source ToR first), in selection order.
    pub paths: Vec<Vec<SwitchIx>>,
    /// Number of candidate paths (all shortest paths between unordered ToR pairs).
    pub candidates: usize,
    /// Every universe element ended in its own link set.
    pub identifiable: bool,
    /// Every physical link lies on ≥ α chosen paths.
    pub covered: bool,
}

/// Canonical undirected id of each directed link: the lower of the two directions' indices.
pub fn undirected(topo: &Topology, l: LinkIx) -> LinkIx {
    l.min(topo.reverse(l))
}

/// All shortest paths between unordered pairs of bottom-layer switches, each pair's paths in
/// lexicographic order (as [`Routing::all_paths`] gives them).
pub fn candidate_paths(topo: &Topology, routing: &Routing) -> Vec<Vec<SwitchIx>> {
    let c = Candidates::build(topo, routing);
    (0..c.len()).map(|p| c.switches(p).to_vec()).collect()
}

/// Runs PMC on the fat-tree's (or any layered Clos's) ToR-to-ToR paths.
pub fn probe_matrix(topo: &Topology, routing: &Routing, params: &PmcParams) -> ProbeMatrix {
    let cands = Candidates::build(topo, routing);
    let mut st = State::new(&cands, params);
    let mut chosen = Vec::new();
    match params.set_count {
        SetCount::Split => {
            // CELF: keys are lower bounds of the current scores (scores never decrease).
            // Initial scores, in parallel: before the first selection every weight is 0 and the
            // universe is one set, which a candidate splits iff it holds some but not all of it.
            let all = st.elems as u32;
            let initial: Vec<Reverse<(i64, usize)>> = (0..cands.len())
                .into_par_iter()
                .map(|p| {
                    let on = if st.on_off.is_empty() {
                        cands.links(p).len()
                    } else {
                        st.on_off[p + 1] - st.on_off[p]
                    };
                    let sets = i64::from(on > 0 && on < all as usize);
                    Reverse((-sets, p))
                })
                .collect();
            let mut heap = BinaryHeap::from(initial);
            while !st.done() {
                let Some(Reverse((_, p))) = heap.pop() else {
                    break;
                };
                let (s, useful) = st.score(p);
                if !useful {
                    continue;
                }
                match heap.peek() {
                    Some(&Reverse(top)) if (s, p) > top => heap.push(Reverse((s, p))),
                    _ => {
                        st.select(p);
                        chosen.push(p);
                    }
                }
            }
        }
        SetCount::Touched => {
            let mut left: Vec<usize> = (0..cands.len()).collect();
            while !st.done() {
                let mut best: Option<(i64, usize)> = None;
                left.retain(|&p| {
                    let (s, useful) = st.score(p);
                    if useful && best.is_none_or(|b| (s, p) < b) {
                        best = Some((s, p));
                    }
                    useful
                });
                let Some((_, p)) = best else { break };
                st.select(p);
                chosen.push(p);
                left.retain(|&q| q != p);
            }
        }
    }
    ProbeMatrix {
        identifiable: st.set_size.len() == st.elems,
        covered: st.w.iter().all(|&w| w >= params.alpha),
        paths: chosen.iter().map(|&p| cands.switches(p).to_vec()).collect(),
        candidates: cands.len(),
    }
}
