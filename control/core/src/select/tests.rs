use super::*;
use crate::detect::{MmEntry, SegmentCount};
use crate::pathbf::PathBfParams;
use crate::topo::{fattree::fattree, MonitorPlacement, Routing, Topology};
use capacity::DSM;

pub(super) fn setup() -> (Topology, Segments, PathBfCodec, HashSet<SwitchIx>) {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let r = Routing::new(&t);
    let s = Segments::new(&t, &r);
    let c = PathBfCodec::new(&t, &s, PathBfParams::default()).unwrap();
    let all = t.monitors().collect();
    (t, s, c, all)
}

fn flow(n: u32) -> FlowId {
    FlowId::v4(n, 7, 6, 1, 2)
}

fn params() -> SelectionParams {
    SelectionParams {
        delta: 2,
        ..Default::default()
    }
}

/// The epoch a flow was selected after and its rules' first, which they were not in for the
/// whole of: the flow going uncounted there is not idleness.
fn through_first_epochs(
    sel: &mut FlowSelector,
    all: &HashSet<SwitchIx>,
    s: &Segments,
    c: &PathBfCodec,
) {
    let before = sel.monitored();
    for _ in 0..2 {
        let ops = sel.on_epoch(&EpochDetection::default(), all, s, c);
        assert!(
            !ops.iter().any(|o| matches!(o, RuleOp::RemoveUsm { .. })),
            "retired in its first epochs: {ops:?}"
        );
    }
    assert_eq!(sel.monitored(), before);
    assert_eq!(sel.take_deferred(), vec![], "no DSM rule leaves");
}

/// One HH rule per switch: of the segments ending at a switch, the one furthest short of
/// α and β gets it, and the full table is said.
#[test]
fn a_full_hh_table_goes_to_the_segment_furthest_short() {
    let (_, s, c, all) = setup();
    let cap = RuleCapacity {
        usm: 100,
        dsm: 100,
        hh: 1,
    };
    let mut sel = FlowSelector::with_capacity(params(), cap);
    let down = s.list[0].downstream();
    let mine: Vec<SegmentId> = (0..s.len() as SegmentId)
        .filter(|&i| s.get(i).downstream() == down)
        .collect();
    assert!(mine.len() >= 2);
    // Every segment counted enough but two: the second is shorter.
    let mut det = EpochDetection::default();
    for i in 0..s.len() as SegmentId {
        let count = if i == mine[0] {
            SegmentCount {
                sent: 900,
                flows: 30,
                ..Default::default()
            }
        } else if i == mine[1] {
            SegmentCount {
                sent: 100,
                flows: 2,
                ..Default::default()
            }
        } else {
            SegmentCount {
                sent: 5000,
                flows: 50,
                ..Default::default()
            }
        };
        det.segments.insert(i, count);
    }
    let ops = sel.on_epoch(&det, &all, &s, &c);
    assert_eq!(
        ops,
        vec![RuleOp::InstallHh {
            switch: down,
            path_bf: c.segment_bf[mine[1] as usize],
            eta: 16
        }]
    );
    assert_eq!(sel.stats.refused_full, 1);
    assert_eq!(
        sel.take_full(),
        vec![(
            FullTable {
                switch: down,
                table: "hh_table",
                size: 1
            },
            1
        )]
    );
    assert_eq!(sel.usage(down)[HH], 1);
}

/// A full DSM table refuses the next flow; a removed flow frees its place once its DSM rule
/// is gone.
#[test]
fn a_full_dsm_table_refuses_reports_until_a_flow_is_retired() {
    let (_, s, c, all) = setup();
    let cap = RuleCapacity {
        usm: 100,
        dsm: 1,
        hh: 100,
    };
    let mut sel = FlowSelector::with_capacity(params(), cap);
    sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    let seg = &s.list[0];
    let bf = c.segment_bf[0];
    let report = |n| HhReport {
        switch: seg.downstream(),
        flow: flow(n),
        path_bf: bf,
    };
    let ops = sel.on_reports(&[report(1), report(2)], &s, &c);
    assert_eq!(ops.len(), 2, "DSM and USM of flow 1: {ops:?}");
    assert_eq!(sel.stats.refused_full, 1, "flow 2 refused");
    assert_eq!(sel.usage(seg.downstream())[DSM], 1);
    assert_eq!(sel.take_full()[0].0.table, "dsm_table");
    through_first_epochs(&mut sel, &all, &s, &c);
    // Flow 1 goes idle and is retired: USM now, DSM a flip later.
    for _ in 0..sel.params().retire_after {
        sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    }
    assert_eq!(sel.monitored(), 0);
    assert_eq!(
        sel.usage(seg.downstream())[DSM],
        1,
        "the DSM rule is still there"
    );
    let deferred = sel.take_deferred();
    assert!(matches!(deferred[..], [RuleOp::RemoveDsm { .. }]));
    assert_eq!(sel.usage(seg.downstream())[DSM], 0);
}

#[test]
fn short_segments_get_hh_rules_and_reports_become_dsm_then_usm_rules() {
    let (_, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    let ops = sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    assert_eq!(ops.len(), s.len(), "every segment starts short");
    assert!(ops
        .iter()
        .all(|o| matches!(o, RuleOp::InstallHh { eta: 16, .. })));
    let seg = &s.list[0];
    let bf = c.segment_bf[0];
    let report = |n| HhReport {
        switch: seg.downstream(),
        flow: flow(n),
        path_bf: bf,
    };
    let ops = sel.on_reports(&[report(1), report(1), report(2), report(3)], &s, &c);
    assert_eq!(
        ops,
        vec![
            RuleOp::InstallDsm {
                switch: seg.downstream(),
                flow: flow(1),
                path_bf: bf
            },
            RuleOp::InstallUsm {
                switch: seg.upstream(),
                flow: flow(1)
            },
            RuleOp::InstallDsm {
                switch: seg.downstream(),
                flow: flow(2),
                path_bf: bf
            },
            RuleOp::InstallUsm {
                switch: seg.upstream(),
                flow: flow(2)
            },
            RuleOp::RemoveHh {
                switch: seg.downstream(),
                path_bf: bf
            },
        ],
        "duplicate and post-δ reports are ignored; the HH rule goes after δ = 2 flows"
    );
    assert_eq!(sel.monitored(), 2);
    assert_eq!(sel.stats.reports_ignored, 2);
}

#[test]
fn idle_flows_lose_usm_first_and_dsm_one_epoch_later() {
    let (_, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    let seg = &s.list[0];
    let bf = c.segment_bf[0];
    sel.on_reports(
        &[HhReport {
            switch: seg.downstream(),
            flow: flow(1),
            path_bf: bf,
        }],
        &s,
        &c,
    );
    through_first_epochs(&mut sel, &all, &s, &c);
    let mut seen = EpochDetection::default();
    seen.entries.push(MmEntry {
        flow: flow(1),
        segment: 0,
        sent: 10,
        lost: 0,
    });
    seen.segments.insert(
        0,
        SegmentCount {
            sent: 10,
            lost: 0,
            flows: 1,
        },
    );
    sel.on_epoch(&seen, &all, &s, &c);
    let ops = sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    assert!(
        !ops.iter().any(|o| matches!(o, RuleOp::RemoveUsm { .. })),
        "one idle epoch is tolerated"
    );
    let ops = sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    assert!(ops.contains(&RuleOp::RemoveUsm {
        switch: seg.upstream(),
        flow: flow(1)
    }));
    assert!(!ops.iter().any(|o| matches!(o, RuleOp::RemoveDsm { .. })));
    assert_eq!(
        sel.take_deferred(),
        vec![RuleOp::RemoveDsm {
            switch: seg.downstream(),
            flow: flow(1),
            path_bf: bf
        }]
    );
}

/// A flow retired on a segment and selected there again before its held-back DSM removal is
/// sent keeps its DSM rule: the removal is dropped and no second install is asked for. (The
/// removal, sent after the new install, took the rule away: the flow was counted upstream and
/// never downstream, and a flow expected at once read that as loss.)
#[test]
fn a_flow_selected_again_before_its_dsm_removal_keeps_its_dsm_rule() {
    let (_, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    let seg = &s.list[0];
    let bf = c.segment_bf[0];
    let report = [HhReport {
        switch: seg.downstream(),
        flow: flow(1),
        path_bf: bf,
    }];
    sel.on_reports(&report, &s, &c);
    through_first_epochs(&mut sel, &all, &s, &c);
    sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    let ops = sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    assert!(ops.contains(&RuleOp::RemoveUsm {
        switch: seg.upstream(),
        flow: flow(1)
    }));
    let again = sel.on_reports(&report, &s, &c);
    assert!(
        !again.iter().any(|o| matches!(o, RuleOp::InstallDsm { .. })),
        "{again:?}"
    );
    assert!(again.contains(&RuleOp::InstallUsm {
        switch: seg.upstream(),
        flow: flow(1)
    }));
    assert_eq!(sel.take_deferred(), vec![]);
    assert_eq!(sel.monitored(), 1);
}

/// An inter-pod flow crosses edge→agg→core, then core→agg→edge: each segment's HH rule
/// selects it, and the core holds its DSM rule for the first and its USM rule for the second.
/// Two segments from one upstream switch (the flow changed path) share one USM rule, which
/// goes only with the last of them.
#[test]
fn a_flow_is_selected_on_each_segment_it_crosses_and_shares_one_usm_rule_per_switch() {
    let (t, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    let sw = |n: &str| t.switch(n).unwrap();
    let up = s.find(&[sw("edge0_0"), sw("agg0_0"), sw("core0")]).unwrap();
    let down = s.find(&[sw("core0"), sw("agg2_0"), sw("edge2_0")]).unwrap();
    let report = |seg: SegmentId| HhReport {
        switch: s.get(seg).downstream(),
        flow: flow(1),
        path_bf: c.segment_bf[seg as usize],
    };
    let ops = sel.on_reports(&[report(up), report(down)], &s, &c);
    assert_eq!(sel.monitored(), 2);
    for (seg, usm_at) in [(up, "edge0_0"), (down, "core0")] {
        assert!(ops.contains(&RuleOp::InstallDsm {
            switch: s.get(seg).downstream(),
            flow: flow(1),
            path_bf: c.segment_bf[seg as usize],
        }));
        assert!(ops.contains(&RuleOp::InstallUsm {
            switch: sw(usm_at),
            flow: flow(1)
        }));
    }

    // The same flow on a second path out of edge0_0: one USM rule for both segments.
    let other = s.find(&[sw("edge0_0"), sw("agg0_1"), sw("core2")]).unwrap();
    let ops = sel.on_reports(&[report(other)], &s, &c);
    assert!(!ops.iter().any(|o| matches!(o, RuleOp::InstallUsm { .. })));
    assert_eq!(
        sel.rules_on(sw("edge0_0"), &s, &c)
            .iter()
            .filter(|o| matches!(o, RuleOp::InstallUsm { .. }))
            .count(),
        1
    );
    through_first_epochs(&mut sel, &all, &s, &c);
    // Only `other` keeps counting: `up` and `down` retire; edge0_0's USM rule stays.
    let mut seen = EpochDetection::default();
    seen.entries.push(MmEntry {
        flow: flow(1),
        segment: other,
        sent: 10,
        lost: 0,
    });
    let mut removed = Vec::new();
    for _ in 0..2 {
        removed.extend(sel.on_epoch(&seen, &all, &s, &c));
    }
    let usm_removed: Vec<&RuleOp> = removed
        .iter()
        .filter(|o| matches!(o, RuleOp::RemoveUsm { .. }))
        .collect();
    assert_eq!(
        usm_removed,
        vec![&RuleOp::RemoveUsm {
            switch: sw("core0"),
            flow: flow(1)
        }]
    );
    assert_eq!(sel.monitored(), 1);
}

#[test]
fn a_flow_whose_switch_did_not_answer_is_not_idle() {
    let (_, s, c, all) = setup();
    let mut sel = FlowSelector::new(params());
    sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    let seg = &s.list[0];
    sel.on_reports(
        &[HhReport {
            switch: seg.downstream(),
            flow: flow(1),
            path_bf: c.segment_bf[0],
        }],
        &s,
        &c,
    );
    let mut some = all.clone();
    some.remove(&seg.upstream());
    for _ in 0..5 {
        sel.on_epoch(&EpochDetection::default(), &some, &s, &c);
    }
    assert_eq!(sel.monitored(), 1);
}

mod absence;
mod eta_and_rounds;
