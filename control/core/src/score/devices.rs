//! Switches whose every link in, or every link out, is blamed: a device fault. Drops on all of
//! a switch's links out and drops on all of its links in look the same from segments (every
//! segment through it crosses one of each; NetBouncer Sec. 4), so such a verdict names the
//! switch, and is scored as the switch.

use crate::fault::Fault;
use crate::topo::{LinkIx, SwitchIx, Topology};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub switch: SwitchIx,
    /// All its links in are blamed (else all its links out).
    pub inbound: bool,
    /// All its links in and all its links out are blamed: the switch drops both ways.
    #[serde(default)]
    pub both: bool,
}

/// The switches with at least two links to other switches all blamed in one direction.
pub fn devices(topo: &Topology, blamed: &[LinkIx]) -> Vec<Device> {
    let mut out = Vec::new();
    for s in 0..topo.switches.len() as SwitchIx {
        let n = topo.neighbors(s);
        if n.len() < 2 {
            continue;
        }
        let all = |f: &dyn Fn(SwitchIx) -> Option<LinkIx>| {
            n.iter().all(|&m| f(m).is_some_and(|l| blamed.contains(&l)))
        };
        let (inbound, outbound) = (all(&|m| topo.link(m, s)), all(&|m| topo.link(s, m)));
        if inbound || outbound {
            out.push(Device {
                switch: s,
                inbound,
                both: inbound && outbound,
            });
        }
    }
    out
}

/// `blamed` as scored against `faults`: where the blamed links name a device (see [`devices`])
/// that has a device fault, its links blamed stand for the device, i.e. for the links the fault
/// drops on.
pub fn as_scored(topo: &Topology, faults: &[Fault], blamed: &[LinkIx]) -> Vec<LinkIx> {
    let mut out: Vec<LinkIx> = blamed.to_vec();
    for d in devices(topo, blamed) {
        let dropping: Vec<LinkIx> = faults
            .iter()
            .filter(|f| f.device == Some(d.switch))
            .map(|f| f.link)
            .collect();
        if dropping.is_empty() {
            continue;
        }
        let l = &topo.links;
        out.retain(|&b| l[b as usize].from != d.switch && l[b as usize].to != d.switch);
        out.extend(dropping);
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::{fattree::fattree, MonitorPlacement};

    #[test]
    fn every_link_in_names_the_switch_and_scores_as_its_fault() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let s = t.switch("agg1_0").unwrap();
        let inbound: Vec<LinkIx> = t
            .neighbors(s)
            .iter()
            .map(|&m| t.link(m, s).unwrap())
            .collect();
        assert_eq!(
            devices(&t, &inbound),
            vec![Device {
                switch: s,
                inbound: true,
                both: false
            }]
        );
        assert!(devices(&t, &inbound[..3]).is_empty());
        let mut faults: Vec<Fault> = t
            .neighbors(s)
            .iter()
            .map(|&m| Fault::constant(t.link(s, m).unwrap(), 0.02))
            .collect();
        // Not a device fault: the links in stay false positives.
        assert_eq!(as_scored(&t, &faults, &inbound), {
            let mut v = inbound.clone();
            v.sort();
            v
        });
        for f in &mut faults {
            f.device = Some(s);
        }
        let mut out: Vec<LinkIx> = faults.iter().map(|f| f.link).collect();
        out.sort();
        assert_eq!(as_scored(&t, &faults, &inbound), out);
    }
}
