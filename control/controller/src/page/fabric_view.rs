//! The fabric as the page draws it: every switch with its drawing position and its group, and
//! the groups an overview shows at data-center size (pods, and the top layer in blocks).

use crate::draw;
use canary_core::topo::{SwitchIx, Topology};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub(super) struct FabricView {
    name: String,
    width: f64,
    height: f64,
    switches: Vec<SwitchView>,
    /// Directed links `[from, to]`.
    links: Vec<[String; 2]>,
    /// The overview's columns and its top row, in order; `SwitchView::group` indexes it.
    groups: Vec<GroupView>,
}

#[derive(Serialize)]
struct SwitchView {
    name: String,
    layer: u8,
    monitor: bool,
    x: f64,
    y: f64,
    group: usize,
}

#[derive(Debug, PartialEq, Serialize)]
pub(super) struct GroupView {
    pub name: String,
    /// `pod`: switches below the top layer joined by links among themselves (a fat-tree's
    /// pod, a leaf alone in a leaf-spine); `top`: top-layer switches with the same neighbours
    /// (a fat-tree's core group), or a block of them.
    pub kind: &'static str,
}

/// More top-layer blocks than this and they are cut into this many instead: an overview row
/// stays readable whatever the topology.
const MAX_TOP_BLOCKS: usize = 64;

impl FabricView {
    pub(super) fn of(topo: &Topology) -> Self {
        let l = draw::layout_with(topo, false);
        let (groups, group_of) = groups(topo);
        FabricView {
            name: topo.name.clone(),
            width: l.width,
            height: l.height,
            switches: topo
                .switches
                .iter()
                .zip(&l.pos)
                .zip(group_of)
                .map(|((s, &(x, y)), group)| SwitchView {
                    name: s.name.clone(),
                    layer: s.layer,
                    monitor: s.monitor,
                    x,
                    y,
                    group,
                })
                .collect(),
            links: topo
                .links
                .iter()
                .map(|k| [topo.name_of(k.from).into(), topo.name_of(k.to).into()])
                .collect(),
            groups,
        }
    }
}

/// The groups, and each switch's. Pods are the connected parts of the fabric below its top
/// layer, in the order of their first switch; top-layer switches with the same neighbours form
/// a block (a fat-tree's core group serves the same aggregation switch of every pod).
pub(super) fn groups(topo: &Topology) -> (Vec<GroupView>, Vec<usize>) {
    let n = topo.switches.len();
    let top = topo.top_layer();
    if top == 0 {
        let all = GroupView {
            name: "fabric".into(),
            kind: "pod",
        };
        return (vec![all], vec![0; n]);
    }
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let below = |s: SwitchIx| topo.switches[s as usize].layer < top;
    for l in &topo.links {
        if below(l.from) && below(l.to) {
            let (a, b) = (
                root(&mut parent, l.from as usize),
                root(&mut parent, l.to as usize),
            );
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut group_of = vec![0; n];
    let mut groups = Vec::new();
    let mut pod_of_root: BTreeMap<usize, usize> = BTreeMap::new();
    for (s, g) in group_of.iter_mut().enumerate() {
        if below(s as SwitchIx) {
            let r = root(&mut parent, s);
            let next = pod_of_root.len();
            let pod = *pod_of_root.entry(r).or_insert(next);
            if pod == groups.len() {
                groups.push(GroupView {
                    name: format!("pod {pod}"),
                    kind: "pod",
                });
            }
            *g = pod;
        }
    }
    // The top layer by neighbour set, in the order of each block's first switch.
    let mut blocks: Vec<(Vec<SwitchIx>, Vec<usize>)> = Vec::new();
    for s in (0..n).filter(|&s| !below(s as SwitchIx)) {
        let mut nb = topo.neighbors(s as SwitchIx).to_vec();
        nb.sort_unstable();
        match blocks.iter_mut().find(|(k, _)| *k == nb) {
            Some((_, members)) => members.push(s),
            None => blocks.push((nb, vec![s])),
        }
    }
    let mut members: Vec<Vec<usize>> = blocks.into_iter().map(|(_, m)| m).collect();
    if members.len() > MAX_TOP_BLOCKS {
        let all: Vec<usize> = members.concat();
        let per = all.len().div_ceil(MAX_TOP_BLOCKS);
        members = all.chunks(per).map(<[usize]>::to_vec).collect();
    }
    for (b, m) in members.iter().enumerate() {
        for &s in m {
            group_of[s] = groups.len();
        }
        groups.push(GroupView {
            name: format!("top {b}"),
            kind: "top",
        });
    }
    (groups, group_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::topo::{fattree::fattree, MonitorPlacement};

    /// A fat-tree's groups are its pods and its core groups: k pods of k switches, k/2 core
    /// groups of k/2 cores, each core group on the same aggregation switch of every pod.
    #[test]
    fn a_fat_trees_groups_are_its_pods_and_core_groups() {
        let t = fattree(8, MonitorPlacement::Bottom).unwrap();
        let (groups, of) = groups(&t);
        assert_eq!(groups.iter().filter(|g| g.kind == "pod").count(), 8);
        assert_eq!(groups.iter().filter(|g| g.kind == "top").count(), 4);
        let g = |name: &str| of[t.switch(name).unwrap() as usize];
        assert_eq!(g("edge3_0"), g("agg3_2"));
        assert_ne!(g("edge3_0"), g("edge4_0"));
        assert_eq!(groups[g("edge3_0")].name, "pod 3");
        // core0..core3 serve agg*_0; core4.. serve agg*_1.
        assert_eq!(g("core0"), g("core3"));
        assert_ne!(g("core3"), g("core4"));
        for (s, &gi) in of.iter().enumerate() {
            let per_pod = t.switches[s].layer < 2;
            assert_eq!(groups[gi].kind == "pod", per_pod, "{}", t.switches[s].name);
        }
    }
}
