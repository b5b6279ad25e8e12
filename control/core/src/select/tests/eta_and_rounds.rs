//! Adaptive η and watching in rounds.

use super::*;

#[test]
fn hh_rules_without_reports_halve_eta_down_to_zero() {
    let (_, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    let mut etas = Vec::new();
    for _ in 0..6 {
        let ops = sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
        let bf0 = c.segment_bf[0];
        let sw0 = s.list[0].downstream();
        etas.extend(ops.iter().filter_map(|o| match o {
            RuleOp::InstallHh {
                switch,
                path_bf,
                eta,
            } if *switch == sw0 && *path_bf == bf0 => Some(*eta),
            _ => None,
        }));
    }
    assert_eq!(etas, vec![8, 4, 2, 1, 0]);
}

/// Watching in rounds: only the round's segments get HH rules; when the round moves on, the
/// flows and HH rules of the segments it left are removed (USM now, DSM one epoch later), and
/// the flows come back with the segment's next round.
#[test]
fn a_round_of_segments_gets_rules_and_leaves_room_for_the_next() {
    let (_, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    let round_a: Vec<SegmentId> = vec![0, 1];
    let round_b: Vec<SegmentId> = vec![2, 3];
    sel.set_watching(Some(&round_a));
    // Nothing counted yet: every segment is short, only the round's get HH rules.
    let ops = sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    let hh: Vec<u32> = ops
        .iter()
        .filter_map(|op| match op {
            RuleOp::InstallHh { path_bf, .. } => Some(*path_bf),
            _ => None,
        })
        .collect();
    assert_eq!(hh, vec![c.segment_bf[0], c.segment_bf[1]]);
    // A report on segment 0 becomes its DSM and USM rules.
    let seg0 = s.get(0);
    let report = HhReport {
        switch: seg0.downstream(),
        flow: flow(1),
        path_bf: c.segment_bf[0],
    };
    let ops = sel.on_reports(&[report], &s, &c);
    assert!(ops.contains(&RuleOp::InstallUsm {
        switch: seg0.upstream(),
        flow: flow(1)
    }));
    assert_eq!(sel.monitored(), 1);

    // The next round: segment 0's flow and both HH rules go, round b's segments get theirs.
    sel.set_watching(Some(&round_b));
    let mut det = EpochDetection::default();
    det.entries.push(MmEntry {
        flow: flow(1),
        segment: 0,
        sent: 10,
        lost: 0,
    });
    let ops = sel.on_epoch(&det, &all, &s, &c);
    assert!(ops.contains(&RuleOp::RemoveUsm {
        switch: seg0.upstream(),
        flow: flow(1)
    }));
    for seg in &round_a {
        assert!(ops.contains(&RuleOp::RemoveHh {
            switch: s.get(*seg).downstream(),
            path_bf: c.segment_bf[*seg as usize]
        }));
    }
    let installed: Vec<u32> = ops
        .iter()
        .filter_map(|op| match op {
            RuleOp::InstallHh { path_bf, .. } => Some(*path_bf),
            _ => None,
        })
        .collect();
    assert_eq!(installed, vec![c.segment_bf[2], c.segment_bf[3]]);
    assert_eq!(sel.monitored(), 0);
    assert_eq!(sel.hh_rules(), 2);
    assert_eq!(
        sel.take_deferred(),
        vec![RuleOp::RemoveDsm {
            switch: seg0.downstream(),
            flow: flow(1),
            path_bf: c.segment_bf[0]
        }]
    );
    // Every switch's rule counts are back to what round b holds.
    for &sw in &all {
        let [usm, dsm, _] = sel.usage(sw);
        assert_eq!((usm, dsm), (0, 0));
    }

    // Round a again: segment 0's flow comes back at once, without waiting for a report.
    sel.set_watching(Some(&round_a));
    let ops = sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    let dsm = ops.iter().position(|op| {
        *op == RuleOp::InstallDsm {
            switch: seg0.downstream(),
            flow: flow(1),
            path_bf: c.segment_bf[0],
        }
    });
    let usm = ops.iter().position(|op| {
        *op == RuleOp::InstallUsm {
            switch: seg0.upstream(),
            flow: flow(1),
        }
    });
    assert!(dsm.expect("DSM again") < usm.expect("USM again"));
    assert_eq!(sel.monitored(), 1);
}
