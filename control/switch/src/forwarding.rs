//! Forwarding state of one switch, derived from the topology: a /32 route per host to an ECMP
//! group of the shortest-path next hops, the groups' member ports, and the host-facing ports.
//!
//! The data plane picks a member by a CRC-16 of the 5-tuple (docs/dataplane.md), so any set of
//! equal-cost next hops works; pathBF records which one a packet took.

use crate::program::CanaryProgram;
use crate::switches::BoundSwitch;
use bfrt_proto::p4rt::TableEntry;
use canary_core::topo::{Routing, SwitchIx, Topology};
use std::collections::BTreeMap;

/// Table entries that make `sw` forward every host's traffic.
pub fn forwarding_entries(
    prog: &CanaryProgram,
    topo: &Topology,
    routing: &Routing,
    sw: &BoundSwitch,
) -> Vec<TableEntry> {
    let mut out = Vec::new();
    let mut host_ports: Vec<u32> = sw.host_ports.values().copied().collect();
    host_ports.sort_unstable();
    for &p in &host_ports {
        out.push(prog.host_port_in_entry(p));
        out.push(prog.host_port_out_entry(p));
    }
    // One group per distinct member list (ports in ascending order).
    let mut groups: BTreeMap<Vec<u32>, u16> = BTreeMap::new();
    let mut routes = Vec::new();
    for (h, host) in topo.hosts.iter().enumerate() {
        let members: Vec<u32> = if host.switch == sw.ix {
            vec![sw.host_ports[&(h as u32)]]
        } else {
            let mut ports: Vec<u32> = routing
                .next_hops(topo, sw.ix, host.switch)
                .map(|n: SwitchIx| sw.switch_ports[&n])
                .collect();
            ports.sort_unstable();
            ports
        };
        let next = groups.len() as u16 + 1;
        let g = *groups.entry(members.clone()).or_insert(next);
        routes.push((host.addr, g, members.len() as u16));
    }
    let mut by_id: Vec<(&Vec<u32>, &u16)> = groups.iter().collect();
    by_id.sort_by_key(|(_, g)| **g);
    for (members, &g) in by_id {
        for (i, &port) in members.iter().enumerate() {
            out.push(prog.ecmp_entry(g, i as u16, port));
        }
    }
    for (addr, g, size) in routes {
        out.push(prog.route_entry(addr, 32, g, size));
    }
    out
}
