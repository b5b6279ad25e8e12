use super::*;
use canary_core::fabric::Fabric;
use canary_core::model::net::{Event, Net};
use canary_core::model::wire::{self, Macs};
use canary_core::pathbf::PathBfParams;
use canary_core::sketch::FlowHashes;
use canary_core::topo::{fattree::fattree, MonitorPlacement, Segments};
use canary_core::FlowId;
use std::collections::HashSet;

fn fabric(k: u32) -> SimFabric {
    let topo = fattree(k, MonitorPlacement::TopAndBottom).unwrap();
    let routing = Routing::new(&topo);
    let segments = Segments::new(&topo, &routing);
    let codec = PathBfCodec::new(&topo, &segments, PathBfParams::default()).unwrap();
    let loss = vec![0.0; topo.links.len()];
    SimFabric::new(topo, &codec, loss, SimConfig::default())
}

/// The path the simulator gives a flow is the one the switch models forward its frames on,
/// hop by hop (`SwitchModel::process`), for IPv4 and IPv6 flows between every pair of racks.
#[test]
fn flows_take_the_path_the_models_forward_their_frames_on() {
    let sim = fabric(4);
    let topo = sim.topo.clone();
    let ports = sim.ports.clone();
    let models: Vec<SwitchModel> = sim.net.switches.iter().map(|s| s.model.clone()).collect();
    let mut net = Net::new(&topo, &ports, models);
    let macs = Macs {
        dst: [2, 0, 0, 0, 0, 2],
        src: [2, 0, 0, 0, 0, 1],
    };
    let mut paths = HashSet::new();
    for (i, a) in topo.hosts.iter().enumerate() {
        for (j, b) in topo.hosts.iter().enumerate() {
            if a.switch == b.switch {
                continue;
            }
            for sport in [1000u16, 2001, 3002] {
                for id in [
                    FlowId::v4(a.addr, b.addr, 6, sport, 80),
                    FlowId::v6(a.addr6, b.addr6, 6, sport, 80),
                ] {
                    let (path, _) = sim.route(i as u32, &id, FlowHashes::of(&id)).unwrap();
                    let ev = net.send(i as u32, &wire::ip_frame(macs, &id, 1, b""));
                    let mut walked = vec![a.switch];
                    walked.extend(ev.iter().filter_map(|e| match e {
                        Event::Link { switch, port, .. } => ports.of(*switch).neighbor(*port),
                        _ => None,
                    }));
                    assert_eq!(path, walked, "{id}");
                    assert!(
                        ev.iter().any(
                            |e| matches!(e, Event::Delivered { host, .. } if *host == j as u32)
                        ),
                        "{id} reaches its host"
                    );
                    paths.insert(path);
                }
            }
        }
    }
    // Inter-pod flows spread over all 4 cores: ECMP is not polarized.
    let cores: HashSet<SwitchIx> = paths
        .iter()
        .filter(|p| p.len() == 5)
        .map(|p| p[2])
        .collect();
    assert_eq!(cores.len(), 4);
}

/// A share of IPv6 flows is routed and counted like IPv4 ones.
#[test]
fn ipv6_flows_are_routed_and_counted() {
    let mut sim = fabric(4);
    sim.cfg.ipv6_share = 0.5;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        sim.set_epoch(0).await;
        sim.wait(Duration::from_millis(20)).await;
    });
    let v6 = sim.hosts.flows.iter().filter(|f| !f.id.is_v4()).count();
    let v4 = sim.hosts.flows.iter().filter(|f| f.id.is_v4()).count();
    assert!(v6 > 100 && v4 > 100, "{v4} IPv4 and {v6} IPv6 flows");
    assert_eq!(sim.stats.unroutable, 0);
    assert_eq!(sim.stats.dropped, 0);
    assert!(sim.stats.delivered > 1000);
}
