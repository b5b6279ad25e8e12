//! The forwarding the written entries make: host ports, ECMP groups, routes and floods, as the
//! model's [`ForwardingState`].

use super::ModelTables;
use canary_core::flow::Addr;
use canary_core::topo::{Flood, ForwardingState, Prefix, Replica, Route};
use canary_switch::entries::RID_TO_HOST;
use std::collections::BTreeMap;

impl ModelTables {
    /// The forwarding the entries written so far make.
    pub(super) fn forwarding_state(&self) -> ForwardingState {
        let mut sizes: BTreeMap<u16, u16> = BTreeMap::new();
        for &(g, j) in self.ecmp.keys() {
            let s = sizes.entry(g).or_default();
            *s = (*s).max(j + 1);
        }
        let groups = sizes
            .iter()
            .map(|(&g, &n)| {
                // 2s - 1 entries per group: member j is entry j, for j < s.
                let s = n.div_ceil(2);
                let members = (0..s)
                    .map(|j| self.ecmp.get(&(g, j)).copied().unwrap_or(0))
                    .collect();
                (g, members)
            })
            .collect();
        let routes = self
            .routes
            .iter()
            .map(|(&(v, len), &(group, size))| {
                let addr = Addr(v.to_be_bytes());
                let len = if addr.is_v4() {
                    len.saturating_sub(96)
                } else {
                    len
                };
                Route {
                    prefix: Prefix::new(addr, len as u8),
                    group,
                    size,
                }
            })
            .collect();
        let floods = self
            .flood_of_port
            .iter()
            .map(|(&in_port, &group)| Flood {
                in_port,
                group,
                replicas: self
                    .groups
                    .get(&group)
                    .map(|r| {
                        r.iter()
                            .map(|&(port, rid)| Replica {
                                port,
                                to_host: rid == RID_TO_HOST,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        ForwardingState {
            host_ports: self.host_in.iter().copied().collect(),
            groups,
            routes,
            floods,
        }
    }
}
