//! The hosts' side: flows opening on idle slots and sending their packets in bursts, in time
//! order, each packet walked through the fabric as it leaves.

use super::queue::Event;
use super::{Flow, Packet, SimFabric};
use canary_core::model::Shim;
use canary_core::sketch::FlowHashes;
use canary_core::FlowId;
use rand::Rng;

impl SimFabric {
    fn open_flow(&mut self, host: u32, slot: u32, t: u64) {
        let hosts = self.topo.hosts.len() as u32;
        let src_sw = self.topo.hosts[host as usize].switch;
        let dst = loop {
            let d = self.rng.random_range(0..hosts);
            if self.topo.hosts[d as usize].switch != src_sw {
                break d;
            }
        };
        self.port_seq = self.port_seq.wrapping_add(1);
        let (src_h, dst_h) = (
            &self.topo.hosts[host as usize],
            &self.topo.hosts[dst as usize],
        );
        let v6 = self.cfg.ipv6_share > 0.0 && self.rng.random_bool(self.cfg.ipv6_share.min(1.0));
        let sport = 1024 + (self.port_seq % 64_000) as u16;
        let dport = self.rng.random_range(1024..u16::MAX);
        let id = if v6 {
            FlowId::v6(src_h.addr6, dst_h.addr6, 6, sport, dport)
        } else {
            FlowId::v4(src_h.addr, dst_h.addr, 6, sport, dport)
        };
        let h = FlowHashes::of(&id);
        let shape = self
            .cfg
            .traffic
            .draw(self.cfg.traffic.class(slot), &mut self.rng);
        let Some((path, links)) = self.route(host, &id, h) else {
            self.stats.unroutable += 1;
            let when = t + self.cfg.traffic.think(&mut self.rng);
            self.queue.push(when, Event::Open { host, slot });
            return;
        };
        let mut flow = Flow::new(id, h, host, slot, path, links);
        flow.remaining = shape.packets;
        flow.burst = shape.burst;
        flow.window = shape.first_burst;
        flow.burst_left = shape.first_burst;
        flow.burst_period_ns = shape.burst_period_ns;
        flow.line_gap_ns = self.cfg.traffic.line_gap_ns;
        flow.burst_start = t;
        let ix = match self.free.pop() {
            Some(i) => {
                self.flows[i as usize] = flow;
                i
            }
            None => {
                self.flows.push(flow);
                (self.flows.len() - 1) as u32
            }
        };
        self.stats.flows_started += 1;
        self.queue.push(t, Event::Send(ix));
    }

    /// Runs the fabric until time `until` (ns).
    pub(super) fn advance_to(&mut self, until: u64) {
        let mut pending = std::mem::take(&mut self.pending);
        pending.retain_mut(|p| !self.walk(p, until));
        self.pending = pending;
        while let Some((t, event)) = self.queue.pop_until(until) {
            match event {
                Event::Open { host, slot } => self.open_flow(host, slot, t),
                Event::Send(fi) => self.send(fi, t, until),
            }
        }
        self.now = until;
    }

    /// Flow `fi` sends a packet at `t`: the flow schedules its next one (or its slot's next
    /// flow), and the packet walks as far as `until` gets it.
    fn send(&mut self, fi: u32, t: u64, until: u64) {
        self.stats.packets += 1;
        let mut p = Packet {
            flow: fi,
            hop: 0,
            shim: Shim::default(),
            t,
        };
        let f = &mut self.flows[fi as usize];
        f.in_flight += 1;
        f.remaining -= 1;
        f.burst_left -= 1;
        if f.remaining > 0 {
            let next = if f.burst_left > 0 {
                t + f.line_gap_ns
            } else {
                f.window = (f.window * 2).min(f.burst);
                f.burst_left = f.window;
                f.burst_start += f.burst_period_ns;
                f.burst_start.max(t + f.line_gap_ns)
            };
            self.queue.push(next, Event::Send(fi));
        } else {
            let (host, slot) = (f.host, f.slot);
            let when = t + self.cfg.traffic.think(&mut self.rng);
            self.queue.push(when, Event::Open { host, slot });
        }
        if !self.walk(&mut p, until) {
            self.pending.push(p);
        }
    }
}
