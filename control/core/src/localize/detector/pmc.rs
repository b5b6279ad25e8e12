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
//! Choices where the text is open (see also LOCALIZERS §2.5):
//! * [`SetCount::Split`] (default) counts the sets the path would actually split. Only this
//!   reading makes scores non-decreasing (the paper's Observation 2), which the CELF lazy heap
//!   relies on. [`SetCount::Touched`] counts every set with an element on the path (the literal
//!   wording); its scores can fall, so it rescans every candidate each round instead.
//! * A candidate that neither splits a set nor covers a link still short of α is dropped (it can
//!   never become useful again); the paper's loop would otherwise select paths until none remain
//!   when full identifiability is unreachable.
//! * `w[ℓ] ≥ α` ends ℓ's coverage requirement ("at least α paths").
//!
//! Not done: decomposition into independent sub-problems (Observation 1) and symmetry reduction
//! (Observation 3) — both are speed-ups only, and k ≤ 16 fat-trees run in well under a second.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::topo::{LinkIx, Routing, SwitchIx, Topology};

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

/// All shortest paths between unordered pairs of bottom-layer switches.
pub fn candidate_paths(topo: &Topology, routing: &Routing) -> Vec<Vec<SwitchIx>> {
    let tors: Vec<SwitchIx> = (0..topo.switches.len() as SwitchIx)
        .filter(|&s| topo.switches[s as usize].layer == 0)
        .collect();
    let mut out = Vec::new();
    for (i, &s) in tors.iter().enumerate() {
        for &d in &tors[i + 1..] {
            out.extend(routing.all_paths(topo, s, d));
        }
    }
    out
}

/// Universe elements (physical links, then virtual links) as member lists of compact link ids.
fn universe(n: usize, beta: u32) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = (0..n as u32).map(|l| vec![l]).collect();
    let mut frontier = out.clone();
    for _ in 2..=beta {
        let mut next = Vec::new();
        for c in &frontier {
            for l in c[c.len() - 1] + 1..n as u32 {
                let mut v = c.clone();
                v.push(l);
                next.push(v);
            }
        }
        out.extend(next.iter().cloned());
        frontier = next;
    }
    out
}

struct State<'a> {
    alpha: u32,
    set_count: SetCount,
    elems: &'a [Vec<u32>],
    /// Elements on each candidate path.
    on: Vec<Vec<u32>>,
    paths: &'a [Vec<u32>],
    w: Vec<u32>,
    set_of: Vec<u32>,
    set_size: Vec<u32>,
    scratch: Vec<u32>,
}

impl State<'_> {
    /// (score, useful) of candidate `p` in the current state.
    fn score(&mut self, p: usize) -> (i64, bool) {
        let weight: i64 = self.paths[p]
            .iter()
            .map(|&l| i64::from(self.w[l as usize]))
            .sum();
        let under = self.paths[p]
            .iter()
            .any(|&l| self.w[l as usize] < self.alpha);
        let (mut split, mut touched) = (0i64, 0i64);
        for &e in &self.on[p] {
            self.scratch[self.set_of[e as usize] as usize] += 1;
        }
        for &e in &self.on[p] {
            let s = self.set_of[e as usize] as usize;
            let c = std::mem::take(&mut self.scratch[s]);
            if c > 0 {
                touched += 1;
                split += i64::from(c < self.set_size[s]);
            }
        }
        let sets = match self.set_count {
            SetCount::Split => split,
            SetCount::Touched => touched,
        };
        (weight - sets, under || split > 0)
    }

    /// Adds `p` to the matrix: weights, then splits every set it cuts.
    fn select(&mut self, p: usize) {
        for &l in &self.paths[p] {
            self.w[l as usize] += 1;
        }
        let mut new_id = vec![u32::MAX; self.set_size.len()];
        for &e in &self.on[p] {
            let s = self.set_of[e as usize] as usize;
            self.scratch[s] += 1;
        }
        for &e in &self.on[p] {
            let s = self.set_of[e as usize] as usize;
            // A set lying wholly on the path is not split.
            if self.scratch[s] < self.set_size[s] && new_id[s] == u32::MAX {
                new_id[s] = self.set_size.len() as u32;
                self.set_size.push(0);
            }
        }
        // Each element is visited once and still holds its old set id when read.
        for &e in &self.on[p] {
            let s = self.set_of[e as usize] as usize;
            if new_id[s] == u32::MAX {
                continue;
            }
            self.set_size[s] -= 1;
            self.set_size[new_id[s] as usize] += 1;
            self.set_of[e as usize] = new_id[s];
        }
        self.scratch.iter_mut().for_each(|c| *c = 0);
    }

    fn done(&self) -> bool {
        self.set_size.len() == self.elems.len() && self.w.iter().all(|&w| w >= self.alpha)
    }
}

/// Runs PMC on the fat-tree's (or any layered Clos's) ToR-to-ToR paths.
pub fn probe_matrix(topo: &Topology, routing: &Routing, params: &PmcParams) -> ProbeMatrix {
    let cands = candidate_paths(topo, routing);
    // Compact undirected ids.
    let mut compact = vec![u32::MAX; topo.links.len()];
    let mut n = 0u32;
    for l in 0..topo.links.len() as LinkIx {
        if undirected(topo, l) == l {
            compact[l as usize] = n;
            n += 1;
        }
    }
    let paths: Vec<Vec<u32>> = cands
        .iter()
        .map(|p| {
            let mut v: Vec<u32> = p
                .windows(2)
                .map(|h| {
                    let l = topo.link(h[0], h[1]).expect("paths follow links");
                    compact[undirected(topo, l) as usize]
                })
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    let elems = universe(n as usize, params.beta.max(1));
    let on: Vec<Vec<u32>> = paths
        .iter()
        .map(|p| {
            if params.beta <= 1 {
                return p.clone();
            }
            let mut mask = vec![false; n as usize];
            p.iter().for_each(|&l| mask[l as usize] = true);
            (0..elems.len() as u32)
                .filter(|&e| elems[e as usize].iter().any(|&l| mask[l as usize]))
                .collect()
        })
        .collect();
    let mut st = State {
        alpha: params.alpha,
        set_count: params.set_count,
        elems: &elems,
        on,
        paths: &paths,
        w: vec![0; n as usize],
        set_of: vec![0; elems.len()],
        set_size: vec![elems.len() as u32],
        scratch: vec![0; elems.len()], // set ids < number of elements
    };
    let mut chosen = Vec::new();
    match params.set_count {
        SetCount::Split => {
            // CELF: keys are lower bounds of the current scores (scores never decrease).
            let mut heap: BinaryHeap<Reverse<(i64, usize)>> = (0..paths.len())
                .map(|p| Reverse((st.score(p).0, p)))
                .collect();
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
            let mut left: Vec<usize> = (0..paths.len()).collect();
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
        identifiable: st.set_size.len() == elems.len(),
        covered: st.w.iter().all(|&w| w >= params.alpha),
        paths: chosen.iter().map(|&p| cands[p].clone()).collect(),
        candidates: cands.len(),
    }
}
