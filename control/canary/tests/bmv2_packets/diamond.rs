//! The diamond: a flow changes path, against the reference model.

use crate::packets::Packets;
use crate::{udp, DIAMOND};
use canary_core::fabric::RuleOp;
use canary_core::model::epoch_tag;
use canary_core::pathbf::encode_hop;
use canary_core::sketch::{ecmp_member, meter_index, FlowHashes};
use canary_core::topo::Prefix;
use canary_core::FlowId;
use canary_switch::entries::{Change, Entry, Key, Write};

/// A flow changing path: s1's route to h2's rack first points at a one-member group (via s2a),
/// then back at the topology's two-member group (s2a, s2b). Flows whose ECMP member is s2b move:
/// their pathBF at s3 changes, so x's DSM rule (keyed on the old pathBF) stops matching and x goes
/// to HashPipe and fires the HH digest watched on the new pathBF; y has DSM rules for both
/// pathBFs, so its DSM buckets see a second rule and turn dirty; z (member s2a) stays on s2a and
/// stays clean.
#[test]
fn diamond_path_change_matches_the_reference_model() {
    let Some(mut fab) = Packets::start("diamond_path_change", DIAMOND, None) else {
        return;
    };
    let t = fab.topo();
    let (s1, s2a, s2b, s3) = (fab.sw("s1"), fab.sw("s2a"), fab.sw("s2b"), fab.sw("s3"));
    let ports = fab.net.ports;
    let (pa, pb) = (
        ports.of(s1).switch_ports[&s2a],
        ports.of(s1).switch_ports[&s2b],
    );
    // The route to h2's rack, and the one-member group standing in for it at first.
    let rack: Prefix = "10.0.2.0/24".parse().unwrap();
    let state = fab.model(s1).forwarding().clone();
    let route = *state.routes.iter().find(|r| r.prefix == rack).unwrap();
    let members = state
        .groups
        .iter()
        .find(|g| g.0 == route.group)
        .unwrap()
        .1
        .clone();
    assert_eq!(members, {
        let mut m = vec![pa, pb];
        m.sort_unstable();
        m
    });
    let single = 100u16;
    let set_route = |fab: &mut Packets, group: u16, size: u16, extra: Vec<Write>| {
        let mut w = extra;
        w.push(Write {
            change: Change::Modify,
            entry: Entry {
                table: canary_switch::contract::Table::IpRoute,
                keys: vec![Key::Lpm(rack.addr.to_u128(), u32::from(rack.len128()))],
                args: vec![group.into(), size.into()],
                default: false,
            },
        });
        let failed = fab.rt.block_on(fab.fabric.driver_mut(s1).write_now(&w));
        assert!(failed.is_empty(), "{failed:?}");
        let mut st = fab.model(s1).forwarding().clone();
        if !st.groups.iter().any(|g| g.0 == single) {
            st.groups.push((single, vec![pa]));
        }
        for r in st.routes.iter_mut().filter(|r| r.prefix == rack) {
            r.group = group;
            r.size = size;
        }
        fab.net.switches[s1 as usize].set_forwarding(st);
    };
    let group_entry = Write {
        change: Change::Insert,
        entry: Entry {
            table: canary_switch::contract::Table::EcmpGroup,
            keys: vec![Key::Exact(single.into()), Key::Exact(0)],
            args: vec![pa.into()],
            default: false,
        },
    };
    set_route(&mut fab, single, 1, vec![group_entry]);

    let mask = fab.prep.codec.masks[s1 as usize];
    let member_b = members.iter().position(|&p| p == pb).unwrap() as u16;
    let goes_b = |f: &FlowId| ecmp_member(FlowHashes::of(f).c32, mask, 2) == member_b;
    let mut moving = (4000..u16::MAX).map(udp).filter(goes_b);
    let (x, y) = (moving.next().unwrap(), moving.next().unwrap());
    let z = (4000..u16::MAX).map(udp).find(|f| !goes_b(f)).unwrap();
    let bf_a = encode_hop(
        fab.prep.codec.masks[s1 as usize],
        fab.prep.codec.masks[s2a as usize],
        false,
    );
    let bf_b = encode_hop(
        fab.prep.codec.masks[s1 as usize],
        fab.prep.codec.masks[s2b as usize],
        false,
    );
    assert_ne!(bf_a, bf_b, "s2a and s2b must leave different pathBFs");
    let mut ops = Vec::new();
    for f in [x, y, z] {
        ops.push(RuleOp::InstallUsm {
            switch: s1,
            flow: f,
        });
        ops.push(RuleOp::InstallDsm {
            switch: s3,
            flow: f,
            path_bf: bf_a,
        });
    }
    ops.push(RuleOp::InstallDsm {
        switch: s3,
        flow: y,
        path_bf: bf_b,
    });
    ops.push(RuleOp::InstallHh {
        switch: s3,
        path_bf: bf_b,
        eta: 2,
    });
    fab.rules(&ops);

    for f in [x, y, z, x, y, x, z, x] {
        fab.send_flow(f);
    }
    assert_eq!(fab.model(s3).counters.hh_reports, 0);
    set_route(&mut fab, route.group, route.size, vec![]);
    for f in [x, y, z, x, x, y, x, z, x, y] {
        fab.send_flow(f);
    }

    // What the model says happened, so the scenario cannot pass vacuously.
    let m = fab.model(s3);
    assert_eq!(
        m.counters.hh_reports, 3,
        "x's 3rd..5th packets via s2b exceed eta = 2"
    );
    assert_eq!(
        m.hashpipe().estimate(FlowHashes::of(&x)),
        5,
        "x's packets via s2b went to HashPipe"
    );
    let (_, dsm) = m.meters_of(epoch_tag(0));
    let (hx, hy, hz) = (FlowHashes::of(&x), FlowHashes::of(&y), FlowHashes::of(&z));
    for row in 0..3 {
        let bx = dsm.bucket(row, meter_index(hx, row, 1024));
        assert_eq!((bx.count, bx.dirty), (4, false), "x's DSM row {row}");
        let by = dsm.bucket(row, meter_index(hy, row, 1024));
        assert!(by.dirty, "y's DSM row {row} dirty after its path changed");
        let bz = dsm.bucket(row, meter_index(hz, row, 1024));
        assert_eq!((bz.count, bz.dirty), (4, false), "z's DSM row {row}");
    }
    let _ = t;
    fab.verify();
}
