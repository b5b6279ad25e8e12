//! Links taken out of service by the fabric's own control (maintenance, or a routing protocol
//! that saw them down): routes are recomputed as routing converges without them, the switches
//! whose tables changed take the new ones, and live flows move to the paths those give.

use super::batch::Batch;
use super::hosts::Fixed;
use super::switches::FlowView;
use super::SimFabric;
use canary_core::topo::{FloodTree, ForwardingState, LinkIx};

impl SimFabric {
    /// Takes exactly `links` out of service from now on (both directions of each; an empty
    /// list puts every link back). Flows move at once; the switches whose forwarding changed
    /// are reported by `Fabric::take_forwarding_changes`.
    ///
    /// # Panics
    /// If taking the links out leaves the fabric disconnected.
    pub fn set_out_of_service(&mut self, links: &[LinkIx]) {
        let mut links: Vec<LinkIx> = links
            .iter()
            .flat_map(|&l| [l, self.topo.reverse(l)])
            .collect();
        links.sort_unstable();
        links.dedup();
        if links == self.out_of_service {
            return;
        }
        let tree = FloodTree::new(&self.topo);
        let states = ForwardingState::all_without(&self.topo, &links, &tree, &self.ports)
            .expect("links out of service leave the fabric connected");
        for (s, next) in (0..).zip(states) {
            if next != self.forwarding[s as usize] {
                let sw = &mut self.net.switches[s as usize];
                if !self.net.driven {
                    sw.model.set_forwarding(next.clone());
                }
                sw.gen = self.gens.next();
                self.forwarding[s as usize] = next;
                self.forwarding_changed.push(s);
            }
        }
        self.out_of_service = links;
        self.reroute();
    }

    /// Every live flow takes the path the forwarding gives it now.
    pub(super) fn reroute(&mut self) {
        self.sync_hosts();
        let fx = Fixed {
            topo: &self.topo,
            ends: &self.ends,
            max_hops: self.max_hops,
            cfg: &self.cfg,
        };
        let mut batch = Batch::default();
        let hosts = &mut self.hosts;
        for ix in 0..hosts.flows.len() {
            let f = &hosts.flows[ix];
            if !f.live {
                continue;
            }
            let Some((path, links)) = hosts.route(fx, f.host, &f.id, f.h) else {
                continue;
            };
            if path != f.path {
                let (id, h) = (f.id, f.h);
                batch.open(ix as u32, FlowView::new(id, h, &path));
                let f = &mut hosts.flows[ix];
                f.path = path;
                f.links = links;
            }
        }
        self.net.run(&mut batch);
    }
}
