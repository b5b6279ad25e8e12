//! Path segments (the stretch of a path between two consecutive monitor switches) and the
//! sub-problems they fall into.
//!
//! Segments are enumerated offline from the topology: from every monitor switch, every
//! valley-free walk (up then down, never revisiting a switch) that reaches the next monitor and is
//! a shortest path between its ends, which is exactly what ECMP routing in a Clos produces.
//!
//! Sub-problems are the connected components of "two links share a segment". The CD objective
//! (eq. 3) is a sum over segments, so it splits exactly along these components and each can be
//! solved on its own thread. The paper's sub-problem on a fat-tree with top and bottom monitors is
//! one pod with its agg–core links (Sec. III-E: 24 switches, 64 directed links for k = 8); the
//! components found here are finer and exact: one per (pod, agg plane), the pod's links through
//! its j-th agg switch, because no segment crosses two agg switches of one pod. The paper's pod is
//! the union of its k/2 components, and solving them apart gives the same minimiser.

use super::{LinkIx, Routing, SwitchIx, Topology};
use std::collections::HashMap;

pub type SegmentId = u32;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Upstream monitor, the non-monitor switches in between, downstream monitor.
    pub switches: Vec<SwitchIx>,
    /// The directed links, in order.
    pub links: Vec<LinkIx>,
}

impl Segment {
    pub fn upstream(&self) -> SwitchIx {
        self.switches[0]
    }
    pub fn downstream(&self) -> SwitchIx {
        *self.switches.last().unwrap()
    }
    /// The chance a packet crosses every link of the segment, given each link's loss rate
    /// (rates outside [0, 1] are clamped).
    pub fn delivery(&self, link_loss: &[f64]) -> f64 {
        let survive = |l: &LinkIx| 1.0 - link_loss[*l as usize].clamp(0.0, 1.0);
        self.links.iter().map(survive).product()
    }
    /// `a→b→c` with switch names.
    pub fn display(&self, topo: &Topology) -> String {
        let names: Vec<&str> = self.switches.iter().map(|&s| topo.name_of(s)).collect();
        names.join("→")
    }
}

/// A part of the fabric whose segments and links touch no other part.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubProblem {
    pub links: Vec<LinkIx>,
    pub segments: Vec<SegmentId>,
}

/// All segments of a topology under its current monitor placement.
#[derive(Clone, Debug)]
pub struct Segments {
    pub list: Vec<Segment>,
    by_switches: HashMap<Vec<SwitchIx>, SegmentId>,
    pub subproblems: Vec<SubProblem>,
    /// Sub-problem of each segment.
    pub subproblem_of: Vec<u32>,
}

impl Segments {
    pub fn new(topo: &Topology, routing: &Routing) -> Self {
        let mut list = Vec::new();
        let mut by_switches = HashMap::new();
        for m in topo.monitors() {
            let mut stack = vec![(vec![m], false)];
            while let Some((walk, descending)) = stack.pop() {
                let u = *walk.last().unwrap();
                let lu = topo.switches[u as usize].layer;
                for &v in topo.neighbors(u) {
                    if walk.contains(&v) {
                        continue;
                    }
                    let up = topo.switches[v as usize].layer > lu;
                    if up && descending {
                        continue; // valley
                    }
                    let mut next = walk.clone();
                    next.push(v);
                    if topo.switches[v as usize].monitor {
                        if is_shortest(topo, routing, &next) && !by_switches.contains_key(&next) {
                            let links = next
                                .windows(2)
                                .map(|w| topo.link(w[0], w[1]).expect("walk follows links"))
                                .collect();
                            by_switches.insert(next.clone(), list.len() as SegmentId);
                            list.push(Segment {
                                switches: next,
                                links,
                            });
                        }
                    } else {
                        stack.push((next, !up));
                    }
                }
            }
        }
        let (subproblems, subproblem_of) = components(topo.links.len(), &list);
        Self {
            list,
            by_switches,
            subproblems,
            subproblem_of,
        }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn get(&self, id: SegmentId) -> &Segment {
        &self.list[id as usize]
    }

    /// The segment with exactly these switches, if it is one.
    pub fn find(&self, switches: &[SwitchIx]) -> Option<SegmentId> {
        self.by_switches.get(switches).copied()
    }

    /// Splits a routed path (bottom switch to bottom switch) into its segments.
    pub fn split_path(&self, topo: &Topology, path: &[SwitchIx]) -> Vec<SegmentId> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, &s) in path.iter().enumerate().skip(1) {
            if topo.switches[s as usize].monitor {
                out.push(
                    self.find(&path[start..=i])
                        .expect("every routed piece is an enumerated segment"),
                );
                start = i;
            }
        }
        out
    }
}

/// A walk is kept when it is a shortest path between its ends: toward a bottom switch the hop
/// count must equal the routing distance; a walk ending higher up is a pure climb.
fn is_shortest(topo: &Topology, routing: &Routing, walk: &[SwitchIx]) -> bool {
    let (first, last) = (walk[0], *walk.last().unwrap());
    if topo.switches[last as usize].layer == 0 {
        routing.distance(first, last) as usize == walk.len() - 1
    } else {
        walk.windows(2)
            .all(|w| topo.switches[w[1] as usize].layer > topo.switches[w[0] as usize].layer)
    }
}

fn components(n_links: usize, segs: &[Segment]) -> (Vec<SubProblem>, Vec<u32>) {
    let mut parent: Vec<u32> = (0..n_links as u32).collect();
    fn find(p: &mut [u32], mut x: u32) -> u32 {
        while p[x as usize] != x {
            p[x as usize] = p[p[x as usize] as usize];
            x = p[x as usize];
        }
        x
    }
    for s in segs {
        let a = find(&mut parent, s.links[0]);
        for &l in &s.links[1..] {
            let b = find(&mut parent, l);
            parent[b as usize] = a;
        }
    }
    let mut root_sub: HashMap<u32, u32> = HashMap::new();
    let mut subs: Vec<SubProblem> = Vec::new();
    let mut sub_of = Vec::with_capacity(segs.len());
    for (i, s) in segs.iter().enumerate() {
        let r = find(&mut parent, s.links[0]);
        let next = subs.len() as u32;
        let k = *root_sub.entry(r).or_insert(next);
        if k == next {
            subs.push(SubProblem::default());
        }
        subs[k as usize].segments.push(i as SegmentId);
        sub_of.push(k);
    }
    let mut on_segment = vec![false; n_links];
    for s in segs {
        for &l in &s.links {
            on_segment[l as usize] = true;
        }
    }
    for l in 0..n_links as u32 {
        if on_segment[l as usize] {
            let r = find(&mut parent, l);
            subs[root_sub[&r] as usize].links.push(l);
        }
    }
    (subs, sub_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::{fattree::fattree, MonitorPlacement};

    fn segs(k: u32, p: MonitorPlacement) -> (Topology, Segments) {
        let t = fattree(k, p).unwrap();
        let r = Routing::new(&t);
        let s = Segments::new(&t, &r);
        (t, s)
    }

    #[test]
    fn top_and_bottom_fat_tree_has_the_papers_sub_problems() {
        let (t, s) = segs(8, MonitorPlacement::TopAndBottom);
        // Up e→a→c and down c→a→e: 32 edges × 16 cores each way; intra-pod e→a→e': 8 pods × 4 × 3 × 4.
        assert_eq!(s.len(), 512 + 512 + 384);
        // One component per (pod, agg plane): 8 pods x 4 planes, 16 directed links each.
        assert_eq!(s.subproblems.len(), 32);
        let mut per_pod: std::collections::HashMap<
            String,
            (usize, std::collections::HashSet<u32>),
        > = Default::default();
        for sp in &s.subproblems {
            assert_eq!(sp.links.len(), 16);
            let agg = sp.links.iter().map(|&l| t.links[l as usize]).find_map(|l| {
                [l.from, l.to]
                    .into_iter()
                    .find(|&x| t.switches[x as usize].layer == 1)
            });
            let pod = t.name_of(agg.unwrap())[3..]
                .split('_')
                .next()
                .unwrap()
                .to_string();
            let e = per_pod.entry(pod).or_default();
            e.0 += sp.links.len();
            for &l in &sp.links {
                e.1.insert(t.links[l as usize].from);
                e.1.insert(t.links[l as usize].to);
            }
        }
        // Grouped by pod they are the paper's sub-problems (Sec. IV-D).
        assert_eq!(per_pod.len(), 8);
        for (links, switches) in per_pod.values() {
            assert_eq!(*links, 64, "64 directed links per pod sub-problem");
            assert_eq!(switches.len(), 24, "24 switches per pod sub-problem");
        }
    }

    #[test]
    fn bottom_only_segments_span_the_core() {
        let (t, s) = segs(4, MonitorPlacement::Bottom);
        let e00 = t.switch("edge0_0").unwrap();
        let e31 = t.switch("edge3_1").unwrap();
        let n = s
            .list
            .iter()
            .filter(|g| g.upstream() == e00 && g.downstream() == e31)
            .count();
        assert_eq!(n, 4, "(k/2)^2 inter-pod segments between two edges");
        assert!(s
            .list
            .iter()
            .all(|g| g.links.len() == 2 || g.links.len() == 4));
        // Bottom-only sub-problems are the k/2 planes.
        assert_eq!(s.subproblems.len(), 2);
    }

    #[test]
    fn every_routed_path_splits_into_known_segments() {
        let (t, s) = segs(4, MonitorPlacement::TopAndBottom);
        let r = Routing::new(&t);
        let (a, b) = (t.switch("edge0_0").unwrap(), t.switch("edge2_1").unwrap());
        for p in r.all_paths(&t, a, b) {
            let ids = s.split_path(&t, &p);
            assert_eq!(ids.len(), 2);
            assert_eq!(s.get(ids[0]).downstream(), s.get(ids[1]).upstream());
        }
    }
}
