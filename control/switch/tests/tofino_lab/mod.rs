//! A line of two model switches behind BF Runtime over one simulated data plane, for the
//! Tofino driver's tests and its wire-cost bench.
#![allow(dead_code)]

use canary_core::fabric::RuleOp;
use canary_core::pathbf::PathBfCodec;
use canary_core::pathbf::PathBfParams;
use canary_core::topo::{yaml, PortMap, Routing, Segments, SwitchIx};
use canary_core::FlowId;
use canary_doubles::bfrt_model::BfrtModelSwitch;
use canary_doubles::chaos::Plane;
use canary_sim::{SimConfig, SimFabric};
use canary_switch::contract::Program;
use canary_switch::drivers::tofino::{TofinoDriver, TofinoOptions};
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use canary_switch::switches::{entry_yaml, BoundSwitch, SwitchesFile};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const BFRT: &[u8] = include_bytes!("../../testdata/tna/bfrt.json");
pub const LINE2: &str = "name: line2\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, s2]\n";
/// Pipes each model switch has (its registers are read once per pipe).
pub const PIPES: usize = 2;

pub struct Lab {
    pub plane: Plane,
    pub switches: Vec<BfrtModelSwitch>,
    pub bound: Vec<BoundSwitch>,
    pub codec: PathBfCodec,
    pub topo: canary_core::topo::Topology,
    pub ports: PortMap,
    _servers: Vec<tokio::task::JoinHandle<()>>,
}

pub async fn lab(loss: f64) -> Lab {
    let mut topo = yaml::parse("line2.yaml", LINE2).unwrap();
    let routing = Routing::new(&topo);
    let segments = Segments::new(&topo, &routing);
    canary_core::pathbf::repair(&mut topo, &segments, PathBfParams::default(), 50).unwrap();
    let codec = PathBfCodec::new(&topo, &segments, PathBfParams::default()).unwrap();
    let ports = PortMap::canonical(&topo);
    let program = Program::from_bfrt_json("bfrt.json", BFRT).unwrap();
    let mut cfg = SimConfig {
        capacity: program.capacity(),
        ipv6_share: 0.5,
        ..Default::default()
    };
    cfg.traffic.elephants.flows_per_host = 8;
    cfg.traffic.mice.flows_per_host = 8;
    let mut losses = vec![0.0; topo.links.len()];
    losses[0] = loss;
    let sim = SimFabric::driven(topo.clone(), &codec, losses, cfg, ports.clone());
    let plane: Plane = Arc::new(Mutex::new(sim));
    let mut switches = Vec::new();
    let mut servers = Vec::new();
    let mut yaml_text = String::from("switches:\n");
    for i in 0..topo.switches.len() {
        let m =
            BfrtModelSwitch::new(i as SwitchIx, plane.clone(), BFRT.to_vec(), 1, PIPES).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        servers.push(m.serve(listener));
        switches.push(m);
        yaml_text.push_str(&entry_yaml(
            &topo,
            &ports,
            i as SwitchIx,
            &addr.to_string(),
            1,
        ));
    }
    let bound = SwitchesFile::parse("switches.yaml", &yaml_text)
        .unwrap()
        .bind("switches.yaml", &topo)
        .unwrap();
    Lab {
        plane,
        switches,
        bound,
        codec,
        topo,
        ports,
        _servers: servers,
    }
}

impl Lab {
    pub fn fabric(&self) -> SwitchFabric<TofinoDriver> {
        let program = Arc::new(Program::from_bfrt_json("bfrt.json", BFRT).unwrap());
        let drivers = self
            .bound
            .iter()
            .map(|b| {
                let s = b.ix as usize;
                TofinoDriver::new(
                    b.clone(),
                    self.topo.switches[s].monitor,
                    self.codec.masks[s],
                    program.clone(),
                    TofinoOptions::default(),
                )
            })
            .collect();
        SwitchFabric::new(
            &self.topo,
            &self.ports,
            &self.codec.masks,
            drivers,
            program.capacity(),
            FabricOptions {
                // These tests check what a harvest reads, not how fast: on a loaded machine a
                // read through the model server has taken longer than the daemon's 500 ms (1 run
                // in 6 at a load average of 9 on 2 CPUs), and the epoch was skipped.
                harvest_deadline: Duration::from_secs(30),
                ..FabricOptions::default()
            },
        )
    }

    /// Lets `d` of traffic pass and sends the digests it produced (and gives the driver's
    /// stream a moment to receive them).
    pub async fn run(&self, d: Duration) {
        self.plane.lock().unwrap().advance(d);
        for s in &self.switches {
            s.pump_digests();
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }

    /// HH rules on both switches (s2's on s1's pathBF): every flow the hosts open is reported.
    pub fn hh_everywhere(&self) -> Vec<RuleOp> {
        let bf = self.codec.masks[0];
        vec![
            RuleOp::InstallHh {
                switch: 1,
                path_bf: bf,
                eta: 2,
            },
            RuleOp::InstallHh {
                switch: 0,
                path_bf: 0,
                eta: 2,
            },
        ]
    }

    /// Monitoring `flows` from s1 to s2: USM at s1, DSM at s2 on s1's pathBF.
    pub fn monitor(&self, flows: &[FlowId]) -> Vec<RuleOp> {
        let bf = self.codec.masks[0];
        flows
            .iter()
            .flat_map(|&flow| {
                [
                    RuleOp::InstallDsm {
                        switch: 1,
                        flow,
                        path_bf: bf,
                    },
                    RuleOp::InstallUsm { switch: 0, flow },
                ]
            })
            .collect()
    }

    pub fn violations(&self) -> Vec<String> {
        self.switches.iter().flat_map(|s| s.violations()).collect()
    }
}
