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

/// Taking a link out of service and putting it back: the three batches take the entries from
/// one forwarding to the other exactly, and no route is ever left naming a group or a size
/// whose entries are gone (new entries come first, routes are deleted before what they name).
#[test]
fn a_forwarding_rewrite_reaches_the_new_state_and_never_strands_a_route() {
    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let tree = FloodTree::new(&topo);
    let ports = PortMap::canonical(&topo);
    let out = topo.link_by_names("agg1_0", "core0").unwrap();
    let each = |out: &[u32]| -> Vec<Forwarding> {
        ForwardingState::all_without(&topo, out, &tree, &ports)
            .unwrap()
            .iter()
            .map(|st| forwarding(st, 0))
            .collect()
    };
    let (all, drained) = (each(&[]), each(&[out, topo.reverse(out)]));
    let mut rewrote = 0;
    for s in 0..topo.switches.len() {
        for (from, to) in [(&all[s], &drained[s]), (&drained[s], &all[s])] {
            let mut held: HashMap<(Table, Vec<Key>), Vec<u128>> = from
                .entries
                .iter()
                .map(|e| ((e.table, e.keys.clone()), e.args.clone()))
                .collect();
            let batches = forwarding_rewrite(from, to);
            rewrote += usize::from(batches.iter().any(|b| !b.is_empty()));
            for (i, batch) in batches.iter().enumerate() {
                for w in batch {
                    let k = (w.entry.table, w.entry.keys.clone());
                    let expected = [Change::Insert, Change::Modify, Change::Delete][i];
                    assert_eq!(w.change, expected, "{w:?}");
                    match w.change {
                        Change::Insert => assert!(held.insert(k, w.entry.args.clone()).is_none()),
                        Change::Modify => assert!(held.insert(k, w.entry.args.clone()).is_some()),
                        Change::Delete => assert!(held.remove(&k).is_some()),
                    }
                    // Every route held names a group with all its members and a size with its
                    // remainders.
                    for ((t, keys), args) in &held {
                        if *t != Table::IpRoute {
                            continue;
                        }
                        let (g, size) = (args[0], args[1]);
                        for j in 0..2 * size - 1 {
                            let member = (Table::EcmpGroup, vec![Key::Exact(g), Key::Exact(j)]);
                            assert!(held.contains_key(&member), "{keys:?}: {member:?} gone");
                        }
                        let rem = (Table::EcmpModHi, vec![Key::Exact(size), Key::Exact(255)]);
                        assert!(held.contains_key(&rem), "{keys:?}: size {size} gone");
                    }
                }
            }
            let want: HashMap<(Table, Vec<Key>), Vec<u128>> = to
                .entries
                .iter()
                .map(|e| ((e.table, e.keys.clone()), e.args.clone()))
                .collect();
            assert_eq!(held, want, "switch {s}");
        }
    }
    assert!(rewrote >= 8, "{rewrote} rewrites");
}
