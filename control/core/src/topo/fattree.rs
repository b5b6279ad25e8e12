//! The k-ary fat-tree (Al-Fares et al.), named as the project's contract says:
//! `core{i}` (i < (k/2)²), `agg{p}_{j}`, `edge{p}_{j}`, hosts `h{p}_{j}_{x}`; `agg{p}_{j}` links to
//! `core{j*k/2 + c}` for c < k/2, and every `edge{p}_*` to every `agg{p}_*`.
//! Host `h{p}_{j}_{x}` has addresses 10.p.j.(x+2) and fd00:0:p:j::(x+2).

use super::{default_switch_id, Host, MonitorPlacement, Switch, SwitchIx, Topology, TopologyError};

/// Builds a fat-tree of even radix `k` with the given monitor placement.
pub fn fattree(k: u32, placement: MonitorPlacement) -> Result<Topology, TopologyError> {
    if k < 2 || !k.is_multiple_of(2) {
        return Err(TopologyError::BadRadix(k));
    }
    let half = k / 2;
    let mut switches = Vec::new();
    let mut push = |name: String, layer: u8| {
        let id = default_switch_id(&name);
        switches.push(Switch {
            name,
            layer,
            id,
            monitor: false,
        });
        (switches.len() - 1) as SwitchIx
    };
    let edge: Vec<Vec<SwitchIx>> = (0..k)
        .map(|p| (0..half).map(|j| push(format!("edge{p}_{j}"), 0)).collect())
        .collect();
    let agg: Vec<Vec<SwitchIx>> = (0..k)
        .map(|p| (0..half).map(|j| push(format!("agg{p}_{j}"), 1)).collect())
        .collect();
    let core: Vec<SwitchIx> = (0..half * half)
        .map(|i| push(format!("core{i}"), 2))
        .collect();

    let mut links = Vec::new();
    for p in 0..k as usize {
        for &e in &edge[p] {
            for &a in &agg[p] {
                links.push((e, a));
            }
        }
        for (j, &a) in agg[p].iter().enumerate() {
            for c in 0..half as usize {
                links.push((a, core[j * half as usize + c]));
            }
        }
    }
    let mut hosts = Vec::new();
    for p in 0..k {
        for j in 0..half {
            for x in 0..half {
                let addr = u32::from_be_bytes([10, p as u8, j as u8, (x + 2) as u8]);
                hosts.push(Host {
                    name: format!("h{p}_{j}_{x}"),
                    addr,
                    addr6: super::default_ipv6(addr),
                    switch: edge[p as usize][j as usize],
                });
            }
        }
    }
    let mut topo = Topology::new(format!("fattree:{k}"), switches, hosts, &links)?;
    topo.place_monitors(placement);
    Ok(topo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_the_fat_tree_formulas() {
        for k in [2u32, 4, 6, 8] {
            let t = fattree(k, MonitorPlacement::TopAndBottom).unwrap();
            assert_eq!(t.switches.len() as u32, 5 * k * k / 4);
            assert_eq!(t.hosts.len() as u32, k * k * k / 4);
            assert_eq!(t.undirected_links() as u32, k * k * k / 2);
        }
    }

    #[test]
    fn names_follow_the_contract() {
        let t = fattree(4, MonitorPlacement::Bottom).unwrap();
        // agg{p}_{j} links to core{j*k/2 + c}.
        assert!(t.link_by_names("agg3_1", "core2").is_some());
        assert!(t.link_by_names("agg3_1", "core3").is_some());
        assert!(t.link_by_names("agg3_1", "core0").is_none());
        assert!(t.link_by_names("edge2_0", "agg2_1").is_some());
        assert!(t.link_by_names("edge2_0", "agg1_1").is_none());
        let h = &t.hosts[t.hosts.iter().position(|h| h.name == "h1_1_0").unwrap()];
        assert_eq!(super::super::ipv4(h.addr).to_string(), "10.1.1.2");
        assert_eq!(t.name_of(h.switch), "edge1_1");
    }

    #[test]
    fn monitor_placement() {
        let t = fattree(4, MonitorPlacement::Bottom).unwrap();
        assert_eq!(t.monitors().count(), 8);
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        assert_eq!(t.monitors().count(), 12);
    }

    #[test]
    fn odd_radix_is_rejected() {
        assert_eq!(
            fattree(5, MonitorPlacement::Bottom).unwrap_err(),
            TopologyError::BadRadix(5)
        );
    }
}
