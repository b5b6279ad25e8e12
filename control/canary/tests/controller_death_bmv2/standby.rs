//! A standby `canary run` takes over from a SIGKILLed primary; the old primary, back, stands by.

use super::*;

#[test]
fn a_standby_takes_over_within_two_epochs_and_the_old_primary_does_not_fight() {
    if missing() {
        return;
    }
    let topo = topology();
    let lab = FabricLab::new(load_topology(&topo, None).unwrap());
    lab.link_loss(LOSSY[0], LOSSY[1], 10.0);
    let traffic = lab.traffic(100, 16, 200.0, 12);
    let report = lab.path("epochs.jsonl");
    let report_s = report.display().to_string();
    let mut primary = lab.daemon_named("primary", &run_args(&topo, &report_s, "10"));
    assert!(
        wait_for(Duration::from_secs(60), || report_lines(&report).len() >= 3),
        "{}",
        lab.output_of("primary")
    );
    let mut args = run_args(&topo, &report_s, "5");
    args.extend(["--epochs", "8", "--metrics", "127.0.0.1:9471"]);
    let mut standby = lab.daemon_named("standby", &args);
    assert!(
        wait_for(Duration::from_secs(20), || lab
            .output_of("standby")
            .contains("standing by")),
        "{}",
        lab.output_of("standby")
    );
    let metric = |name: &str| {
        let text = http_get_in_ns(&lab.fab, "127.0.0.1:9471", "/metrics").unwrap_or_default();
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    assert_eq!(
        metric("canary_controller_primary "),
        Some(0.0),
        "standing by"
    );
    // The primary goes on while the standby watches.
    let n = report_lines(&report).len();
    assert!(wait_for(Duration::from_secs(10), || report_lines(&report)
        .len()
        >= n + 2));
    std::thread::sleep(random_point());
    primary.0.kill().unwrap();
    primary.0.wait().unwrap();
    let killed = Instant::now();
    assert!(
        wait_for(Duration::from_secs(20), || report_lines(&report)
            .iter()
            .any(found_running)),
        "{}",
        lab.output_of("standby")
    );
    let takeover = killed.elapsed();
    eprintln!("the standby's first epoch report {takeover:?} after the primary's death");
    assert_eq!(
        metric("canary_controller_primary "),
        Some(1.0),
        "primary now"
    );
    assert_eq!(metric("canary_controller_takeovers_total "), Some(1.0));
    assert!(metric("canary_epochs_incomplete_total ").is_some_and(|n| n >= 1.0));

    // The old primary comes back with its higher id: it must stand by, not take over.
    let mut back = lab.daemon_named("back", &run_args(&topo, &report_s, "10"));
    assert!(
        wait_for(Duration::from_secs(20), || lab
            .output_of("back")
            .contains("standing by")),
        "--- back\n{}\n--- standby\n{}",
        lab.output_of("back"),
        lab.output_of("standby")
    );
    let n = report_lines(&report).len();
    assert!(wait_for(Duration::from_secs(10), || report_lines(&report)
        .len()
        >= n + 2));
    back.0.kill().unwrap();
    back.0.wait().unwrap();
    let status = wait_child(&mut standby.0, Duration::from_secs(60));
    traffic.stop();
    let out = lab.output_of("standby");
    assert!(status.is_some_and(|s| s.success()), "{out}");
    assert!(!out.contains("standing down"), "{out}");
    let back_out = lab.output_of("back");
    assert!(!back_out.contains("is gone: taking over"), "{back_out}");
    let lines = report_lines(&report);
    assert_report_goes_on(&lines, 6, Some(LOSSY));
    // The lossy link is one incident from before the primary's death to the standby's last
    // epoch: the standby took up the database beside the report and went on with it.
    let found = |l: &Value| {
        l["blamed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["link"] == serde_json::json!(LOSSY))
    };
    let first = lines
        .iter()
        .position(found)
        .expect("the lossy link blamed before the kill");
    let resumed = resumed_at(&lines);
    assert!(
        first < resumed,
        "blamed first in epoch {first}, after the takeover ({resumed})"
    );
    let db = lab.path("epochs.incidents.sqlite");
    let out = canary_testkit::succeeded(
        std::process::Command::new(env!("CARGO_BIN_EXE_canary"))
            .args(["incidents", "--json", "--db"])
            .arg(&db),
    );
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let of_link: Vec<&Value> = all
        .iter()
        .filter(|i| i["subject"]["link"] == serde_json::json!(LOSSY))
        .collect();
    assert_eq!(of_link.len(), 1, "one incident of the lossy link: {all:#?}");
    assert_eq!(of_link[0]["first_epoch"], first as u64, "{all:#?}");
    assert_eq!(of_link[0]["last_epoch"], lines.len() as u64 - 1, "{all:#?}");
    assert_eq!(all.len(), 1, "no other incident: {all:#?}");
    // Two epochs of the dead primary's: it died at most one epoch before the flip that ended
    // the epoch the standby found running, which the standby reported a drain later.
    assert!(
        takeover <= Duration::from_millis(2 * EPOCH_MS + 200),
        "the standby took {takeover:?} to report its first epoch"
    );
}
