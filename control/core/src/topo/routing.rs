//! Shortest-path ECMP routing toward bottom-layer switches, as a Clos fabric's BGP/ECMP does.

use super::{SwitchIx, Topology};

/// Hop distances from every switch to every bottom switch, and ECMP next-hop choice.
#[derive(Clone, Debug)]
pub struct Routing {
    /// `bottom_ix[s]` = position of bottom switch `s` in `dist`, or `u32::MAX`.
    bottom_ix: Vec<u32>,
    /// `dist[b * n + s]` = hops from switch `s` to bottom switch number `b`.
    dist: Vec<u8>,
    n: usize,
}

impl Routing {
    pub fn new(topo: &Topology) -> Self {
        let n = topo.switches.len();
        let bottoms: Vec<SwitchIx> = (0..n as SwitchIx)
            .filter(|&s| topo.switches[s as usize].layer == 0)
            .collect();
        let mut bottom_ix = vec![u32::MAX; n];
        for (i, &b) in bottoms.iter().enumerate() {
            bottom_ix[b as usize] = i as u32;
        }
        let mut dist = vec![u8::MAX; bottoms.len() * n];
        let mut queue = std::collections::VecDeque::new();
        for (i, &b) in bottoms.iter().enumerate() {
            let d = &mut dist[i * n..(i + 1) * n];
            d[b as usize] = 0;
            queue.push_back(b);
            while let Some(u) = queue.pop_front() {
                for &v in topo.neighbors(u) {
                    if d[v as usize] == u8::MAX {
                        d[v as usize] = d[u as usize] + 1;
                        queue.push_back(v);
                    }
                }
            }
        }
        Self { bottom_ix, dist, n }
    }

    /// Hops from `s` to bottom switch `dst`.
    pub fn distance(&self, s: SwitchIx, dst: SwitchIx) -> u8 {
        let b = self.bottom_ix[dst as usize];
        assert!(
            b != u32::MAX,
            "routing destinations are bottom-layer switches"
        );
        self.dist[b as usize * self.n + s as usize]
    }

    /// The ECMP next hops from `s` toward bottom switch `dst`.
    pub fn next_hops<'t>(
        &'t self,
        topo: &'t Topology,
        s: SwitchIx,
        dst: SwitchIx,
    ) -> impl Iterator<Item = SwitchIx> + 't {
        let d = self.distance(s, dst);
        topo.neighbors(s)
            .iter()
            .copied()
            .filter(move |&v| self.distance(v, dst) + 1 == d)
    }

    /// The path a flow with ECMP hash `flow_hash` takes from bottom switch `src` to `dst`
    /// (both ends included). Each switch mixes the flow hash with its own ID, so choices at
    /// successive layers are independent (no ECMP polarisation).
    pub fn path(
        &self,
        topo: &Topology,
        src: SwitchIx,
        dst: SwitchIx,
        flow_hash: u32,
    ) -> Vec<SwitchIx> {
        let mut path = vec![src];
        let mut u = src;
        let mut hops: Vec<SwitchIx> = Vec::with_capacity(8);
        while u != dst {
            hops.clear();
            hops.extend(self.next_hops(topo, u, dst));
            let h = ecmp_mix(flow_hash, topo.switches[u as usize].id);
            u = hops[(h % hops.len() as u64) as usize];
            path.push(u);
        }
        path
    }

    /// Every ECMP path from `src` to `dst`.
    pub fn all_paths(&self, topo: &Topology, src: SwitchIx, dst: SwitchIx) -> Vec<Vec<SwitchIx>> {
        let mut out = Vec::new();
        let mut stack = vec![vec![src]];
        while let Some(p) = stack.pop() {
            let u = *p.last().unwrap();
            if u == dst {
                out.push(p);
                continue;
            }
            for v in self.next_hops(topo, u, dst) {
                let mut q = p.clone();
                q.push(v);
                stack.push(q);
            }
        }
        out.sort();
        out
    }
}

/// SplitMix64's finaliser over (flow hash, switch ID): the per-switch ECMP hash.
pub fn ecmp_mix(flow_hash: u32, switch_id: u32) -> u64 {
    mix64((switch_id as u64) << 32 | flow_hash as u64)
}

/// SplitMix64's finaliser: a cheap, well-mixing 64-bit hash.
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::{fattree::fattree, MonitorPlacement};

    #[test]
    fn fat_tree_path_counts() {
        let t = fattree(4, MonitorPlacement::Bottom).unwrap();
        let r = Routing::new(&t);
        let e00 = t.switch("edge0_0").unwrap();
        assert_eq!(r.all_paths(&t, e00, t.switch("edge0_1").unwrap()).len(), 2);
        assert_eq!(r.all_paths(&t, e00, t.switch("edge3_1").unwrap()).len(), 4);
        for p in r.all_paths(&t, e00, t.switch("edge3_1").unwrap()) {
            assert_eq!(p.len(), 5);
        }
    }

    #[test]
    fn ecmp_spreads_over_all_cores() {
        let t = fattree(8, MonitorPlacement::Bottom).unwrap();
        let r = Routing::new(&t);
        let (s, d) = (t.switch("edge0_0").unwrap(), t.switch("edge5_2").unwrap());
        let mut seen = std::collections::HashSet::new();
        for h in 0..2000u32 {
            let p = r.path(&t, s, d, crate::sketch::hash::crc32(&h.to_be_bytes()));
            seen.insert(p[2]);
        }
        assert_eq!(seen.len(), 16, "all (k/2)^2 cores are used");
    }
}
