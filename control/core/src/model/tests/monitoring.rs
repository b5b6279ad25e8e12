//! Monitoring along a path: the shim's pathBF and mark, USM and DSM counts, HashPipe and the
//! HH report.

use super::*;

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
