//! Unit tests of 007's voting and Algorithm 1 (golden numbers of small hand-made
//! cases).

use super::vote007::{
    algorithm1, per_flow_blame, ranking, tally, Vote007, Vote007Params, VoteTotal,
};
use super::{FlowReport007, Localizer};
use crate::topo::{fattree::fattree, MonitorPlacement};

fn bad(path: &[u32]) -> FlowReport007 {
    FlowReport007 {
        path: Some(path.to_vec()),
        packets: 100,
        retransmissions: 1,
    }
}

#[test]
fn five_link_flow_gives_each_link_a_fifth() {
    let v = tally(8, &[bad(&[0, 1, 2, 3, 4])], &Vote007Params::default());
    for (l, &x) in v.iter().enumerate() {
        let want = if l < 5 { 0.2 } else { 0.0 };
        assert!((x - want).abs() < 1e-12, "link {l}: {x}");
    }
}

#[test]
fn threshold_with_100_bad_five_link_flows_is_one_vote() {
    // 100 flows over the same 5 links: each link has 100 × 0.2 = 20 votes, the total cast is
    // 100 and the 1 % cutoff is 1.0 vote. A link with exactly 1.0 vote is blamed, 0.8 is not.
    let mut flows: Vec<_> = (0..100).map(|_| bad(&[0, 1, 2, 3, 4])).collect();
    let v = tally(16, &flows, &Vote007Params::default());
    assert!((v.iter().sum::<f64>() - 500.0 * 0.2).abs() < 1e-9);
    let p = Vote007Params::default();
    assert!((p.threshold * 100.0 - 1.0).abs() < 1e-12);
    // Replace 5 flows by flows over links 5..10 (each gets exactly 1.0) and 4 by 10..15 (0.8).
    for f in flows.iter_mut().take(5) {
        *f = bad(&[5, 6, 7, 8, 9]);
    }
    for f in flows.iter_mut().skip(5).take(4) {
        *f = bad(&[10, 11, 12, 13, 14]);
    }
    let b: Vec<u32> = algorithm1(16, &flows, &p).iter().map(|x| x.0).collect();
    assert_eq!(
        b,
        vec![0, 5],
        "one blame explains a whole path; 0.8 < 1.0 stays unblamed"
    );
}

/// Link 0 explains 6 flows (4 also via link 1), link 5 explains 4, one noise flow [8, 9].
fn hand_case() -> Vec<FlowReport007> {
    let mut f = Vec::new();
    f.extend((0..4).map(|_| bad(&[0, 1])));
    f.extend((0..2).map(|_| bad(&[0, 2])));
    f.extend((0..2).map(|_| bad(&[5, 6])));
    f.extend((0..2).map(|_| bad(&[5, 7])));
    f.push(bad(&[8, 9]));
    f.push(FlowReport007 {
        path: None,
        packets: 100,
        retransmissions: 0,
    });
    f
}

#[test]
fn algorithm1_removes_explained_votes() {
    let flows = hand_case();
    let p = Vote007Params {
        threshold: 0.1, // 11 votes cast → cutoff 1.1
        ..Vote007Params::default()
    };
    let v = tally(10, &flows, &p);
    assert_eq!(ranking(&v)[..3], [(0, 3.0), (1, 2.0), (5, 2.0)]);
    assert_eq!(algorithm1(10, &flows, &p), vec![(0, 3.0), (5, 2.0)]);
    // Without the adjustment link 1 (2 votes, all due to link 0) is a false positive.
    let no_adjust = Vote007Params {
        adjust: false,
        ..p.clone()
    };
    let b: Vec<u32> = algorithm1(10, &flows, &no_adjust)
        .iter()
        .map(|x| x.0)
        .collect();
    assert_eq!(b, vec![0, 1, 5]);
    // A recomputed total shrinks the cutoff to 0.1 × 1.0 and the noise flow gets blamed too
    // (once, since blaming link 8 removes the flow's vote from link 9).
    let recomputed = Vote007Params {
        total: VoteTotal::Recomputed,
        ..p.clone()
    };
    let b: Vec<u32> = algorithm1(10, &flows, &recomputed)
        .iter()
        .map(|x| x.0)
        .collect();
    assert_eq!(b, vec![0, 5, 8]);
    // Flows with a single retransmission cast no vote when treated as noise.
    let strict = Vote007Params {
        min_retransmissions: 2,
        ..p
    };
    assert!(algorithm1(10, &flows, &strict).is_empty());
}

#[test]
fn per_flow_blame_picks_the_most_voted_link_on_the_path() {
    let flows = hand_case();
    let p = Vote007Params::default();
    let v = tally(10, &flows, &p);
    let b = per_flow_blame(&v, &flows, &p);
    assert_eq!(b[0], Some(0));
    assert_eq!(b[4], Some(0));
    assert_eq!(b[6], Some(5));
    assert_eq!(b[10], Some(8), "tie goes to the earlier link");
    assert_eq!(b[11], None, "good flows are not diagnosed");
}

#[test]
fn localizer_reports_vote_shares() {
    let topo = fattree(4, MonitorPlacement::Bottom).unwrap();
    let z = Vote007 {
        params: Vote007Params {
            threshold: 0.1,
            ..Vote007Params::default()
        },
    };
    let v = z.localize(&topo, &hand_case());
    let got: Vec<(u32, f64)> = v.blamed.iter().map(|b| (b.link, b.loss)).collect();
    assert_eq!(got, vec![(0, 3.0 / 11.0), (5, 2.0 / 11.0)]);
    assert_eq!(v.stages, vec![vec![0, 5]]);
}
