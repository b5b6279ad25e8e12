//! Epochs: the DSM counts by the packet's mark, a new epoch starts afresh in its parity, and
//! a mark two epochs off is not counted.

use super::*;

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
