use super::*;
use canary_controller::run_document::RunDocument;

fn run_k8(epochs: u32, faults: &str, width: Option<usize>) -> ScaleRun {
    let mut opts = ScaleOptions {
        topology: "fattree:8".into(),
        faults: faults.into(),
        epochs,
        seed: 2,
        ..Default::default()
    };
    if let Some(w) = width {
        opts.capacity.meter.width = w;
    }
    measure(&opts, |_| {}).unwrap()
}

#[test]
fn program_sized_meters_watch_every_segment_within_the_period_and_find_the_faults() {
    let r = run_k8(9, "random:10%", None);
    // k = 8: a switch starts and ends up to 32 segments; 3 x 1024 meters hold 12 of them.
    assert_eq!(r.setup.segments_per_monitor, 12);
    assert_eq!((r.setup.rounds, r.setup.period), (3, 3));
    for e in &r.epochs {
        assert!(e.evidence.oldest < r.setup.period, "{e:?}");
        if e.epoch + 1 >= r.setup.period {
            assert_eq!(e.evidence.never_seen, 0, "epoch {}", e.epoch);
        }
        // The meters give back nearly every watched flow (Theorem 2 at 240 flows per meter).
        assert!(e.flows_counted as f64 > 0.95 * e.flows_sent as f64, "{e:?}");
    }
    assert!(r
        .faults
        .iter()
        .all(|f| f.time_to_detect.is_some_and(|t| t <= r.setup.period)));
    assert!(
        r.after_first_period.f1 >= PAPER_F1,
        "{:?}",
        r.after_first_period
    );
    assert!(r.accurate_from.is_some_and(|e| e < r.setup.period));
}

#[test]
fn meters_wide_enough_for_every_segment_need_one_round() {
    // 32 segments x 20 flows x 4 = 2560 buckets per row: 4096.
    let r = run_k8(2, "random:10%", Some(4096));
    assert_eq!((r.setup.rounds, r.setup.period), (1, 1));
    assert_eq!(r.epochs[0].watched, r.setup.segments);
    assert_eq!(r.epochs[0].evidence.never_seen, 0);
}

#[test]
fn a_healthy_fabric_is_blamed_nothing_over_two_periods() {
    let r = run_k8(6, "none", None);
    assert!(r.faults.is_empty());
    assert!(
        r.epochs.iter().all(|e| e.blamed.is_empty()),
        "{:?}",
        r.epochs
    );
}

#[test]
fn a_fault_that_begins_after_the_first_sweep_is_found_within_a_period() {
    let r = measure(
        &ScaleOptions {
            topology: "fattree:8".into(),
            epochs: 9,
            seed: 3,
            faults_from: Some(3),
            ..Default::default()
        },
        |_| {},
    )
    .unwrap();
    assert_eq!(r.setup.period, 3);
    // Healthy until epoch 3: nothing blamed.
    assert!(r.epochs[..3].iter().all(|e| e.blamed.is_empty()));
    assert!(!r.faults.is_empty());
    for f in &r.faults {
        assert!(f.time_to_detect.is_some_and(|t| t <= 3), "{f:?}");
    }
}

#[test]
fn the_document_names_every_epochs_blames_and_reads_back() {
    let opts = ScaleOptions {
        topology: "fattree:8".into(),
        epochs: 5,
        seed: 2,
        ..Default::default()
    };
    let doc = run(&opts, |_| {}).unwrap();
    let text = serde_json::to_string(&doc).unwrap();
    let doc = RunDocument::parse("run.json", &text).unwrap();
    assert_eq!(
        doc.kind,
        canary_controller::run_document::RunKind::Synthesized
    );
    let topo = doc.topology_for("run.json", None).unwrap();
    let measured = doc.synthesized.as_ref().unwrap();
    assert_eq!(doc.epochs.len(), 5);
    assert!(!doc.faults.is_empty());
    for (report, m) in doc.epochs.iter().zip(&measured.epochs) {
        let reported: Vec<String> = report.blamed.iter().map(|b| b.link.join("→")).collect();
        let period = measured.setup.period;
        if report.epoch + 1 < period {
            assert!(reported.is_empty(), "first sweep: {reported:?}");
            assert_eq!(
                report.watch.as_ref().unwrap().first_sweep_until,
                Some(period - 1)
            );
        } else {
            assert!(!reported.is_empty(), "epoch {}", report.epoch);
        }
        assert_eq!(report.watch.as_ref().unwrap().watched, m.watched);
    }
    // The lab's link indices are not in the document: a second run of the same seed has them.
    let again = measure(&opts, |_| {}).unwrap();
    for (report, m) in doc.epochs.iter().zip(&again.epochs) {
        let named: Vec<String> = m
            .blamed
            .iter()
            .map(|&l| topo.link_names(l).join("→"))
            .collect();
        let reported: Vec<String> = report.blamed.iter().map(|b| b.link.join("→")).collect();
        assert_eq!(reported, named, "epoch {}", report.epoch);
    }
    assert_eq!(doc.summary.f1, measured.after_first_period.f1);
}
