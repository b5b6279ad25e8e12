use super::net::{Event, Net};
use super::wire::{self, Macs};
use super::*;
use crate::fabric::RuleOp;
use crate::pathbf::PathBfParams;
use crate::sketch::FlowHashes;
use crate::topo::{
    fattree::fattree, yaml, FloodTree, ForwardingState, MonitorPlacement, PortMap, Routing,
    Topology,
};

mod epochs;
mod forwarding;
mod monitoring;
mod n_packets;
mod rule_tables;

const LINE2: &str = "name: line2\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, s2]\n";
const LINE3: &str = "name: line3\nmonitors: bottom\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: t, layer: 1}\n  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, t]\n  - [t, s2]\n";

const M: Macs = Macs {
    dst: [2, 0, 0, 0, 0, 2],
    src: [2, 0, 0, 0, 0, 1],
};

fn models(topo: &Topology, ports: &PortMap) -> Vec<SwitchModel> {
    let routing = Routing::new(topo);
    let tree = FloodTree::new(topo);
    let p = PathBfParams::default();
    (0..topo.switches.len() as u32)
        .map(|s| {
            let mut m = SwitchModel::new(Capacity::of_program());
            m.set_config(SwitchConfig {
                monitor: topo.switches[s as usize].monitor,
                mask: p.mask(topo.switches[s as usize].id),
                epoch: epoch_tag(0),
            });
            m.set_forwarding(ForwardingState::of(topo, &routing, &tree, s, ports.of(s)));
            m
        })
        .collect()
}

fn udp(sport: u16) -> FlowId {
    FlowId::v4(0x0a00_0102, 0x0a00_0202, 17, sport, 2000)
}

fn udp6(sport: u16) -> FlowId {
    let a = |x: u32| crate::topo::default_ipv6(x);
    FlowId::v6(a(0x0a00_0102), a(0x0a00_0202), 17, sport, 2000)
}

fn delivered(events: &[Event]) -> Vec<(u32, Vec<u8>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Delivered { host, frame } => Some((*host, frame.clone())),
            _ => None,
        })
        .collect()
}

fn on_links(events: &[Event]) -> Vec<Vec<u8>> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Link { frame, .. } => Some(frame.clone()),
            _ => None,
        })
        .collect()
}
