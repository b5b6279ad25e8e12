//! The redundant-blame rule's cases and properties (a child module of `redundant`: it reaches
//! the fit's private parts).

use super::*;
use crate::localize::canary::estimate_losses;
use crate::localize::seg;
use proptest::prelude::*;

/// [`prune`] with the blamed links' first estimates, as Canary calls it.
fn pruned(sub: &SubProblem, blamed: &[u32]) -> Vec<u32> {
    prune(sub, blamed, &estimate_losses(sub, blamed))
}

/// The testbed's epoch: link 0 (edge1_0→agg1_1) under three segments that lost 19/102,
/// 20/165 and 19/240, the second also through link 2 (agg1_1→core3), which a loss-free
/// segment of 180 packets also crosses. Link 2 adds nothing link 0 does not explain.
#[test]
fn a_neighbour_blamed_for_its_segment_goes_when_the_fault_explains_it() {
    let sub = SubProblem {
        n_links: 5,
        segments: vec![
            seg(vec![0, 1], 102.0, 19.0),
            seg(vec![0, 2], 165.0, 20.0),
            seg(vec![0, 3], 240.0, 19.0),
            seg(vec![4, 2], 180.0, 0.0),
        ],
    };
    assert_eq!(pruned(&sub, &[0, 2]), vec![0]);
}

/// Two real faults side by side: link 0 at 10 % and link 2 at 10 % more on the segment they
/// share, link 2 also lossy on a segment of its own. Both stay.
#[test]
fn two_faults_that_each_explain_their_own_loss_both_stay() {
    let sub = SubProblem {
        n_links: 5,
        segments: vec![
            seg(vec![0, 1], 400.0, 40.0),
            seg(vec![0, 2], 400.0, 76.0),
            seg(vec![4, 2], 400.0, 40.0),
        ],
    };
    assert_eq!(pruned(&sub, &[0, 2]), vec![0, 2]);
}

/// On a shared segment alone, the second fault is kept when its loss is far beyond what the
/// first predicts there, and dropped when it is within chance of it.
#[test]
fn a_shared_segment_keeps_a_second_blame_only_past_chance() {
    let with_extra = |lost: f64| SubProblem {
        n_links: 3,
        segments: vec![
            seg(vec![0, 1], 1000.0, 100.0),
            seg(vec![0, 2], 1000.0, lost),
        ],
    };
    assert_eq!(pruned(&with_extra(300.0), &[0, 2]), vec![0, 2]);
    assert_eq!(pruned(&with_extra(104.0), &[0, 2]), vec![0]);
}

/// A lone blame, or blames on segments of their own, are never dropped.
#[test]
fn blames_that_alone_explain_a_loss_stay() {
    let sub = SubProblem {
        n_links: 4,
        segments: vec![seg(vec![0, 1], 50.0, 1.0), seg(vec![2, 3], 50.0, 1.0)],
    };
    assert_eq!(pruned(&sub, &[0]), vec![0]);
    assert_eq!(pruned(&sub, &[0, 2]), vec![0, 2]);
}

/// The fit is the maximum: on one segment alone a link's success is the segment's rate.
#[test]
fn one_link_on_one_segment_fits_its_rate() {
    let sub = SubProblem {
        n_links: 2,
        segments: vec![seg(vec![0, 1], 1000.0, 37.0)],
    };
    let mut x = vec![1.0, 1.0];
    let mut through = Through::lossy_only(&sub, &[0]);
    through.complete(&sub, &[0]);
    fit(&sub, &through, &[0], &mut x);
    assert!((x[0] - 0.963).abs() < 1e-9, "{x:?}");
}

/// Any small sub-problem: 6 links, up to 8 segments of 1–3 links, any counts (loss-free,
/// all lost, a single packet), and a set of blamed links.
fn sub_problem() -> impl Strategy<Value = (SubProblem, Vec<u32>)> {
    let segment = (
        proptest::sample::subsequence((0u32..6).collect::<Vec<_>>(), 1..=3),
        1u32..2000,
        0.0f64..=1.0,
    )
        .prop_map(|(links, sent, share)| {
            let lost = (f64::from(sent) * share).round();
            seg(links, f64::from(sent), lost)
        });
    (
        proptest::collection::vec(segment, 1..=8),
        proptest::sample::subsequence((0u32..6).collect::<Vec<_>>(), 0..=6),
    )
        .prop_map(|(segments, blamed)| {
            (
                SubProblem {
                    n_links: 6,
                    segments,
                },
                blamed,
            )
        })
}

proptest! {
    /// What stays is a subsequence of the blamed links, and a blamed link that shares no
    /// lossy segment with another blamed link always stays.
    #[test]
    fn prune_keeps_a_subsequence_and_every_lone_blame((sub, blamed) in sub_problem()) {
        let kept = pruned(&sub, &blamed);
        let mut rest = blamed.iter();
        for k in &kept {
            prop_assert!(rest.any(|b| b == k), "{kept:?} is not a subsequence of {blamed:?}");
        }
        let through = Through::lossy_only(&sub, &blamed);
        let is_blamed = mask(sub.n_links, &blamed);
        for &l in &blamed {
            if neighbours(&sub, &through, &is_blamed, l).is_empty() {
                prop_assert!(kept.contains(&l), "lone blame {l} dropped: {kept:?}");
            }
        }
    }

    /// The fit is a coordinate ascent: every success stays in [0, 1] and the likelihood
    /// of the segments never falls, from any start.
    #[test]
    fn the_fit_stays_in_range_and_never_lowers_the_likelihood(
        (sub, blamed) in sub_problem(),
        start in proptest::collection::vec(0.05f64..=1.0, 6),
    ) {
        let mut through = Through::lossy_only(&sub, &blamed);
        through.complete(&sub, &blamed);
        let mut x = vec![1.0; sub.n_links];
        for &l in &blamed {
            x[l as usize] = start[l as usize];
        }
        let all: Vec<usize> = (0..sub.segments.len()).collect();
        let before = log_likelihood(&sub, &all, &x);
        fit(&sub, &through, &blamed, &mut x);
        let after = log_likelihood(&sub, &all, &x);
        prop_assert!(x.iter().all(|v| (0.0..=1.0).contains(v)), "{x:?}");
        prop_assert!(after >= before - 1e-6 * before.abs().max(1.0), "{before} -> {after}");
    }
}
