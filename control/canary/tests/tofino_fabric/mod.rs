//! Twenty BF Runtime model servers of a k=4 fat-tree (`canary_doubles::bfrt_model`) over one
//! simulated data plane that carries traffic in real time, with 10 % loss one way on
//! edge1_0→agg1_1: what `canary run --target tofino` runs against in the tests.
#![allow(dead_code)]

use canary_controller::setup::{load_topology, prepare};
use canary_core::fault;
use canary_core::topo::{PortMap, SwitchIx};
use canary_doubles::bfrt_model::BfrtModelSwitch;
use canary_doubles::chaos::Plane;
use canary_sim::{SimConfig, SimFabric};
use canary_switch::contract::Program;
use canary_switch::switches::entry_yaml;
use rand::SeedableRng;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BFRT: &[u8] = include_bytes!("../../../switch/testdata/tna/bfrt.json");
/// 10% loss one way on one edge-to-aggregation link, the testbed's scenario.
pub const FAULTS: &str = "faults:\n  - {link: [edge1_0, agg1_1], loss: 0.1}\n";

/// The servers, the plane they share, and a thread that lets fabric time pass with real time
/// and sends each switch's HH digests as learn lists.
pub struct TofinoLab {
    pub plane: Plane,
    pub switches: Vec<BfrtModelSwitch>,
    pub switches_yaml: String,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl TofinoLab {
    pub async fn start(dir: &Path) -> TofinoLab {
        let topo = load_topology("fattree:4", None).unwrap();
        // The same preparation `canary run` makes, so both sides agree on the pathBF masks.
        let prep = prepare(topo, Default::default()).unwrap();
        let faults = fault::parse("faults.yaml", FAULTS, &prep.topo).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let loss = fault::loss_vector(&prep.topo, &faults, 0.0, &mut rng);
        std::fs::write(dir.join("faults.yaml"), FAULTS).unwrap();
        let ports = PortMap::canonical(&prep.topo);
        let program = Program::from_bfrt_json("bfrt.json", BFRT).unwrap();
        let mut cfg = SimConfig {
            capacity: program.capacity(),
            ipv6_share: 0.3,
            seed: 7,
            ..Default::default()
        };
        cfg.traffic.elephants.flows_per_host = 10;
        cfg.traffic.mice.flows_per_host = 10;
        let sim = SimFabric::driven(prep.topo.clone(), &prep.codec, loss, cfg, ports.clone());
        let plane: Plane = Arc::new(Mutex::new(sim));
        let topo = &prep.topo;
        let mut switches = Vec::new();
        let mut yaml = String::from("switches:\n");
        for i in 0..topo.switches.len() {
            let ix = i as SwitchIx;
            let m = BfrtModelSwitch::new(ix, plane.clone(), BFRT.to_vec(), 1, 2).unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            m.serve(listener);
            switches.push(m);
            yaml.push_str(&entry_yaml(topo, &ports, ix, &addr.to_string(), 1));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (plane, switches, stop) = (plane.clone(), switches.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut last = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(2));
                    let now = Instant::now();
                    plane.lock().unwrap().advance(now - last);
                    last = now;
                    for s in &switches {
                        s.pump_digests();
                    }
                }
            })
        };
        TofinoLab {
            plane,
            switches,
            switches_yaml: yaml,
            stop,
            ticker: Some(ticker),
        }
    }

    pub fn violations(&self) -> Vec<String> {
        self.switches.iter().flat_map(|s| s.violations()).collect()
    }
}

impl Drop for TofinoLab {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}
