//! PMC's candidates: every shortest ToR-to-ToR path, enumerated in parallel into flat arrays.
//! Apart from the greedy because at k = 32 there are 32.6 M of them and their layout is what
//! makes PMC fit in memory and time.

use rayon::prelude::*;

use super::undirected;
use crate::topo::{LinkIx, Routing, SwitchIx, Topology};

/// Candidate paths in flat arrays (one allocation, not one per path: a k = 32 fat-tree has
/// 32.6 M of them). Path `p` has undirected compact links `links[off[p]..off[p + 1]]` (sorted)
/// and switches `switches[off[p] + p..off[p + 1] + p + 1]` (a shortest path is simple, so it has
/// one switch more than links).
pub(super) struct Candidates {
    off: Vec<usize>,
    links: Vec<u32>,
    switches: Vec<SwitchIx>,
    /// Number of undirected links (compact ids `0..n`).
    pub(super) n: usize,
}

impl Candidates {
    pub(super) fn len(&self) -> usize {
        self.off.len() - 1
    }

    pub(super) fn links(&self, p: usize) -> &[u32] {
        &self.links[self.off[p]..self.off[p + 1]]
    }

    pub(super) fn switches(&self, p: usize) -> &[SwitchIx] {
        &self.switches[self.off[p] + p..self.off[p + 1] + p + 1]
    }

    /// Enumerates the shortest paths from every ToR to every later ToR, one source ToR per
    /// rayon task, in the order of the old per-pair `Routing::all_paths` loop.
    pub(super) fn build(topo: &Topology, routing: &Routing) -> Self {
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
