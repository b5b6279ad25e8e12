//! Each switch's routes to every host, resolved from its forwarding tables once: a new flow is
//! routed hop by hop, and a longest-prefix lookup per hop (a hash map per prefix length, then
//! the group's members, then the port's far end) missed the caches four or five times over at
//! k = 32, where it was a sixth of the simulator's time. Here a hop is one entry by destination
//! host and one far end by group member. What they give is what the tables give
//! ([`Router::target`], [`Router::member_index`]); a switch's are dropped whenever its forwarding
//! changes, and built again at its next flow.

use super::hosts::Fixed;
use canary_core::flow::Addr;
use canary_core::model::{RouteTarget, Router};
use canary_core::topo::{PortEnd, SwitchIx};

/// A flow's destination: a host, and which of its addresses.
#[derive(Clone, Copy)]
pub(super) struct Dst {
    pub host: u32,
    pub v6: bool,
}

/// One switch's resolved routes: per destination host (IPv4 and IPv6 apart, each built at its
/// first flow), and the far end of each group member's port.
#[derive(Clone, Default)]
struct SwitchRoutes {
    v4: Vec<RouteTarget>,
    v6: Vec<RouteTarget>,
    ends: Vec<Option<PortEnd>>,
}

#[derive(Clone, Default)]
pub(super) struct HostRoutes {
    switches: Vec<SwitchRoutes>,
}

impl HostRoutes {
    pub fn new(switches: usize) -> Self {
        HostRoutes {
            switches: vec![SwitchRoutes::default(); switches],
        }
    }

    /// Switch `s` has new forwarding: what was resolved of the old is gone.
    pub fn forget(&mut self, s: SwitchIx) {
        if let Some(r) = self.switches.get_mut(s as usize) {
            *r = SwitchRoutes::default();
        }
    }

    /// Where switch `s` sends a packet of CRC-32 `c32` to host `dst` (`v6`: to its IPv6
    /// address): `None` when it has no route, or the member's port faces nothing.
    pub fn next(
        &mut self,
        fx: Fixed,
        router: &Router,
        s: SwitchIx,
        dst: Dst,
        c32: u32,
    ) -> Option<PortEnd> {
        let Dst { host: dst, v6 } = dst;
        let (topo, ends) = (fx.topo, fx.ends);
        let r = &mut self.switches[s as usize];
        let table = if v6 { &mut r.v6 } else { &mut r.v4 };
        if table.is_empty() {
            *table = topo
                .hosts
                .iter()
                .map(|h| {
                    router.target(if v6 {
                        Addr::v6(h.addr6)
                    } else {
                        Addr::v4(h.addr)
                    })
                })
                .collect();
        }
        if r.ends.is_empty() {
            r.ends = router.members().iter().map(|&p| ends.of(s, p)).collect();
        }
        let t = *table.get(dst as usize)?;
        let i = router.member_index(t, c32)?;
        r.ends[i as usize]
    }
}
