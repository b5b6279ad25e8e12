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
                    assert_eq!(path.as_slice(), walked.as_slice(), "{id}");
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

/// What a run leaves: the fabric's counts, every monitor's meters of the epochs run, and the
/// HH digests, in order.
fn run_outcome(sim: &mut SimFabric) -> (SimStats, Vec<(Usm, Dsm)>, Vec<HhReport>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        for epoch in 0..3 {
            sim.set_epoch(epoch).await;
            sim.wait(Duration::from_millis(60)).await;
        }
    });
    let meters = sim
        .net
        .switches
        .iter()
        .flat_map(|s| (0..3).map(|e| s.model.meters_of(epoch_tag(e))))
        .collect();
    (sim.stats, meters, std::mem::take(&mut sim.net.reports))
}

use canary_core::sketch::{Dsm, Usm};

/// A seed gives the same run on one thread (one side after the other) and on two (the
/// switches' side behind the hosts'), with loss, monitored flows and HH rules in play.
#[test]
fn a_seed_gives_the_same_run_on_any_number_of_threads() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut sim = fabric(4);
            assert_eq!(rayon::current_num_threads(), threads);
            let n = sim.hosts.links.len();
            for (i, l) in sim.hosts.links.iter_mut().enumerate() {
                l.p = if i % 7 == 0 { 0.05 } else { 0.0 };
                l.until_drop = gap(l.p, &mut sim.hosts.loss_rng);
            }
            assert!(n > 7);
            // Every monitor reports heavy flows on any pathBF, and counts one flow per host.
            let monitors: Vec<SwitchIx> = (0..sim.topo.switches.len() as SwitchIx)
                .filter(|&s| sim.topo.switches[s as usize].monitor)
                .collect();
            for &s in &monitors {
                for bf in 0..64u32 {
                    let _ = sim
                        .switch_mut(s)
                        .apply(&canary_core::fabric::RuleOp::InstallHh {
                            switch: s,
                            path_bf: bf,
                            eta: 20,
                        });
                }
            }
            let outcome = run_outcome(&mut sim);
            (outcome, sim.net.runs_on_two_threads)
        })
    };
    let ((one, sequential), (two, parallel)) = (run(1), run(2));
    assert_eq!(sequential, 0);
    assert_eq!(parallel, 3, "every run had more than a batch of work");
    assert!(one.0.packets > 100_000, "{:?}", one.0);
    assert!(one.0.dropped > 0, "{:?}", one.0);
    assert_eq!(one, two);
}

/// A train crosses a lossy link as its packets would one by one: the same packets dropped, the
/// same draws taken.
#[test]
fn a_train_is_dropped_as_its_packets_one_by_one() {
    use super::links::drop_some;
    use rand::Rng;
    let mut sizes = ChaCha8Rng::seed_from_u64(3);
    for p in [0.0, 0.01, 0.3, 0.9, 1.0] {
        let (mut rng_a, mut rng_b) = (ChaCha8Rng::seed_from_u64(9), ChaCha8Rng::seed_from_u64(9));
        let first = gap(p, &mut rng_a);
        let _ = gap(p, &mut rng_b);
        let mut a = LinkDrops {
            p,
            flows: 1.0,
            until_drop: first,
        };
        let mut b = LinkDrops {
            p,
            flows: 1.0,
            until_drop: first,
        };
        for _ in 0..2000 {
            let n = sizes.random_range(1..=64u32);
            let alive: u64 = sizes.random::<u64>() | 1;
            let alive = if n == 64 {
                alive
            } else {
                alive & ((1u64 << n) - 1)
            };
            let got = drop_some(alive, &mut a, &mut rng_a);
            // One packet at a time, as `Hosts::walk` drops them.
            let mut want = alive;
            for i in 0..64 {
                if alive >> i & 1 == 0 {
                    continue;
                }
                if b.until_drop == 0 {
                    b.until_drop = gap(p, &mut rng_b);
                    want &= !(1 << i);
                } else {
                    b.until_drop -= 1;
                }
            }
            assert_eq!(got, want, "p = {p}");
            assert_eq!(a.until_drop, b.until_drop);
        }
    }
}

/// A link taken out of service: no flow's path crosses it any more, live flows moved, the
/// switches whose routes changed are reported once, and putting it back restores the routes.
#[test]
fn a_link_out_of_service_carries_no_flow_and_its_switches_are_reported() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut sim = fabric(4);
    sim.advance(std::time::Duration::from_millis(20));
    let l = sim.topo.link_by_names("agg0_0", "core0").unwrap();
    let back = sim.topo.reverse(l);
    let crossing = |sim: &SimFabric| {
        sim.hosts
            .flows
            .iter()
            .filter(|f| f.live && (f.links.contains(&l) || f.links.contains(&back)))
            .count()
    };
    assert!(crossing(&sim) > 0, "some live flow crosses agg0_0-core0");
    let before = sim.forwarding.clone();
    sim.set_out_of_service(&[l]);
    assert_eq!(crossing(&sim), 0, "every live flow moved off it");
    let changed = rt.block_on(sim.take_forwarding_changes());
    let agg = sim.topo.switch("agg0_0").unwrap();
    assert!(changed.contains(&agg), "{changed:?}");
    assert!(rt.block_on(sim.take_forwarding_changes()).is_empty());
    let mut both = vec![l, back];
    both.sort_unstable();
    assert_eq!(sim.out_of_service(), both);
    sim.advance(std::time::Duration::from_millis(20));
    assert_eq!(crossing(&sim), 0, "new flows avoid it too");
    sim.set_out_of_service(&[]);
    assert_eq!(sim.forwarding, before);
    assert!(!rt.block_on(sim.take_forwarding_changes()).is_empty());
}
