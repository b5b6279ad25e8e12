//! Ports: which data-plane port of each switch faces which neighbor or host.
//!
//! Real fabrics give them in the switches file (`canary-switch`); the simulator numbers them
//! [`PortMap::canonical`]ly. Forwarding, ECMP member order and flooding are defined on ports,
//! so the simulator and a real fabric given the same map forward every packet alike.

use super::{LinkIx, SwitchIx, Topology};
use std::collections::BTreeMap;

/// One switch's ports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchPorts {
    /// Port toward each neighboring switch.
    pub switch_ports: BTreeMap<SwitchIx, u32>,
    /// Port toward each attached host (index into `Topology::hosts`).
    pub host_ports: BTreeMap<u32, u32>,
}

impl SwitchPorts {
    /// The neighbor switch behind `port`, if it faces one.
    pub fn neighbor(&self, port: u32) -> Option<SwitchIx> {
        self.switch_ports
            .iter()
            .find(|(_, &p)| p == port)
            .map(|(&s, _)| s)
    }

    /// The host behind `port`, if it faces one.
    pub fn host(&self, port: u32) -> Option<u32> {
        self.host_ports
            .iter()
            .find(|(_, &p)| p == port)
            .map(|(&h, _)| h)
    }

    /// Every port, ascending.
    pub fn all(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .switch_ports
            .values()
            .chain(self.host_ports.values())
            .copied()
            .collect();
        v.sort_unstable();
        v
    }
}

/// Every switch's ports, in topology order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortMap {
    pub switches: Vec<SwitchPorts>,
}

impl PortMap {
    /// Ports from 1: the neighbors in topology order, then the hosts.
    pub fn canonical(topo: &Topology) -> Self {
        let switches = (0..topo.switches.len() as SwitchIx)
            .map(|s| {
                let switch_ports: BTreeMap<SwitchIx, u32> = topo
                    .neighbors(s)
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| (n, i as u32 + 1))
                    .collect();
                let first_host = switch_ports.len() as u32 + 1;
                let host_ports = topo
                    .hosts_of(s)
                    .iter()
                    .enumerate()
                    .map(|(i, &h)| (h, first_host + i as u32))
                    .collect();
                SwitchPorts {
                    switch_ports,
                    host_ports,
                }
            })
            .collect();
        PortMap { switches }
    }

    pub fn of(&self, s: SwitchIx) -> &SwitchPorts {
        &self.switches[s as usize]
    }
}

/// What a port faces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortEnd {
    /// A host (index into `Topology::hosts`).
    Host(u32),
    /// A neighboring switch, and the directed link to it (`None` when the topology lacks it).
    Switch(SwitchIx, Option<LinkIx>),
}

/// Every switch's ports by number, what each faces: [`SwitchPorts::host`] and
/// [`SwitchPorts::neighbor`] scan the maps, which costs on every hop of every flow's route.
#[derive(Clone, Debug, Default)]
pub struct PortEnds {
    /// Per switch, ascending by port.
    switches: Vec<Vec<(u32, PortEnd)>>,
}

impl PortEnds {
    /// As `host` and `neighbor` answer: a port that faces a host and a switch (a broken ports
    /// file) faces the host; one facing several of a kind faces the lowest.
    pub fn new(topo: &Topology, ports: &PortMap) -> Self {
        let switches = ports
            .switches
            .iter()
            .enumerate()
            .map(|(s, p)| {
                let mut ends: Vec<(u32, PortEnd)> = Vec::new();
                let hosts = p
                    .host_ports
                    .iter()
                    .map(|(&h, &port)| (port, PortEnd::Host(h)));
                let switches = p
                    .switch_ports
                    .iter()
                    .map(|(&n, &port)| (port, PortEnd::Switch(n, topo.link(s as SwitchIx, n))));
                for (port, end) in hosts.chain(switches) {
                    if !ends.iter().any(|e| e.0 == port) {
                        ends.push((port, end));
                    }
                }
                ends.sort_unstable_by_key(|e| e.0);
                ends
            })
            .collect();
        PortEnds { switches }
    }

    /// What port `port` of switch `s` faces; `None` for a port it does not have.
    pub fn of(&self, s: SwitchIx, port: u32) -> Option<PortEnd> {
        let ends = self.switches.get(s as usize)?;
        ends.binary_search_by_key(&port, |e| e.0)
            .ok()
            .map(|i| ends[i].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::{fattree::fattree, MonitorPlacement};

    #[test]
    fn canonical_ports_number_neighbors_then_hosts() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let m = PortMap::canonical(&t);
        let e = t.switch("edge0_0").unwrap();
        let p = m.of(e);
        assert_eq!(p.all(), [1, 2, 3, 4]);
        assert_eq!(p.switch_ports[&t.switch("agg0_0").unwrap()], 1);
        assert_eq!(p.neighbor(2), t.switch("agg0_1"));
        assert_eq!(p.host(3), Some(0));
        assert_eq!(p.host(1), None);
    }

    #[test]
    fn port_ends_answer_as_the_maps_do() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let m = PortMap::canonical(&t);
        let ends = PortEnds::new(&t, &m);
        for s in 0..t.switches.len() as SwitchIx {
            let p = m.of(s);
            for port in 0..8 {
                let want = match (p.host(port), p.neighbor(port)) {
                    (Some(h), _) => Some(PortEnd::Host(h)),
                    (None, Some(n)) => Some(PortEnd::Switch(n, t.link(s, n))),
                    (None, None) => None,
                };
                assert_eq!(ends.of(s, port), want, "switch {s} port {port}");
            }
        }
        // A port listed for a host and a switch faces the host.
        let mut odd = m.clone();
        odd.switches[0].host_ports.insert(99, 1);
        assert_eq!(PortEnds::new(&t, &odd).of(0, 1), Some(PortEnd::Host(99)));
    }
}
