//! A fabric of switch models joined by their ports, carrying real frames hop by hop: what a
//! network of switches running Canary's program does with a frame a host sends. Used where
//! frames matter byte for byte (the model's own tests, the BMv2 packet tests' expectations);
//! the simulator walks flows on the same [`SwitchModel`]s without building frames.

use super::{wire, Digest, Egress, SwitchModel};
use crate::topo::{PortMap, SwitchIx, Topology};

/// Where a copy of a frame went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The frame as it left `switch` by `port` toward another switch.
    Link {
        switch: SwitchIx,
        port: u32,
        frame: Vec<u8>,
    },
    /// Delivered to host `host` (index into the topology's hosts).
    Delivered { host: u32, frame: Vec<u8> },
    /// `switch` had no route for it.
    NoRoute { switch: SwitchIx },
    /// `switch` sent an HH digest for it.
    Digest { switch: SwitchIx, digest: Digest },
    /// The frame left `switch` by `port`, the held port: in flight until released with
    /// [`Net::arrive`] at the far end.
    Held {
        switch: SwitchIx,
        port: u32,
        frame: Vec<u8>,
    },
}

/// Switch models wired as the topology and its port map say.
pub struct Net<'t> {
    pub topo: &'t Topology,
    pub ports: &'t PortMap,
    pub switches: Vec<SwitchModel>,
    /// Frames leaving this switch by this port stop there ([`Event::Held`]).
    pub hold: Option<(SwitchIx, u32)>,
}

/// Hops a frame may take before the walk gives up (a flood on a loop would never end).
const MAX_HOPS: usize = 64;

impl<'t> Net<'t> {
    pub fn new(topo: &'t Topology, ports: &'t PortMap, switches: Vec<SwitchModel>) -> Self {
        assert_eq!(switches.len(), topo.switches.len(), "one model per switch");
        Net {
            topo,
            ports,
            switches,
            hold: None,
        }
    }

    /// Host `host` sends `frame`: every copy is followed to its end, depth first in port
    /// order. Returns what happened, in order.
    pub fn send(&mut self, host: u32, frame: &[u8]) -> Vec<Event> {
        let h = &self.topo.hosts[host as usize];
        let port = self.ports.of(h.switch).host_ports[&host];
        let mut events = Vec::new();
        self.arrive(h.switch, port, frame.to_vec(), 0, &mut events);
        events
    }

    /// A held frame (left `switch` by `port`) arrives at the far end, and everything it leads to.
    pub fn release(&mut self, switch: SwitchIx, port: u32, frame: Vec<u8>) -> Vec<Event> {
        let next = self
            .ports
            .of(switch)
            .neighbor(port)
            .expect("a held port faces a switch");
        let back = self.ports.of(next).switch_ports[&switch];
        let mut events = Vec::new();
        self.arrive(next, back, frame, 0, &mut events);
        events
    }

    /// `frame` arriving at `switch` on `in_port`, and everything it leads to.
    pub fn arrive(
        &mut self,
        switch: SwitchIx,
        in_port: u32,
        frame: Vec<u8>,
        depth: usize,
        events: &mut Vec<Event>,
    ) {
        assert!(depth < MAX_HOPS, "a frame went round in circles");
        let ports = self.ports.of(switch);
        let from_host = ports.host(in_port).is_some();
        let mut pkt = wire::parse(&frame);
        // What the sender wrote: a host's frame whole, a fabric frame without our shim.
        let plain = if from_host {
            frame
        } else {
            wire::split(&frame).0
        };
        let sw = &mut self.switches[switch as usize];
        let hop = sw.process(&mut pkt, in_port);
        if let Some(digest) = hop.digest {
            events.push(Event::Digest { switch, digest });
        }
        let copies: Vec<(u32, Vec<u8>)> = match hop.egress {
            Egress::NoRoute => {
                events.push(Event::NoRoute { switch });
                return;
            }
            Egress::Unicast(port) => vec![(port, wire::join(&plain, pkt.shim))],
            Egress::Flood(group) => sw
                .replicas(group)
                .iter()
                .map(|r| {
                    let shim = if r.to_host { None } else { pkt.shim };
                    (r.port, wire::join(&plain, shim))
                })
                .collect(),
        };
        for (port, out) in copies {
            let ports = self.ports.of(switch);
            if let Some(host) = ports.host(port) {
                events.push(Event::Delivered { host, frame: out });
            } else if self.hold == Some((switch, port)) {
                events.push(Event::Held {
                    switch,
                    port,
                    frame: out,
                });
            } else if let Some(next) = ports.neighbor(port) {
                events.push(Event::Link {
                    switch,
                    port,
                    frame: out.clone(),
                });
                let back = self.ports.of(next).switch_ports[&switch];
                self.arrive(next, back, out, depth + 1, events);
            }
        }
    }
}
