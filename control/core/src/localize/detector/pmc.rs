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

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use rayon::prelude::*;

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

/// All shortest paths between unordered pairs of bottom-layer switches, each pair's paths in
/// lexicographic order (as [`Routing::all_paths`] gives them).
pub fn candidate_paths(topo: &Topology, routing: &Routing) -> Vec<Vec<SwitchIx>> {
    let c = Candidates::build(topo, routing);
    (0..c.len()).map(|p| c.switches(p).to_vec()).collect()
}

/// Candidate paths in flat arrays (one allocation, not one per path: a k = 32 fat-tree has
/// 32.6 M of them). Path `p` has undirected compact links `links[off[p]..off[p + 1]]` (sorted)
/// and switches `switches[off[p] + p..off[p + 1] + p + 1]` (a shortest path is simple, so it has
/// one switch more than links).
struct Candidates {
    off: Vec<usize>,
    links: Vec<u32>,
    switches: Vec<SwitchIx>,
    /// Number of undirected links (compact ids `0..n`).
    n: usize,
}

impl Candidates {
    fn len(&self) -> usize {
        self.off.len() - 1
    }

    fn links(&self, p: usize) -> &[u32] {
        &self.links[self.off[p]..self.off[p + 1]]
    }

    fn switches(&self, p: usize) -> &[SwitchIx] {
        &self.switches[self.off[p] + p..self.off[p + 1] + p + 1]
    }

    /// Enumerates the shortest paths from every ToR to every later ToR, one source ToR per
    /// rayon task, in the order of the old per-pair `Routing::all_paths` loop.
    fn build(topo: &Topology, routing: &Routing) -> Self {
        // Compact undirected ids, and each switch's neighbours (ascending) with them.
        let mut compact = vec![u32::MAX; topo.links.len()];
        let mut n = 0u32;
        for l in 0..topo.links.len() as LinkIx {
            if undirected(topo, l) == l {
                compact[l as usize] = n;
                n += 1;
            }
        }
        let mut adj: Vec<Vec<(SwitchIx, u32)>> = vec![Vec::new(); topo.switches.len()];
        for (l, link) in topo.links.iter().enumerate() {
            let c = compact[undirected(topo, l as LinkIx) as usize];
            adj[link.from as usize].push((link.to, c));
        }
        adj.iter_mut().for_each(|a| a.sort_unstable());
        let tors: Vec<SwitchIx> = (0..topo.switches.len() as SwitchIx)
            .filter(|&s| topo.switches[s as usize].layer == 0)
            .collect();
        // Per source ToR: (path lengths in links, links, switches).
        let chunks: Vec<(Vec<u32>, Vec<u32>, Vec<SwitchIx>)> = (0..tors.len())
            .into_par_iter()
            .map(|i| {
                let (mut lens, mut links, mut sws) = (Vec::new(), Vec::new(), Vec::new());
                let mut sw_stack: Vec<SwitchIx> = Vec::with_capacity(16);
                let mut l_stack: Vec<u32> = Vec::with_capacity(16);
                for &d in &tors[i + 1..] {
                    sw_stack.clear();
                    l_stack.clear();
                    sw_stack.push(tors[i]);
                    dfs(
                        &adj,
                        routing,
                        d,
                        &mut sw_stack,
                        &mut l_stack,
                        &mut |sw: &[SwitchIx], ls: &[u32]| {
                            let start = links.len();
                            links.extend_from_slice(ls);
                            links[start..].sort_unstable();
                            lens.push(ls.len() as u32);
                            sws.extend_from_slice(sw);
                        },
                    );
                }
                (lens, links, sws)
            })
            .collect();
        let total: usize = chunks.iter().map(|c| c.1.len()).sum();
        let count: usize = chunks.iter().map(|c| c.0.len()).sum();
        let mut off = Vec::with_capacity(count + 1);
        let mut links = Vec::with_capacity(total);
        let mut switches = Vec::with_capacity(total + count);
        off.push(0);
        for (lens, ls, sws) in chunks {
            for len in lens {
                off.push(off.last().copied().unwrap_or(0) + len as usize);
            }
            links.extend_from_slice(&ls);
            switches.extend_from_slice(&sws);
        }
        Self {
            off,
            links,
            switches,
            n: n as usize,
        }
    }
}

/// Depth-first over the ECMP next hops toward `dst` (ascending switch index, so paths come
/// out in lexicographic order), calling `emit(switches, links)` for every complete path.
fn dfs(
    adj: &[Vec<(SwitchIx, u32)>],
    routing: &Routing,
    dst: SwitchIx,
    sw: &mut Vec<SwitchIx>,
    ls: &mut Vec<u32>,
    emit: &mut impl FnMut(&[SwitchIx], &[u32]),
) {
    let u = *sw.last().expect("the path holds its source");
    if u == dst {
        emit(sw, ls);
        return;
    }
    let d = routing.distance(u, dst);
    for &(v, c) in &adj[u as usize] {
        if routing.distance(v, dst).wrapping_add(1) == d {
            sw.push(v);
            ls.push(c);
            dfs(adj, routing, dst, sw, ls, emit);
            sw.pop();
            ls.pop();
        }
    }
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
    elems: usize,
    cands: &'a Candidates,
    /// For β > 1, the universe elements on each candidate (CSR: `on[on_off[p]..on_off[p + 1]]`);
    /// for β = 1 they are the candidate's links and these are empty.
    on_off: Vec<usize>,
    on: Vec<u32>,
    w: Vec<u32>,
    set_of: Vec<u32>,
    set_size: Vec<u32>,
    scratch: Vec<u32>,
    new_id: Vec<u32>,
}

impl State<'_> {
    fn on(&self, p: usize) -> &[u32] {
        if self.on_off.is_empty() {
            self.cands.links(p)
        } else {
            &self.on[self.on_off[p]..self.on_off[p + 1]]
        }
    }

    /// (score, useful) of candidate `p` in the current state.
    fn score(&mut self, p: usize) -> (i64, bool) {
        let links = self.cands.links(p);
        let weight: i64 = links.iter().map(|&l| i64::from(self.w[l as usize])).sum();
        let under = links.iter().any(|&l| self.w[l as usize] < self.alpha);
        let (mut split, mut touched) = (0i64, 0i64);
        // `on` borrows self.cands / self.on, `scratch` is a separate field.
        let on: &[u32] = if self.on_off.is_empty() {
            self.cands.links(p)
        } else {
            &self.on[self.on_off[p]..self.on_off[p + 1]]
        };
        for &e in on {
            self.scratch[self.set_of[e as usize] as usize] += 1;
        }
        for &e in on {
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
        for &l in self.cands.links(p) {
            self.w[l as usize] += 1;
        }
        let on: Vec<u32> = self.on(p).to_vec();
        for &e in &on {
            let s = self.set_of[e as usize] as usize;
            self.scratch[s] += 1;
        }
        let mut touched = Vec::new();
        for &e in &on {
            let s = self.set_of[e as usize] as usize;
            // A set lying wholly on the path is not split.
            if self.scratch[s] < self.set_size[s] && self.new_id[s] == u32::MAX {
                self.new_id[s] = self.set_size.len() as u32;
                self.set_size.push(0);
                touched.push(s);
            }
        }
        // Each element is visited once and still holds its old set id when read.
        for &e in &on {
            let s = self.set_of[e as usize] as usize;
            self.scratch[s] = 0;
            if self.new_id[s] == u32::MAX {
                continue;
            }
            self.set_size[s] -= 1;
            self.set_size[self.new_id[s] as usize] += 1;
            self.set_of[e as usize] = self.new_id[s];
        }
        for s in touched {
            self.new_id[s] = u32::MAX;
        }
    }

    fn done(&self) -> bool {
        self.set_size.len() == self.elems && self.w.iter().all(|&w| w >= self.alpha)
    }
}

/// Runs PMC on the fat-tree's (or any layered Clos's) ToR-to-ToR paths.
pub fn probe_matrix(topo: &Topology, routing: &Routing, params: &PmcParams) -> ProbeMatrix {
    let cands = Candidates::build(topo, routing);
    let n = cands.n;
    let elems = universe(n, params.beta.max(1));
    let (mut on_off, mut on) = (Vec::new(), Vec::new());
    if params.beta > 1 {
        on_off.push(0);
        let mut mask = vec![false; n];
        for p in 0..cands.len() {
            cands.links(p).iter().for_each(|&l| mask[l as usize] = true);
            on.extend(
                (0..elems.len() as u32)
                    .filter(|&e| elems[e as usize].iter().any(|&l| mask[l as usize])),
            );
            on_off.push(on.len());
            cands
                .links(p)
                .iter()
                .for_each(|&l| mask[l as usize] = false);
        }
    }
    let mut st = State {
        alpha: params.alpha,
        set_count: params.set_count,
        elems: elems.len(),
        cands: &cands,
        on_off,
        on,
        w: vec![0; n],
        set_of: vec![0; elems.len()],
        set_size: vec![elems.len() as u32],
        // Set ids are < the number of elements.
        scratch: vec![0; elems.len()],
        new_id: vec![u32::MAX; elems.len()],
    };
    let mut chosen = Vec::new();
    match params.set_count {
        SetCount::Split => {
            // CELF: keys are lower bounds of the current scores (scores never decrease).
            // Initial scores, in parallel: before the first selection every weight is 0 and the
            // universe is one set, which a candidate splits iff it holds some but not all of it.
            let all = elems.len() as u32;
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
        identifiable: st.set_size.len() == elems.len(),
        covered: st.w.iter().all(|&w| w >= params.alpha),
        paths: chosen.iter().map(|&p| cands.switches(p).to_vec()).collect(),
        candidates: cands.len(),
    }
}
