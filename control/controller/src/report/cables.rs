//! The cables to look at: each physical link with a blamed direction, both directions together,
//! with the ports at its ends, as an operator finds it in the rack.

use super::LinkReport;
use canary_core::topo::{PortMap, SwitchIx, Topology};
use serde::{Deserialize, Serialize};

/// A cable (both directions of a physical link) with a blamed direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CableReport {
    /// Its two switches, by name order.
    pub ends: [String; 2],
    /// The port of each end that faces the other (the switches file's, or the simulator's).
    pub ports: [u32; 2],
    /// The estimated loss of each direction that is blamed: `ends[0]→ends[1]`, then back.
    #[serde(serialize_with = "super::round::losses")]
    pub loss: [Option<f64>; 2],
}

/// The cables of the blamed links, in the order their first direction was blamed.
pub fn cables(topo: &Topology, ports: &PortMap, blamed: &[LinkReport]) -> Vec<CableReport> {
    let mut out: Vec<CableReport> = Vec::new();
    for b in blamed {
        let (Some(x), Some(y)) = (topo.switch(&b.link[0]), topo.switch(&b.link[1])) else {
            continue;
        };
        let ((a, pa), (c, pc), dir) = if b.link[0] <= b.link[1] {
            ((x, y), (y, x), 0)
        } else {
            ((y, x), (x, y), 1)
        };
        let port = |s: SwitchIx, n: SwitchIx| {
            ports
                .switches
                .get(s as usize)
                .and_then(|p| p.switch_ports.get(&n).copied())
                .unwrap_or(0)
        };
        let ends = [topo.name_of(a).to_string(), topo.name_of(c).to_string()];
        let i = match out.iter().position(|k| k.ends == ends) {
            Some(i) => i,
            None => {
                out.push(CableReport {
                    ends,
                    ports: [port(a, pa), port(c, pc)],
                    loss: [None, None],
                });
                out.len() - 1
            }
        };
        out[i].loss[dir] = Some(b.loss);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::topo::{fattree::fattree, MonitorPlacement};

    fn blame(a: &str, b: &str, loss: f64) -> LinkReport {
        LinkReport {
            link: [a.into(), b.into()],
            loss,
            stage: Some(1),
            ci95: None,
            since: None,
            flows: None,
            held: false,
        }
    }

    #[test]
    fn a_cable_has_both_directions_and_the_ports_facing_each_other() {
        let k4 = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let ports = PortMap::canonical(&k4);
        let blamed = [
            blame("core0", "agg0_0", 0.05),
            blame("edge1_0", "agg1_1", 0.2),
            blame("agg0_0", "core0", 0.1),
            blame("edge9_9", "agg1_1", 0.3),
        ];
        let c = cables(&k4, &ports, &blamed);
        assert_eq!(c.len(), 2, "{c:?}");
        let port =
            |s: &str, n: &str| ports.of(k4.switch(s).unwrap()).switch_ports[&k4.switch(n).unwrap()];
        assert_eq!(c[0].ends, ["agg0_0".to_string(), "core0".to_string()]);
        assert_eq!(
            c[0].ports,
            [port("agg0_0", "core0"), port("core0", "agg0_0")]
        );
        assert_eq!(c[0].loss, [Some(0.1), Some(0.05)]);
        assert_eq!(c[1].ends, ["agg1_1".to_string(), "edge1_0".to_string()]);
        assert_eq!(c[1].loss, [None, Some(0.2)]);
    }
}
