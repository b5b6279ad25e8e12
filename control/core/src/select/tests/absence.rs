//! Which flows the selector expects downstream, and what takes the expectation away.

use super::*;
use crate::detect::{Expected, MmEntries};

/// Segment 0 with flows 1 and 2 selected on it (their rules asked for); returns the segment.
fn two_flows(sel: &mut FlowSelector, s: &Segments, c: &PathBfCodec) -> SegmentId {
    let all: HashSet<SwitchIx> = s
        .list
        .iter()
        .flat_map(|g| [g.upstream(), g.downstream()])
        .collect();
    sel.on_epoch(&EpochDetection::default(), &all, s, c);
    let g = &s.list[0];
    let report = |n| HhReport {
        switch: g.downstream(),
        flow: flow(n),
        path_bf: c.segment_bf[0],
    };
    sel.on_reports(&[report(1), report(2)], s, c);
    0
}

fn counted(entries: &[(u32, SegmentId, u64, u64)]) -> EpochDetection {
    EpochDetection {
        entries: entries
            .iter()
            .map(|&(f, segment, sent, lost)| MmEntry {
                flow: flow(f),
                segment,
                sent,
                lost,
            })
            .collect::<MmEntries>(),
        ..Default::default()
    }
}

#[test]
fn a_flow_is_expected_once_its_dsm_counted_it_on_its_segment() {
    let (_, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    let seg = two_flows(&mut sel, &s, &c);
    assert!(
        sel.expected().is_empty(),
        "selected, never counted downstream yet"
    );
    // Flow 1 arrived (5 of 10); flow 2's only entry is a total loss, which proves nothing of
    // its rule or path.
    sel.on_epoch(&counted(&[(1, seg, 10, 5), (2, seg, 10, 10)]), &all, &s, &c);
    assert_eq!(
        sel.expected(),
        vec![Expected {
            flow: flow(1),
            segment: seg
        }]
    );
}

#[test]
fn a_forwarding_change_on_its_way_takes_the_expectation_away_until_counted_again() {
    let (_, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    let seg = two_flows(&mut sel, &s, &c);
    sel.on_epoch(&counted(&[(1, seg, 10, 0), (2, seg, 10, 0)]), &all, &s, &c);
    assert_eq!(sel.expected().len(), 2);
    // A switch elsewhere changed: nothing moves.
    let elsewhere: SwitchIx = (0..s.len() as SegmentId)
        .flat_map(|i| s.get(i).switches.clone())
        .find(|x| !s.get(seg).switches.contains(x))
        .unwrap();
    sel.forwarding_changed(&HashSet::from([elsewhere]), &s);
    assert_eq!(sel.expected().len(), 2);
    // A switch on the segment changed: both flows may have moved.
    let on_it = s.get(seg).switches[1];
    sel.forwarding_changed(&HashSet::from([on_it]), &s);
    assert!(sel.expected().is_empty());
    // Counted on the segment in the epoch of the change: that count may predate the move.
    sel.on_epoch(&counted(&[(1, seg, 10, 0)]), &all, &s, &c);
    assert!(sel.expected().is_empty());
    // Counted there in a later epoch: expected again.
    sel.on_epoch(&counted(&[(1, seg, 10, 0)]), &all, &s, &c);
    assert_eq!(sel.expected().len(), 1);
}

#[test]
fn a_flow_seen_leaving_its_upstream_on_another_segment_has_moved() {
    let (_, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    let seg = two_flows(&mut sel, &s, &c);
    sel.on_epoch(&counted(&[(1, seg, 10, 0), (2, seg, 10, 0)]), &all, &s, &c);
    let up = s.get(seg).upstream();
    let other = (0..s.len() as SegmentId)
        .find(|&i| i != seg && s.get(i).upstream() == up)
        .expect("another segment from the same monitor");
    // Flow 1 is reported by the HH table at the other segment's end.
    let report = HhReport {
        switch: s.get(other).downstream(),
        flow: flow(1),
        path_bf: c.segment_bf[other as usize],
    };
    sel.on_reports(&[report], &s, &c);
    assert_eq!(
        sel.expected(),
        vec![Expected {
            flow: flow(2),
            segment: seg
        }]
    );
}

#[test]
fn a_failed_dsm_install_is_not_expected() {
    let (_, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    let seg = two_flows(&mut sel, &s, &c);
    sel.on_epoch(&counted(&[(1, seg, 10, 0), (2, seg, 10, 0)]), &all, &s, &c);
    sel.on_failed(&[RuleOp::InstallDsm {
        switch: s.get(seg).downstream(),
        flow: flow(2),
        path_bf: c.segment_bf[seg as usize],
    }]);
    assert_eq!(sel.expected().len(), 1);
}

/// A flow already counted by a USM rule for one segment, selected on a second segment from the
/// same monitor: its first epoch there counts upstream from the epoch's start and downstream
/// from the install on.
#[test]
fn a_second_segment_on_a_shared_usm_rule_is_half_counted_in_its_first_epoch() {
    let (_, s, c, _) = setup();
    let mut sel = FlowSelector::new(params());
    let seg = two_flows(&mut sel, &s, &c);
    assert!(
        sel.take_half_counted().is_empty(),
        "fresh USM rules count from the install"
    );
    let up = s.get(seg).upstream();
    let other = (0..s.len() as SegmentId)
        .find(|&i| i != seg && s.get(i).upstream() == up)
        .unwrap();
    let all: HashSet<SwitchIx> = s
        .list
        .iter()
        .flat_map(|g| [g.upstream(), g.downstream()])
        .collect();
    sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    let ops = sel.on_reports(
        &[HhReport {
            switch: s.get(other).downstream(),
            flow: flow(1),
            path_bf: c.segment_bf[other as usize],
        }],
        &s,
        &c,
    );
    assert!(
        !ops.iter().any(|o| matches!(o, RuleOp::InstallUsm { .. })),
        "the USM rule is shared: {ops:?}"
    );
    assert_eq!(sel.take_half_counted(), HashSet::from([(flow(1), other)]));
    assert!(sel.take_half_counted().is_empty(), "taken once");
}
