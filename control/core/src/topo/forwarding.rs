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
                rack_routes(topo, routing, s, b, ports, &mut groups, &mut routes);
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
        Ok((0..topo.switches.len() as SwitchIx)
            .map(|s| Self::of(&view, &routing, tree, s, ports.of(s)))
            .collect())
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
    b: SwitchIx,
    ports: &SwitchPorts,
    groups: &mut EcmpGroups,
    routes: &mut Vec<Route>,
) {
    let prefixes = rack_prefixes(topo, b);
    let routed_v4 = prefixes.iter().any(Prefix::is_v4);
    let routed_v6 = prefixes.iter().any(|p| !p.is_v4());
    let mut members: Vec<u32> = routing
        .next_hops(topo, s, b)
        .map(|n| ports.switch_ports[&n])
        .collect();
    members.sort_unstable();
    let (g, size) = groups.of(members);
    for p in &prefixes {
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
mod tests {
    use super::*;
    use crate::topo::ports::PortMap;
    use crate::topo::{fattree::fattree, MonitorPlacement};

    fn state(topo: &Topology, name: &str) -> ForwardingState {
        let routing = Routing::new(topo);
        let tree = FloodTree::new(topo);
        let ports = PortMap::canonical(topo);
        let s = topo.switch(name).unwrap();
        ForwardingState::of(topo, &routing, &tree, s, ports.of(s))
    }

    #[test]
    fn edge_switch_routes_its_hosts_and_every_other_rack_by_prefix() {
        let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let s = state(&topo, "edge0_0");
        // edge0_0: agg0_0, agg0_1 on ports 1, 2; hosts h0_0_0, h0_0_1 on 3, 4.
        assert_eq!(s.host_ports, [3, 4]);
        assert_eq!(s.groups, [(1, vec![3]), (2, vec![4]), (3, vec![1, 2])]);
        assert_eq!(s.sizes(), [1, 2]);
        // 7 other racks x 2 families + 2 own hosts x 2 families.
        assert_eq!(s.routes.len(), 7 * 2 + 2 * 2);
        let to = |p: &str| {
            let p: Prefix = p.parse().unwrap();
            s.routes.iter().find(|r| r.prefix == p).copied().unwrap()
        };
        assert_eq!((to("10.3.1.0/24").group, to("10.3.1.0/24").size), (3, 2));
        assert_eq!(to("fd00:0:3:1::/64").group, 3);
        assert_eq!((to("10.0.0.3/32").group, to("10.0.0.3/32").size), (2, 1));
        assert_eq!(to("fd00:0:0:0::3/128").group, 2);
    }

    #[test]
    fn route_count_grows_with_racks_not_hosts() {
        for k in [4u32, 8, 16] {
            let topo = fattree(k, MonitorPlacement::TopAndBottom).unwrap();
            let racks = (k * k / 2) as usize;
            let s = state(&topo, "core0");
            assert_eq!(s.routes_v4().count(), racks, "k={k}");
            assert_eq!(s.routes_v6().count(), racks, "k={k}");
            assert!(s.groups.iter().all(|(_, m)| m.len() == 1));
        }
    }

    #[test]
    fn flood_groups_follow_one_tree_and_skip_the_ingress_port() {
        let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let tree = FloodTree::new(&topo);
        // A spanning tree: n - 1 edges.
        let edges: usize = (0..topo.switches.len() as SwitchIx)
            .map(|s| tree.neighbors(s).len())
            .sum::<usize>()
            / 2;
        assert_eq!(edges, topo.switches.len() - 1);
        let s = state(&topo, "edge0_0");
        assert_eq!(s.floods.len(), 4, "one group per port");
        for f in &s.floods {
            assert!(f.replicas.iter().all(|r| r.port != f.in_port));
            let hosts: Vec<u32> = f
                .replicas
                .iter()
                .filter(|r| r.to_host)
                .map(|r| r.port)
                .collect();
            let want: Vec<u32> = [3, 4].into_iter().filter(|&p| p != f.in_port).collect();
            assert_eq!(hosts, want);
        }
        // From a host, a frame goes to every tree neighbor.
        let e = topo.switch("edge0_0").unwrap();
        let ports = PortMap::canonical(&topo);
        let want: Vec<u32> = tree
            .neighbors(e)
            .iter()
            .map(|n| ports.of(e).switch_ports[n])
            .collect();
        let fabric: Vec<u32> = s.floods[2]
            .replicas
            .iter()
            .filter(|r| !r.to_host)
            .map(|r| r.port)
            .collect();
        assert_eq!(fabric, want);
        assert!(!want.is_empty());
    }
}
