//! A packet's way through the fabric: the path its flow's forwarding gives it, and the walk
//! along it, hop by hop, through each switch's meter step and each link's loss.

use super::{gap, Flow, Packet, Probe, SimFabric};
use canary_core::fabric::HhReport;
use canary_core::fault::hits_flow;
use canary_core::model::{epoch_tag, MonitorRules, Shim};
use canary_core::sketch::FlowHashes;
use canary_core::topo::{LinkIx, SwitchIx};
use canary_core::FlowId;

/// A flow's rules at one hop, as last looked up: they hold while the switch's tables are those
/// of generation `gen` and the flow's packets arrive there with `path_bf`. Every packet of a
/// flow finds the same rules until the controller changes them, so the meter step's table
/// lookups (hashes of the flow key) run once per flow and hop, not per packet.
#[derive(Clone, Copy, Default)]
pub(super) struct HopRules {
    gen: u64,
    path_bf: u32,
    rules: MonitorRules,
}

impl SimFabric {
    /// The path the forwarding tables give `id` from host `host`'s switch, and its links;
    /// `None` if a switch has no route.
    pub(super) fn route(
        &self,
        host: u32,
        id: &FlowId,
        h: FlowHashes,
    ) -> Option<(Vec<SwitchIx>, Vec<LinkIx>)> {
        let mut s = self.topo.hosts[host as usize].switch;
        let mut path = vec![s];
        let mut links = Vec::new();
        loop {
            let port = self.switches[s as usize].model.route(id, h.c32)?;
            let ports = self.ports.of(s);
            if ports.host(port).is_some() {
                return Some((path, links));
            }
            let next = ports.neighbor(port)?;
            links.push(self.topo.link(s, next)?);
            path.push(next);
            s = next;
            if path.len() > 4 * (self.topo.top_layer() as usize + 1) {
                return None;
            }
        }
    }

    /// One packet of `flow` from host `host`, walked through the fabric at once (the same walk
    /// every simulated packet takes): the switches it crossed, whether it arrived, and the HH
    /// reports it caused (as the fabric hands them to the controller). For tests that hold the
    /// simulator to real switches packet by packet; links keep their loss.
    pub fn probe(&mut self, host: u32, flow: FlowId) -> Probe {
        let h = FlowHashes::of(&flow);
        let Some((path, links)) = self.route(host, &flow, h) else {
            return Probe::default();
        };
        let fi = self.flows.len() as u32;
        let mut f = Flow::new(flow, h, host, 0, path.clone(), links);
        f.burst = 1;
        f.window = 1;
        f.burst_start = self.now;
        f.in_flight = 1;
        self.flows.push(f);
        let before = (self.reports.len(), self.stats.delivered);
        let mut p = Packet {
            flow: fi,
            hop: 0,
            shim: Shim::default(),
            t: self.now,
        };
        self.walk(&mut p, u64::MAX);
        Probe {
            path,
            delivered: self.stats.delivered > before.1,
            reports: self.reports[before.0..].to_vec(),
        }
    }

    /// Moves a packet along its path until it is delivered or dropped (true) or its next hop
    /// lies beyond `until` (false). At every switch the model's meter step runs (the path is
    /// the one its forwarding step gave the flow); the first switch pushed the shim
    /// (`Packet::shim` starts empty), the last removes it.
    pub(super) fn walk(&mut self, p: &mut Packet, until: u64) -> bool {
        let fi = p.flow as usize;
        loop {
            if p.t > until {
                return false;
            }
            let f = &mut self.flows[fi];
            let hop = p.hop as usize;
            let s = f.path[hop];
            let sw = &mut self.switches[s as usize];
            let last = hop + 1 == f.path.len();
            if sw.down {
                return self.finish(fi, false);
            }
            if !self.driven {
                let tag = epoch_tag(sw.epoch_at(p.t));
                let mut config = sw.model.config();
                if config.epoch != tag {
                    config.epoch = tag;
                    sw.model.set_config(config);
                }
            }
            let cached = &mut f.rules[hop];
            if cached.gen != sw.gen || cached.path_bf != p.shim.path_bf {
                *cached = HopRules {
                    gen: sw.gen,
                    path_bf: p.shim.path_bf,
                    rules: sw.model.monitor_rules(&f.id, p.shim.path_bf),
                };
            }
            let rules = cached.rules;
            if let Some(d) = sw.model.monitor_with(&f.id, f.h, &mut p.shim, last, rules) {
                if self.reported.insert((s, d.flow)) {
                    self.reports.push(HhReport {
                        switch: s,
                        flow: d.flow,
                        path_bf: d.path_bf,
                    });
                    self.stats.reports += 1;
                }
            }
            if last {
                return self.finish(fi, true);
            }
            let link = f.links[hop];
            let l = &mut self.links[link as usize];
            if l.flows < 1.0 && !hits_flow(f.h.c32, link, l.flows) {
                // A flow the fault spares.
            } else if l.until_drop == 0 {
                l.until_drop = gap(l.p, &mut self.loss_rng);
                return self.finish(fi, false);
            } else {
                l.until_drop -= 1;
            }
            p.t += self.cfg.hop_latency_ns;
            p.hop += 1;
        }
    }

    fn finish(&mut self, fi: usize, delivered: bool) -> bool {
        if delivered {
            self.stats.delivered += 1;
        } else {
            self.stats.dropped += 1;
        }
        let f = &mut self.flows[fi];
        f.in_flight -= 1;
        if f.remaining == 0 && f.in_flight == 0 {
            f.live = false;
            self.free.push(fi as u32);
        }
        true
    }
}
