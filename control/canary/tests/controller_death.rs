//! The controller's own death, on any machine (the chaos lab: chaos-driven switches of the
//! simulated data plane, every harvest checked against the switch's meters of that epoch).
//!
//! A controller process is killed after a seeded number of switch calls, which lands anywhere
//! in an epoch: before or during the flip, during the harvest, between two writes of a rule
//! batch. Then a new process takes over: restarted, or a standby that was asking the switches'
//! arbitration who is primary all along and sees the switches freed. Then:
//! * it writes nothing to the switches when it connects: meters, rules and monitored flows are
//!   the ones the dead process left;
//! * it monitors exactly the flows the switches hold rules for;
//! * the report goes on: every epoch once, in order, the one the new process found running
//!   marked incomplete, nothing blamed from it, and the one lossy link blamed again after it
//!   (nothing else ever).
//!
//! The BMv2 versions (`controller_death_bmv2`) SIGKILL a real `canary run`.

mod chaos_lab;

use canary_controller::report::EpochReport;
use canary_controller::report_file::ReportFile;
use canary_core::fabric::RuleOp;
use canary_core::pathbf::Decoded;
use chaos_lab::{only_the_lossy_link_blamed, Rig, EPOCH, PROBE_EVERY};
use rand::{Rng, SeedableRng};
use std::collections::HashSet;

/// Monitored flows the switches' rules make: a DSM rule whose segment's USM rule is upstream.
fn monitored_by_rules(rig: &Rig, rules: &[Vec<RuleOp>]) -> usize {
    let usm: HashSet<(usize, canary_core::FlowId)> = rules
        .iter()
        .enumerate()
        .flat_map(|(s, ops)| {
            ops.iter().filter_map(move |op| match op {
                RuleOp::InstallUsm { flow, .. } => Some((s, *flow)),
                _ => None,
            })
        })
        .collect();
    let mut n = 0;
    for (s, ops) in rules.iter().enumerate() {
        for op in ops {
            if let RuleOp::InstallDsm { flow, path_bf, .. } = op {
                if let Decoded::Segment(seg) = rig.prep.codec.decode(s as u32, *path_bf) {
                    let up = rig.prep.segments.get(seg).upstream() as usize;
                    n += usize::from(usm.contains(&(up, *flow)));
                }
            }
        }
    }
    n
}

/// Seeded kill points, counted in switch calls after the warm-up: one in each stretch of an
/// epoch on the k=4 fat-tree (12 monitors): during the flip (calls 1–12), during the harvest
/// (reads and HashPipe clears, 13–36), among the rule writes (about 850 per epoch with the
/// sentinels, each write of a batch a call), and an epoch or two later (an epoch is about 880
/// calls).
fn kill_points(seed: u64) -> Vec<u64> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    [(1, 12), (13, 36), (37, 300), (301, 850), (900, 2600)]
        .into_iter()
        .map(|(a, b)| rng.random_range(a..=b))
        .collect()
}

/// The running controller is dead (killed after `calls` switch calls); `next` takes over:
/// checks what the new process found and returns the reports it wrote for the missed epochs.
fn take_over(
    rig: &mut Rig,
    calls: u64,
    next: (
        chaos_lab::ChaosFabric,
        canary_controller::controller::Controller,
    ),
    last_reported: impl FnOnce(&Rig) -> Option<u64>,
) -> Vec<EpochReport> {
    let at_kill = rig.rules_on_switches();
    let last = last_reported(rig);
    (rig.fabric, rig.ctl) = next;
    rig.rt
        .block_on(rig.fabric.connect(std::time::Duration::from_secs(5)))
        .unwrap();
    let counts = |r: &[Vec<RuleOp>]| r.iter().map(Vec::len).collect::<Vec<_>>();
    let now = rig.rules_on_switches();
    assert!(
        now == at_kill,
        "connecting wrote to the switches (kill after {calls} calls): rules per switch {:?}, \
         were {:?}",
        counts(&now),
        counts(&at_kill)
    );
    let missed =
        rig.with_controller(|ctl, f| Box::pin(async move { ctl.start_after(f, last).await }));
    let monitored = monitored_by_rules(rig, &at_kill);
    assert!(monitored > 0, "nothing was monitored at the kill");
    assert_eq!(
        rig.ctl.monitored(),
        monitored,
        "the new controller does not monitor the flows the switches hold (kill after {calls})"
    );
    missed
}

/// Every epoch once and in order; the taken-over epoch marked and nothing blamed from it, the
/// epochs after it whole again, and the lossy link blamed at the end and nothing else ever.
fn assert_report_goes_on(reports: &[EpochReport], calls: u64) {
    let epochs: Vec<u64> = reports.iter().map(|r| r.epoch).collect();
    let want: Vec<u64> = (0..reports.len() as u64).collect();
    assert_eq!(epochs, want, "kill after {calls}: epochs lost or repeated");
    let incomplete: Vec<&EpochReport> = reports.iter().filter(|r| r.incomplete.is_some()).collect();
    assert!(
        !incomplete.is_empty() && incomplete.len() <= 2,
        "kill after {calls}: {} incomplete epochs",
        incomplete.len()
    );
    let resumed = incomplete.last().unwrap();
    assert!(
        resumed
            .incomplete
            .as_deref()
            .unwrap()
            .contains("began before"),
        "{:?}",
        resumed.incomplete
    );
    // The lossy link is found again by the process that took over, and nothing else is blamed.
    only_the_lossy_link_blamed(reports, &format!("kill after {calls}"));
    assert!(
        resumed.blamed.is_empty(),
        "nothing blamed from the taken-over epoch"
    );
    let after: Vec<&EpochReport> = reports.iter().filter(|r| r.epoch > resumed.epoch).collect();
    assert!(after.len() >= 4);
    for r in after {
        assert!(r.incomplete.is_none(), "epoch {}", r.epoch);
        assert!(
            r.disturbed.is_empty(),
            "epoch {}: {:?}",
            r.epoch,
            r.disturbed
        );
        assert!(
            r.packets_counted > 0 && r.flows_counted > 0,
            "epoch {}",
            r.epoch
        );
    }
}

#[test]
fn a_controller_killed_anywhere_in_an_epoch_restarts_without_wiping_the_switches() {
    for (i, calls) in kill_points(20).into_iter().enumerate() {
        let mut rig = Rig::new(20 + i as u64);
        rig.epochs(4);
        let next = rig.another_process();
        let occupied_before = rig.occupied;
        rig.run_until_killed(calls);
        let missed = take_over(&mut rig, calls, next, |rig| {
            rig.reports.last().map(|r| r.epoch)
        });
        if std::env::var_os("CHAOS_PRINT").is_some() {
            eprintln!(
                "kill after {calls}: missed {:?}",
                missed.iter().map(|r| r.epoch).collect::<Vec<_>>()
            );
        }
        rig.reports.extend(missed);
        rig.epochs(6);
        if std::env::var_os("CHAOS_PRINT").is_some() {
            for r in &rig.reports {
                eprint!("{}", canary_controller::report::render_epoch(r, 3));
            }
        }
        assert_eq!(
            rig.fabric.counters.repushes, 0,
            "kill after {calls}: a switch was wiped"
        );
        assert!(
            rig.occupied > occupied_before,
            "kill after {calls}: the harvests after the restart found nothing"
        );
        assert_report_goes_on(&rig.reports, calls);
    }
}

#[test]
fn a_standby_sees_the_primary_die_takes_over_within_two_epochs_and_the_report_file_goes_on() {
    for (i, calls) in kill_points(30).into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.jsonl");
        let mut rig = Rig::new(30 + i as u64);
        let mut primary_file = ReportFile::open(&path).unwrap();
        rig.epochs(4);
        let written = rig.reports.len();
        for r in &rig.reports {
            primary_file.append(r).unwrap();
        }
        // The standby process is up before the primary dies, asking the first switch who is
        // primary; it takes over when the switches' arbitration says nobody is.
        let probe = rig.standby_probe();
        let seen = rig.run_until_killed_beside(calls, &probe);
        assert_eq!(
            seen.generation, 2,
            "the standby takes over in the generation after the primary's"
        );
        let handover = seen.decided_at - seen.killed_at;
        assert!(
            handover <= 2 * PROBE_EVERY,
            "kill after {calls}: the standby decided {handover:?} after the death: it must see \
             the switch free twice, {PROBE_EVERY:?} apart"
        );
        if std::env::var_os("CHAOS_PRINT").is_some() {
            eprintln!(
                "kill after {calls}: {} epochs beside the standby, handover decided in {handover:?}",
                seen.finished
            );
        }
        let standby = rig.another_process_in(seen.generation);
        let missed = take_over(&mut rig, calls, standby, |rig| {
            // The epochs the primary finished before it died, it wrote as it went.
            for r in &rig.reports[written..] {
                primary_file.append(r).unwrap();
            }
            // The standby learns where the report stands from the file.
            ReportFile::open(&path).unwrap().last_epoch()
        });
        let mut file = ReportFile::open(&path).unwrap();
        let from = rig.reports.len();
        rig.reports.extend(missed);
        rig.epochs(6);
        for r in &rig.reports[from..] {
            assert!(file.append(r).unwrap(), "epoch {} written twice", r.epoch);
        }
        let lines: Vec<EpochReport> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_report_goes_on(&lines, calls);
        // The standby's first epoch report, the one it found running, ends within two epochs
        // of the primary's death (plus the drain).
        let first = lines
            .iter()
            .find(|r| {
                r.incomplete
                    .as_deref()
                    .is_some_and(|w| w.contains("began before"))
            })
            .unwrap();
        let killed_at = seen.killed_at.as_secs_f64();
        let limit = killed_at + 2.0 * EPOCH.as_secs_f64() + rig.drain.as_secs_f64();
        assert!(
            first.at_s <= limit,
            "kill after {calls}: first report at {:.3} s, the primary died at {killed_at:.3} s",
            first.at_s
        );
    }
}
