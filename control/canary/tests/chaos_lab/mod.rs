//! The chaos lab: a k=4 fat-tree with one lossy link, of chaos-driven switches (the simulated
//! data plane behind the driver interface), the generic fabric above them, and the controller, with every
//! harvest checked against the switch's meters of exactly that epoch.
#![allow(dead_code)]

mod checked;
mod lossy;
mod standing_by;
pub use checked::Checked;
pub use lossy::{blames_the_lossy_link, only_the_lossy_link_blamed, LOSSY, LOSSY_RATE};
#[allow(unused_imports)]
pub use standing_by::PROBE_EVERY;

use canary_controller::controller::{Controller, ControllerConfig};
use canary_controller::report::EpochReport;
use canary_controller::setup::{load_topology, prepare, Prepared};
use canary_controller::standby;
use canary_core::fabric::RuleOp;
use canary_core::pathbf::PathBfParams;
use canary_core::topo::{PortMap, SwitchIx, Topology};
use canary_doubles::chaos::{ChaosDriver, ChaosOptions, Fault, Lifeline, Plane, PlaneClock};
use canary_sim::{SimConfig, SimFabric};
use canary_switch::contract::Program;
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use canary_switch::p4info::P4InfoFile;
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

/// The fabric a controller process builds over `drivers`; standbys ask the first switch, as
/// with `canary run`.
pub fn fabric_over(
    prep: &Prepared,
    ports: &PortMap,
    plane: &Plane,
    drivers: Vec<ChaosDriver>,
) -> ChaosFabric {
    let capacity = program().capacity();
    let mut fabric = SwitchFabric::new(
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
    .with_clock(PlaneClock(plane.clone()));
    fabric.set_lease(0);
    fabric
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
        let mut loss = vec![0.0; prep.topo.links.len()];
        let lossy = prep.topo.link_by_names(LOSSY[0], LOSSY[1]).unwrap();
        loss[lossy as usize] = LOSSY_RATE;
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
                .with_election_id(standby::election_id(1, 1))
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
        let (rt, ctl, mut f, _) = self.parts();
        rt.block_on(step(ctl, &mut f))
    }

    /// The runtime, the controller, the checked fabric and the reports, borrowed apart.
    pub fn parts(
        &mut self,
    ) -> (
        &tokio::runtime::Runtime,
        &mut Controller,
        Checked<'_>,
        &mut Vec<EpochReport>,
    ) {
        let Rig {
            rt,
            ctl,
            fabric,
            plane,
            topo,
            harvested,
            occupied,
            reports,
            ..
        } = self;
        let f = Checked {
            inner: fabric,
            plane,
            topo,
            harvested,
            occupied,
        };
        (rt, ctl, f, reports)
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
    /// (a restart), not connected yet.
    pub fn another_process(&self) -> (ChaosFabric, Controller) {
        self.another_process_in(1)
    }

    /// The same, for a controller taking over in `generation` (a standby).
    pub fn another_process_in(&self, generation: u64) -> (ChaosFabric, Controller) {
        let drivers = (0..self.topo.switches.len())
            .map(|s| {
                self.fabric
                    .driver(s as SwitchIx)
                    .another_controller()
                    .with_election_id(standby::election_id(generation, 2))
            })
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

    /// The lossy link blamed, and held, through whatever the switches did; nothing else ever
    /// blamed; meters were harvested and counted packets.
    pub fn assert_clean(&self) {
        if std::env::var_os("CHAOS_PRINT").is_some() {
            for r in &self.reports {
                eprint!("{}", canary_controller::report::render_epoch(r, 20));
            }
        }
        only_the_lossy_link_blamed(&self.reports, "the run");
        // Once found, it stays blamed in every epoch that counted.
        let first = self.reports.iter().position(blames_the_lossy_link).unwrap();
        for r in &self.reports[first..] {
            assert!(
                r.incomplete.is_some() || blames_the_lossy_link(r),
                "epoch {}: the lossy link not blamed (blamed {:?}, disturbed {:?})",
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
