//! Ports: which data-plane port of each switch faces which neighbor or host.
//!
//! Real fabrics give them in the switches file (`canary-switch`); the simulator numbers them
//! [`PortMap::canonical`]ly. Forwarding, ECMP member order and flooding are defined on ports,
//! so the simulator and a real fabric given the same map forward every packet alike.

use super::{SwitchIx, Topology};
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
}
