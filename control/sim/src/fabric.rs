//! The simulated fabric: flows, packets, lossy links, and the `Fabric` implementation. Every
//! switch is the reference model (`canary_core::model::SwitchModel`): a flow's path is the one the
//! switches' forwarding tables give it (the ECMP member the data plane picks), and every packet
//! passes each switch's meter step, so the simulator's counts, paths and digests are what the
//! P4 program would produce.

use crate::traffic::TrafficConfig;
use canary_core::capacity::Capacity;
use canary_core::fabric::{
    Fabric, HhReport, MeterSnapshot, Parity, RuleOp, SwitchError, SwitchResult,
};
use canary_core::fault::{hits_flow, LinkLoss};
use canary_core::model::{epoch_tag, Shim, SwitchConfig, SwitchModel};
use canary_core::pathbf::PathBfCodec;
use canary_core::sketch::FlowHashes;
use canary_core::topo::{FloodTree, ForwardingState, LinkIx, PortMap, Routing, SwitchIx, Topology};
use canary_core::FlowId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    pub traffic: TrafficConfig,
    /// What each switch holds: meter shapes and table sizes (default: the P4 program's).
    pub capacity: Capacity,
    /// Per-hop latency (serialisation, propagation, queueing), ns.
    pub hop_latency_ns: u64,
    /// An epoch flip reaches each switch within this much time of the controller's command.
    pub max_flip_skew_ns: u64,
    /// A share of flows between IPv6 addresses, in [0, 1].
    pub ipv6_share: f64,
    pub seed: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            traffic: TrafficConfig::default(),
            capacity: Capacity::of_program(),
            hop_latency_ns: 5_000,
            max_flip_skew_ns: 50_000,
            ipv6_share: 0.0,
            seed: 1,
        }
    }
}

/// Ground truth the simulator knows and the controller never sees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimStats {
    pub packets: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub flows_started: u64,
    pub reports: u64,
    /// Flows not opened because no route led to their destination.
    pub unroutable: u64,
}

/// What one probed packet did ([`SimFabric::probe`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Probe {
    pub path: Vec<SwitchIx>,
    pub delivered: bool,
    pub reports: Vec<HhReport>,
}

/// One switch: the model, and the epoch flip as it reaches the switch (with skew).
struct SimSwitch {
    model: SwitchModel,
    epoch: u64,
    prev_epoch: u64,
    flip_at: u64,
    down: bool,
}

impl SimSwitch {
    /// The epoch the switch counts in at time `t`.
    fn epoch_at(&self, t: u64) -> u64 {
        if t >= self.flip_at {
            self.epoch
        } else {
            self.prev_epoch
        }
    }
}

struct Flow {
    id: FlowId,
    h: FlowHashes,
    host: u32,
    slot: u32,
    /// The switches the flow's packets cross, as the forwarding tables route them.
    path: Vec<SwitchIx>,
    links: Vec<LinkIx>,
    remaining: u64,
    /// Steady-state window, current window (slow start doubles it each RTT), left in this burst.
    burst: u32,
    window: u32,
    burst_left: u32,
    burst_period_ns: u64,
    line_gap_ns: u64,
    burst_start: u64,
    in_flight: u32,
    live: bool,
}

#[derive(Clone, Copy)]
struct Packet {
    flow: u32,
    hop: u8,
    shim: Shim,
    t: u64,
}

/// Per-link Bernoulli loss, drawn as geometric gaps between drops (one draw per drop), on the
/// packets of the share `flows` of flows ([`hits_flow`]).
struct LinkDrops {
    p: f64,
    flows: f64,
    until_drop: u64,
}

pub struct SimFabric {
    topo: Topology,
    ports: PortMap,
    forwarding: Vec<ForwardingState>,
    masks: Vec<u32>,
    cfg: SimConfig,
    switches: Vec<SimSwitch>,
    links: Vec<LinkDrops>,
    flows: Vec<Flow>,
    free: Vec<u32>,
    next_send: BinaryHeap<Reverse<(u64, u32)>>,
    /// Slots waiting to open a new flow: (time, host, slot).
    idle_slots: BinaryHeap<Reverse<(u64, u32, u32)>>,
    pending: Vec<Packet>,
    reports: Vec<HhReport>,
    /// Digests not yet taken: a switch's digest engine sends a flow once until the controller
    /// acknowledges it (P4Runtime's digest cache), though the pipeline asks per packet.
    reported: HashSet<(SwitchIx, FlowId)>,
    now: u64,
    port_seq: u32,
    rng: ChaCha8Rng,
    loss_rng: ChaCha8Rng,
    /// The switches are configured by a controller through drivers ([`SimFabric::driven`]), not
    /// by the simulator: their epoch is what was written into them.
    driven: bool,
    pub stats: SimStats,
}

impl SimFabric {
    /// A fabric over `topo` (switch IDs as the pathBF audit left them) with per-directed-link
    /// drop probabilities `loss`, its ports numbered canonically.
    pub fn new(topo: Topology, codec: &PathBfCodec, loss: Vec<f64>, cfg: SimConfig) -> Self {
        let ports = PortMap::canonical(&topo);
        Self::with_ports(topo, codec, loss, cfg, ports)
    }

    /// [`SimFabric::new`] with the ports of a real fabric (a switches file), so flows take the
    /// paths they take there.
    pub fn with_ports(
        topo: Topology,
        codec: &PathBfCodec,
        loss: Vec<f64>,
        cfg: SimConfig,
        ports: PortMap,
    ) -> Self {
        assert_eq!(
            loss.len(),
            topo.links.len(),
            "one loss rate per directed link"
        );
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let mut loss_rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x5eed_1055);
        let routing = Routing::new(&topo);
        let tree = FloodTree::new(&topo);
        let forwarding: Vec<ForwardingState> = (0..topo.switches.len() as SwitchIx)
            .map(|s| ForwardingState::of(&topo, &routing, &tree, s, ports.of(s)))
            .collect();
        let masks = codec.masks.clone();
        let switches = (0..topo.switches.len())
            .map(|i| SimSwitch {
                model: configured(&cfg, &topo, &masks, &forwarding, i, 0),
                epoch: 0,
                prev_epoch: 0,
                flip_at: 0,
                down: false,
            })
            .collect();
        let links = loss
            .iter()
            .map(|&p| LinkDrops {
                p,
                flows: 1.0,
                until_drop: gap(p, &mut loss_rng),
            })
            .collect();
        let mut idle_slots = BinaryHeap::new();
        for host in 0..topo.hosts.len() as u32 {
            for slot in 0..cfg.traffic.slots_per_host() {
                // Stagger the first flows over one RTT so bursts do not line up.
                let t = rng.random_range(0..cfg.traffic.rtt_ns.max(1));
                idle_slots.push(Reverse((t, host, slot)));
            }
        }
        Self {
            topo,
            ports,
            forwarding,
            masks,
            cfg,
            switches,
            links,
            flows: Vec::new(),
            free: Vec::new(),
            next_send: BinaryHeap::new(),
            idle_slots,
            pending: Vec::new(),
            reports: Vec::new(),
            reported: HashSet::new(),
            now: 0,
            port_seq: 0,
            rng,
            loss_rng,
            driven: false,
            stats: SimStats::default(),
        }
    }

    /// The data plane alone, for a controller that configures the switches itself through
    /// drivers (the chaos driver): switches boot empty (no forwarding, no configuration, no
    /// rules), so nothing is routed until the controller has pushed their forwarding; each
    /// switch counts in the epoch its configuration was last given. Time advances with
    /// [`SimFabric::advance`]; HH digests are taken per switch ([`SimFabric::take_reports_of`]).
    pub fn driven(
        topo: Topology,
        codec: &PathBfCodec,
        loss: Vec<f64>,
        cfg: SimConfig,
        ports: PortMap,
    ) -> Self {
        let mut f = Self::with_ports(topo, codec, loss, cfg, ports);
        for sw in &mut f.switches {
            sw.model = SwitchModel::new(f.cfg.capacity);
        }
        f.driven = true;
        f
    }

    /// From now on each directed link drops as `losses` says (a fault schedule's next epoch).
    /// A link whose rate changes draws its next drop afresh.
    pub fn set_losses(&mut self, losses: &[LinkLoss]) {
        assert_eq!(losses.len(), self.links.len(), "one loss per directed link");
        for (l, new) in self.links.iter_mut().zip(losses) {
            if l.p != new.p {
                l.p = new.p;
                l.until_drop = gap(new.p, &mut self.loss_rng);
            }
            l.flows = new.flows;
        }
    }

    /// Switch `s`'s model, for a driver to write into and read from.
    pub fn switch_mut(&mut self, s: SwitchIx) -> &mut SwitchModel {
        &mut self.switches[s as usize].model
    }

    /// Lets `d` of fabric time pass: traffic flows, packets are counted.
    pub fn advance(&mut self, d: Duration) {
        self.advance_to(self.now + d.as_nanos() as u64);
    }

    /// The HH digests switch `s` sent since they were last taken.
    pub fn take_reports_of(&mut self, s: SwitchIx) -> Vec<HhReport> {
        let (mine, rest): (Vec<HhReport>, Vec<HhReport>) = std::mem::take(&mut self.reports)
            .into_iter()
            .partition(|r| r.switch == s);
        self.reports = rest;
        self.reported.retain(|(sw, _)| *sw != s);
        mine
    }

    /// Whether switch `s` is down (forwarding nothing).
    pub fn is_down(&self, s: SwitchIx) -> bool {
        self.switches[s as usize].down
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The switch model of `s` (its tables and registers), for tests.
    pub fn model(&self, s: SwitchIx) -> &SwitchModel {
        &self.switches[s as usize].model
    }

    /// Time for every packet in flight to reach its end (longest path, plus flip skew).
    pub fn drain_time(&self) -> Duration {
        let hops = 2 * self.topo.top_layer() as u64 + 1;
        Duration::from_nanos(2 * (hops * self.cfg.hop_latency_ns + self.cfg.max_flip_skew_ns))
    }

    /// Takes a switch down (it answers nothing and forwards nothing) or brings it back as a
    /// restarted switch comes back: empty meters, no Canary rules, its forwarding and
    /// configuration pushed again.
    pub fn set_switch_down(&mut self, s: SwitchIx, down: bool) {
        let sw = &mut self.switches[s as usize];
        if self.driven {
            // A restart: the switch comes back empty; its controller configures it again.
            if sw.down && !down {
                sw.model.restart();
            }
        } else if sw.down && !down {
            sw.model = configured(
                &self.cfg,
                &self.topo,
                &self.masks,
                &self.forwarding,
                s as usize,
                sw.epoch,
            );
        }
        sw.down = down;
    }

    /// The path the forwarding tables give `id` from host `host`'s switch, and its links;
    /// `None` if a switch has no route.
    fn route(&self, host: u32, id: &FlowId, h: FlowHashes) -> Option<(Vec<SwitchIx>, Vec<LinkIx>)> {
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
        self.flows.push(Flow {
            id: flow,
            h,
            host,
            slot: 0,
            path: path.clone(),
            links,
            remaining: 0,
            burst: 1,
            window: 1,
            burst_left: 0,
            burst_period_ns: 0,
            line_gap_ns: 0,
            burst_start: self.now,
            in_flight: 1,
            live: true,
        });
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
            self.idle_slots.push(Reverse((when, host, slot)));
            return;
        };
        let flow = Flow {
            id,
            h,
            host,
            slot,
            path,
            links,
            remaining: shape.packets,
            burst: shape.burst,
            window: shape.first_burst,
            burst_left: shape.first_burst,
            burst_period_ns: shape.burst_period_ns,
            line_gap_ns: self.cfg.traffic.line_gap_ns,
            burst_start: t,
            in_flight: 0,
            live: true,
        };
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
        self.next_send.push(Reverse((t, ix)));
    }

    /// Runs the fabric until time `until` (ns).
    fn advance_to(&mut self, until: u64) {
        let mut pending = std::mem::take(&mut self.pending);
        pending.retain_mut(|p| !self.walk(p, until));
        self.pending = pending;
        loop {
            let next_open = self.idle_slots.peek().map(|r| r.0 .0).unwrap_or(u64::MAX);
            let next_pkt = self.next_send.peek().map(|r| r.0 .0).unwrap_or(u64::MAX);
            if next_open.min(next_pkt) > until {
                break;
            }
            if next_open <= next_pkt {
                let Reverse((t, host, slot)) = self.idle_slots.pop().unwrap();
                self.open_flow(host, slot, t);
                continue;
            }
            let Reverse((t, fi)) = self.next_send.pop().unwrap();
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
                self.next_send.push(Reverse((next, fi)));
            } else {
                let (host, slot) = (f.host, f.slot);
                let when = t + self.cfg.traffic.think(&mut self.rng);
                self.idle_slots.push(Reverse((when, host, slot)));
            }
            if !self.walk(&mut p, until) {
                self.pending.push(p);
            }
        }
        self.now = until;
    }

    /// Moves a packet along its path until it is delivered or dropped (true) or its next hop
    /// lies beyond `until` (false). At every switch the model's meter step runs (the path is
    /// the one its forwarding step gave the flow); the first switch pushed the shim
    /// (`Packet::shim` starts empty), the last removes it.
    fn walk(&mut self, p: &mut Packet, until: u64) -> bool {
        let fi = p.flow as usize;
        loop {
            if p.t > until {
                return false;
            }
            let f = &self.flows[fi];
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
            if let Some(d) = sw.model.monitor(&f.id, f.h, &mut p.shim, last) {
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

/// Switch `i` as the controller configures it at start or after a restart: its forwarding,
/// monitor flag, pathBF mask and epoch; no Canary rules.
fn configured(
    cfg: &SimConfig,
    topo: &Topology,
    masks: &[u32],
    forwarding: &[ForwardingState],
    i: usize,
    epoch: u64,
) -> SwitchModel {
    let mut m = SwitchModel::new(cfg.capacity);
    m.set_forwarding(forwarding[i].clone());
    m.set_config(SwitchConfig {
        monitor: topo.switches[i].monitor,
        mask: masks[i],
        epoch: epoch_tag(epoch),
    });
    m
}

fn switch_down() -> SwitchError {
    SwitchError::Unreachable("switch is down".into())
}

/// Packets that pass a link before its next drop: geometric with success probability 1 − p.
fn gap(p: f64, rng: &mut impl Rng) -> u64 {
    if p <= 0.0 {
        u64::MAX
    } else if p >= 1.0 {
        0
    } else {
        let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
        (u.ln() / (1.0 - p).ln()).floor().min(u64::MAX as f64 / 2.0) as u64
    }
}

impl Fabric for SimFabric {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.now)
    }

    async fn wait(&mut self, d: Duration) {
        self.advance_to(self.now + d.as_nanos() as u64);
    }

    fn capacity(&self) -> Capacity {
        self.cfg.capacity
    }

    async fn set_epoch(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<()>)> {
        let mut out = Vec::new();
        for s in 0..self.switches.len() {
            let skew = self.rng.random_range(0..=self.cfg.max_flip_skew_ns);
            let sw = &mut self.switches[s];
            if !sw.model.config().monitor {
                continue;
            }
            if sw.down {
                out.push((s as SwitchIx, Err(switch_down())));
                continue;
            }
            sw.prev_epoch = sw.epoch_at(self.now);
            sw.epoch = epoch;
            sw.flip_at = self.now + skew;
            out.push((s as SwitchIx, Ok(())));
        }
        out
    }

    async fn harvest(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<MeterSnapshot>)> {
        let mut out = Vec::new();
        for (s, sw) in self.switches.iter_mut().enumerate() {
            if !sw.model.config().monitor {
                continue;
            }
            if sw.down {
                out.push((s as SwitchIx, Err(switch_down())));
                continue;
            }
            let (usm, dsm) = sw.model.meters_of(epoch_tag(epoch));
            sw.model.clear_hashpipe();
            out.push((
                s as SwitchIx,
                Ok(MeterSnapshot {
                    switch: s as SwitchIx,
                    parity: Parity::of_epoch(epoch),
                    epoch,
                    usm,
                    dsm,
                }),
            ));
        }
        out
    }

    async fn apply(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)> {
        let mut failed = Vec::new();
        for op in ops {
            let sw = &mut self.switches[op.switch() as usize];
            if sw.down {
                failed.push((op.clone(), switch_down()));
                continue;
            }
            if let Err(e) = sw.model.apply(op) {
                failed.push((op.clone(), SwitchError::Other(e.to_string())));
            }
        }
        failed
    }

    async fn take_reports(&mut self) -> Vec<HhReport> {
        self.reported.clear();
        std::mem::take(&mut self.reports)
    }
}

#[cfg(test)]
mod tests;
