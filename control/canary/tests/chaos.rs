//! Recovery, on any machine: the controller and the generic fabric (`canary_switch::fabric`)
//! above the chaos driver, which puts the switches of the simulated data plane (the reference
//! model at every hop, real traffic) behind the driver interface and injects faults. No BMv2 is
//! needed; BMv2 stays the real-switch check (`fabric_bmv2`, `daemon_bmv2`).
//!
//! Every test runs a loss-free k=4 fat-tree and asserts:
//! * no epoch is mixed with another: every harvest that succeeds equals, bucket for bucket, the
//!   switch's meters of exactly that epoch (checked inside the fabric the controller uses);
//! * nothing is blamed: the links lose nothing, so any blame is the fault's doing;
//! * the epoch report says what happened to the switch.

use canary::controller::{Controller, ControllerConfig};
use canary::report::EpochReport;
use canary::setup::{load_topology, prepare};
use canary_core::capacity::Capacity;
use canary_core::fabric::{Fabric, HhReport, MeterSnapshot, RuleOp, SwitchError, SwitchResult};
use canary_core::model::epoch_tag;
use canary_core::pathbf::PathBfParams;
use canary_core::topo::{PortMap, SwitchIx, Topology};
use canary_sim::{SimConfig, SimFabric};
use canary_switch::contract::Program;
use canary_switch::drivers::chaos::{
    ChaosDriver, ChaosOptions, ChaosPlan, Fault, Plane, PlaneClock,
};
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use canary_switch::p4info::P4InfoIndex;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const EPOCH: Duration = Duration::from_millis(100);

type ChaosFabric = SwitchFabric<ChaosDriver, PlaneClock>;

/// The compiled program's contract (the P4Info kept as test data), as BMv2 would resolve it.
fn program() -> Arc<Program> {
    let bytes = include_bytes!("../../switch/testdata/v1model/canary.p4info.bin");
    let idx = P4InfoIndex::decode("canary.p4info.bin", bytes.to_vec()).unwrap();
    Arc::new(Program::from_p4info(&idx.path, &idx.info).unwrap())
}

/// The fabric the controller uses, checking every harvest against the data plane.
struct Checked<'a> {
    inner: &'a mut ChaosFabric,
    plane: &'a Plane,
    topo: &'a Topology,
    harvested: &'a mut u64,
}

impl Fabric for Checked<'_> {
    fn now(&self) -> Duration {
        self.inner.now()
    }
    async fn wait(&mut self, d: Duration) {
        self.inner.wait(d).await
    }
    fn capacity(&self) -> Capacity {
        self.inner.capacity()
    }
    async fn set_epoch(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<()>)> {
        self.inner.set_epoch(epoch).await
    }
    async fn harvest(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<MeterSnapshot>)> {
        let out = self.inner.harvest(epoch).await;
        let mut plane = self.plane.lock().unwrap();
        for (s, r) in &out {
            if let Ok(snap) = r {
                let (usm, dsm) = plane.switch_mut(*s).meters_of(epoch_tag(epoch));
                let name = self.topo.name_of(*s);
                assert_eq!(snap.epoch, epoch);
                assert!(
                    snap.usm == usm && snap.dsm == dsm,
                    "{name}: the harvest of epoch {epoch} is not that epoch's meters \
                     (harvested USM/DSM buckets {}/{}, the switch's {}/{})",
                    snap.usm.occupied(),
                    snap.dsm.occupied(),
                    usm.occupied(),
                    dsm.occupied()
                );
                *self.harvested += 1;
            }
        }
        out
    }
    async fn apply(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)> {
        self.inner.apply(ops).await
    }
    async fn take_reports(&mut self) -> Vec<HhReport> {
        self.inner.take_reports().await
    }
    async fn health(&mut self) -> Vec<(SwitchIx, SwitchError)> {
        self.inner.health().await
    }
}

struct Rig {
    rt: tokio::runtime::Runtime,
    plane: Plane,
    fabric: ChaosFabric,
    ctl: Controller,
    topo: Topology,
    reports: Vec<EpochReport>,
    harvested: u64,
}

impl Rig {
    fn new(seed: u64) -> Rig {
        let topo = load_topology("fattree:4", None).unwrap();
        let prep = prepare(topo, PathBfParams::default()).unwrap();
        let program = program();
        let ports = PortMap::canonical(&prep.topo);
        let mut cfg = SimConfig {
            seed,
            capacity: program.capacity(),
            ipv6_share: 0.3,
            ..Default::default()
        };
        cfg.traffic.elephants.flows_per_host = 20;
        cfg.traffic.mice.flows_per_host = 20;
        let loss = vec![0.0; prep.topo.links.len()];
        let sim = SimFabric::driven(prep.topo.clone(), &prep.codec, loss, cfg, ports.clone());
        let drain = sim.drain_time();
        let plane: Plane = Arc::new(Mutex::new(sim));
        let drivers = prep
            .topo
            .switches
            .iter()
            .enumerate()
            .map(|(i, sw)| {
                ChaosDriver::new(
                    sw.name.clone(),
                    i as SwitchIx,
                    plane.clone(),
                    program.clone(),
                    ChaosOptions::default(),
                )
            })
            .collect();
        let fabric = SwitchFabric::new(
            &prep.topo,
            &ports,
            &prep.codec.masks,
            drivers,
            program.capacity(),
            FabricOptions {
                harvest_deadline: Duration::from_millis(100),
                attach_only: false,
            },
        )
        .with_clock(PlaneClock(plane.clone()));
        let ctl = Controller::new(
            prep.topo.clone(),
            prep.segments,
            prep.codec,
            ControllerConfig {
                epoch: EPOCH,
                drain,
                ..Default::default()
            },
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut rig = Rig {
            rt,
            plane,
            fabric,
            ctl,
            topo: prep.topo,
            reports: Vec::new(),
            harvested: 0,
        };
        rig.rt
            .block_on(rig.fabric.connect(Duration::from_secs(5)))
            .unwrap();
        rig.with_controller(|ctl, f| {
            Box::pin(async move {
                ctl.start(f).await;
                None
            })
        });
        rig
    }

    /// Runs `step` with the controller and the checked fabric.
    fn with_controller(
        &mut self,
        step: impl for<'c> FnOnce(
            &'c mut Controller,
            &'c mut Checked<'_>,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Option<EpochReport>> + 'c>,
        >,
    ) -> Option<EpochReport> {
        let Rig {
            rt,
            ctl,
            fabric,
            plane,
            topo,
            harvested,
            ..
        } = self;
        let mut f = Checked {
            inner: fabric,
            plane,
            topo,
            harvested,
        };
        rt.block_on(step(ctl, &mut f))
    }

    fn epochs(&mut self, n: usize) {
        for _ in 0..n {
            let r = self
                .with_controller(|ctl, f| Box::pin(async move { Some(ctl.run_epoch(f).await) }));
            self.reports.push(r.expect("an epoch report"));
        }
    }

    fn sw(&self, name: &str) -> SwitchIx {
        self.topo.switch(name).unwrap()
    }

    fn inject(&mut self, name: &str, fault: Fault) {
        let s = self.sw(name);
        self.fabric.driver_mut(s).inject(fault);
    }

    /// Nothing blamed in any epoch; meters were harvested and counted packets.
    fn assert_clean(&self) {
        if std::env::var_os("CHAOS_PRINT").is_some() {
            for r in &self.reports {
                eprint!("{}", canary::report::render_epoch(r, 20));
            }
        }
        for r in &self.reports {
            assert!(
                r.blamed.is_empty(),
                "epoch {} blamed {:?} (disturbed {:?})",
                r.epoch,
                r.blamed,
                r.disturbed
            );
        }
        assert!(self.harvested > 0, "no harvest succeeded");
        let counted: u64 = self.reports.iter().map(|r| r.packets_counted).sum();
        assert!(counted > 10_000, "only {counted} packets counted");
    }

    /// The report lines that mention switch `name`, as "epoch N: detail".
    fn said_about(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.reports {
            for d in &r.disturbed {
                if d.switch == name {
                    out.push(format!("epoch {}: {}", r.epoch, d.detail));
                }
            }
            if r.unreachable.iter().any(|u| u == name) {
                out.push(format!("epoch {}: unreachable", r.epoch));
            }
        }
        out
    }
}

fn mentions(said: &[String], what: &str) -> bool {
    said.iter().any(|s| s.contains(what))
}

#[test]
fn a_clean_run_harvests_every_epoch_and_blames_nothing() {
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
    assert!(
        !mentions(&said, "came back without"),
        "it kept its state: {said:?}"
    );
    assert_eq!(rig.fabric.counters.repushes, 0);
    assert!(rig.reports.last().unwrap().disturbed.is_empty());
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
