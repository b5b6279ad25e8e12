//! The evidence map on hand-made counts: known packets give a known bound, age and unwatched.

use super::*;
use crate::decide::Decider;
use crate::detect::ObservedSegment;

fn count(sent: u64) -> SegmentCount {
    SegmentCount {
        sent,
        lost: 0,
        flows: 10,
    }
}

fn segment(links: &[LinkIx]) -> Segment {
    Segment {
        switches: (0..=links.len() as u32).collect(),
        links: links.to_vec(),
    }
}

fn observed(segment: SegmentId, links: &[LinkIx], sent: u64) -> ObservedSegment {
    ObservedSegment {
        segment,
        subproblem: 0,
        links: links.to_vec(),
        sent,
        lost: 0,
        success: 1.0,
        background: true,
        flows: Vec::new(),
    }
}

#[test]
fn pooled_packets_give_the_bound_the_age_and_the_unwatched() {
    let params = DecisionParams::default();
    // Segment 0 crosses links 0 and 1, segment 1 links 0 and 2, segment 2 link 3 alone; no
    // segment crosses link 4.
    let segs = [segment(&[0, 1]), segment(&[0, 2]), segment(&[3])];
    let mut t = EvidenceTracker::new(&[2, 2, 1], params);
    // The decision's threshold: 5 + 5 + 6 arms (p0 · 4^k below ½), ln(16 / 1e-6).
    assert_eq!(t.threshold(), Decider::new(&[2, 2, 1], params).threshold());
    assert!((t.threshold() - (16.0f64 / 1e-6).ln()).abs() < 1e-12);
    t.record(3, &[(2, count(100))].into_iter().collect());
    t.record(
        5,
        &[(0, count(1000)), (1, count(3000))].into_iter().collect(),
    );
    t.record(7, &[(1, count(500)), (0, count(0))].into_iter().collect());
    // The evidence at epoch 7: the window's totals of segments 0 and 1; segment 2's counts
    // have left it.
    let obs = Observations {
        segments: vec![observed(0, &[0, 1], 1000), observed(1, &[0, 2], 3500)],
    };
    let map = t.map(7, 5, &segs, &obs);
    assert_eq!(map.unwatched, vec![4]);
    let by: Vec<(LinkIx, u64, u32, u64)> = map
        .links
        .iter()
        .map(|e| (e.link, e.packets, e.segments, e.age))
        .collect();
    assert_eq!(
        by,
        vec![
            (0, 4500, 2, 0),
            (1, 1000, 1, 2),
            (2, 3500, 1, 0),
            (3, 0, 0, 4)
        ]
    );
    // n · KL(q ‖ p0) = h, p0 = 1 − (1 − 1e-4)²: worked out apart (testbed/score.py's formula).
    let q: Vec<f64> = map.links.iter().map(|e| e.min_loss).collect();
    for (got, want) in q.iter().zip([0.0023677, 0.0065687, 0.0027798, 1.0]) {
        assert!((got - want).abs() < 1e-6, "{q:?}");
    }
    // The bound is where the statistic crosses h.
    let p0 = params.p0(2);
    assert!(4500.0 * kl(q[0], p0) >= t.threshold());
    assert!(4500.0 * kl(q[0] * 0.999, p0) < t.threshold());
}

#[test]
fn the_pool_takes_the_background_of_its_longest_segment() {
    let params = DecisionParams::default();
    let segs = [segment(&[0, 1, 2, 3]), segment(&[0])];
    let mut t = EvidenceTracker::new(&[4, 1], params);
    t.record(
        0,
        &[(0, count(2000)), (1, count(2000))].into_iter().collect(),
    );
    let obs = Observations {
        segments: vec![observed(0, &[0, 1, 2, 3], 2000), observed(1, &[0], 2000)],
    };
    let map = t.map(0, 4, &segs, &obs);
    let link0 = map.links[0];
    assert_eq!(link0.packets, 4000);
    // (`powi` may round differently where it is folded at compile time: not to the last bit.)
    let want = smallest_shown(4000, params.p0(4), t.threshold());
    assert!(
        (link0.min_loss / want - 1.0).abs() < 1e-9,
        "{link0:?} {want}"
    );
    assert!(link0.min_loss > smallest_shown(4000, params.p0(1), t.threshold()));
}

#[test]
fn too_few_packets_show_nothing_and_more_show_less() {
    let (p0, h) = (2e-4, 16.6);
    assert_eq!(smallest_shown(0, p0, h), 1.0);
    // Losing both of 2 packets: 2 · ln(1 / p0) ≈ 17.0 ≥ 16.6 only just; 1 packet cannot.
    assert_eq!(smallest_shown(1, p0, h), 1.0);
    assert!(smallest_shown(2, p0, h) < 1.0);
    let mut last = 1.0;
    for n in [10, 100, 1_000, 10_000, 100_000, 1_000_000] {
        let q = smallest_shown(n, p0, h);
        assert!(q < last && q > p0, "{n}: {q}");
        last = q;
    }
}
