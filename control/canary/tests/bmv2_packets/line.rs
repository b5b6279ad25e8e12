//! The line scenarios (two switches, and three with a transit) against the reference model.

use crate::packets::Packets;
use crate::{udp, udp6, LINE2, LINE3, M};
use canary_core::fabric::RuleOp;
use canary_core::model::{epoch_tag, wire};
use canary_core::pathbf::encode_hop;
use canary_core::sketch::{hashpipe_index, meter_index, FlowHashes};
use canary_core::FlowId;

/// The line scenario: collisions, a DSM rule with a wrong pathBF, a flow without USM, HashPipe
/// evictions, IPv6 flows; frames held in flight on the link out of s1 across flips of s1 alone
/// and of the last switch alone; an epoch reusing a parity; ARP, ND, LLDP and another EtherType.
fn line_scenario(test: &str, topo: &str, relay_to: &str) {
    let Some(mut fab) = Packets::start(test, topo, Some(("s1", relay_to))) else {
        return;
    };
    let (s1, last) = (fab.sw("s1"), fab.sw("s2"));
    let t = fab.topo();

    // d collides with a in meter row 0 only (dirties that bucket, not the others).
    let (a, b, e) = (udp(1000), udp(1001), udp(1003));
    let c = FlowId::v4(0x0a00_0102, 0x0a00_0202, 6, 1002, 80);
    let ha = FlowHashes::of(&a);
    let d = (1100..u16::MAX)
        .map(udp)
        .find(|f| {
            let h = FlowHashes::of(f);
            (0..3)
                .map(|r| meter_index(h, r, 1024) == meter_index(ha, r, 1024))
                .eq([true, false, false])
        })
        .unwrap();
    // p, q, r share their HashPipe stage-0 and stage-1 slots: evictions, carries, swaps and
    // pass-ons down to stage 2.
    let slots = |f: &FlowId| {
        let h = FlowHashes::of(f);
        (
            hashpipe_index(h, 0, 32, 1024),
            hashpipe_index(h, 1, 32, 1024),
        )
    };
    let p = udp(3000);
    let mut same = (3001..u16::MAX).map(udp).filter(|f| slots(f) == slots(&p));
    let (q, r) = (same.next().unwrap(), same.next().unwrap());
    let (x6, y6, z6) = (udp6(5000), udp6(5001), udp6(5002));

    // pathBF at the last switch: s1's mask, and the transit's in line3.
    let mut bf_down = fab.prep.codec.masks[s1 as usize];
    for (i, sw) in t.switches.iter().enumerate() {
        if !sw.monitor {
            bf_down = encode_hop(bf_down, fab.prep.codec.masks[i], false);
        }
    }
    let mut ops = Vec::new();
    for f in [a, b, d, x6, y6] {
        ops.push(RuleOp::InstallUsm {
            switch: s1,
            flow: f,
        });
    }
    for (f, bf) in [
        (a, bf_down),
        (b, bf_down),
        (d, bf_down),
        (e, bf_down),
        (c, bf_down ^ 1),
        (x6, bf_down),
        (y6, bf_down),
    ] {
        ops.push(RuleOp::InstallDsm {
            switch: last,
            flow: f,
            path_bf: bf,
        });
    }
    ops.push(RuleOp::InstallHh {
        switch: last,
        path_bf: bf_down,
        eta: 3,
    });
    ops.push(RuleOp::InstallHh {
        switch: s1,
        path_bf: 0,
        eta: 4,
    });
    fab.rules(&ops);

    for f in [
        a, a, b, c, a, d, c, c, b, a, c, d, a, c, p, p, p, q, r, p, q, q, r, p, r, r, r, q, x6, y6,
        z6, x6, z6, z6, z6, z6, y6,
    ] {
        fab.send_flow(f);
    }

    // Frames in flight across the flip: a, b, a, d, x6 leave s1 marked with epoch 0 and are held
    // on the link out of s1. s1 flips alone to epoch 1: a, b now leave marked 1 and reach the last
    // switch, still in epoch 0, where they count in epoch 1's buckets (the mark decides, not the
    // local epoch). The last switch flips too; then the held frames arrive marked 0 at a switch in
    // epoch 1, after newer ones, and count in epoch 0's buckets.
    fab.hold(true);
    for f in [a, b, a, d, x6] {
        fab.send_flow(f);
    }
    fab.hold(false);
    fab.flip(s1, 1);
    for f in [a, b, a, y6] {
        fab.send_flow(f);
    }
    fab.flip(last, 1);
    fab.release();
    let (_, d0) = fab.model(last).meters_of(epoch_tag(0));
    let (_, d1) = fab.model(last).meters_of(epoch_tag(1));
    let count = |dsm: &canary_core::sketch::Dsm, f: &FlowId| {
        dsm.clean_flows()
            .iter()
            .find(|r| r.flow == *f)
            .map(|r| r.count)
    };
    assert_eq!(
        count(&d1, &a),
        Some(2),
        "a's two frames after s1's flip, in epoch 1"
    );
    assert!(
        count(&d0, &a).is_some_and(|n| n >= 6),
        "a's held frames counted in epoch 0"
    );
    for f in [a, c, e, b, c, e, a, c, c, e, b, d, x6, z6] {
        fab.send_flow(f);
    }

    // Epoch 2 reuses epoch 0's parity: its first packets find epoch 0's buckets stale.
    fab.flip(s1, 2);
    fab.flip(last, 2);
    for f in [a, b, x6, a] {
        fab.send_flow(f);
    }
    let (_, d2) = fab.model(last).meters_of(epoch_tag(2));
    assert_eq!(count(&d2, &a), Some(2), "epoch 2 starts afresh in parity 0");
    assert!(count(&d2, &x6).is_some(), "an IPv6 flow is counted");

    // Not routed, never dropped: ARP, IPv6 neighbour solicitation, LLDP, a broadcast of
    // another EtherType, IPv4 multicast; all reach h2 as h1 sent them.
    let h1 = t.hosts[0].clone();
    let others = [
        wire::arp_request(M.src, h1.addr, 0x0a00_0263),
        wire::neighbour_solicitation(M.src, h1.addr6, t.hosts[1].addr6 + 0x99),
        wire::lldp(M.src, "eth0"),
        [
            vec![0xff; 6],
            M.src.to_vec(),
            vec![0x12, 0x34],
            vec![0xab; 46],
        ]
        .concat(),
        wire::ip_frame(
            M,
            &FlowId::v4(h1.addr, 0xe000_00fb, 17, 5353, 5353),
            9,
            b"mdns",
        ),
        // A host's own frame of the shim's EtherType: carried whole, inside a shim of ours.
        [
            M.dst.to_vec(),
            M.src.to_vec(),
            vec![0x88, 0xb5],
            vec![0x5a; 50],
        ]
        .concat(),
    ];
    for fr in others {
        fab.send(0, &fr);
    }
    // From a neighbour not running Canary (a rollout): frames without a shim arrive on the last
    // switch's fabric port. IP unicast of monitored flows is forwarded unmonitored (no bucket
    // changes, no digest); ARP is flooded; all reach h2 unchanged.
    fab.seq += 1;
    let plain = [
        wire::ip_frame(M, &a, fab.seq, b"no shim"),
        wire::ip_frame(M, &x6, fab.seq, b"no shim"),
        wire::arp_request(M.src, h1.addr, 0x0a00_0264),
    ];
    for fr in plain {
        fab.inject_on_relay(&fr);
    }

    assert!(
        fab.model(last).counters.hh_reports > 0 && fab.model(s1).counters.hh_reports > 0,
        "the sequence must exercise the HH report"
    );
    fab.verify();
}

#[test]
fn two_switch_line_matches_the_reference_model() {
    line_scenario("two_switch_line", LINE2, "s2");
}

#[test]
fn three_switch_line_matches_the_reference_model() {
    line_scenario("three_switch_line", LINE3, "t");
}
