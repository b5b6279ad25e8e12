//! The simulator and BMv2 forward and report alike: the same packets, IPv4 and IPv6, between
//! every pair of racks of a k=4 fat-tree, walked through the simulator (`SimFabric::probe`, the
//! walk every simulated packet takes) and sent through 20 real `simple_switch_grpc` switches
//! configured as `canary run` configures them (same port map, same rules). Every packet must
//! cross the same links in both, and the HH digests the controller gets must be the same.
//!
//! Needs root, p4c and BMv2 (`sudo -E cargo test -p canary --test sim_vs_bmv2`); prints
//! `SKIP: ...` and passes when something is missing.

mod bmv2;
mod fabric_lab;

use bmv2::RawSocket;
use canary_controller::setup::{load_topology, prepare};
use canary_core::fabric::{Fabric, RuleOp};
use canary_core::model::wire::{self, Macs};
use canary_core::pathbf::PathBfParams;
use canary_core::topo::SwitchIx;
use canary_core::FlowId;
use canary_sim::{SimConfig, SimFabric};
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use fabric_lab::FabricLab;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

#[test]
fn simulator_paths_and_digests_equal_bmv2_on_a_fat_tree() {
    if !bmv2::runnable("sim_vs_bmv2", &bmv2::missing()) {
        return;
    }
    let topo = load_topology("fattree:4", None).unwrap();
    let prep = prepare(topo, PathBfParams::default()).unwrap();
    let t = &prep.topo;
    let lab = FabricLab::new(t.clone());
    bmv2::enter_netns(&lab.fab);
    let (drivers, ports, prog) = lab.bmv2_drivers(t);
    let mut bmv2 = SwitchFabric::new(
        t,
        &ports,
        &prep.codec.masks,
        drivers,
        prog.program.capacity(),
        FabricOptions::default(),
    );
    let mut sim = SimFabric::with_ports(
        t.clone(),
        &prep.codec,
        vec![0.0; t.links.len()],
        SimConfig::default(),
        ports.clone(),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bmv2.connect(Duration::from_secs(60))).unwrap();
    rt.block_on(async {
        assert!(bmv2.set_epoch(0).await.iter().all(|r| r.1.is_ok()));
        sim.set_epoch(0).await;
    });

    // An HH rule on every segment (eta 1: a flow's second packet through a monitor that does
    // not count it is reported), so digests come from every monitor.
    let ops: Vec<RuleOp> = prep
        .segments
        .list
        .iter()
        .enumerate()
        .map(|(i, s)| RuleOp::InstallHh {
            switch: s.downstream(),
            path_bf: prep.codec.segment_bf[i],
            eta: 1,
        })
        .collect();
    rt.block_on(async {
        assert!(bmv2.apply(&ops).await.is_empty());
        assert!(sim.apply(&ops).await.is_empty());
    });

    let hosts: Vec<RawSocket> = lab
        .hosts
        .iter()
        .map(|(ns, _)| RawSocket::open(ns, "eth0"))
        .collect();
    // Taps on the receiving end of every directed link.
    let taps: HashMap<(SwitchIx, SwitchIx), RawSocket> = lab
        .link_iface
        .keys()
        .map(|&(from, to)| {
            (
                (from, to),
                RawSocket::open(&lab.fab, &lab.link_iface[&(to, from)]),
            )
        })
        .collect();
    let macs = Macs {
        dst: [2, 0, 0, 0, 0, 2],
        src: [2, 0, 0, 0, 0, 1],
    };
    let (mut seq, mut compared, mut sim_reports) = (0u16, 0, Vec::new());
    let mut cores = BTreeSet::new();
    for (i, a) in t.hosts.iter().enumerate() {
        for (j, b) in t.hosts.iter().enumerate() {
            if a.switch == b.switch || (i + j) % 3 != 0 {
                continue;
            }
            let sport = 1000 + (i * 16 + j) as u16;
            for flow in [
                FlowId::v4(a.addr, b.addr, 17, sport, 80),
                FlowId::v6(a.addr6, b.addr6, 17, sport, 80),
            ] {
                for _ in 0..2 {
                    seq += 1;
                    let frame = wire::ip_frame(macs, &flow, seq, &seq.to_be_bytes());
                    hosts[i].send(&frame);
                    let probe = sim.probe(i as u32, flow);
                    sim_reports.extend(probe.reports);
                    let got =
                        hosts[j].recv_until(Duration::from_secs(3), |fr| fr == frame.as_slice());
                    assert!(got.is_some(), "{flow} reached h{j} through BMv2");
                    assert!(probe.delivered, "{flow} reached h{j} in the simulator");
                    // The links it crossed in BMv2, from the taps.
                    let mut crossed = BTreeSet::new();
                    for (&link, tap) in &taps {
                        while let Some(fr) = tap.recv_timeout(Duration::from_millis(1)) {
                            if wire::split(&fr).0 == frame {
                                crossed.insert(link);
                            }
                        }
                    }
                    let want: BTreeSet<(SwitchIx, SwitchIx)> =
                        probe.path.windows(2).map(|w| (w[0], w[1])).collect();
                    assert_eq!(crossed, want, "{flow}: links in BMv2 and in the simulator");
                    if probe.path.len() == 5 {
                        cores.insert(probe.path[2]);
                    }
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 100, "{compared} packets compared");
    assert_eq!(cores.len(), 4, "inter-pod traffic used every core");
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(300)).await });
    let got: BTreeSet<(SwitchIx, FlowId, u32)> = rt
        .block_on(bmv2.take_reports())
        .into_iter()
        .map(|r| (r.switch, r.flow, r.path_bf))
        .collect();
    let want: BTreeSet<(SwitchIx, FlowId, u32)> = sim_reports
        .into_iter()
        .map(|r| (r.switch, r.flow, r.path_bf))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want, "HH digests from BMv2 and from the simulator");
    eprintln!(
        "sim_vs_bmv2: {compared} packets on the same links, {} digests alike",
        want.len()
    );
}
