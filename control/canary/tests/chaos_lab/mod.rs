//! The chaos lab: a loss-free k=4 fat-tree of chaos-driven switches (the simulated data plane
//! behind the driver interface), the generic fabric above them, and the controller, with every
//! harvest checked against the switch's meters of exactly that epoch.
#![allow(dead_code)]

use canary_controller::controller::{Controller, ControllerConfig};
use canary_controller::report::EpochReport;
use canary_controller::setup::{load_topology, prepare, Prepared};
use canary_core::capacity::Capacity;
use canary_core::fabric::{
    Fabric, HhReport, MeterSnapshot, Resumed, RuleOp, Sink, SwitchError, SwitchResult,
};
use canary_core::model::epoch_tag;
use canary_core::pathbf::PathBfParams;
use canary_core::sketch::{DsmBucket, UsmBucket};
use canary_core::topo::{PortMap, SwitchIx, Topology};
use canary_sim::{SimConfig, SimFabric};
use canary_switch::contract::Program;
use canary_switch::drivers::chaos::{
    ChaosDriver, ChaosOptions, Fault, Lifeline, Plane, PlaneClock,
};
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use canary_switch::p4info::P4InfoFile;
use canary_switch::rule_ids::RuleKey;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const EPOCH: Duration = Duration::from_millis(100);

pub type ChaosFabric = SwitchFabric<ChaosDriver, PlaneClock>;

/// The compiled program's contract (the P4Info kept as test data), as BMv2 would resolve it.
pub fn program() -> Arc<Program> {
    let bytes = include_bytes!("../../../switch/testdata/v1model/canary.p4info.bin");
    let idx = P4InfoFile::decode("canary.p4info.bin", bytes.to_vec()).unwrap();
    Arc::new(Program::from_p4info(&idx.path, &idx.info).unwrap())
}

/// The fabric the controller uses, checking every harvest against the data plane.
pub struct Checked<'a> {
    pub inner: &'a mut ChaosFabric,
    pub plane: &'a Plane,
    pub topo: &'a Topology,
    pub harvested: &'a mut u64,
    /// Buckets the harvests found occupied.
    pub occupied: &'a mut u64,
}

/// Buckets for which `known` fails, emptied (what a harvest decodes for unknown rule IDs).
fn blank_unknown<B: canary_core::sketch::Bucket>(
    m: &canary_core::sketch::Meter<B>,
    known: impl Fn(&B) -> bool,
) -> canary_core::sketch::Meter<B> {
    let buckets = m
        .buckets()
        .iter()
        .map(|b| {
            if b.flow().is_none() || known(b) {
                b.clone()
            } else {
                B::default()
            }
        })
        .collect();
    canary_core::sketch::Meter::from_buckets(m.config(), buckets).unwrap()
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
    async fn harvest_each(&mut self, epoch: u64, sink: &mut Sink<'_>) {
        for (s, r) in self.checked_harvest(epoch).await {
            sink(s, r);
        }
    }
    async fn apply(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)> {
        self.inner.apply(ops).await
    }
    fn take_resumed(&mut self) -> Option<Resumed> {
        self.inner.take_resumed()
    }
    async fn take_reports(&mut self) -> Vec<HhReport> {
        self.inner.take_reports().await
    }
    async fn health(&mut self) -> Vec<(SwitchIx, SwitchError)> {
        self.inner.health().await
    }
}

impl Checked<'_> {
    async fn checked_harvest(
        &mut self,
        epoch: u64,
    ) -> Vec<(SwitchIx, SwitchResult<MeterSnapshot>)> {
        // Switches whose buckets may hold rules of a controller before this one (just adopted).
        let adopted: Vec<bool> = (0..self.topo.switches.len())
            .map(|s| self.inner.rule_ids(s as SwitchIx).unknown_ok())
            .collect();
        let out = self.inner.harvest(epoch).await;
        let mut plane = self.plane.lock().unwrap();
        for (s, r) in &out {
            if let Ok(snap) = r {
                let (mut usm, mut dsm) = plane.switch_mut(*s).meters_of(epoch_tag(epoch));
                if adopted[*s as usize] {
                    // Rules the dead controller removed are on no switch to read back: their
                    // buckets read as empty, and every other bucket must still be exact.
                    let ids = self.inner.rule_ids(*s);
                    usm = blank_unknown(&usm, |b: &UsmBucket| {
                        ids.id_of(&RuleKey::Usm(b.flow.unwrap())).is_some()
                    });
                    dsm = blank_unknown(&dsm, |b: &DsmBucket| {
                        ids.id_of(&RuleKey::Dsm(b.flow.unwrap(), b.path_bf))
                            .is_some()
                    });
                }
                *self.occupied += (snap.usm.occupied() + snap.dsm.occupied()) as u64;
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
}

pub struct Rig {
    pub rt: tokio::runtime::Runtime,
    pub plane: Plane,
    pub fabric: ChaosFabric,
    pub ctl: Controller,
    pub topo: Topology,
    pub reports: Vec<EpochReport>,
    pub harvested: u64,
    /// Buckets the harvests found occupied, over the run.
    pub occupied: u64,
    pub prep: Prepared,
    pub ports: PortMap,
    pub drain: Duration,
}

/// The fabric a controller process builds over `drivers`.
pub fn fabric_over(
    prep: &Prepared,
    ports: &PortMap,
    plane: &Plane,
    drivers: Vec<ChaosDriver>,
) -> ChaosFabric {
    let capacity = program().capacity();
    SwitchFabric::new(
        &prep.topo,
        ports,
        &prep.codec.masks,
        drivers,
        capacity,
        FabricOptions {
            harvest_deadline: Duration::from_millis(100),
            ..Default::default()
        },
    )
    .with_clock(PlaneClock(plane.clone()))
}

/// The controller a process starts.
pub fn controller(prep: &Prepared, drain: Duration) -> Controller {
    Controller::new(
        prep.topo.clone(),
        prep.segments.clone(),
        prep.codec.clone(),
        ControllerConfig {
            epoch: EPOCH,
            drain,
            ..Default::default()
        },
    )
}

impl Rig {
    pub fn new(seed: u64) -> Rig {
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
        let fabric = fabric_over(&prep, &ports, &plane, drivers);
        let ctl = controller(&prep, drain);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut rig = Rig {
            rt,
            plane,
            fabric,
            ctl,
            topo: prep.topo.clone(),
            reports: Vec::new(),
            harvested: 0,
            occupied: 0,
            prep,
            ports,
            drain,
        };
        rig.rt
            .block_on(rig.fabric.connect(Duration::from_secs(5)))
            .unwrap();
        rig.with_controller(|ctl, f| {
            Box::pin(async move {
                ctl.start(f).await;
            })
        });
        rig
    }

    /// Runs `step` with the controller and the checked fabric.
    pub fn with_controller<T>(
        &mut self,
        step: impl for<'c> FnOnce(
            &'c mut Controller,
            &'c mut Checked<'_>,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'c>>,
    ) -> T {
        let Rig {
            rt,
            ctl,
            fabric,
            plane,
            topo,
            harvested,
            occupied,
            ..
        } = self;
        let mut f = Checked {
            inner: fabric,
            plane,
            topo,
            harvested,
            occupied,
        };
        rt.block_on(step(ctl, &mut f))
    }

    pub fn epochs(&mut self, n: usize) {
        for _ in 0..n {
            let r = self.with_controller(|ctl, f| Box::pin(async move { ctl.run_epoch(f).await }));
            self.reports.push(r);
        }
    }

    /// The running controller process dies after `calls` more switch calls, wherever in an
    /// epoch that falls (between two writes of a batch, during a flip or a harvest); epochs run
    /// until it does. Returns the epochs it finished.
    pub fn run_until_killed(&mut self, calls: u64) -> usize {
        let life = Lifeline::dies_after(calls);
        for s in 0..self.topo.switches.len() {
            self.fabric
                .driver_mut(s as SwitchIx)
                .set_lifeline(life.clone());
        }
        let mut finished = 0;
        loop {
            let l = life.clone();
            let r = self.with_controller(|ctl, f| {
                Box::pin(async move {
                    tokio::select! {
                        biased;
                        r = ctl.run_epoch(f) => Some(r),
                        _ = async { while !l.dead() { tokio::task::yield_now().await } } => None,
                    }
                })
            });
            match r {
                Some(r) => {
                    self.reports.push(r);
                    finished += 1;
                }
                // The epoch's future is dropped where it hung: the process is gone.
                None => return finished,
            }
        }
    }

    /// The drivers, fabric and controller of a new controller process over the same switches
    /// (a restart, or a standby), not connected yet.
    pub fn another_process(&self) -> (ChaosFabric, Controller) {
        let drivers = (0..self.topo.switches.len())
            .map(|s| self.fabric.driver(s as SwitchIx).another_controller())
            .collect();
        (
            fabric_over(&self.prep, &self.ports, &self.plane, drivers),
            controller(&self.prep, self.drain),
        )
    }

    /// `process` takes over: connects (adopting what it finds) and starts after `last_reported`.
    /// Returns the epochs it reports as missed.
    pub fn take_over(
        &mut self,
        process: (ChaosFabric, Controller),
        last_reported: Option<u64>,
    ) -> Vec<EpochReport> {
        (self.fabric, self.ctl) = process;
        self.rt
            .block_on(self.fabric.connect(Duration::from_secs(5)))
            .unwrap();
        self.with_controller(|ctl, f| {
            Box::pin(async move { ctl.start_after(f, last_reported).await })
        })
    }

    /// Every rule each switch holds now, as installs.
    pub fn rules_on_switches(&self) -> Vec<Vec<RuleOp>> {
        let mut plane = self.plane.lock().unwrap();
        (0..self.topo.switches.len())
            .map(|s| plane.switch_mut(s as SwitchIx).installed())
            .collect()
    }

    pub fn sw(&self, name: &str) -> SwitchIx {
        self.topo.switch(name).unwrap()
    }

    pub fn inject(&mut self, name: &str, fault: Fault) {
        let s = self.sw(name);
        self.fabric.driver_mut(s).inject(fault);
    }

    /// Nothing blamed in any epoch; meters were harvested and counted packets.
    pub fn assert_clean(&self) {
        if std::env::var_os("CHAOS_PRINT").is_some() {
            for r in &self.reports {
                eprint!("{}", canary_controller::report::render_epoch(r, 20));
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
    pub fn said_about(&self, name: &str) -> Vec<String> {
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

pub fn mentions(said: &[String], what: &str) -> bool {
    said.iter().any(|s| s.contains(what))
}
