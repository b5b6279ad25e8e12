//! Flows predicted onto segments that deliver none ([`super::predict`], `entry.rs`).

use super::tests::setup;
use super::*;
use crate::detect::{MmEntry, SegmentCount};
use crate::topo::PortMap;

/// Without sentinels: these tests are about segments that deliver nothing.
fn params() -> SelectionParams {
    SelectionParams {
        delta: 2,
        sentinels: 0,
        ..Default::default()
    }
}

/// An epoch where every segment but `dead` counted plenty and `dead` nothing.
fn plenty_but(s: &Segments, dead: SegmentId) -> EpochDetection {
    let mut det = EpochDetection::default();
    for i in (0..s.len() as SegmentId).filter(|&i| i != dead) {
        det.segments.insert(
            i,
            SegmentCount {
                sent: 5000,
                flows: 50,
                ..Default::default()
            },
        );
    }
    det
}

/// A segment whose HH rule brought nothing in a whole epoch gets an entry rule at its upstream
/// monitor (pathBF 0); a flow reported there that the installed forwarding sends onto it is
/// monitored on it and expected at once, and one sent elsewhere is not. Without a predictor
/// (another controller's forwarding), no entry rule is asked for.
#[test]
fn flows_seen_entering_are_predicted_onto_a_segment_that_delivers_none() {
    let (t, s, c, all) = setup();
    let predictor = predict::Predictor::new(&t, &PortMap::canonical(&t), &c.masks);
    let up = t.switch("edge1_0").unwrap();
    let dead = s
        .find(&[up, t.switch("agg1_0").unwrap(), t.switch("core1").unwrap()])
        .unwrap();
    for with_predictor in [false, true] {
        let mut sel = FlowSelector::new(params());
        if with_predictor {
            sel.set_predictor(Some(std::sync::Arc::new(predictor.clone())));
        }
        let first = sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
        assert!(!first
            .iter()
            .any(|op| matches!(op, RuleOp::InstallHh { path_bf: 0, .. })));
        // A whole epoch: no report for `dead`.
        // Every segment has its HH rule; all but `dead` count plenty.
        let ops = sel.on_epoch(&plenty_but(&s, dead), &all, &s, &c);
        let entry = ops
            .iter()
            .any(|op| matches!(op, RuleOp::InstallHh { switch, path_bf: 0, .. } if *switch == up));
        assert_eq!(entry, with_predictor, "entry rule at edge1_0");
        if !with_predictor {
            continue;
        }
        // Flows from edge1_0's hosts to another pod: those the forwarding sends via agg1_0 to
        // core1 land on `dead`, the others do not.
        let reports: Vec<HhReport> = (0..64u32)
            .map(|n| HhReport {
                switch: up,
                flow: FlowId::v4(t.hosts[4].addr, t.hosts[12].addr, 17, 1000 + n as u16, 53),
                path_bf: 0,
            })
            .collect();
        let onto: Vec<FlowId> = reports
            .iter()
            .filter(|r| predictor.next_segment(&s, up, &r.flow) == Some(dead))
            .map(|r| r.flow)
            .collect();
        assert!(!onto.is_empty() && onto.len() < reports.len());
        let ops = sel.on_reports(&reports, &s, &c);
        let installed: Vec<FlowId> = ops
            .iter()
            .filter_map(|op| match op {
                RuleOp::InstallDsm { flow, path_bf, .. }
                    if *path_bf == c.segment_bf[dead as usize] =>
                {
                    Some(*flow)
                }
                _ => None,
            })
            .collect();
        let want: Vec<FlowId> = onto.iter().copied().take(params().beta as usize).collect();
        assert_eq!(installed, want);
        assert_eq!(sel.stats.predicted as usize, want.len());
        let expected: Vec<FlowId> = sel
            .expected()
            .into_iter()
            .filter(|e| e.segment == dead)
            .map(|e| e.flow)
            .collect();
        assert_eq!(expected.len(), want.len(), "expected before any count");
    }
}

/// A segment that starts at a core (no hosts, so no entry rule) and delivers nothing: flows
/// counted arriving at that core on their way up, which the forwarding sends on onto it, are
/// monitored on it and expected at once.
#[test]
fn flows_arriving_at_a_core_are_predicted_onto_its_unseen_segment() {
    let (t, s, c, all) = setup();
    let predictor = predict::Predictor::new(&t, &PortMap::canonical(&t), &c.masks);
    let sw = |n: &str| t.switch(n).unwrap();
    let core = sw("core1");
    let dead = s.find(&[core, sw("agg3_0"), sw("edge3_0")]).unwrap();
    let up = s.find(&[sw("edge1_0"), sw("agg1_0"), core]).unwrap();
    let mut sel = FlowSelector::new(params());
    sel.set_predictor(Some(std::sync::Arc::new(predictor.clone())));
    sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    // Flows from h1_0_0 to h3_0_0 arrived at core1; the others counted plenty.
    let mut det = plenty_but(&s, dead);
    let flows: Vec<FlowId> = (0..64u32)
        .map(|n| FlowId::v4(t.hosts[4].addr, t.hosts[12].addr, 17, 1000 + n as u16, 53))
        .collect();
    for f in &flows {
        det.entries.push(MmEntry {
            flow: *f,
            segment: up,
            sent: 10,
            lost: 0,
        });
    }
    let onto: Vec<FlowId> = flows
        .iter()
        .copied()
        .filter(|f| predictor.next_segment(&s, core, f) == Some(dead))
        .collect();
    assert!(!onto.is_empty());
    let ops = sel.on_epoch(&det, &all, &s, &c);
    let mut installed: Vec<FlowId> = ops
        .iter()
        .filter_map(|op| match op {
            RuleOp::InstallDsm { flow, path_bf, .. } if *path_bf == c.segment_bf[dead as usize] => {
                Some(*flow)
            }
            _ => None,
        })
        .collect();
    installed.sort_unstable();
    let mut want = onto.clone();
    want.sort_unstable();
    want.truncate(params().beta as usize);
    assert_eq!(installed, want);
    // No entry rule at a core: it has no hosts.
    assert!(!ops
        .iter()
        .any(|op| matches!(op, RuleOp::InstallHh { switch, path_bf: 0, .. } if *switch == core)));
    let expected = sel.expected().iter().filter(|e| e.segment == dead).count();
    assert_eq!(expected, want.len());
}

/// A segment that delivers keeps `sentinels` flows picked where they enter, before they could
/// be lost: each is expected at once, so a share of flows the segment swallows whole from the
/// start is seen. Once every segment has its sentinels the entry rule goes, and with the
/// segments watched in rounds (no predictions there) none is asked for.
#[test]
fn a_segment_that_delivers_keeps_sentinels_seen_entering() {
    let (t, s, c, all) = setup();
    let predictor = predict::Predictor::new(&t, &PortMap::canonical(&t), &c.masks);
    let up = t.switch("edge1_0").unwrap();
    let seg = s
        .find(&[up, t.switch("agg1_0").unwrap(), t.switch("core1").unwrap()])
        .unwrap();
    let sentinels = 3;
    let mut sel = FlowSelector::new(SelectionParams {
        sentinels,
        ..params()
    });
    sel.set_predictor(Some(std::sync::Arc::new(predictor.clone())));
    let first = sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    assert!(
        first
            .iter()
            .any(|op| matches!(op, RuleOp::InstallHh { switch, path_bf: 0, .. } if *switch == up)),
        "an entry rule at edge1_0 from the first epoch"
    );
    let reports: Vec<HhReport> = (0..256u32)
        .map(|n| HhReport {
            switch: up,
            flow: FlowId::v4(t.hosts[4].addr, t.hosts[12].addr, 6, 1000 + n as u16, 80),
            path_bf: 0,
        })
        .collect();
    let onto: Vec<FlowId> = reports
        .iter()
        .filter(|r| predictor.next_segment(&s, up, &r.flow) == Some(seg))
        .map(|r| r.flow)
        .collect();
    assert!(onto.len() > sentinels as usize, "{}", onto.len());
    let ops = sel.on_reports(&reports, &s, &c);
    let core1 = t.switch("core1").unwrap();
    let installed: Vec<FlowId> = ops
        .iter()
        .filter_map(|op| match op {
            RuleOp::InstallDsm {
                switch,
                flow,
                path_bf,
            } if *switch == core1 && *path_bf == c.segment_bf[seg as usize] => Some(*flow),
            _ => None,
        })
        .collect();
    assert_eq!(installed, onto[..sentinels as usize].to_vec());
    let expected: Vec<FlowId> = sel
        .expected()
        .into_iter()
        .filter(|e| e.segment == seg)
        .map(|e| e.flow)
        .collect();
    assert_eq!(
        expected.len(),
        sentinels as usize,
        "expected before any count"
    );
    // Every segment from edge1_0 delivers plenty and has its sentinels: the entry rule goes.
    let mut rest: Vec<HhReport> = Vec::new();
    for dst in 0..t.hosts.len() as u32 {
        for n in 0..64u32 {
            rest.push(HhReport {
                switch: up,
                flow: FlowId::v4(
                    t.hosts[4].addr,
                    t.hosts[dst as usize].addr,
                    6,
                    2000 + n as u16,
                    80,
                ),
                path_bf: 0,
            });
        }
    }
    sel.on_reports(&rest, &s, &c);
    let full = (0..s.len() as SegmentId)
        .filter(|&i| s.get(i).upstream() == up)
        .all(|i| sel.flows.keys().filter(|(_, g)| *g == i).count() >= sentinels as usize);
    assert!(full, "every segment from edge1_0 has its sentinels");
    let ops = sel.on_epoch(&plenty_but(&s, SegmentId::MAX), &all, &s, &c);
    assert!(
        ops.iter()
            .any(|op| matches!(op, RuleOp::RemoveHh { switch, path_bf: 0 } if *switch == up)),
        "the entry rule at edge1_0 goes once its segments have their sentinels"
    );
}

/// A controller taking over the switches keeps an entry rule it finds (pathBF 0 at a monitor
/// with hosts): it is no HH rule of a segment, but removing it lost the sentinels' source.
#[test]
fn an_entry_rule_read_back_from_a_switch_is_taken_over() {
    let (t, s, c, _) = setup();
    let up = t.switch("edge1_0").unwrap();
    let mut sel = FlowSelector::new(params());
    let ops = sel.adopt(
        &[RuleOp::InstallHh {
            switch: up,
            path_bf: 0,
            eta: 8,
        }],
        &s,
        &c,
    );
    assert!(ops.is_empty(), "{ops:?}");
    assert_eq!(
        sel.rules_on(up, &s, &c),
        vec![RuleOp::InstallHh {
            switch: up,
            path_bf: 0,
            eta: 8
        }]
    );
}

/// A flow predicted onto a segment whose DSM rule install failed (a refused write, a switch
/// out of reach) goes idle there and is retired; its DSM removal is held back. Predicted there
/// again in that epoch, it must not take over that held-back rule, which may never have gone
/// in: it would be expected at once and, never counted downstream, read as lost. It waits for
/// the removal to go out and is then monitored afresh, its DSM rule asked for again.
#[test]
fn a_flow_whose_dsm_install_failed_does_not_keep_its_held_back_rule_when_predicted_again() {
    let (t, s, c, all) = setup();
    let predictor = predict::Predictor::new(&t, &PortMap::canonical(&t), &c.masks);
    let sw = |n: &str| t.switch(n).unwrap();
    let core = sw("core1");
    let dead = s.find(&[core, sw("agg3_0"), sw("edge3_0")]).unwrap();
    let up = s.find(&[sw("edge1_0"), sw("agg1_0"), core]).unwrap();
    let mut sel = FlowSelector::new(params());
    sel.set_predictor(Some(std::sync::Arc::new(predictor.clone())));
    sel.on_epoch(&EpochDetection::default(), &all, &s, &c);
    // One flow arrives at core1 every epoch and is sent on onto `dead`, which counts nothing.
    let f = (0..64u32)
        .map(|n| FlowId::v4(t.hosts[4].addr, t.hosts[12].addr, 17, 1000 + n as u16, 53))
        .find(|f| predictor.next_segment(&s, core, f) == Some(dead))
        .unwrap();
    let mut det = plenty_but(&s, dead);
    det.entries.push(MmEntry {
        flow: f,
        segment: up,
        sent: 10,
        lost: 0,
    });
    let install = RuleOp::InstallDsm {
        switch: s.get(dead).downstream(),
        flow: f,
        path_bf: c.segment_bf[dead as usize],
    };
    let removal = RuleOp::RemoveDsm {
        switch: s.get(dead).downstream(),
        flow: f,
        path_bf: c.segment_bf[dead as usize],
    };
    let is_f = |e: &crate::detect::Expected| e.flow == f && e.segment == dead;
    assert!(sel.on_epoch(&det, &all, &s, &c).contains(&install));
    assert!(
        sel.expected().iter().any(is_f),
        "predicted: expected at once"
    );
    sel.on_failed(std::slice::from_ref(&install));
    assert!(!sel.expected().iter().any(is_f));
    // Idle on `dead` for `retire_after` epochs after its rules' first (which they were not in
    // for the whole of): retired, and at once predicted there again.
    let mut ops = Vec::new();
    for _ in 0..params().retire_after + 1 {
        assert_eq!(sel.take_deferred(), vec![]);
        ops = sel.on_epoch(&det, &all, &s, &c);
    }
    assert!(
        !sel.expected().iter().any(is_f),
        "expected on a DSM rule that may be missing (ops {ops:?})"
    );
    assert!(!sel.flows.contains_key(&(f, dead)));
    assert_eq!(sel.take_deferred(), vec![removal], "the removal goes out");
    // The next epoch predicts it afresh: its DSM rule asked for again.
    let ops = sel.on_epoch(&det, &all, &s, &c);
    assert!(ops.contains(&install), "{ops:?}");
    assert!(sel.expected().iter().any(is_f));
}
