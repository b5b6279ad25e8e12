use super::*;
use canary_core::sketch::ecmp_member;
use canary_core::topo::{fattree::fattree, FloodTree, MonitorPlacement, PortMap, Routing};
use std::collections::HashMap;

/// The entries, looked up as p4src/include/forwarding.p4 does, pick the member
/// `ecmp_member` picks, for every route of an edge, an agg and a core switch.
#[test]
fn the_ecmp_tables_pick_the_models_member() {
    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let routing = Routing::new(&topo);
    let tree = FloodTree::new(&topo);
    let ports = PortMap::canonical(&topo);
    for name in ["edge1_0", "agg2_1", "core3"] {
        let s = topo.switch(name).unwrap();
        let state = ForwardingState::of(&topo, &routing, &tree, s, ports.of(s));
        for mask in [0u32, 0x0010_0201, 0xdead_beef] {
            let f = forwarding(&state, mask);
            let exact: HashMap<(Table, Vec<Key>), u128> = f
                .entries
                .iter()
                .map(|e| {
                    (
                        (e.table, e.keys.clone()),
                        e.args.first().copied().unwrap_or(0),
                    )
                })
                .collect();
            let get =
                |t, k: Vec<u128>| exact[&(t, k.into_iter().map(Key::Exact).collect::<Vec<_>>())];
            for (g, members) in &state.groups {
                let size = members.len() as u16;
                for c32 in [0u32, 1, 0xffff_ffff, 0x1234_5678, 0x8000_0001, 0x0f0f_f0f0] {
                    let muls = [
                        Table::EcmpMul0,
                        Table::EcmpMul1,
                        Table::EcmpMul2,
                        Table::EcmpMul3,
                    ];
                    let prod = (0..4).fold(0u32, |acc, i| {
                        acc.wrapping_add(
                            get(muls[i], vec![u128::from((c32 >> (8 * i)) as u8)]) as u32
                        )
                    });
                    let rh = get(Table::EcmpModHi, vec![size.into(), (prod >> 24).into()]);
                    let rl = get(
                        Table::EcmpModLo,
                        vec![size.into(), ((prod >> 16) & 0xff).into()],
                    );
                    let port = get(Table::EcmpGroup, vec![(*g).into(), rh + rl]);
                    let want = members[ecmp_member(c32, mask, size) as usize];
                    assert_eq!(port, u128::from(want), "{name} group {g} c32 {c32:#x}");
                }
            }
        }
    }
}

#[test]
fn routes_come_last_and_floods_become_groups() {
    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let routing = Routing::new(&topo);
    let tree = FloodTree::new(&topo);
    let ports = PortMap::canonical(&topo);
    let s = topo.switch("edge0_0").unwrap();
    let state = ForwardingState::of(&topo, &routing, &tree, s, ports.of(s));
    let f = forwarding(&state, 7);
    let first_route = f
        .entries
        .iter()
        .position(|e| e.table == Table::IpRoute)
        .unwrap();
    assert!(f.entries[first_route..]
        .iter()
        .all(|e| e.table == Table::IpRoute));
    assert_eq!(f.entries.len() - first_route, state.routes.len());
    assert_eq!(f.groups.len(), 4);
    for g in &f.groups {
        for &(port, rid) in &g.replicas {
            assert_eq!(rid == RID_TO_HOST, state.host_ports.contains(&port));
        }
    }
    // An IPv4 rack route is its IPv4-mapped prefix.
    let p: canary_core::topo::Prefix = "10.1.0.0/24".parse().unwrap();
    assert!(f.entries.contains(&Entry::new(
        Table::IpRoute,
        vec![Key::Lpm(0xffff_0a01_0000, 120)],
        vec![
            state
                .routes
                .iter()
                .find(|r| r.prefix == p)
                .unwrap()
                .group
                .into(),
            2
        ],
    )));
}
