//! Where the forwarding Canary installed sends a flow from a monitor: the segment it must take.
//!
//! A link that drops every packet from before any flow through it was selected leaves its
//! segments' downstream HH rules nothing to report: selection (Sec. III-D) finds flows only
//! where they arrive. The flow's entry is seen instead: an HH rule at the segment's upstream
//! monitor on pathBF 0 reports heavy flows as they come in from its hosts, and the forwarding
//! the controller installed (routes, ECMP groups, `ecmp_member` on the switch's mask, as the
//! data plane hashes) says which segment each leaves by. A flow predicted onto a segment that
//! has none is monitored there and expected at once: if it never arrives, that is loss
//! ([`super::FlowSelector::expected`]). Only while the controller's forwarding is the fabric's:
//! any forwarding change the fabric reports ends the predictions.

use crate::flow::FlowId;
use crate::model::Router;
use crate::sketch::FlowHashes;
use crate::topo::{
    FloodTree, ForwardingState, PortMap, Routing, SegmentId, Segments, SwitchIx, Topology,
};

/// The fabric's forwarding as the controller configured it.
#[derive(Clone, Debug)]
pub struct Predictor {
    routers: Vec<Router>,
    ports: PortMap,
    monitor: Vec<bool>,
    /// Whether each switch has hosts (its entry HH rule on pathBF 0 sees their flows).
    has_hosts: Vec<bool>,
}

impl Predictor {
    /// The forwarding of `topo` on `ports`, each switch hashing with its pathBF mask `masks[s]`.
    pub fn new(topo: &Topology, ports: &PortMap, masks: &[u32]) -> Self {
        let routing = Routing::new(topo);
        let tree = FloodTree::new(topo);
        let routers = ForwardingState::all(topo, &routing, &tree, ports)
            .into_iter()
            .enumerate()
            .map(|(s, state)| Router::new(state, masks.get(s).copied().unwrap_or(0)))
            .collect();
        Self {
            routers,
            ports: ports.clone(),
            monitor: topo.switches.iter().map(|s| s.monitor).collect(),
            has_hosts: (0..topo.switches.len() as SwitchIx)
                .map(|s| !ports.of(s).host_ports.is_empty())
                .collect(),
        }
    }

    /// Whether monitor `s` has hosts whose flows an entry rule would see.
    pub fn has_hosts(&self, s: SwitchIx) -> bool {
        self.has_hosts.get(s as usize).copied().unwrap_or(false)
    }

    /// The segment `flow` leaves monitor `from` by, as the forwarding sends it; `None` when it
    /// leaves to a host, has no route, or the walk is not an enumerated segment.
    pub fn next_segment(
        &self,
        segments: &Segments,
        from: SwitchIx,
        flow: &FlowId,
    ) -> Option<SegmentId> {
        let c32 = FlowHashes::of(flow).c32;
        let mut path = vec![from];
        let mut s = from;
        // A segment is a shortest path between monitors: a few hops in any fabric.
        for _ in 0..self.routers.len().min(16) {
            let port = self.routers.get(s as usize)?.route(flow, c32)?;
            let next = self.ports.of(s).neighbor(port)?;
            path.push(next);
            if self.monitor[next as usize] {
                return segments.find(&path);
            }
            s = next;
        }
        None
    }
}
