//! The decision's promises: its false-alarm bound on healthy segments at the worst background,
//! and how fast a loss is declared and cleared.

use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `lost` of `sent` packets at loss `p`, drawn packet by packet through geometric gaps.
fn draw(sent: u64, p: f64, rng: &mut ChaCha8Rng) -> SegmentCount {
    let mut lost = 0;
    let mut at = 0u64;
    loop {
        let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
        at += (u.ln() / (1.0 - p).ln()).floor() as u64 + 1;
        if at > sent {
            break;
        }
        lost += 1;
    }
    SegmentCount {
        sent,
        lost,
        flows: 20,
    }
}

fn epoch(counts: &[(SegmentId, SegmentCount)]) -> BTreeMap<SegmentId, SegmentCount> {
    counts.iter().copied().collect()
}

#[test]
fn healthy_segments_at_the_worst_background_stay_within_the_asked_false_alarms() {
    // 200 segments of 2 links losing exactly p0 for 1000 epochs of 20,000 packets: at most
    // 1e-3 false alarms per epoch expected, so about 1 in the whole run by the bound.
    let params = DecisionParams {
        background: 1e-4,
        false_alarms: 1e-3,
    };
    let mut d = Decider::new(&[2; 200], params);
    let p0 = params.p0(2);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut alarms = 0;
    for e in 0..1000 {
        let counts: Vec<_> = (0..200).map(|s| (s, draw(20_000, p0, &mut rng))).collect();
        alarms += d
            .observe(e, &epoch(&counts))
            .iter()
            .filter(|c| matches!(c, Change::Declared { .. }))
            .count();
    }
    assert!(alarms <= 1, "{alarms} false alarms, the bound expects 1");
}

#[test]
fn a_loss_is_declared_soon_after_it_starts_and_cleared_soon_after_the_repair() {
    let params = DecisionParams::default();
    let p0 = params.p0(2);
    for (p, within) in [(2e-3, 5), (1e-2, 2), (0.1, 1)] {
        let mut d = Decider::new(&[2, 2], params);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (mut declared, mut cleared) = (None, None);
        for e in 0..60 {
            let loss = if (10..30).contains(&e) { p } else { p0 / 2.0 };
            let counts = [
                (0, draw(5_000, loss, &mut rng)),
                (1, draw(5_000, p0, &mut rng)),
            ];
            for c in d.observe(e, &epoch(&counts)) {
                match c {
                    Change::Declared { segment: 0, since } => {
                        assert!((8..=10).contains(&since), "{p}: change dated {since}");
                        declared.get_or_insert(e);
                    }
                    Change::Cleared { segment: 0 } => {
                        cleared.get_or_insert(e);
                    }
                    other => panic!("{p}: {other:?}"),
                }
            }
            if e == 29 {
                let l = d.lossy_segment(0).expect("still lossy before the repair");
                let est = l.lost as f64 / l.sent as f64;
                assert!((est - p).abs() < p * 0.5, "{p}: estimated {est}");
            }
        }
        let declared = declared.unwrap_or_else(|| panic!("{p} never declared"));
        assert!(declared < 10 + within, "{p}: declared at {declared}");
        let cleared = cleared.unwrap_or_else(|| panic!("{p} never cleared"));
        assert!((30..40).contains(&cleared), "{p}: cleared at {cleared}");
        assert!(d.lossy().next().is_none());
    }
}

#[test]
fn a_small_loss_needs_packets_not_epochs() {
    // 0.05 % on a segment whose links may lose 1e-5 each: declared once the packets the
    // divergence asks for have crossed it (about h / KL), whether in few epochs or many.
    let params = DecisionParams {
        background: 1e-5,
        false_alarms: 1e-6,
    };
    let p0 = params.p0(2);
    let need = Decider::new(&[2], params).threshold() / kl(5e-4, p0);
    for per_epoch in [2_000u64, 20_000] {
        let mut d = Decider::new(&[2], params);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let at = (0..1000)
            .find(|&e| {
                !d.observe(e, &epoch(&[(0, draw(per_epoch, 5e-4, &mut rng))]))
                    .is_empty()
            })
            .expect("declared");
        let packets = (at + 1) * per_epoch;
        assert!(
            packets as f64 > need / 3.0 && (packets as f64) < need * 3.0,
            "{per_epoch}/epoch: declared after {packets} packets, about {need:.0} expected"
        );
    }
}

#[test]
fn the_threshold_follows_the_asked_rate() {
    let params = DecisionParams {
        background: 1e-4,
        false_alarms: 1e-6,
    };
    let d = Decider::new(&[2; 100], params);
    // 2e-4 · 4^k < 0.5 for k = 1..=5: five arms per segment.
    assert!((d.threshold() - (500.0f64 / 1e-6).ln()).abs() < 1e-9);
    assert!(params.validate().is_ok());
    let bad = DecisionParams {
        background: 0.0,
        ..params
    };
    assert!(bad.validate().unwrap_err().starts_with("background:"));
}

#[test]
fn counts_taken_together_are_tested_once() {
    let params = DecisionParams::default();
    let c = |sent, lost| SegmentCount {
        sent,
        lost,
        flows: 1,
    };
    // 2 lost of 10,000 is what two links at 1e-4 lose; 20 lost is not.
    assert!(!lossy_in_total(&c(10_000, 2), 2, 1000, &params));
    assert!(lossy_in_total(&c(10_000, 20), 2, 1000, &params));
    assert!(!lossy_in_total(&c(0, 0), 2, 1000, &params));
    // One packet of one lost says little.
    assert!(!lossy_in_total(&c(1, 1), 2, 1000, &params));
}

#[test]
fn a_whole_run_tests_each_links_segments_together() {
    use crate::detect::WindowCount;
    use crate::topo::{fattree::fattree, MonitorPlacement, Routing, Segments};
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let segs = Segments::new(&t, &Routing::new(&t));
    let l = t.link_by_names("edge3_0", "agg3_0").unwrap();
    let through: Vec<SegmentId> = (0..segs.len() as SegmentId)
        .filter(|&s| segs.get(s).links.len() == 2 && segs.get(s).links.contains(&l))
        .collect();
    let run = |lost: u64| -> BTreeMap<SegmentId, WindowCount> {
        (0..segs.len() as SegmentId)
            .map(|s| {
                let hit = through[..2].contains(&s);
                let lost = if hit { lost } else { 0 };
                (
                    s,
                    WindowCount {
                        sent: 400,
                        lost,
                        epochs: 10,
                        lossy_epochs: lost.min(10) as u32,
                    },
                )
            })
            .collect()
    };
    let params = DecisionParams::default();
    let lossy = |totals| -> Vec<SegmentId> {
        let obs = total_observations(&segs, &totals, &params);
        obs.segments
            .iter()
            .filter(|o| o.success < 1.0)
            .map(|o| o.segment)
            .collect()
    };
    // 5 of 400 on each of two segments through the link: neither is beyond the background on
    // its own (400·KL = 15.8, under the run's threshold of about 20), together they are
    // (their ratio at the 0.64 % rate sums to 29.9). Its segments that lost nothing stay clean.
    assert!(!lossy_in_total(
        &c(400, 5),
        2,
        total_tests(segs.len(), 64, &params),
        &params
    ));
    assert_eq!(lossy(run(5)), through[..2].to_vec());
    // 1 of 400 on each is the background's: nothing is declared.
    assert!(lossy(run(1)).is_empty());
}

fn c(sent: u64, lost: u64) -> SegmentCount {
    SegmentCount {
        sent,
        lost,
        flows: 0,
    }
}
