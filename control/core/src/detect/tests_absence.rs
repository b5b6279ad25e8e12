//! Absence as evidence: a flow expected downstream whose DSM proves it never arrived.

use super::*;
use crate::fabric::{MeterSnapshot, Parity};
use crate::pathbf::{PathBfCodec, PathBfParams};
use crate::sketch::{Dsm, DsmBucket, FlowHashes, Meter, MeterConfig, Usm};
use crate::topo::{fattree::fattree, MonitorPlacement, Routing, Topology};

fn setup() -> (Topology, Segments, PathBfCodec) {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let s = Segments::new(&t, &Routing::new(&t));
    let c = PathBfCodec::new(&t, &s, PathBfParams::default()).unwrap();
    (t, s, c)
}

fn flow(n: u32) -> FlowId {
    FlowId::v4(0x0a00_0002 + n, 0x0a03_0102, 6, 1000 + n as u16, 80)
}

fn snap(switch: SwitchIx) -> MeterSnapshot {
    let cfg = MeterConfig::new(3, 64).unwrap();
    MeterSnapshot {
        switch,
        epoch: 0,
        parity: Parity::Even,
        usm: Usm::new(cfg).unwrap(),
        dsm: Dsm::new(cfg).unwrap(),
    }
}

/// Segment 0's two monitors, flow 1 counted 50 times upstream, and what the DSM holds.
fn epoch(s: &Segments, dsm: impl FnOnce(&mut Dsm)) -> Vec<MeterSnapshot> {
    let g = s.get(0);
    let (mut up, mut down) = (snap(g.upstream()), snap(g.downstream()));
    up.usm.update_n(&flow(1), FlowHashes::of(&flow(1)), 50);
    dsm(&mut down.dsm);
    vec![up, down]
}

fn expect_flow_1() -> Vec<Expected> {
    vec![Expected {
        flow: flow(1),
        segment: 0,
    }]
}

#[test]
fn an_expected_flow_that_never_arrived_lost_all_its_usm_counted() {
    let (_, s, c) = setup();
    let snaps = epoch(&s, |_| {});
    let det = minus_meters_expecting(&s, &c, &snaps, &expect_flow_1());
    assert_eq!(det.vanished, 1);
    assert_eq!(
        det.segments[&0],
        SegmentCount {
            sent: 50,
            lost: 50,
            flows: 1
        }
    );
    // Not expected, it leaves no trace (the paper's Algorithm 3).
    let det = minus_meters(&s, &c, &snaps);
    assert!(det.segments.is_empty() && det.vanished == 0);
    assert_eq!(det.anomalies.no_clean_usm, 0);
}

#[test]
fn a_bucket_holding_another_flow_proves_absence_and_dirty_buckets_do_not() {
    let (_, s, c) = setup();
    let bf = c.segment_bf[0];
    let other = flow(9);
    // Another flow cleanly in one of flow 1's buckets: proof.
    let snaps = epoch(&s, |d| d.update_n(&other, FlowHashes::of(&other), bf, 7));
    let h = FlowHashes::of(&flow(1));
    let shares = snaps[1].dsm.proves_absent(&flow(1), h);
    let det = minus_meters_expecting(&s, &c, &snaps, &expect_flow_1());
    assert_eq!(det.vanished, u64::from(shares));
    // Every bucket dirty: nothing can be said.
    let all_dirty = |d: &mut Dsm| {
        let cfg = d.config();
        let b = DsmBucket {
            dirty: true,
            flow: Some(other),
            path_bf: bf,
            count: 3,
        };
        *d = Meter::from_buckets(cfg, vec![b; cfg.num_buckets()]).unwrap();
    };
    let snaps = epoch(&s, all_dirty);
    assert!(!snaps[1].dsm.proves_absent(&flow(1), h));
    let det = minus_meters_expecting(&s, &c, &snaps, &expect_flow_1());
    assert_eq!(det.vanished, 0);
    assert!(!det.segments.contains_key(&0));
}

#[test]
fn a_flow_that_arrived_on_another_segment_did_not_vanish() {
    let (_, s, c) = setup();
    let g = s.get(0);
    let moved_to = (1..s.len() as SegmentId)
        .find(|&i| s.get(i).downstream() == g.downstream() && s.get(i).upstream() == g.upstream())
        .or_else(|| (1..s.len() as SegmentId).find(|&i| s.get(i).downstream() == g.downstream()))
        .unwrap();
    let bf = c.segment_bf[moved_to as usize];
    let snaps = epoch(&s, |d| {
        d.update_n(&flow(1), FlowHashes::of(&flow(1)), bf, 50)
    });
    assert!(!snaps[1]
        .dsm
        .proves_absent(&flow(1), FlowHashes::of(&flow(1))));
    let det = minus_meters_expecting(&s, &c, &snaps, &expect_flow_1());
    assert_eq!(det.vanished, 0);
    assert!(!det.segments.contains_key(&0));
}

#[test]
fn an_expected_flow_that_sent_nothing_is_neither_loss_nor_an_anomaly() {
    let (_, s, c) = setup();
    let g = s.get(0);
    let snaps = vec![snap(g.upstream()), snap(g.downstream())];
    let det = minus_meters_expecting(&s, &c, &snaps, &expect_flow_1());
    assert!(det.segments.is_empty());
    assert_eq!((det.vanished, det.anomalies.no_clean_usm), (0, 0));
}

#[test]
fn dropped_entries_leave_their_segments_counts() {
    let (_, s, c) = setup();
    let snaps = epoch(&s, |_| {});
    let mut det = minus_meters_expecting(&s, &c, &snaps, &expect_flow_1());
    det.drop_entries(&std::collections::HashSet::from([(flow(1), 0)]));
    assert!(det.entries.is_empty());
    assert!(
        det.segments.is_empty(),
        "its only flow gone, the segment is unobserved"
    );
}
