use super::*;
use clap::Parser;

#[derive(Parser)]
struct Wrap {
    #[command(flatten)]
    a: TrafficArgs,
}

fn args(extra: &[&str]) -> TrafficArgs {
    let mut v = vec![
        "t",
        "--me",
        "10.0.0.2",
        "--dests",
        "10.0.0.2,10.0.0.3,10.1.0.2",
    ];
    v.extend_from_slice(extra);
    Wrap::parse_from(v).a
}

#[test]
fn never_sends_to_itself_and_uses_every_other_host() {
    let mut s = FlowSource::new(&args(&[])).unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..1000 {
        let (d, _) = s.next_flow();
        assert_ne!(d, Ipv4Addr::new(10, 0, 0, 2));
        seen.insert(d);
    }
    assert_eq!(seen.len(), 2);
}

#[test]
fn sizes_are_heavy_tailed_and_bounded() {
    let mut s = FlowSource::new(&args(&[
        "--shape",
        "1.2",
        "--min-packets",
        "20",
        "--max-packets",
        "100000",
    ]))
    .unwrap();
    let mut sizes: Vec<u64> = (0..20000).map(|_| s.size()).collect();
    assert!(sizes.iter().all(|&x| (20..=100_000).contains(&x)));
    sizes.sort_unstable();
    let total: u64 = sizes.iter().sum();
    let top: u64 = sizes[sizes.len() * 9 / 10..].iter().sum();
    // Pareto(1.2): the largest 10 % of flows carry well over half the packets.
    assert!(
        top as f64 > 0.5 * total as f64,
        "top 10 % carry {top} of {total}"
    );
    // The median of Pareto(xm, a) is xm * 2^(1/a) = 35.6 for (20, 1.2).
    let median = sizes[sizes.len() / 2];
    assert!((33..=39).contains(&median), "median {median}");
}

#[test]
fn same_seed_same_flows() {
    let mut a = FlowSource::new(&args(&["--seed", "7"])).unwrap();
    let mut b = FlowSource::new(&args(&["--seed", "7"])).unwrap();
    for _ in 0..100 {
        assert_eq!(a.next_flow(), b.next_flow());
    }
}

#[test]
fn bad_arguments_are_named() {
    let mut only_me = args(&[]);
    only_me.dests = only_me.me.clone();
    let e = FlowSource::new(&only_me).err().unwrap();
    assert!(e.to_string().contains("--dests"), "{e}");
    let e = FlowSource::new(&args(&["--min-packets", "0"]))
        .err()
        .unwrap();
    assert!(e.to_string().contains("--min-packets"), "{e}");
}

#[test]
fn loopback_run_counts_what_it_sends() {
    // Sends to itself over loopback: --me is another address so 127.0.0.1 stays a destination.
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("s.json");
    let a = Wrap::parse_from([
        "t",
        "--me",
        "10.9.9.9",
        "--dests",
        "127.0.0.1",
        "--rate",
        "500",
        "--duration",
        "0.5",
        "--drain-ms",
        "200",
        "--start-delay-ms",
        "0",
        "--port",
        "47123",
        "--stats",
        stats.to_str().unwrap(),
    ])
    .a;
    let s = run(&a, &AtomicBool::new(false)).unwrap();
    assert!(
        (200..=260).contains(&s.sent),
        "sent {} in 0.5 s at 500/s",
        s.sent
    );
    assert_eq!(s.received, s.sent);
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(written["sent"], s.sent);
    assert_eq!(written["running"], false);
    assert_eq!(s.sent_to[&IpAddr::from(Ipv4Addr::LOCALHOST)], s.sent);
    assert_eq!(s.received_from[&IpAddr::from(Ipv4Addr::LOCALHOST)], s.sent);
}

/// Flows to IPv4 and IPv6 destinations (loopback ::1 here); both are received and counted.
#[test]
fn both_families_are_sent_and_received() {
    let a = Wrap::parse_from([
        "t",
        "--me",
        "10.9.9.9,fd00::9",
        "--dests",
        "127.0.0.1,::1",
        "--rate",
        "500",
        "--flows",
        "8",
        "--duration",
        "0.5",
        "--drain-ms",
        "200",
        "--start-delay-ms",
        "0",
        "--port",
        "47124",
    ])
    .a;
    let s = run(&a, &AtomicBool::new(false)).unwrap();
    assert!(s.sent_v6 > 20 && s.sent_v6 < s.sent, "{s:?}");
    assert_eq!(s.received, s.sent);
    assert_eq!(s.received_v6, s.sent_v6);
    assert_eq!(s.sent_to[&"::1".parse::<IpAddr>().unwrap()], s.sent_v6);
}
