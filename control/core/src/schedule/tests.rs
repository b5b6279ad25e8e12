use super::*;
use crate::detect::SegmentCount;
use crate::topo::{fattree::fattree, MonitorPlacement, Routing};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn fat_tree_segments(k: u32) -> Segments {
    let t = fattree(k, MonitorPlacement::TopAndBottom).unwrap();
    Segments::new(&t, &Routing::new(&t))
}

fn budget(s: usize) -> WatchBudget {
    WatchBudget {
        segments_per_monitor: s,
    }
}

/// Every segment in exactly one round, no switch over its slots in any round, and no more rounds
/// than the busiest switch needs.
fn check_plan(ends: &[(SwitchIx, SwitchIx)], plan: &WatchPlan, slots: usize) {
    let mut seen = vec![0u32; ends.len()];
    for r in 0..plan.rounds() {
        let mut up: BTreeMap<SwitchIx, usize> = BTreeMap::new();
        let mut down: BTreeMap<SwitchIx, usize> = BTreeMap::new();
        for &id in plan.round(r) {
            seen[id as usize] += 1;
            assert_eq!(plan.round_of(id), r);
            let (u, d) = ends[id as usize];
            *up.entry(u).or_default() += 1;
            *down.entry(d).or_default() += 1;
        }
        assert!(up.values().chain(down.values()).all(|&n| n <= slots));
    }
    assert!(seen.iter().all(|&n| n == 1), "each segment in one round");
    let mut deg: BTreeMap<(bool, SwitchIx), usize> = BTreeMap::new();
    for &(u, d) in ends {
        *deg.entry((true, u)).or_default() += 1;
        *deg.entry((false, d)).or_default() += 1;
    }
    let busiest = deg.values().copied().max().unwrap_or(0);
    assert_eq!(plan.least_rounds(), busiest.div_ceil(slots).max(1));
    assert_eq!(plan.rounds(), plan.least_rounds());
}

#[test]
fn fat_trees_need_no_more_rounds_than_their_busiest_switch() {
    for k in [4, 6, 8] {
        let segs = fat_tree_segments(k);
        let ends: Vec<_> = segs
            .list
            .iter()
            .map(|s| (s.upstream(), s.downstream()))
            .collect();
        for slots in [1, 2, 3, 5, 12] {
            let plan = WatchPlan::new(&segs, budget(slots), 1);
            check_plan(&ends, &plan, slots);
        }
    }
}

#[test]
fn an_unlimited_budget_watches_everything_every_epoch() {
    let segs = fat_tree_segments(4);
    let plan = WatchPlan::everything(&segs);
    assert_eq!(plan.rounds(), 1);
    assert_eq!(plan.period(), 1);
    assert_eq!(plan.watched_at(7).len(), segs.len());
}

#[test]
fn each_segment_is_watched_dwell_epochs_per_period() {
    let segs = fat_tree_segments(4);
    let plan = WatchPlan::new(&segs, budget(2), 3);
    assert!(plan.rounds() > 1);
    let period = plan.period();
    assert_eq!(period, plan.rounds() as u64 * 3);
    let mut watched = vec![0u32; segs.len()];
    for e in 10..10 + period {
        for &s in plan.watched_at(e) {
            watched[s as usize] += 1;
        }
        assert_eq!(plan.watched_at(e), plan.watched_at(e + period));
    }
    assert!(watched.iter().all(|&n| n == 3));
    // A round's epochs are consecutive.
    assert_eq!(plan.watched_at(0), plan.watched_at(2));
    assert_ne!(plan.watched_at(2), plan.watched_at(3));
}

#[test]
fn the_programs_budget_is_its_meters_at_beta_flows() {
    let c = crate::capacity::Capacity::of_program();
    // 3 × 1024 meters keep ~256 flows clean; the tables (4096) hold more.
    assert_eq!(c.meter.width, 1024);
    assert_eq!(WatchBudget::of(&c, 20).segments_per_monitor, 256 / 20);
    assert_eq!(WatchBudget::of(&c, 1000).segments_per_monitor, 1);
}

fn count(sent: u64, lost: u64) -> SegmentCount {
    SegmentCount {
        sent,
        lost,
        flows: 1,
    }
}

#[test]
fn last_shown_adds_up_one_watch_and_replaces_an_old_one() {
    let mut ev = LastShown::new(3);
    ev.record(4, &BTreeMap::from([(0, count(100, 5)), (1, count(50, 0))]));
    ev.record(5, &BTreeMap::from([(0, count(100, 1))]));
    let t = ev.totals();
    assert_eq!((t[&0].sent, t[&0].lost, t[&0].epochs), (200, 6, 2));
    assert_eq!((t[&1].sent, t[&1].lost), (50, 0));
    assert!(!t.contains_key(&2));
    // Watched again after a gap: the new watch replaces the old.
    ev.record(9, &BTreeMap::from([(1, count(70, 7))]));
    assert_eq!(ev.totals()[&1].sent, 70);
    assert_eq!(ev.totals()[&1].epochs, 1);
    assert_eq!(ev.age(0, 10), Some(5));
    assert_eq!(ev.age(1, 10), Some(1));
    assert_eq!(ev.age(2, 10), None);
    let a = ev.ages(10);
    assert_eq!((a.seen, a.never_seen, a.oldest), (2, 1, 5));
    assert_eq!(a.mean, 3.0);
    // Out-of-range ids are ignored, not a panic.
    ev.record(11, &BTreeMap::from([(99, count(1, 0))]));
}

proptest! {
    #[test]
    fn the_kept_view_is_the_observations_of_the_totals(
        epochs in proptest::collection::vec(
            proptest::collection::btree_map(0u32..40, (0u64..50, 0u64..5), 0..12),
            1..12,
        ),
        min_lossy in 1u32..3,
        skip in proptest::collection::vec(any::<bool>(), 12),
    ) {
        let segs = fat_tree_segments(4);
        let mut ev = LastShown::new(segs.len());
        for (e, counts) in epochs.iter().enumerate() {
            let counts: BTreeMap<SegmentId, SegmentCount> = counts
                .iter()
                .map(|(&s, &(sent, lost))| (s, count(sent, lost.min(sent))))
                .collect();
            // Some epochs are only recorded (a gap in the watch), not observed.
            if skip[e] {
                ev.record(e as u64, &counts);
                continue;
            }
            let kept = ev.observe(e as u64, &counts, &segs, min_lossy).clone();
            let fresh = crate::detect::observations(&segs, &ev.totals(), min_lossy);
            prop_assert_eq!(kept, fresh);
        }
    }

    #[test]
    fn any_segments_fit_in_the_least_rounds(
        ends in proptest::collection::vec((0u32..12, 0u32..12), 0..400),
        slots in 1usize..8,
        dwell in 1u32..4,
    ) {
        let plan = WatchPlan::of_ends(&ends, budget(slots), dwell);
        if ends.is_empty() {
            prop_assert_eq!(plan.rounds(), 1);
        } else {
            check_plan(&ends, &plan, slots);
        }
        prop_assert_eq!(plan.period(), plan.rounds() as u64 * u64::from(dwell));
    }
}

mod adaptive_watch {
    use super::*;
    use crate::schedule::adaptive::{AdaptiveWatch, LinkSegments};
    use crate::schedule::fresh::{freshness, LossOnsets};

    fn ends_of(segs: &Segments) -> Vec<(SwitchIx, SwitchIx)> {
        segs.list
            .iter()
            .map(|s| (s.upstream(), s.downstream()))
            .collect()
    }

    proptest! {
        /// Whatever the focus asks for, no switch is over its slots in any epoch, and every
        /// segment is watched within the bound.
        #[test]
        fn the_sweep_goes_on_whatever_the_focus_asks(
            slots in 2usize..14,
            focus in proptest::collection::vec(proptest::collection::vec(0u32..1408, 0..200), 1..40),
        ) {
            let segs = fat_tree_segments(8);
            let ends = ends_of(&segs);
            let mut w = AdaptiveWatch::new(&segs, budget(slots));
            let mut last = vec![None::<u64>; segs.list.len()];
            let epochs = (w.bound() * 2).max(focus.len() as u64);
            for e in 0..epochs {
                w_focus(&mut w, &focus[e as usize % focus.len()]);
                let watched = w.next_watch();
                let mut up: BTreeMap<SwitchIx, usize> = BTreeMap::new();
                let mut down: BTreeMap<SwitchIx, usize> = BTreeMap::new();
                for &s in &watched {
                    let (u, d) = ends[s as usize];
                    *up.entry(u).or_default() += 1;
                    *down.entry(d).or_default() += 1;
                    last[s as usize] = Some(e);
                }
                prop_assert!(up.values().chain(down.values()).all(|&n| n <= slots));
                if e + 1 >= w.bound() {
                    for (s, l) in last.iter().enumerate() {
                        prop_assert!(
                            l.is_some_and(|l| e - l < w.bound()),
                            "segment {} unwatched for {} epochs at epoch {}", s, w.bound(), e
                        );
                    }
                }
            }
        }
    }

    fn w_focus(w: &mut AdaptiveWatch, focus: &[SegmentId]) {
        w.set_focus_for_test(focus.to_vec());
    }

    #[test]
    fn with_nothing_in_focus_a_sweep_takes_about_the_fixed_plans_period() {
        let segs = fat_tree_segments(8);
        let fixed = WatchPlan::new(&segs, budget(12), 1);
        let mut w = AdaptiveWatch::new(&segs, budget(12));
        let mut seen = vec![false; segs.list.len()];
        let mut epochs = 0;
        while seen.iter().any(|s| !s) {
            for s in w.next_watch() {
                seen[s as usize] = true;
            }
            epochs += 1;
        }
        assert!(epochs as usize <= fixed.rounds() + 1, "{epochs} epochs");
    }

    /// A k = 8 fat-tree's segments, what they showed, and the segments through each link.
    fn watched_fabric() -> (LastShown, LinkSegments, Segments) {
        let t = crate::topo::fattree::fattree(8, MonitorPlacement::TopAndBottom).unwrap();
        let segs = Segments::new(&t, &Routing::new(&t));
        (
            LastShown::new(segs.list.len()),
            LinkSegments::new(&segs, t.links.len()),
            segs,
        )
    }

    #[test]
    fn a_loss_waits_for_its_links_then_older_clearance_is_set_aside() {
        let (mut shown, through, segs) = watched_fabric();
        let lossy: SegmentId = 0;
        let [a, b] = [segs.list[0].links[0], segs.list[0].links[1]];
        let of_a: Vec<SegmentId> = through
            .through(a)
            .iter()
            .copied()
            .filter(|&s| s != lossy)
            .collect();
        assert!(of_a.len() >= 3);
        let (other_a, third_a, fourth_a) = (of_a[0], of_a[1], of_a[2]);
        let other_b = *through.through(b).iter().find(|&&s| s != lossy).unwrap();
        let mut onsets = LossOnsets::new(segs.list.len());
        // Epoch 0: every segment of both links watched, loss-free.
        let all: BTreeMap<SegmentId, SegmentCount> = [other_a, other_b, third_a, fourth_a, lossy]
            .into_iter()
            .map(|s| (s, count(1000, 0)))
            .collect();
        shown.observe(0, &all, &segs, 1);
        onsets.update(0, &all.keys().copied().collect::<Vec<_>>(), &shown);
        // Epoch 2: the segment loses 5 %; nothing else is watched.
        let now: BTreeMap<_, _> = [(lossy, count(1000, 50))].into_iter().collect();
        shown.observe(2, &now, &segs, 1);
        onsets.update(2, &[lossy], &shown);
        let f = freshness(&shown, &onsets, &through, 2, 3);
        assert_eq!(f.waiting.len(), 1, "it waits for both links: {f:?}");
        assert_eq!(f.waiting[0].0, lossy);
        assert_eq!(f.waiting[0].1.len(), 2);
        // Epoch 3: the loss goes on, and two other segments of `a` lose too; `b`'s is clean.
        let next: BTreeMap<_, _> = [
            (lossy, count(1000, 50)),
            (other_a, count(1000, 40)),
            (third_a, count(1000, 45)),
            (other_b, count(1000, 0)),
        ]
        .into_iter()
        .collect();
        shown.observe(3, &next, &segs, 1);
        onsets.update(3, &next.keys().copied().collect::<Vec<_>>(), &shown);
        let f = freshness(&shown, &onsets, &through, 3, 3);
        assert!(
            !f.waiting.iter().any(|w| w.0 == lossy),
            "both links settled: {f:?}"
        );
        // `a` is a suspect now (three lossy segments): its segment last seen loss-free at epoch
        // 0, before the loss began, no longer clears it. `b`'s clean one of epoch 3 still does.
        let at = |s: SegmentId| {
            shown
                .view()
                .segments
                .iter()
                .position(|o| o.segment == s)
                .unwrap()
        };
        assert!(f.held_out[at(fourth_a)]);
        assert!(!f.held_out[at(other_b)]);
        assert_eq!(f.stale, 1);
        // After three epochs a loss is localized with what there is.
        let late = freshness(&shown, &onsets, &through, 5, 3);
        assert!(!late.waiting.iter().any(|w| w.0 == lossy));
    }
}
