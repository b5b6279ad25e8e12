//! The two-switch line: netem loss localized with a second controller refused, and a link
//! that starts dropping every frame.

use crate::fabric_lab::{self, http_get_in_ns, read_json, wait_child};
use crate::{blamed, bmv2, line2_daemon_args, line2_healthy, line2_losing_10_percent, phases};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Two switches, 10% netem loss on s1→s2 only: the daemon runs 20 one-second epochs, blames
/// exactly [s1, s2], writes one report line per epoch, serves metrics, and a second controller
/// with a lower election id is refused writes.
#[test]
fn line2_run_localizes_netem_loss_and_refuses_a_second_controller() {
    let Some((topology, lab)) = line2_losing_10_percent() else {
        return;
    };
    let faults = lab.path("faults.yaml");
    std::fs::write(&faults, "faults:\n  - {link: [s1, s2], loss: 0.1}\n").unwrap();
    let traffic = lab.traffic(200, 8, 200.0, 7);
    let json = lab.path("run.json");
    let report = lab.path("epochs.jsonl");
    let mut args = line2_daemon_args(&topology, "20", &json, &report);
    args.extend([
        "--election-id",
        "10",
        "--metrics",
        "127.0.0.1:9464",
        "--faults",
        faults.to_str().unwrap(),
    ]);
    let mut d = lab.daemon(&args);

    // Mid-run: metrics are served, and a lower election id gets no write access.
    std::thread::sleep(Duration::from_secs(8));
    let metrics = http_get_in_ns(&lab.fab, "127.0.0.1:9464", "/metrics").unwrap_or_default();
    let lines_mid = std::fs::read_to_string(&report)
        .unwrap_or_default()
        .lines()
        .count();
    let second = second_controller_write(&lab.fab, 5);

    let status = wait_child(&mut d.0, Duration::from_secs(120));
    let sent = traffic.stop();
    assert!(
        status.is_some_and(|s| s.success()),
        "daemon failed: {}",
        lab.daemon_output()
    );
    let v = read_json(&json);
    let epochs = v["epochs"].as_array().expect("epochs in --json");
    assert_eq!(epochs.len(), 20, "{}", lab.daemon_output());
    let p = phases(&v);
    eprintln!(
        "line2: {sent} packets sent; per-epoch phases (ms): harvest {:.1} detect {:.2} localize {:.2} select {:.2}",
        p[0], p[1], p[2], p[3]
    );
    assert_eq!(
        blamed(&v["summary"]["blamed"]),
        vec![("s1".to_string(), "s2".to_string())],
        "{}",
        lab.daemon_output()
    );
    let est = v["summary"]["blamed"][0]["loss"].as_f64().unwrap();
    assert!((0.05..0.2).contains(&est), "estimated loss {est}");
    let counted: u64 = epochs
        .iter()
        .map(|e| e["packets_counted"].as_u64().unwrap())
        .sum();
    assert!(counted > 1000, "only {counted} packets counted");

    // The report file: one parseable line per epoch, appended while running.
    let lines: Vec<Value> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON epoch report"))
        .collect();
    assert_eq!(lines.len(), 20);
    assert!(
        (3..20).contains(&lines_mid),
        "the report grows while the daemon runs ({lines_mid} lines after 8 s)"
    );
    for k in [
        "canary_link_loss_estimate",
        "canary_segment_packets",
        "canary_epoch_phase_seconds",
        "canary_harvest_errors_total",
        "canary_digests_dropped_total",
    ] {
        assert!(metrics.contains(k), "metric {k} missing:\n{metrics}");
    }
    assert!(
        metrics.contains("canary_segment_packets{segment=\"s1→s2\"}"),
        "{metrics}"
    );

    let (primary, write) = second.expect("second controller connects");
    assert!(!primary, "a lower election id must not become primary");
    assert_eq!(
        write,
        Some(tonic::Code::PermissionDenied),
        "a backup controller's write must be refused"
    );
}

/// Two switches; after the daemon has reported 4 epochs, s1→s2 starts dropping every frame (a
/// dead optic that still shows link up). Its monitored flows vanish: the report says so, and
/// the link is blamed from within two epochs of the onset to the end, near 100 %, with nothing
/// else blamed.
#[test]
fn line2_run_blames_a_link_that_starts_dropping_every_frame() {
    let Some((topology, lab)) = line2_healthy() else {
        return;
    };
    let traffic = lab.traffic(200, 8, 200.0, 11);
    let json = lab.path("run.json");
    let report = lab.path("epochs.jsonl");
    let mut d = lab.daemon(&line2_daemon_args(&topology, "12", &json, &report));
    let reported = || {
        std::fs::read_to_string(&report)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let t = Instant::now();
    while reported() < 4 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no 4 epochs reported: {}",
            lab.daemon_output()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    lab.link_loss("s1", "s2", 100.0);
    // The epoch that counts as the drop begins: the one after the last reported.
    let onset = reported() as u64;

    let status = wait_child(&mut d.0, Duration::from_secs(120));
    traffic.stop();
    assert!(
        status.is_some_and(|s| s.success()),
        "daemon failed: {}",
        lab.daemon_output()
    );
    let v = read_json(&json);
    let epochs = v["epochs"].as_array().expect("epochs in --json");
    assert_eq!(epochs.len(), 12, "{}", lab.daemon_output());
    let link = ("s1".to_string(), "s2".to_string());
    let first = epochs
        .iter()
        .find(|e| !blamed(&e["blamed"]).is_empty())
        .unwrap_or_else(|| panic!("never blamed: {}", lab.daemon_output()));
    let detected = first["epoch"].as_u64().unwrap();
    assert!(
        (onset..=onset + 1).contains(&detected),
        "first blamed in epoch {detected}, the drop began in {onset}"
    );
    for e in &epochs[detected as usize..] {
        assert_eq!(
            blamed(&e["blamed"]),
            vec![link.clone()],
            "epoch {}",
            e["epoch"]
        );
    }
    let vanished: u64 = epochs
        .iter()
        .map(|e| e["flows_vanished"].as_u64().unwrap_or(0))
        .sum();
    assert!(vanished > 0, "no flow said to have vanished");
    let est = epochs[11]["blamed"][0]["loss"].as_f64().unwrap();
    assert!(est > 0.8, "estimated loss {est} in the last epoch");
    eprintln!(
        "line2 blackhole: the drop began in epoch {onset}, first blamed in {detected}; \
         {vanished} flow-epochs vanished; last estimate {est:.3}"
    );
}

/// Connects to s1 as a second controller with `election_id`; returns (became primary, the
/// gRPC code its write got).
fn second_controller_write(fab: &str, election_id: u128) -> Option<(bool, Option<tonic::Code>)> {
    let fab = fab.to_string();
    std::thread::spawn(move || {
        bmv2::enter_netns(&fab);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            use canary_switch::p4rt::{P4RtClient, P4RtConfig};
            let mut cfg = P4RtConfig::new("s1", &format!("127.0.0.1:{}", fabric_lab::GRPC_BASE), 1);
            cfg.election_id = election_id;
            let mut c = P4RtClient::connect(cfg).await.ok()?;
            let primary = c.primary;
            let up = bfrt_like_update();
            let code = c.write(vec![up], 1).await.err().and_then(|e| e.code());
            Some((primary, code))
        })
    })
    .join()
    .ok()
    .flatten()
}

/// A harmless write (an hh_table entry) to try with.
fn bfrt_like_update() -> bfrt_proto::p4rt::Update {
    let dir = tempfile::tempdir().unwrap();
    bmv2::build(dir.path());
    let idx =
        canary_switch::p4info::P4InfoFile::load(&dir.path().join("canary.p4info.bin")).unwrap();
    let prog = canary_switch::contract::Program::from_p4info(&idx.path, &idx.info).unwrap();
    let op = canary_core::fabric::RuleOp::InstallHh {
        switch: 0,
        path_bf: 0x1234,
        eta: 3,
    };
    canary_switch::drivers::p4runtime::write_update(
        &prog,
        &canary_switch::entries::rule(&op, 0, false),
    )
    .unwrap()
}
