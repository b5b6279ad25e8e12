use super::*;
use crate::topo::ports::PortMap;
use crate::topo::{fattree::fattree, MonitorPlacement};

fn state(topo: &Topology, name: &str) -> ForwardingState {
    let routing = Routing::new(topo);
    let tree = FloodTree::new(topo);
    let ports = PortMap::canonical(topo);
    let s = topo.switch(name).unwrap();
    ForwardingState::of(topo, &routing, &tree, s, ports.of(s))
}

#[test]
fn edge_switch_routes_its_hosts_and_every_other_rack_by_prefix() {
    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let s = state(&topo, "edge0_0");
    // edge0_0: agg0_0, agg0_1 on ports 1, 2; hosts h0_0_0, h0_0_1 on 3, 4.
    assert_eq!(s.host_ports, [3, 4]);
    assert_eq!(s.groups, [(1, vec![3]), (2, vec![4]), (3, vec![1, 2])]);
    assert_eq!(s.sizes(), [1, 2]);
    // 7 other racks x 2 families + 2 own hosts x 2 families.
    assert_eq!(s.routes.len(), 7 * 2 + 2 * 2);
    let to = |p: &str| {
        let p: Prefix = p.parse().unwrap();
        s.routes.iter().find(|r| r.prefix == p).copied().unwrap()
    };
    assert_eq!((to("10.3.1.0/24").group, to("10.3.1.0/24").size), (3, 2));
    assert_eq!(to("fd00:0:3:1::/64").group, 3);
    assert_eq!((to("10.0.0.3/32").group, to("10.0.0.3/32").size), (2, 1));
    assert_eq!(to("fd00:0:0:0::3/128").group, 2);
}

#[test]
fn route_count_grows_with_racks_not_hosts() {
    for k in [4u32, 8, 16] {
        let topo = fattree(k, MonitorPlacement::TopAndBottom).unwrap();
        let racks = (k * k / 2) as usize;
        let s = state(&topo, "core0");
        assert_eq!(s.routes_v4().count(), racks, "k={k}");
        assert_eq!(s.routes_v6().count(), racks, "k={k}");
        assert!(s.groups.iter().all(|(_, m)| m.len() == 1));
    }
}

#[test]
fn flood_groups_follow_one_tree_and_skip_the_ingress_port() {
    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let tree = FloodTree::new(&topo);
    // A spanning tree: n - 1 edges.
    let edges: usize = (0..topo.switches.len() as SwitchIx)
        .map(|s| tree.neighbors(s).len())
        .sum::<usize>()
        / 2;
    assert_eq!(edges, topo.switches.len() - 1);
    let s = state(&topo, "edge0_0");
    assert_eq!(s.floods.len(), 4, "one group per port");
    for f in &s.floods {
        assert!(f.replicas.iter().all(|r| r.port != f.in_port));
        let hosts: Vec<u32> = f
            .replicas
            .iter()
            .filter(|r| r.to_host)
            .map(|r| r.port)
            .collect();
        let want: Vec<u32> = [3, 4].into_iter().filter(|&p| p != f.in_port).collect();
        assert_eq!(hosts, want);
    }
    // From a host, a frame goes to every tree neighbor.
    let e = topo.switch("edge0_0").unwrap();
    let ports = PortMap::canonical(&topo);
    let want: Vec<u32> = tree
        .neighbors(e)
        .iter()
        .map(|n| ports.of(e).switch_ports[n])
        .collect();
    let fabric: Vec<u32> = s.floods[2]
        .replicas
        .iter()
        .filter(|r| !r.to_host)
        .map(|r| r.port)
        .collect();
    assert_eq!(fabric, want);
    assert!(!want.is_empty());
}

#[test]
fn all_switches_at_once_match_one_by_one() {
    for placement in [MonitorPlacement::TopAndBottom, MonitorPlacement::Bottom] {
        let topo = fattree(4, placement).unwrap();
        let routing = Routing::new(&topo);
        let tree = FloodTree::new(&topo);
        let ports = PortMap::canonical(&topo);
        let all = ForwardingState::all(&topo, &routing, &tree, &ports);
        for (s, state) in all.iter().enumerate() {
            let s = s as SwitchIx;
            assert_eq!(
                *state,
                ForwardingState::of(&topo, &routing, &tree, s, ports.of(s))
            );
        }
    }
}
