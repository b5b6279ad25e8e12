//! Forwarding state of one switch, derived from the topology: a /32 route per host to an ECMP
//! group of the shortest-path next hops, the groups' member ports, and the host-facing ports.
//!
//! [`ForwardingState`] says what to forward where, independent of the target; each back end
//! renders it into its own tables: [`forwarding_entries`] into v1model's P4Runtime entries (BMv2),
//! `bfrt::TnaForwardingTables` into the TNA program's BF-RT updates (Tofino).
//!
//! The data plane picks a member with `canary_core::sketch::ecmp_member` (the top bits of the
//! flow's CRC-32 times the switch's pathBF mask, modulo the group size; docs/dataplane.md), so any
//! set of equal-cost next hops works; pathBF records which one a packet took.

use crate::program::CanaryProgram;
use crate::switches::BoundSwitch;
use bfrt_proto::p4rt::TableEntry;
use canary_core::topo::{Routing, SwitchIx, Topology};
use std::collections::BTreeMap;

/// A /32 route: packets to `addr` go to ECMP group `group`, which has `size` members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub addr: u32,
    pub group: u16,
    pub size: u16,
}

/// What one switch forwards where, before any table layout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardingState {
    /// Ports facing hosts, ascending.
    pub host_ports: Vec<u32>,
    /// ECMP groups by ascending id (from 1): member `i` is the `i`-th port, ports ascending.
    pub groups: Vec<(u16, Vec<u32>)>,
    /// One per host, in topology order; `size` is the length of the group's member list.
    pub routes: Vec<Route>,
}

impl ForwardingState {
    /// The state that makes `sw` forward every host's traffic: the host's own port on its
    /// switch, elsewhere the ports toward its shortest-path next hops. One group per distinct
    /// member list.
    pub fn of(topo: &Topology, routing: &Routing, sw: &BoundSwitch) -> Self {
        let mut host_ports: Vec<u32> = sw.host_ports.values().copied().collect();
        host_ports.sort_unstable();
        let mut ids: BTreeMap<Vec<u32>, u16> = BTreeMap::new();
        let mut groups = Vec::new();
        let mut routes = Vec::new();
        for (h, host) in topo.hosts.iter().enumerate() {
            let members = members_toward(topo, routing, sw, h as u32);
            let size = members.len() as u16;
            let next = ids.len() as u16 + 1;
            let group = *ids.entry(members.clone()).or_insert_with(|| {
                groups.push((next, members));
                next
            });
            routes.push(Route {
                addr: host.addr,
                group,
                size,
            });
        }
        ForwardingState {
            host_ports,
            groups,
            routes,
        }
    }

    /// The distinct group sizes, ascending (the TNA remainder tables hold 256 entries per size
    /// and table).
    pub fn sizes(&self) -> Vec<u16> {
        let mut s: Vec<u16> = self.groups.iter().map(|(_, m)| m.len() as u16).collect();
        s.sort_unstable();
        s.dedup();
        s
    }
}

/// Ports of `sw` toward host `h`, ascending: its own port if `h` is attached here.
fn members_toward(topo: &Topology, routing: &Routing, sw: &BoundSwitch, h: u32) -> Vec<u32> {
    let host = &topo.hosts[h as usize];
    if host.switch == sw.ix {
        return vec![sw.host_ports[&h]];
    }
    let mut ports: Vec<u32> = routing
        .next_hops(topo, sw.ix, host.switch)
        .map(|n: SwitchIx| sw.switch_ports[&n])
        .collect();
    ports.sort_unstable();
    ports
}

/// Table entries that make `sw` forward every host's traffic (v1model, over P4Runtime): host
/// ports in and out, then every group's members, then the routes.
pub fn forwarding_entries(
    prog: &CanaryProgram,
    topo: &Topology,
    routing: &Routing,
    sw: &BoundSwitch,
) -> Vec<TableEntry> {
    let state = ForwardingState::of(topo, routing, sw);
    let mut out = Vec::new();
    for &p in &state.host_ports {
        out.push(prog.host_port_in_entry(p));
        out.push(prog.host_port_out_entry(p));
    }
    for (g, members) in &state.groups {
        for (i, &port) in members.iter().enumerate() {
            out.push(prog.ecmp_entry(*g, i as u16, port));
        }
    }
    for r in &state.routes {
        out.push(prog.route_entry(r.addr, 32, r.group, r.size));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::p4info::{ResolvedAction, ResolvedTable};
    use crate::switches::SwitchEndpoint;
    use canary_core::topo::fattree::fattree;
    use canary_core::topo::MonitorPlacement;
    use std::collections::HashMap;

    /// `name`'s switch with ports numbered from 1 in neighbor order, then hosts.
    fn bound(topo: &Topology, name: &str) -> BoundSwitch {
        let ix = topo.switch(name).unwrap();
        let switch_ports: HashMap<SwitchIx, u32> = topo
            .neighbors(ix)
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, i as u32 + 1))
            .collect();
        let first_host = switch_ports.len() as u32 + 1;
        let host_ports = topo
            .hosts_of(ix)
            .iter()
            .enumerate()
            .map(|(i, &h)| (h, first_host + i as u32))
            .collect();
        BoundSwitch {
            ix,
            name: name.into(),
            endpoint: SwitchEndpoint {
                grpc: "127.0.0.1:1".into(),
                device_id: 0,
                thrift: None,
                ports: Default::default(),
                tls: None,
            },
            switch_ports,
            host_ports,
        }
    }

    #[test]
    fn edge_switch_routes_local_hosts_to_their_port_and_the_rest_up() {
        let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let routing = Routing::new(&topo);
        let sw = bound(&topo, "edge0_0");
        let s = ForwardingState::of(&topo, &routing, &sw);
        // edge0_0: neighbors agg0_0, agg0_1 on ports 1, 2; hosts h0_0_0, h0_0_1 on 3, 4.
        assert_eq!(s.host_ports, [3, 4]);
        assert_eq!(s.groups, [(1, vec![3]), (2, vec![4]), (3, vec![1, 2])]);
        assert_eq!(s.sizes(), [1, 2]);
        assert_eq!(s.routes.len(), 16);
        let to = |name: &str| {
            let h = topo.hosts.iter().find(|h| h.name == name).unwrap();
            *s.routes.iter().find(|r| r.addr == h.addr).unwrap()
        };
        assert_eq!((to("h0_0_1").group, to("h0_0_1").size), (2, 1));
        assert_eq!((to("h3_1_0").group, to("h3_1_0").size), (3, 2));
    }

    /// Canary's program with made-up ids (P4Runtime entries only need ids and widths).
    fn program() -> CanaryProgram {
        let table = |id, fields: &[(u32, u32)]| ResolvedTable {
            id,
            name: format!("table{id}"),
            fields: fields.to_vec(),
        };
        let action = |id, params: &[(u32, u32)]| ResolvedAction {
            id,
            name: format!("action{id}"),
            params: params.to_vec(),
        };
        let flow = [(1, 32), (2, 32), (3, 8), (4, 16), (5, 16)];
        CanaryProgram {
            host_port_in: table(1, &[(1, 9)]),
            host_port: action(101, &[]),
            host_port_out: table(2, &[(1, 9)]),
            to_host: action(102, &[]),
            switch_config: table(3, &[]),
            set_config: action(103, &[(1, 1), (2, 32), (3, 1)]),
            ipv4_route: table(4, &[(1, 32)]),
            set_group: action(104, &[(1, 16), (2, 16)]),
            ecmp_group: table(5, &[(1, 16), (2, 16)]),
            set_port: action(105, &[(1, 9)]),
            dsm_table: table(6, &[flow.as_slice(), &[(6, 32)]].concat()),
            dsm_hit: action(106, &[]),
            usm_table: table(7, &flow),
            usm_count: action(107, &[]),
            hh_table: table(8, &[(1, 32)]),
            hh_watch: action(108, &[(1, 32)]),
            hh_digest: 9,
        }
    }

    /// BMv2's entries: host ports (in, out), each group's members, then a route per host in
    /// topology order.
    #[test]
    fn p4runtime_entries_render_the_state_in_order() {
        let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let routing = Routing::new(&topo);
        let prog = program();
        let got = forwarding_entries(&prog, &topo, &routing, &bound(&topo, "edge0_0"));
        let mut want = vec![
            prog.host_port_in_entry(3),
            prog.host_port_out_entry(3),
            prog.host_port_in_entry(4),
            prog.host_port_out_entry(4),
            prog.ecmp_entry(1, 0, 3),
            prog.ecmp_entry(2, 0, 4),
            prog.ecmp_entry(3, 0, 1),
            prog.ecmp_entry(3, 1, 2),
        ];
        for h in &topo.hosts {
            let (g, size) = match h.name.as_str() {
                "h0_0_0" => (1, 1),
                "h0_0_1" => (2, 1),
                _ => (3, 2),
            };
            want.push(prog.route_entry(h.addr, 32, g, size));
        }
        assert_eq!(got, want);
    }

    #[test]
    fn core_switch_has_one_single_member_group_per_pod() {
        let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let routing = Routing::new(&topo);
        let s = ForwardingState::of(&topo, &routing, &bound(&topo, "core0"));
        assert!(s.host_ports.is_empty());
        assert_eq!(s.groups.len(), 4);
        assert!(s.groups.iter().all(|(_, m)| m.len() == 1));
        assert_eq!(s.sizes(), [1]);
    }
}
