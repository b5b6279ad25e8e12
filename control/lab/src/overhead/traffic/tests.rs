use super::*;

use canary_testkit::{classic_pcap, eth_ipv4_tcp};

#[test]
fn pcap_frames_become_flows_with_relative_times() {
    let arp = {
        let mut f = vec![0u8; 12];
        f.extend(0x0806u16.to_be_bytes());
        f.extend([0u8; 28]);
        f
    };
    let bytes = classic_pcap(&[
        (1_000_010, eth_ipv4_tcp(0x0a000001, 0x0a000002, 1234, 80)),
        (1_000_020, arp),
        (1_000_510, eth_ipv4_tcp(0x0a000003, 0x0a000002, 99, 443)),
    ]);
    let (pkts, stats) = read_pcap(&bytes).unwrap();
    assert_eq!(
        stats,
        PcapStats {
            packets: 3,
            skipped: 1
        }
    );
    assert_eq!(pkts.len(), 2);
    assert_eq!(pkts[0].t_ns, 0);
    assert_eq!(pkts[1].t_ns, 500_000);
    assert_eq!(pkts[1].flow, FlowId::v4(0x0a000003, 0x0a000002, 6, 99, 443));
}

#[test]
fn pcap_rejects_other_formats_with_a_reason() {
    let e = read_pcap(&[0x1f, 0x8b, 8, 0].repeat(8)).unwrap_err();
    assert!(e.to_string().contains("not a pcap"), "{e}");
    let mut ng = vec![0x0a, 0x0d, 0x0d, 0x0a];
    ng.extend([0u8; 28]);
    assert!(read_pcap(&ng).unwrap_err().to_string().contains("pcapng"));
}

#[test]
fn churn_trace_is_time_ordered_heavy_tailed_and_churning() {
    let cfg = ChurnConfig {
        duration_s: 2.0,
        warmup_s: 2.0,
        duration_max_s: 2.0,
        ..Default::default()
    };
    let pkts: Vec<TracePacket> = ChurnTrace::new(cfg, 1).collect();
    assert!(pkts.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    assert!(pkts.last().unwrap().t_ns < 2_000_000_000);
    let mut per: std::collections::HashMap<FlowId, (u64, u64, u64)> = Default::default();
    for p in &pkts {
        let e = per.entry(p.flow).or_insert((0, p.t_ns, 0));
        e.0 += 1;
        e.2 = p.t_ns;
    }
    let mut sizes: Vec<u64> = per.values().map(|v| v.0).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let total: u64 = sizes.iter().sum();
    let top: u64 = sizes[..sizes.len() / 10].iter().sum();
    assert!(
        top * 2 > total,
        "the top 10 % of flows carry most packets: {top} of {total}"
    );
    assert!(sizes[0] > 100 * sizes[sizes.len() / 2], "heavy tail");
    // Churn: many flows start after the first second, many end before the last.
    let late = per.values().filter(|v| v.1 > 1_000_000_000).count();
    let early_end = per.values().filter(|v| v.2 < 1_000_000_000).count();
    assert!(late > per.len() / 4 && early_end > per.len() / 4);
}

#[test]
fn link_epoch_has_the_papers_volume() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let e = LinkEpoch::draw(&LinkTraffic::default(), &mut rng);
    assert_eq!(e.flows.len(), 10_000);
    // 100 Gb/s for 100 ms is 833k packets of 1500 B.
    assert!(
        (500_000..1_200_000).contains(&e.packets()),
        "{}",
        e.packets()
    );
    let order = e.packet_order(100_000_000, &mut rng);
    assert_eq!(order.len() as u64, e.packets());
    assert!(order.windows(2).all(|w| w[0].0 <= w[1].0));
}
