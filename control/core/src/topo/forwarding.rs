//! What one switch forwards where, derived from the topology and its ports, before any table
//! layout: the switch model (`crate::model`) executes it, and the controller renders it into the
//! program's tables (`canary-switch`), so both forward every packet alike.
//!
//! * IP unicast: a route per rack prefix ([`super::rack_prefixes`]) toward the shortest-path next
//!   hops, host routes (/32, /128) for the switch's own hosts and for racks without a prefix.
//!   Next-hop sets become ECMP groups, members in ascending port order; the data plane picks
//!   member `ecmp_member(c32, mask, size)` (`crate::sketch::ecmp_member`).
//! * Everything else (other EtherTypes, IP multicast and broadcast) is flooded along one
//!   spanning tree of the fabric to every host: per ingress port, a group of every tree port and
//!   host port but that one ([`Flood`]). A tree has no loops, so a flooded frame reaches each
//!   host once.

use super::addressing::{rack_prefixes, Prefix};
use super::ports::SwitchPorts;
use super::{Routing, SwitchIx, Topology};
use crate::flow::Addr;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A route: packets to `prefix` go to ECMP group `group`, which has `size` members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub prefix: Prefix,
    pub group: u16,
    pub size: u16,
}

/// One copy of a flooded frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Replica {
    pub port: u32,
    /// Leaves to a host: the Canary shim is removed from this copy.
    pub to_host: bool,
}

/// The flood group of frames arriving on `in_port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flood {
    pub in_port: u32,
    pub group: u16,
    /// Ascending by port.
    pub replicas: Vec<Replica>,
}

/// What one switch forwards where.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardingState {
    /// Ports facing hosts, ascending.
    pub host_ports: Vec<u32>,
    /// ECMP groups by ascending id (from 1): member `i` is the `i`-th port, ports ascending.
    pub groups: Vec<(u16, Vec<u32>)>,
    /// IPv4 and IPv6 routes: racks in topology order, then this switch's own hosts.
    pub routes: Vec<Route>,
    /// One flood group per port, ascending by port; group ids from 1.
    pub floods: Vec<Flood>,
}

impl ForwardingState {
    /// The state that makes switch `s` (ports `ports`) forward every host's traffic.
    pub fn of(
        topo: &Topology,
        routing: &Routing,
        tree: &FloodTree,
        s: SwitchIx,
        ports: &SwitchPorts,
    ) -> Self {
        Self::with_prefixes(topo, routing, tree, s, ports, &RackPrefixes::new(topo))
    }

    /// Every switch's state ([`ForwardingState::of`]), the racks' prefixes worked out once for
    /// all switches (each takes a pass over every host).
    pub fn all(
        topo: &Topology,
        routing: &Routing,
        tree: &FloodTree,
        ports: &super::PortMap,
    ) -> Vec<Self> {
        let prefixes = RackPrefixes::new(topo);
        (0..topo.switches.len() as SwitchIx)
            .map(|s| Self::with_prefixes(topo, routing, tree, s, ports.of(s), &prefixes))
            .collect()
    }

    fn with_prefixes(
        topo: &Topology,
        routing: &Routing,
        tree: &FloodTree,
        s: SwitchIx,
        ports: &SwitchPorts,
        prefixes: &RackPrefixes,
    ) -> Self {
        let host_ports: Vec<u32> = ports
            .host_ports
            .values()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut groups = EcmpGroups::default();
        let mut routes = Vec::new();
        let bottoms =
            (0..topo.switches.len() as SwitchIx).filter(|&b| !topo.hosts_of(b).is_empty());
        for b in bottoms {
            if b == s {
                own_host_routes(topo, s, ports, &mut groups, &mut routes);
            } else {
                let rack = Rack {
                    b,
                    prefixes: prefixes.of(b),
                };
                rack_routes(topo, routing, s, rack, ports, &mut groups, &mut routes);
            }
        }
        let floods = floods(tree, s, ports, &host_ports);
        ForwardingState {
            host_ports,
            groups: groups.groups,
            routes,
            floods,
        }
    }

    /// Every switch's state while the physical links `out` are out of service: routes and ECMP
    /// groups as routing converges on the fabric without them ([`Topology::without_links`]);
    /// flooding follows `tree`, the whole fabric's, as before (only unicast routes move).
    pub fn all_without(
        topo: &Topology,
        out: &[super::LinkIx],
        tree: &FloodTree,
        ports: &super::PortMap,
    ) -> Result<Vec<Self>, super::TopologyError> {
        let view = topo.without_links(out)?;
        let routing = Routing::new(&view);
        Ok(Self::all(&view, &routing, tree, ports))
    }

    /// The distinct ECMP group sizes, ascending (the TNA remainder tables hold 256 entries per
    /// size and table).
    pub fn sizes(&self) -> Vec<u16> {
        let mut s: Vec<u16> = self.groups.iter().map(|(_, m)| m.len() as u16).collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// Routes of one family.
    pub fn routes_v4(&self) -> impl Iterator<Item = &Route> {
        self.routes.iter().filter(|r| r.prefix.is_v4())
    }

    pub fn routes_v6(&self) -> impl Iterator<Item = &Route> {
        self.routes.iter().filter(|r| !r.prefix.is_v4())
    }
}

/// Every rack's prefixes ([`rack_prefixes`]) by switch, empty for a switch without hosts.
struct RackPrefixes(Vec<Vec<Prefix>>);

impl RackPrefixes {
    fn new(topo: &Topology) -> Self {
        RackPrefixes(
            (0..topo.switches.len() as SwitchIx)
                .map(|b| rack_prefixes(topo, b))
                .collect(),
        )
    }

    fn of(&self, b: SwitchIx) -> &[Prefix] {
        &self.0[b as usize]
    }
}

/// A rack to route to: its bottom switch and prefixes.
#[derive(Clone, Copy)]
struct Rack<'a> {
    b: SwitchIx,
    prefixes: &'a [Prefix],
}

/// The ECMP groups of one switch as routes ask for them: one group per distinct member list,
/// ids from 1 in order of first use.
#[derive(Default)]
struct EcmpGroups {
    ids: BTreeMap<Vec<u32>, u16>,
    groups: Vec<(u16, Vec<u32>)>,
}

impl EcmpGroups {
    /// The id and size of the group of `members`, made if new.
    fn of(&mut self, members: Vec<u32>) -> (u16, u16) {
        let size = members.len() as u16;
        let next = self.ids.len() as u16 + 1;
        let groups = &mut self.groups;
        let g = *self.ids.entry(members.clone()).or_insert_with(|| {
            groups.push((next, members));
            next
        });
        (g, size)
    }
}

/// Routes of switch `s` to its own hosts: one route per host and family to its port.
fn own_host_routes(
    topo: &Topology,
    s: SwitchIx,
    ports: &SwitchPorts,
    groups: &mut EcmpGroups,
    routes: &mut Vec<Route>,
) {
    for &h in topo.hosts_of(s) {
        let host = &topo.hosts[h as usize];
        let (g, size) = groups.of(vec![ports.host_ports[&h]]);
        for a in [Addr::v4(host.addr), Addr::v6(host.addr6)] {
            routes.push(Route {
                prefix: Prefix::host(a),
                group: g,
                size,
            });
        }
    }
}

/// Routes of switch `s` to the rack under switch `b`: its prefixes toward the next hops, and host
/// routes for a family the rack has no prefix of.
fn rack_routes(
    topo: &Topology,
    routing: &Routing,
    s: SwitchIx,
    rack: Rack,
    ports: &SwitchPorts,
    groups: &mut EcmpGroups,
    routes: &mut Vec<Route>,
) {
    let Rack { b, prefixes } = rack;
    let routed_v4 = prefixes.iter().any(Prefix::is_v4);
    let routed_v6 = prefixes.iter().any(|p| !p.is_v4());
    let mut members: Vec<u32> = routing
        .next_hops(topo, s, b)
        .map(|n| ports.switch_ports[&n])
        .collect();
    members.sort_unstable();
    let (g, size) = groups.of(members);
    for p in prefixes {
        routes.push(Route {
            prefix: *p,
            group: g,
            size,
        });
    }
    for &h in topo.hosts_of(b) {
        let host = &topo.hosts[h as usize];
        let mut by_host = Vec::new();
        if !routed_v4 {
            by_host.push(Addr::v4(host.addr));
        }
        if !routed_v6 {
            by_host.push(Addr::v6(host.addr6));
        }
        for a in by_host {
            routes.push(Route {
                prefix: Prefix::host(a),
                group: g,
                size,
            });
        }
    }
}

/// One flood group per port of switch `s`: every tree port and host port but the ingress one.
fn floods(tree: &FloodTree, s: SwitchIx, ports: &SwitchPorts, host_ports: &[u32]) -> Vec<Flood> {
    let tree_ports: BTreeSet<u32> = tree
        .neighbors(s)
        .iter()
        .map(|n| ports.switch_ports[n])
        .collect();
    let mut floods = Vec::new();
    for (i, in_port) in ports.all().into_iter().enumerate() {
        let mut replicas: Vec<Replica> = tree_ports
            .iter()
            .map(|&port| Replica {
                port,
                to_host: false,
            })
            .chain(host_ports.iter().map(|&port| Replica {
                port,
                to_host: true,
            }))
            .filter(|r| r.port != in_port)
            .collect();
        replicas.sort_unstable();
        floods.push(Flood {
            in_port,
            group: i as u16 + 1,
            replicas,
        });
    }
    floods
}

/// A spanning tree of the switches, along which flooded frames travel: breadth first from the
/// first switch of the top layer, so it is as shallow as the fabric allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FloodTree {
    neighbors: Vec<Vec<SwitchIx>>,
}

impl FloodTree {
    pub fn new(topo: &Topology) -> Self {
        let n = topo.switches.len();
        let top = topo.top_layer();
        let root = (0..n as SwitchIx)
            .find(|&s| topo.switches[s as usize].layer == top)
            .unwrap_or(0);
        let mut neighbors = vec![Vec::new(); n];
        let mut seen = vec![false; n];
        let mut queue = VecDeque::from([root]);
        seen[root as usize] = true;
        while let Some(u) = queue.pop_front() {
            for &v in topo.neighbors(u) {
                if !seen[v as usize] {
                    seen[v as usize] = true;
                    neighbors[u as usize].push(v);
                    neighbors[v as usize].push(u);
                    queue.push_back(v);
                }
            }
        }
        for l in &mut neighbors {
            l.sort_unstable();
        }
        FloodTree { neighbors }
    }

    /// The tree neighbors of `s`, ascending.
    pub fn neighbors(&self, s: SwitchIx) -> &[SwitchIx] {
        &self.neighbors[s as usize]
    }
}

#[cfg(test)]
mod tests;
