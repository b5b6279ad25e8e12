use super::*;
use crate::topo::{fattree::fattree, MonitorPlacement, Routing};
use proptest::prelude::*;

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
