//! `monitor_n` against `n` calls of `monitor_with` (proptest).

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
