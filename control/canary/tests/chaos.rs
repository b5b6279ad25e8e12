//! Recovery, on any machine: the controller and the generic fabric (`canary_switch::fabric`)
//! above the chaos driver, which puts the switches of the simulated data plane (the reference
//! model at every hop, real traffic) behind the driver interface and injects faults. No BMv2 is
//! needed; BMv2 stays the real-switch check (`fabric_bmv2`, `daemon_bmv2`).
//!
//! Every test runs a k=4 fat-tree with one lossy link (10 % on edge3_1→agg3_1) and asserts:
//! * no epoch is mixed with another: every harvest that succeeds equals, bucket for bucket, the
//!   switch's meters of exactly that epoch (checked inside the fabric the controller uses);
//! * the lossy link is blamed, and stays blamed through the fault; nothing else is ever blamed,
//!   so a blame elsewhere is the fault's doing and a localizer that blames nothing fails;
//! * the epoch report says what happened to the switch.

mod chaos_lab;

use canary_controller::setup::prepare;
use canary_core::fabric::RuleOp;
use canary_core::pathbf::PathBfParams;
use canary_core::topo::SwitchIx;
use canary_doubles::chaos::{ChaosPlan, Fault};
use chaos_lab::{mentions, Rig, EPOCH};
use std::time::Duration;

#[test]
fn a_clean_run_harvests_every_epoch_and_blames_only_the_lossy_link() {
    let mut rig = Rig::new(1);
    rig.epochs(8);
    rig.assert_clean();
    for r in &rig.reports[1..] {
        assert!(
            r.disturbed.is_empty(),
            "epoch {}: {:?}",
            r.epoch,
            r.disturbed
        );
        assert!(
            r.flows_counted > 0 && r.flows_counted_v6 > 0,
            "epoch {}",
            r.epoch
        );
    }
    assert_eq!(rig.harvested, 8 * rig.topo.monitors().count() as u64);
}

#[test]
fn a_disconnected_switch_is_unreachable_then_resumes_with_its_state() {
    let mut rig = Rig::new(2);
    rig.epochs(4);
    rig.inject("edge1_0", Fault::Disconnect { attempts: 2 });
    rig.epochs(6);
    rig.assert_clean();
    let said = rig.said_about("edge1_0");
    assert!(mentions(&said, "unreachable"), "{said:?}");
    // Back in the epoch after its last missed flip, it counted that epoch in an older epoch's
    // meters: its segments sit that epoch out too (they read as loss otherwise).
    assert!(mentions(&said, "missed the flip"), "{said:?}");
    assert!(
        !mentions(&said, "came back without"),
        "it kept its state: {said:?}"
    );
    assert_eq!(rig.fabric.counters.repushes, 0);
    assert!(rig.reports.last().unwrap().disturbed.is_empty());
    // The rule changes asked for while it was out of reach reached it once it was back: it
    // holds exactly the rules the controller asked for (no stale rule, none missing).
    let s = rig.sw("edge1_0");
    // The model holds its rules without its own index.
    let key = |v: Vec<RuleOp>| {
        let mut k: Vec<String> = v.into_iter().map(|o| format!("{:?}", o.on(0))).collect();
        k.sort();
        k
    };
    let (held, wanted) = (
        key(rig.rules_on_switches()[s as usize].clone()),
        key(rig.fabric.desired_rules(s)),
    );
    assert_eq!(held, wanted, "edge1_0's rules after its outage");
}

#[test]
fn a_restarted_switch_is_configured_again_and_its_outage_is_not_loss() {
    let mut rig = Rig::new(3);
    rig.epochs(4);
    // A monitor on many segments reboots: it drops every packet for half an epoch.
    rig.inject("agg0_0", Fault::Restart { down: EPOCH / 2 });
    rig.inject("edge2_1", Fault::Restart { down: EPOCH * 2 });
    rig.epochs(8);
    rig.assert_clean();
    for name in ["agg0_0", "edge2_1"] {
        let said = rig.said_about(name);
        assert!(
            mentions(&said, "came back without Canary's state"),
            "{name}: {said:?}"
        );
    }
    assert_eq!(rig.fabric.counters.repushes, 2);
    let last = rig.reports.last().unwrap();
    assert!(last.disturbed.is_empty(), "{:?}", last.disturbed);
}

#[test]
fn a_harvest_slower_than_its_deadline_skips_that_switch_for_the_epoch() {
    let mut rig = Rig::new(4);
    rig.epochs(3);
    rig.inject(
        "edge0_1",
        Fault::SlowHarvest {
            delay: Duration::from_millis(400),
            reads: 2,
        },
    );
    rig.epochs(6);
    rig.assert_clean();
    let said = rig.said_about("edge0_1");
    assert_eq!(
        said.iter()
            .filter(|s| s.contains("slower than its deadline"))
            .count(),
        2,
        "{said:?}"
    );
    assert_eq!(rig.fabric.counters.harvests_late, 2);
}

#[test]
fn a_torn_register_read_fails_the_harvest_instead_of_being_decoded() {
    let mut rig = Rig::new(5);
    rig.epochs(3);
    rig.inject("core1", Fault::TornRead);
    rig.epochs(4);
    rig.assert_clean();
    let said = rig.said_about("core1");
    assert!(
        said.iter().all(|s| s.starts_with("epoch 3:")),
        "one epoch skipped: {said:?}"
    );
    assert!(
        mentions(&said, "1024 cells, the program says 2048"),
        "{said:?}"
    );
    assert_eq!(rig.fabric.counters.harvest_errors, 1);
}

#[test]
fn a_digest_flood_is_bounded_and_counted() {
    let mut rig = Rig::new(6);
    rig.epochs(3);
    // A burst of digests on the pathBF of a real segment into edge3_1.
    let s = rig.sw("edge3_1");
    let bf = {
        let prep = prepare(rig.topo.clone(), PathBfParams::default()).unwrap();
        let seg = (0..prep.segments.len())
            .find(|&g| prep.segments.get(g as _).downstream() == s)
            .unwrap();
        prep.codec.segment_bf[seg]
    };
    rig.inject(
        "edge3_1",
        Fault::DigestFlood {
            n: 100_000,
            path_bf: bf,
        },
    );
    rig.epochs(4);
    rig.assert_clean();
    let c = &rig.fabric.counters;
    assert!(c.digests_dropped >= 100_000 - 4096, "{c:?}");
    let seen: u64 = rig
        .reports
        .iter()
        .map(|r| u64::from(r.selection.reports))
        .sum();
    assert!(
        seen >= 4096,
        "the reports that fit the queue reached selection: {seen}"
    );
}

#[test]
fn refused_rule_writes_are_reported_and_nothing_is_blamed_for_them() {
    let mut rig = Rig::new(7);
    rig.epochs(1);
    for name in ["edge0_0", "core0", "edge3_1"] {
        rig.inject(name, Fault::RefuseWrites { n: 40 });
    }
    rig.epochs(7);
    rig.assert_clean();
    let failed: u32 = rig.reports.iter().map(|r| r.rules.failed).sum();
    assert_eq!(failed, 120, "every refused write is in the reports");
    assert_eq!(rig.fabric.counters.write_errors, 120);
}

#[test]
fn a_switch_back_with_another_program_is_reloaded_or_kept_out() {
    let mut rig = Rig::new(8);
    rig.epochs(3);
    rig.inject("agg2_1", Fault::OtherPipeline { replaceable: true });
    rig.inject("edge1_1", Fault::OtherPipeline { replaceable: false });
    rig.epochs(6);
    rig.assert_clean();
    let said = rig.said_about("agg2_1");
    assert!(
        mentions(&said, "came back without Canary's state"),
        "{said:?}"
    );
    assert_eq!(said.len(), 2, "that epoch and the next sit out: {said:?}");
    // The other one never takes Canary's program: every epoch from then on says so.
    let said = rig.said_about("edge1_1");
    assert!(
        said.iter()
            .filter(|s| s.contains("another program"))
            .count()
            >= 5,
        "{said:?}"
    );
}

#[test]
fn a_seeded_plan_of_faults_is_survived() {
    for seed in [11, 12] {
        let mut rig = Rig::new(seed);
        let monitors: Vec<SwitchIx> = rig.topo.monitors().collect();
        let plan = ChaosPlan::random(seed, 16, &monitors, 6, EPOCH);
        assert_eq!(plan.faults.len(), 6);
        rig.epochs(1);
        for e in 1..16 {
            for (_, s, f) in plan.due(e) {
                rig.fabric.driver_mut(*s).inject(f.clone());
            }
            rig.epochs(1);
        }
        rig.assert_clean();
        let disturbed = rig
            .reports
            .iter()
            .filter(|r| !r.disturbed.is_empty())
            .count();
        assert!(
            disturbed >= 3,
            "seed {seed}: the faults left no trace: {:?}",
            plan.faults
        );
    }
}

/// An operator drains a link in the forwarding Canary owns (`canary run --out-of-service`):
/// the switches' routes and ECMP groups are rewritten in place, the plane's flows follow the
/// new tables, nothing is blamed for the move, and the report says the link is out of service.
/// Put back, it is counted again.
#[test]
fn a_link_taken_out_of_service_moves_its_flows_and_blames_nothing() {
    let mut rig = Rig::new(8);
    rig.epochs(4);
    let drained = ["agg1_0", "core0"];
    let link = rig.topo.link_by_names(drained[0], drained[1]).unwrap();
    let rewritten = rig
        .rt
        .block_on(rig.fabric.set_out_of_service(&[link]))
        .unwrap();
    // Both ends and every switch that routed through it: agg1_0, core0, and the pod's edges
    // and the other pods' aggregation switches behind core0.
    assert!(rewritten.len() >= 4, "{rewritten:?}");
    rig.epochs(8);
    let back_at = rig.reports.len();
    rig.rt.block_on(rig.fabric.set_out_of_service(&[])).unwrap();
    rig.epochs(6);
    rig.assert_clean();
    let named = |r: &canary_controller::report::EpochReport| {
        r.out_of_service
            .iter()
            .any(|l| l == &drained.map(String::from))
    };
    let age = |r: &canary_controller::report::EpochReport| {
        r.evidence_map
            .links
            .iter()
            .find(|e| e.link == drained.map(String::from))
            .map_or(u64::MAX, |e| e.age_epochs)
    };
    for r in &rig.reports[4..back_at] {
        assert!(named(r), "epoch {}: {:?}", r.epoch, r.out_of_service);
    }
    // No segment through the drained link counts packets once the epochs of the move are
    // over: its evidence only ages.
    let ages: Vec<u64> = rig.reports[6..back_at].iter().map(age).collect();
    assert!(ages.windows(2).all(|w| w[1] == w[0] + 1), "{ages:?}");
    let last = rig.reports.last().unwrap();
    assert!(!named(last) && age(last) == 0, "{:?}", last.evidence_map);
}
