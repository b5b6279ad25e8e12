//! `canary run` SIGKILLed and started again: it adopts what the switches hold, the pipeline
//! (its cookie read back) and the meters (every register read back, unchanged, with the traffic
//! stopped) as well as the rules.

use super::*;
use canary_switch::entries::ReadRule;

#[test]
fn a_sigkilled_controller_restarts_without_wiping_the_switches() {
    if missing() {
        return;
    }
    let topo = topology();
    let lab = FabricLab::new(load_topology(&topo, None).unwrap());
    let mut traffic = lab.traffic(100, 8, 200.0, 11);
    let report = lab.path("epochs.jsonl");
    let report_s = report.display().to_string();
    let mut a = lab.daemon_named("a", &run_args(&topo, &report_s, "10"));
    assert!(
        wait_for(Duration::from_secs(60), || report_lines(&report).len() >= 4),
        "{}",
        lab.output_of("a")
    );
    std::thread::sleep(random_point());
    a.0.kill().unwrap();
    a.0.wait().unwrap();
    // The traffic runs on for half an epoch with nobody to flip or clear the meters, then
    // stops: the meters hold what they counted until the new controller's first harvest.
    std::thread::sleep(Duration::from_millis(EPOCH_MS / 2));
    traffic.stop();
    std::thread::sleep(Duration::from_millis(100));
    let meters = meters_on(&lab);
    let counted: i64 = meters.iter().flatten().filter(|&&c| c != 0).count() as i64;
    assert!(counted > 0, "the meters counted nothing before the kill");
    let at_kill = rules_on(&lab);
    assert!(!at_kill.is_empty(), "no rules on the switches at the kill");
    let cookies = cookies_on(&lab);
    assert!(
        cookies.iter().all(|c| c.is_some() && *c == cookies[0]),
        "every switch runs the program with one cookie: {cookies:x?}"
    );

    let mut args = run_args(&topo, &report_s, "10");
    args.extend(["--epochs", "6"]);
    let mut b = lab.daemon_named("b", &args);
    assert!(
        wait_for(Duration::from_secs(30), || lab
            .output_of("b")
            .contains("resuming what an earlier controller left")),
        "{}",
        lab.output_of("b")
    );
    // Before its first epoch ends it has written nothing but the removal of rules that make
    // no monitored flow (a DSM rule whose USM rule was retired the epoch before).
    let resumed = rules_on(&lab);
    // Connected and resumed, before its first harvest (an epoch after it resumed): every meter
    // register as the killed controller left it.
    assert!(
        meters_on(&lab) == meters,
        "the restart changed the meters ({counted} cells were set)"
    );
    // Then the traffic again, once it has harvested the epoch it found running.
    assert!(
        wait_for(Duration::from_secs(10), || report_lines(&report)
            .iter()
            .any(|l| l["incomplete"]
                .as_str()
                .is_some_and(|w| w.contains("began before")))),
        "{}",
        lab.output_of("b")
    );
    traffic = lab.traffic(100, 8, 200.0, 11);
    assert_eq!(cookies_on(&lab), cookies, "the pipeline was pushed again");
    let usm_hh: BTreeSet<_> = at_kill
        .iter()
        .filter(|(_, r)| !matches!(r, ReadRule::Dsm { .. }))
        .copied()
        .collect();
    assert!(resumed.is_subset(&at_kill), "the restart wrote new rules");
    assert!(
        usm_hh.is_subset(&resumed),
        "USM or HH rules were lost in the restart ({} of {} kept)",
        usm_hh.intersection(&resumed).count(),
        usm_hh.len()
    );
    let status = wait_child(&mut b.0, Duration::from_secs(60));
    traffic.stop();
    assert!(
        status.is_some_and(|s| s.success()),
        "{}",
        lab.output_of("b")
    );
    assert!(
        lab.output_of("b").contains("0 configured afresh"),
        "every switch adopted: {}",
        lab.output_of("b")
    );
    eprintln!(
        "rules at the kill {}, after the restart {}; meter cells set at the kill and read back \
         unchanged {counted}",
        at_kill.len(),
        resumed.len(),
    );
    assert_report_goes_on(&report_lines(&report), 4, None);
}
