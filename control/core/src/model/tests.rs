use super::net::{Event, Net};
use super::wire::{self, Macs};
use super::*;
use crate::fabric::RuleOp;
use crate::pathbf::PathBfParams;
use crate::sketch::FlowHashes;
use crate::topo::{
    fattree::fattree, yaml, FloodTree, ForwardingState, MonitorPlacement, PortMap, Routing,
    Topology,
};

const LINE2: &str = "name: line2\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, s2]\n";
const LINE3: &str = "name: line3\nmonitors: bottom\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: t, layer: 1}\n  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, t]\n  - [t, s2]\n";

const M: Macs = Macs {
    dst: [2, 0, 0, 0, 0, 2],
    src: [2, 0, 0, 0, 0, 1],
};

fn models(topo: &Topology, ports: &PortMap) -> Vec<SwitchModel> {
    let routing = Routing::new(topo);
    let tree = FloodTree::new(topo);
    let p = PathBfParams::default();
    (0..topo.switches.len() as u32)
        .map(|s| {
            let mut m = SwitchModel::new(Capacity::of_program());
            m.set_config(SwitchConfig {
                monitor: topo.switches[s as usize].monitor,
                mask: p.mask(topo.switches[s as usize].id),
                epoch: epoch_tag(0),
            });
            m.set_forwarding(ForwardingState::of(topo, &routing, &tree, s, ports.of(s)));
            m
        })
        .collect()
}

fn udp(sport: u16) -> FlowId {
    FlowId::v4(0x0a00_0102, 0x0a00_0202, 17, sport, 2000)
}

fn udp6(sport: u16) -> FlowId {
    let a = |x: u32| crate::topo::default_ipv6(x);
    FlowId::v6(a(0x0a00_0102), a(0x0a00_0202), 17, sport, 2000)
}

fn delivered(events: &[Event]) -> Vec<(u32, Vec<u8>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Delivered { host, frame } => Some((*host, frame.clone())),
            _ => None,
        })
        .collect()
}

fn on_links(events: &[Event]) -> Vec<Vec<u8>> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Link { frame, .. } => Some(frame.clone()),
            _ => None,
        })
        .collect()
}

/// A monitored flow on the two-switch line: the shim is pushed at s1, carries s1's mask and the
/// mark, is counted in s1's USM and s2's DSM, and is gone when h2 gets the frame byte for byte.
#[test]
fn a_monitored_flow_crosses_the_line() {
    let topo = yaml::parse("line2.yaml", LINE2).unwrap();
    let ports = PortMap::canonical(&topo);
    let mut net = Net::new(&topo, &ports, models(&topo, &ports));
    let mask1 = net.switches[0].config().mask;
    for f in [udp(1000), udp6(1000)] {
        let h = FlowHashes::of(&f);
        net.switches[0]
            .apply(&RuleOp::InstallUsm { switch: 0, flow: f })
            .unwrap();
        net.switches[1]
            .apply(&RuleOp::InstallDsm {
                switch: 1,
                flow: f,
                path_bf: mask1,
            })
            .unwrap();
        let frame = wire::ip_frame(M, &f, 1, b"payload");
        for _ in 0..3 {
            let ev = net.send(0, &frame);
            assert_eq!(delivered(&ev), [(1, frame.clone())], "{f}");
            let link = on_links(&ev);
            assert_eq!(link.len(), 1);
            let p = wire::parse(&link[0]);
            assert_eq!(
                p.shim,
                Some(Shim {
                    path_bf: mask1,
                    counted: true,
                    epoch: epoch_tag(0)
                })
            );
        }
        let (usm, _) = net.switches[0].meters_of(epoch_tag(0));
        assert_eq!(usm.clean_count(&f, h), Some(3));
        let (_, dsm) = net.switches[1].meters_of(epoch_tag(0));
        assert!(dsm
            .clean_flows()
            .iter()
            .any(|r| r.flow == f && r.count == 3 && r.path_bf == mask1));
    }
}

/// Without rules: the pathBF is stamped, nothing is counted, and past η the HH table reports.
#[test]
fn an_unmonitored_flow_fills_hashpipe_and_is_reported_past_eta() {
    let topo = yaml::parse("line2.yaml", LINE2).unwrap();
    let ports = PortMap::canonical(&topo);
    let mut net = Net::new(&topo, &ports, models(&topo, &ports));
    let mask1 = net.switches[0].config().mask;
    net.switches[1]
        .apply(&RuleOp::InstallHh {
            switch: 1,
            path_bf: mask1,
            eta: 2,
        })
        .unwrap();
    let f = udp(7);
    let frame = wire::ip_frame(M, &f, 1, b"x");
    let digests: Vec<usize> = (0..5)
        .map(|_| {
            net.send(0, &frame)
                .iter()
                .filter(|e| matches!(e, Event::Digest { switch: 1, digest } if digest.flow == f && digest.path_bf == mask1))
                .count()
        })
        .collect();
    assert_eq!(
        digests,
        [0, 0, 1, 1, 1],
        "one digest per packet once the count passes 2"
    );
    assert_eq!(net.switches[1].counters.hh_reports, 3);
    assert_eq!(net.switches[1].hashpipe().estimate(FlowHashes::of(&f)), 5);
    let (usm, dsm) = net.switches[0].meters_of(epoch_tag(0));
    assert_eq!((usm.occupied(), dsm.occupied()), (0, 0));
}

/// A transit switch ORs its mask in and keeps the mark.
#[test]
fn a_transit_switch_stamps_and_keeps_the_mark() {
    let topo = yaml::parse("line3.yaml", LINE3).unwrap();
    let ports = PortMap::canonical(&topo);
    let mut net = Net::new(&topo, &ports, models(&topo, &ports));
    let (m1, mt) = (net.switches[0].config().mask, net.switches[1].config().mask);
    let f = udp(9);
    net.switches[0]
        .apply(&RuleOp::InstallUsm { switch: 0, flow: f })
        .unwrap();
    let ev = net.send(0, &wire::ip_frame(M, &f, 1, b""));
    let shims: Vec<Option<Shim>> = on_links(&ev).iter().map(|l| wire::parse(l).shim).collect();
    let marked = |path_bf| {
        Some(Shim {
            path_bf,
            counted: true,
            epoch: epoch_tag(0),
        })
    };
    assert_eq!(shims, [marked(m1), marked(m1 | mt)]);
    assert_eq!(delivered(&ev).len(), 1);
}

/// A flip: s1 counts and marks in its new epoch, s2's DSM counts by the mark, whatever its own.
#[test]
fn the_dsm_counts_in_the_marks_epoch_and_a_new_epoch_starts_afresh() {
    let topo = yaml::parse("line2.yaml", LINE2).unwrap();
    let ports = PortMap::canonical(&topo);
    let mut net = Net::new(&topo, &ports, models(&topo, &ports));
    let mask1 = net.switches[0].config().mask;
    let f = udp(11);
    net.switches[0]
        .apply(&RuleOp::InstallUsm { switch: 0, flow: f })
        .unwrap();
    net.switches[1]
        .apply(&RuleOp::InstallDsm {
            switch: 1,
            flow: f,
            path_bf: mask1,
        })
        .unwrap();
    let frame = wire::ip_frame(M, &f, 1, b"");
    let count = |net: &Net, s: usize, tag: u16| -> (u32, u32) {
        let (usm, dsm) = net.switches[s].meters_of(tag);
        let u = usm.clean_count(&f, FlowHashes::of(&f)).unwrap_or(0);
        let d = dsm.clean_flows().first().map_or(0, |r| r.count);
        (u, d)
    };
    net.send(0, &frame);
    let mut c = net.switches[0].config();
    c.epoch = epoch_tag(1);
    net.switches[0].set_config(c);
    net.send(0, &frame);
    net.send(0, &frame);
    assert_eq!(count(&net, 0, epoch_tag(0)), (1, 0));
    assert_eq!(count(&net, 0, epoch_tag(1)), (2, 0));
    assert_eq!(
        count(&net, 1, epoch_tag(0)),
        (0, 1),
        "s2 is still in epoch 0: the mark decides"
    );
    assert_eq!(count(&net, 1, epoch_tag(1)), (0, 2));
    // Epoch 2 reuses parity 0: the first packet finds epoch 0's counts stale. (s2 has started
    // epoch 1: a mark two epochs ahead of it would not count.)
    let mut c2 = net.switches[1].config();
    c2.epoch = epoch_tag(1);
    net.switches[1].set_config(c2);
    c.epoch = epoch_tag(2);
    net.switches[0].set_config(c);
    net.send(0, &frame);
    assert_eq!(count(&net, 0, epoch_tag(2)), (1, 0));
    assert_eq!(count(&net, 1, epoch_tag(2)), (0, 1));
    assert_eq!(count(&net, 0, epoch_tag(0)), (0, 0), "epoch 0 is gone");
}

/// A switch that missed flips (its controller could not reach it) marks packets with an old
/// epoch's tag; a DSM two epochs on does not count them, so they cannot take buckets of their
/// parity from the epoch counting there now.
#[test]
fn a_mark_two_epochs_off_is_not_counted() {
    assert_eq!(
        epoch_window(epoch_tag(0)),
        [epoch_tag(EPOCH_TAGS - 1), 2, 3]
    );
    assert_eq!(epoch_window(epoch_tag(EPOCH_TAGS - 1)), [32766, 32767, 2]);
    let topo = yaml::parse("line2.yaml", LINE2).unwrap();
    let ports = PortMap::canonical(&topo);
    let mut net = Net::new(&topo, &ports, models(&topo, &ports));
    let mask1 = net.switches[0].config().mask;
    let (f, g) = (udp(21), udp(22));
    for flow in [f, g] {
        net.switches[0]
            .apply(&RuleOp::InstallUsm { switch: 0, flow })
            .unwrap();
        net.switches[1]
            .apply(&RuleOp::InstallDsm {
                switch: 1,
                flow,
                path_bf: mask1,
            })
            .unwrap();
    }
    // s2 is in epoch 4; s1 still marks epoch 2 (same parity), then catches up.
    let mut c2 = net.switches[1].config();
    c2.epoch = epoch_tag(4);
    net.switches[1].set_config(c2);
    let mut c1 = net.switches[0].config();
    c1.epoch = epoch_tag(4);
    net.switches[0].set_config(c1);
    net.send(0, &wire::ip_frame(M, &g, 1, b""));
    c1.epoch = epoch_tag(2);
    net.switches[0].set_config(c1);
    net.send(0, &wire::ip_frame(M, &f, 2, b""));
    let (_, dsm4) = net.switches[1].meters_of(epoch_tag(4));
    let (_, dsm2) = net.switches[1].meters_of(epoch_tag(2));
    assert_eq!(
        dsm4.clean_flows().len(),
        1,
        "epoch 4's count survives the stale mark"
    );
    assert_eq!(dsm2.clean_flows().len(), 0, "the stale mark is not counted");
    // One epoch behind or ahead still counts.
    for (e, want) in [(3, 1), (5, 1)] {
        c1.epoch = epoch_tag(e);
        net.switches[0].set_config(c1);
        net.send(0, &wire::ip_frame(M, &f, 3, b""));
        let (_, d) = net.switches[1].meters_of(epoch_tag(e));
        assert_eq!(
            d.clean_flows().len(),
            want,
            "a mark of epoch {e} at a switch in epoch 4"
        );
    }
}

/// ARP, IPv6 neighbour solicitation and LLDP are flooded to every other host unmonitored and
/// arrive byte for byte; on fabric links they carry the shim.
#[test]
fn other_frames_are_flooded_to_every_host_byte_for_byte() {
    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let ports = PortMap::canonical(&topo);
    let mut net = Net::new(&topo, &ports, models(&topo, &ports));
    let mac = [2, 0, 0, 0, 0, 1];
    let src = &topo.hosts[0];
    let frames = [
        wire::arp_request(mac, src.addr, topo.hosts[9].addr),
        wire::neighbour_solicitation(mac, src.addr6, topo.hosts[9].addr6),
        wire::lldp(mac, "eth0"),
        // A broadcast of an EtherType nobody uses, and IPv4 multicast.
        [
            vec![0xff; 6],
            mac.to_vec(),
            vec![0x12, 0x34],
            vec![0xab; 50],
        ]
        .concat(),
        wire::ip_frame(
            M,
            &FlowId::v4(src.addr, 0xe000_00fb, 17, 5353, 5353),
            1,
            b"mdns",
        ),
    ];
    for fr in frames {
        let ev = net.send(0, &fr);
        let mut got: Vec<u32> = delivered(&ev)
            .into_iter()
            .map(|(h, f)| {
                assert_eq!(f, fr, "host {h} got the frame unchanged");
                h
            })
            .collect();
        got.sort_unstable();
        assert_eq!(got, (1..16).collect::<Vec<u32>>(), "every other host, once");
        for l in on_links(&ev) {
            assert_eq!(
                wire::split(&l).0,
                fr,
                "inside the fabric: the frame under a shim"
            );
            assert_eq!(l[12..14], [0x88, 0xb5]);
        }
        assert!(!ev.iter().any(|e| matches!(e, Event::Digest { .. })));
    }
    for s in &net.switches {
        assert_eq!(
            s.hashpipe().entries().count(),
            0,
            "nothing flooded was monitored"
        );
    }
}

/// A host frame of the shim's own EtherType crosses the fabric inside a shim of ours.
#[test]
fn a_hosts_own_canary_ethertype_frame_is_carried_opaquely() {
    let topo = yaml::parse("line2.yaml", LINE2).unwrap();
    let ports = PortMap::canonical(&topo);
    let mut net = Net::new(&topo, &ports, models(&topo, &ports));
    // Looks like a shim followed by IPv4: must not be routed or counted as such.
    let inner = wire::ip_frame(M, &udp(1), 1, b"zz");
    let fake = wire::join(
        &inner,
        Some(Shim {
            path_bf: 1,
            counted: true,
            epoch: 0,
        }),
    );
    let ev = net.send(0, &fake);
    assert_eq!(delivered(&ev), [(1, fake.clone())]);
    let link = &on_links(&ev)[0];
    assert_eq!(link.len(), fake.len() + wire::SHIM_BYTES);
    assert_eq!(wire::split(link).0, fake);
    assert_eq!(net.switches[1].hashpipe().entries().count(), 0);
}

/// During a rollout: an IP frame from the fabric without a shim is forwarded without one and
/// without being counted.
#[test]
fn a_frame_from_the_fabric_without_a_shim_is_forwarded_unmonitored() {
    let topo = yaml::parse("line2.yaml", LINE2).unwrap();
    let ports = PortMap::canonical(&topo);
    let mut net = Net::new(&topo, &ports, models(&topo, &ports));
    let f = udp(3);
    net.switches[1]
        .apply(&RuleOp::InstallHh {
            switch: 1,
            path_bf: 0,
            eta: 0,
        })
        .unwrap();
    let frame = wire::ip_frame(M, &f, 1, b"");
    let from_s1 = ports.of(1).switch_ports[&0];
    let mut ev = Vec::new();
    net.arrive(1, from_s1, frame.clone(), 0, &mut ev);
    assert_eq!(ev, [Event::Delivered { host: 1, frame }]);
    assert_eq!(net.switches[1].hashpipe().entries().count(), 0);
}

#[test]
fn unroutable_unicast_is_dropped_and_said_so() {
    let topo = yaml::parse("line2.yaml", LINE2).unwrap();
    let ports = PortMap::canonical(&topo);
    let mut net = Net::new(&topo, &ports, models(&topo, &ports));
    let f = FlowId::v4(0x0a00_0102, 0x0b00_0001, 17, 1, 2);
    let ev = net.send(0, &wire::ip_frame(M, &f, 1, b""));
    assert_eq!(ev, [Event::NoRoute { switch: 0 }]);
}

#[test]
fn a_full_table_refuses_a_new_rule_but_not_a_repeated_one() {
    let mut cap = Capacity::of_program();
    cap.usm_rules = 2;
    let mut m = SwitchModel::new(cap);
    let ins = |m: &mut SwitchModel, sport| {
        m.apply(&RuleOp::InstallUsm {
            switch: 0,
            flow: udp(sport),
        })
    };
    ins(&mut m, 1).unwrap();
    ins(&mut m, 2).unwrap();
    ins(&mut m, 2).unwrap();
    assert_eq!(
        ins(&mut m, 3),
        Err(RuleError::Full {
            table: "usm_table",
            size: 2
        })
    );
    m.apply(&RuleOp::RemoveUsm {
        switch: 0,
        flow: udp(1),
    })
    .unwrap();
    ins(&mut m, 3).unwrap();
    assert_eq!(m.rule_counts(), (2, 0, 0));
}

mod n_packets {
    use super::*;
    use proptest::prelude::*;

    /// A monitor with USM, DSM and HH rules on a few of six flows and two pathBFs.
    fn monitor() -> SwitchModel {
        let mut m = SwitchModel::new(Capacity::of_program());
        m.set_config(SwitchConfig {
            monitor: true,
            mask: 0x0100_0010,
            epoch: epoch_tag(3),
        });
        for f in 0..3 {
            m.apply(&RuleOp::InstallUsm {
                switch: 0,
                flow: udp(f),
            })
            .unwrap();
            m.apply(&RuleOp::InstallDsm {
                switch: 0,
                flow: udp(f + 2),
                path_bf: 7,
            })
            .unwrap();
        }
        m.apply(&RuleOp::InstallHh {
            switch: 0,
            path_bf: 7,
            eta: 3,
        })
        .unwrap();
        m
    }

    proptest! {
        /// `monitor_n` is `n` calls of `monitor_with`: meters, HashPipe, digest counter, shim,
        /// and a digest when any of the `n` asked for one.
        #[test]
        fn monitor_n_is_n_packets(
            pkts in prop::collection::vec((0u16..6, 0usize..2, 1u32..20, any::<bool>(), any::<bool>()), 1..40)
        ) {
            let (mut fast, mut slow) = (monitor(), monitor());
            for (f, bf, n, counted, to_host) in pkts {
                let flow = udp(f);
                let h = FlowHashes::of(&flow);
                let shim0 = Shim { path_bf: [7, 9][bf], counted, epoch: epoch_tag(3) };
                let rules = fast.monitor_rules(&flow, shim0.path_bf);
                let mut s_fast = shim0;
                let d_fast = fast.monitor_n(&flow, h, &mut s_fast, to_host, rules, n);
                let mut d_slow = None;
                let mut s_slow = shim0;
                for _ in 0..n {
                    s_slow = shim0;
                    d_slow = slow.monitor_with(&flow, h, &mut s_slow, to_host, rules).or(d_slow);
                }
                prop_assert_eq!(s_fast, s_slow);
                prop_assert_eq!(d_fast, d_slow);
                prop_assert_eq!(fast.counters, slow.counters);
                prop_assert_eq!(fast.hashpipe(), slow.hashpipe());
                prop_assert_eq!(fast.meters_of(epoch_tag(3)), slow.meters_of(epoch_tag(3)));
            }
        }
    }
}
