//! Unit tests of NetBouncer's pipeline pieces, Flock's likelihood and greedy search, and the
//! Flock trace format (golden numbers of small hand-made cases, and the
//! trace format of Flock's reference implementation, documented in `flock_trace.rs`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::flock::{flow_ll, greedy, log_likelihood, FlockFlow, FlockParams, FlockSearch};
use super::flock_trace::{FlockTrace, Snapshot, TraceError, TraceFlow};
use super::netbouncer::{bounce_plan, detect_bad_devices, undirected_set, ProbePath};
use crate::topo::{fattree::fattree, MonitorPlacement};

fn flow(paths: Vec<Vec<u32>>, sent: u64, lost: u64) -> FlockFlow {
    FlockFlow { paths, sent, lost }
}

#[test]
fn flock_log_r_golden_numbers() {
    let p = FlockParams::default();
    let lr = p.log_r(100, 30);
    assert!((lr - 41.536).abs() < 1e-3, "{lr}");
    let expect = 30.0 * 4f64.ln() + 70.0 * (0.999f64 / 0.99975).ln();
    assert!((lr - expect).abs() < 1e-12);
    let lr0 = p.log_r(100, 0);
    assert!((lr0 - (-0.0750)).abs() < 1e-4, "{lr0}");
    // w = 1: the flow's LL under a hypothesis hitting its path is ln R.
    assert_eq!(flow_ll(1, 1, lr), lr);
    assert_eq!(flow_ll(1, 0, lr), 0.0);
    // w = 4, k = 1: ln((3 + R) / 4), computed without overflow for a huge R.
    let direct = ((3.0 + 2f64.exp()) / 4.0).ln();
    assert!((flow_ll(4, 1, 2.0) - direct).abs() < 1e-12);
    assert!((flow_ll(4, 1, 5000.0) - (5000.0 - 4f64.ln())).abs() < 1e-9);
}

#[test]
fn flock_full_likelihood_of_two_link_example() {
    // Links 0 and 1 on one path: t = 100, r = 30.
    let p = FlockParams::default();
    let flows = [flow(vec![vec![0, 1]], 100, 30)];
    let ll = log_likelihood(&flows, &[true, false], &p);
    assert!((ll - (41.536 + p.log_prior())).abs() < 1e-3, "{ll}");
    // Failing both links explains nothing more and pays the prior twice.
    let ll2 = log_likelihood(&flows, &[true, true], &p);
    assert!((ll - ll2 - (-p.log_prior())).abs() < 1e-12);
    assert_eq!(log_likelihood(&flows, &[false, false], &p), 0.0);
}

#[test]
fn flock_greedy_blames_the_link_with_losses() {
    // Link 0 is on three lossy flows (each shared with a different healthy link), link 1 only
    // on clean flows; every other link also carries a clean flow.
    let p = FlockParams::default();
    let mut flows = vec![
        flow(vec![vec![0, 2]], 100, 20),
        flow(vec![vec![0, 3]], 100, 15),
        flow(vec![vec![0, 4]], 100, 25),
    ];
    for l in 1..5 {
        flows.push(flow(vec![vec![1, l]], 100, 0));
    }
    let found = greedy(5, &flows, &p);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 0);
    let mut h = vec![false; 5];
    h[0] = true;
    assert!((found[0].1 - log_likelihood(&flows, &h, &p)).abs() < 1e-9);
}

#[test]
fn flock_greedy_finds_nothing_on_clean_data() {
    let flows: Vec<_> = (0..6)
        .map(|l| flow(vec![vec![l, (l + 1) % 6]], 100, 0))
        .collect();
    assert!(greedy(6, &flows, &FlockParams::default()).is_empty());
}

#[test]
fn flock_jle_delta_equals_full_recomputation() {
    let p = FlockParams::default();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for _case in 0..20 {
        let n = rng.random_range(4..12usize);
        let flows: Vec<FlockFlow> = (0..rng.random_range(5..30))
            .map(|_| {
                let w = rng.random_range(1..4);
                let paths = (0..w)
                    .map(|_| {
                        (0..rng.random_range(1..5))
                            .map(|_| rng.random_range(0..n as u32))
                            .collect()
                    })
                    .collect();
                let sent = rng.random_range(0..200u64);
                flow(paths, sent, rng.random_range(0..=sent / 3))
            })
            .collect();
        let mut search = FlockSearch::new(n, &flows, &p);
        let mut in_h = vec![false; n];
        for _step in 0..n.min(5) {
            let base = log_likelihood(&flows, &in_h, &p);
            for l in 0..n {
                if in_h[l] {
                    assert_eq!(search.delta()[l], f64::NEG_INFINITY);
                    continue;
                }
                in_h[l] = true;
                let full = log_likelihood(&flows, &in_h, &p) - base;
                in_h[l] = false;
                let jle = search.delta()[l];
                assert!(
                    (jle - full).abs() < 1e-8 * (1.0 + full.abs()),
                    "{jle} vs {full}"
                );
            }
            // Move to a random (not necessarily best) neighbour: JLE must hold for any H.
            let free: Vec<usize> = (0..n).filter(|&l| !in_h[l]).collect();
            let l = free[rng.random_range(0..free.len())];
            search.add(l as u32);
            in_h[l] = true;
        }
    }
}

#[test]
fn undirected_set_counts_a_bounced_link_once() {
    // up 4 (a→b), 8 (b→c); down 9 (c→b), 5 (b→a): two undirected links, 2 and 4.
    assert_eq!(undirected_set(&[4, 8, 9, 5]), vec![2, 4]);
}

#[test]
fn bounce_plan_covers_every_link_in_both_directions() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let plan = bounce_plan(&t);
    assert_eq!(plan.len(), 8 * 4);
    let mut seen = vec![0; t.links.len()];
    for p in &plan {
        for &l in p {
            seen[l as usize] += 1;
        }
    }
    // Edge–agg links: one per core of the agg's group (2); agg–core: one per edge of the pod (2).
    assert!(seen.iter().all(|&c| c == 2), "{seen:?}");
}

#[test]
fn dfd_flags_a_switch_with_no_clean_path() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let bad = t.switch("agg1_0").unwrap();
    let probes: Vec<ProbePath> = bounce_plan(&t)
        .into_iter()
        .map(|links| {
            let through = links.iter().any(|&l| t.links[l as usize].from == bad);
            ProbePath {
                links,
                sent: 100,
                received: if through { 97 } else { 100 },
            }
        })
        .collect();
    assert_eq!(detect_bad_devices(&t, &probes, 0.0), vec![bad]);
}

fn sample_trace() -> FlockTrace {
    FlockTrace {
        failing: vec![super::flock_trace::FailingLink {
            from: 44,
            to: 14,
            rate: 0.018601207825701044,
        }],
        candidate_paths: vec![vec![0, 32, 1], vec![32, 0, 33, 68, 37]],
        flows: vec![TraceFlow {
            src: 10118,
            dst: 10005,
            src_tor: 29,
            dst_tor: 1,
            nbytes: 16500,
            start_ms: 0.0,
            path: Some(vec![29, 61, 70, 33, 1]),
            reverse_path: None,
            snapshots: vec![Snapshot {
                time_ms: 836.8020503044971,
                sent: 11,
                lost: 0,
                randomly_lost: 0,
            }],
        }],
    }
}

#[test]
fn flock_trace_round_trips() {
    let t = sample_trace();
    let text = t.to_text();
    assert_eq!(
        text,
        "Failing_link 44 14 0.018601207825701044\nFP 0 32 1\nFP 32 0 33 68 37\n\
         FID 10118 10005 29 1 16500 0.0\nFPT 29 61 70 33 1\nSS 836.8020503044971 11 0 0\n"
    );
    assert_eq!(FlockTrace::parse(&text).unwrap(), t);
}

#[test]
fn flock_trace_parses_the_documented_example_line_by_line() {
    // A trace as Flock's reference implementation writes it (note the double spaces).
    let text = "Failing_link 44 14 0.018601207825701044\nFP 0 32 1\nFP 32 0 33 68 37\n\
                FID  10118 10005 29 1 16500 0.0\nFPT 29 61 70 33 1\n\
                SS  836.8020503044971 11 0 0\n";
    let t = FlockTrace::parse(text).unwrap();
    // 1. Failing_link u v rate: directed ground truth first.
    assert_eq!((t.failing[0].from, t.failing[0].to), (44, 14));
    // 2. FP: candidate paths keyed by their end ToRs.
    assert_eq!(t.candidates(0, 1).count(), 1);
    assert_eq!(
        t.candidates(32, 37).next().unwrap(),
        &vec![32, 0, 33, 68, 37]
    );
    // 3. FID src dst src_tor dst_tor nbytes start_ms: hosts are >= 10000, so not a probe.
    let f = &t.flows[0];
    assert_eq!((f.src, f.dst, f.src_tor, f.dst_tor), (10118, 10005, 29, 1));
    assert!(!f.is_probe());
    assert_eq!((f.nbytes, f.start_ms), (16500, 0.0));
    // FPT: ToR to ToR; SS: the latest snapshot before the window end counts.
    assert_eq!(f.path.as_deref(), Some(&[29, 61, 70, 33, 1][..]));
    assert_eq!(f.latest(1000.0).map(|s| (s.sent, s.lost)), Some((11, 0)));
    assert!(f.latest(800.0).is_none());
}

#[test]
fn flock_trace_rejects_out_of_order_records() {
    let late_fp = "FID 1 10001 1 2 1500 0.0\nFP 1 5 2\n";
    assert!(matches!(
        FlockTrace::parse(late_fp),
        Err(TraceError::OutOfOrder { line: 2, .. })
    ));
    let late_truth = "FP 1 5 2\nFailing_link 1 5 0.1\n";
    assert!(matches!(
        FlockTrace::parse(late_truth),
        Err(TraceError::OutOfOrder { line: 2, .. })
    ));
    assert!(matches!(
        FlockTrace::parse("SS 1.0 1 0 0\n"),
        Err(TraceError::NoFlow { line: 1, .. })
    ));
    let long = format!(
        "FP {}\n",
        (0..12).map(|i| i.to_string()).collect::<Vec<_>>().join(" ")
    );
    assert!(matches!(
        FlockTrace::parse(&long),
        Err(TraceError::PathTooLong { links: 11, .. })
    ));
}
