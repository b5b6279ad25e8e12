//! The hosts' side of the fabric: flows opening on idle slots and sending their packets in
//! bursts, in time order, and each packet's way along its path as far as the links let it
//! (loss, a switch that is down, the end of the time asked for). What the switches count of
//! the packets is the other side's business ([`super::switches`]): nothing here depends on it,
//! so the two sides can run at once, this one a batch of packets ahead.

use super::batch::{Batch, Walk};
use super::links::{drop_some, LinkDrops};
use super::queue::{Event, EventQueue};
use super::switches::FlowView;
use super::{gap, SimConfig, SimStats};
use canary_core::fault::hits_flow;
use canary_core::model::Router;
use canary_core::sketch::FlowHashes;
use canary_core::topo::{LinkIx, PortEnd, PortEnds, SwitchIx, Topology};
use canary_core::FlowId;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use smallvec::{smallvec, SmallVec};

/// What the hosts' side needs of the fabric and does not change while time runs.
#[derive(Clone, Copy)]
pub(super) struct Fixed<'a> {
    pub topo: &'a Topology,
    pub ends: &'a PortEnds,
    /// The most switches a route may cross before it counts as a loop.
    pub max_hops: usize,
    pub cfg: &'a SimConfig,
}

/// The switches of a flow's path, and its links: inline for the paths of a fat-tree (five
/// switches at most), so the packets' walks read them from the flow itself, not from a second
/// allocation that misses the caches once more.
pub(super) type Path = SmallVec<[SwitchIx; 6]>;
pub(super) type PathLinks = SmallVec<[LinkIx; 6]>;

pub(super) struct Flow {
    pub id: FlowId,
    pub host: u32,
    pub slot: u32,
    /// The switches the flow's packets cross, as the forwarding tables route them.
    pub path: Path,
    pub links: PathLinks,
    pub h: FlowHashes,
    pub remaining: u64,
    /// Steady-state window, current window (slow start doubles it each RTT), left in this burst.
    pub burst: u32,
    pub window: u32,
    pub burst_left: u32,
    pub burst_period_ns: u64,
    pub line_gap_ns: u64,
    pub burst_start: u64,
    pub in_flight: u32,
    pub live: bool,
}

/// A packet on its way: its flow, the hop it is at and when it gets there; `parked`: where the
/// switches' side keeps its shim while it waits (see [`Walk::park`]).
#[derive(Clone, Copy)]
pub(super) struct Packet {
    pub flow: u32,
    pub hop: u8,
    pub t: u64,
    pub parked: u32,
}

pub(super) struct Hosts {
    pub flows: Vec<Flow>,
    pub free: Vec<u32>,
    /// Flows' next packets and idle slots' next flows.
    pub queue: EventQueue,
    /// Packets whose next hop lies beyond the time run so far, in the order they left.
    pub pending: Vec<Packet>,
    pub links: Vec<LinkDrops>,
    /// The switches' forwarding steps and whether they are down, as of the start of this run.
    pub routers: Vec<Router>,
    pub down: Vec<bool>,
    pub port_seq: u32,
    pub rng: ChaCha8Rng,
    pub loss_rng: ChaCha8Rng,
    /// Packets parked in this run (the next one's index on the switches' side).
    pub parks: u32,
    /// All counts but the reports (the switches' side counts those).
    pub stats: SimStats,
}

impl Hosts {
    /// The path the forwarding tables give `id` from host `host`'s switch, and its links;
    /// `None` if a switch has no route.
    pub fn route(
        &self,
        fx: Fixed,
        host: u32,
        id: &FlowId,
        h: FlowHashes,
    ) -> Option<(Path, PathLinks)> {
        let mut s = fx.topo.hosts[host as usize].switch;
        let mut path: Path = smallvec![s];
        let mut links = PathLinks::new();
        loop {
            let port = self.routers[s as usize].route(id, h.c32)?;
            let (next, link) = match fx.ends.of(s, port)? {
                PortEnd::Host(_) => return Some((path, links)),
                PortEnd::Switch(next, link) => (next, link?),
            };
            links.push(link);
            path.push(next);
            s = next;
            if path.len() > fx.max_hops {
                return None;
            }
        }
    }

    /// Adds flow `flow` (slot reused if one is free), announcing it to the switches' side.
    pub fn add_flow(&mut self, flow: Flow, batch: &mut Batch) -> u32 {
        let view = FlowView::new(flow.id, flow.h, &flow.path);
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
        batch.open(ix, view);
        ix
    }

    /// Runs events up to `until` (ns) into `batch` until it holds `max` walks or none is left;
    /// first the packets pending from the last run (`resume`), if asked.
    pub fn run(&mut self, fx: Fixed, until: u64, resume: bool, batch: &mut Batch, max: usize) {
        if resume {
            for mut p in std::mem::take(&mut self.pending) {
                let parked = p.parked;
                self.walk(fx, &mut p, until, Some(parked), batch);
            }
        }
        while batch.walks() < max {
            let Some((t, event)) = self.queue.pop_until(until) else {
                break;
            };
            match event {
                Event::Open { host, slot } => self.open_flow(fx, host, slot, t, batch),
                Event::Send(fi) => self.send(fx, fi, t, until, batch),
            }
        }
    }

    fn open_flow(&mut self, fx: Fixed, host: u32, slot: u32, t: u64, batch: &mut Batch) {
        let (topo, cfg) = (fx.topo, fx.cfg);
        let hosts = topo.hosts.len() as u32;
        let src_sw = topo.hosts[host as usize].switch;
        let dst = loop {
            let d = self.rng.random_range(0..hosts);
            if topo.hosts[d as usize].switch != src_sw {
                break d;
            }
        };
        self.port_seq = self.port_seq.wrapping_add(1);
        let (src_h, dst_h) = (&topo.hosts[host as usize], &topo.hosts[dst as usize]);
        let v6 = cfg.ipv6_share > 0.0 && self.rng.random_bool(cfg.ipv6_share.min(1.0));
        let sport = 1024 + (self.port_seq % 64_000) as u16;
        let dport = self.rng.random_range(1024..u16::MAX);
        let id = if v6 {
            FlowId::v6(src_h.addr6, dst_h.addr6, 6, sport, dport)
        } else {
            FlowId::v4(src_h.addr, dst_h.addr, 6, sport, dport)
        };
        let h = FlowHashes::of(&id);
        let shape = cfg.traffic.draw(cfg.traffic.class(slot), &mut self.rng);
        let Some((path, links)) = self.route(fx, host, &id, h) else {
            self.stats.unroutable += 1;
            let when = t + cfg.traffic.think(&mut self.rng);
            self.queue.push(when, Event::Open { host, slot });
            return;
        };
        let flow = Flow {
            id,
            host,
            slot,
            path,
            links,
            h,
            remaining: shape.packets,
            burst: shape.burst,
            window: shape.first_burst,
            burst_left: shape.first_burst,
            burst_period_ns: shape.burst_period_ns,
            line_gap_ns: cfg.traffic.line_gap_ns,
            burst_start: t,
            in_flight: 0,
            live: true,
        };
        let ix = self.add_flow(flow, batch);
        self.stats.flows_started += 1;
        self.queue.push(t, Event::Send(ix));
    }

    /// Flow `fi` sends at `t`: the rest of its burst as one train, as far as the train's
    /// packets all reach their end by `until` (a packet that would still be on its way then
    /// leaves alone, so it can wait for the next run); then the flow schedules its next send
    /// (or its slot's next flow).
    fn send(&mut self, fx: Fixed, fi: u32, t: u64, until: u64, batch: &mut Batch) {
        let n = self.train_at(fx, fi, t, until);
        self.stats.packets += u64::from(n);
        let f = &mut self.flows[fi as usize];
        f.in_flight += n;
        f.remaining -= u64::from(n);
        f.burst_left -= n;
        let last = t + u64::from(n - 1) * f.line_gap_ns;
        if f.remaining > 0 {
            let next = if f.burst_left > 0 {
                last + f.line_gap_ns
            } else {
                f.window = (f.window * 2).min(f.burst);
                f.burst_left = f.window;
                f.burst_start += f.burst_period_ns;
                f.burst_start.max(last + f.line_gap_ns)
            };
            self.queue.push(next, Event::Send(fi));
        } else {
            let (host, slot) = (f.host, f.slot);
            let when = last + fx.cfg.traffic.think(&mut self.rng);
            self.queue.push(when, Event::Open { host, slot });
        }
        if n > 1 {
            self.walk_train(fi, t, n, batch);
            return;
        }
        let mut p = Packet {
            flow: fi,
            hop: 0,
            t,
            parked: 0,
        };
        self.walk(fx, &mut p, until, None, batch);
    }

    /// Packets flow `fi` sends as one train from `t`: what is left of its burst (and of the
    /// flow), at most [`Walk::MAX_TRAIN`], and only those whose walk ends by `until`.
    fn train_at(&self, fx: Fixed, fi: u32, t: u64, until: u64) -> u32 {
        let f = &self.flows[fi as usize];
        let want = (f.burst_left as u64)
            .min(f.remaining)
            .min(Walk::MAX_TRAIN as u64);
        let across = (f.path.len() as u64 - 1) * fx.cfg.hop_latency_ns;
        if want <= 1 || t + across > until || f.line_gap_ns == 0 {
            return 1;
        }
        let fit = (until - t - across) / f.line_gap_ns + 1;
        want.min(fit) as u32
    }

    /// A train of `n > 1` packets of flow `fi` leaving at `t` (packet `i` at `t + i × line
    /// gap`), all of whose walks end by the end of this run: each link drops its packets as it
    /// would drop them one by one (the same geometric gaps between drops), a switch that is down
    /// drops them all, and the switches' side gets, per hop, the packets that reached it.
    fn walk_train(&mut self, fi: u32, t: u64, n: u32, batch: &mut Batch) {
        let f = &self.flows[fi as usize];
        let masks = batch.arrived.len() as u32;
        let mut alive: u64 = if n == 64 { u64::MAX } else { (1 << n) - 1 };
        let (mut delivered, mut hops) = (0, 0u8);
        for hop in 0..f.path.len() {
            if self.down[f.path[hop] as usize] {
                break;
            }
            batch.arrived.push(alive);
            hops += 1;
            if hop + 1 == f.path.len() {
                delivered = alive.count_ones();
                break;
            }
            let link = f.links[hop];
            let l = &mut self.links[link as usize];
            if l.flows >= 1.0 || hits_flow(f.h.c32, link, l.flows) {
                alive = drop_some(alive, l, &mut self.loss_rng);
            }
            if alive == 0 {
                break;
            }
        }
        if hops > 0 {
            batch.walk(Walk {
                flow: fi,
                t,
                from: 0,
                to: hops,
                n: n as u8,
                masks,
                resumed: Walk::FRESH,
                park: false,
            });
        }
        self.stats.delivered += u64::from(delivered);
        self.stats.dropped += u64::from(n - delivered);
        let f = &mut self.flows[fi as usize];
        f.in_flight -= n;
        if f.remaining == 0 && f.in_flight == 0 {
            f.live = false;
            self.free.push(fi);
        }
    }

    /// Moves a packet along its path until it is delivered or dropped, or its next hop lies
    /// beyond `until` (it then waits in `pending`), and has the switches' side run the meter
    /// step at every switch it reached: each switch it arrives at, up and forwarding, counts it,
    /// whether or not the link after drops it.
    pub fn walk(
        &mut self,
        fx: Fixed,
        p: &mut Packet,
        until: u64,
        resumed: Option<u32>,
        batch: &mut Batch,
    ) {
        let (from, t0) = (p.hop, p.t);
        let fi = p.flow as usize;
        let done = loop {
            if p.t > until {
                break None;
            }
            let f = &self.flows[fi];
            let hop = p.hop as usize;
            if self.down[f.path[hop] as usize] {
                break Some(false);
            }
            p.hop += 1;
            if hop + 1 == f.path.len() {
                break Some(true);
            }
            let link = f.links[hop];
            let l = &mut self.links[link as usize];
            if l.flows < 1.0 && !hits_flow(f.h.c32, link, l.flows) {
                // A flow the fault spares.
            } else if l.until_drop == 0 {
                l.until_drop = gap(l.p, &mut self.loss_rng);
                break Some(false);
            } else {
                l.until_drop -= 1;
            }
            p.t += fx.cfg.hop_latency_ns;
        };
        let park = done.is_none();
        if p.hop > from || park {
            batch.walk(Walk {
                flow: p.flow,
                t: t0,
                from,
                to: p.hop,
                n: 1,
                masks: 0,
                resumed: resumed.unwrap_or(Walk::FRESH),
                park,
            });
        }
        match done {
            Some(delivered) => self.finish(fi, delivered),
            None => {
                p.parked = self.parks;
                self.parks += 1;
                self.pending.push(*p);
            }
        }
    }

    fn finish(&mut self, fi: usize, delivered: bool) {
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
    }
}
