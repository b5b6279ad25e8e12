//! Frames other than a monitored flow: floods, a host's own shim EtherType, frames from the
//! fabric without a shim, and unroutable unicast.

use super::*;

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
