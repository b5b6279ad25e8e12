//! The simulated fabric: switch state, flows, packets, and the `Fabric` implementation.

use crate::traffic::TrafficConfig;
use canary_core::fabric::{
    Fabric, HhReport, MeterSnapshot, Parity, RuleOp, SwitchError, SwitchResult,
};
use canary_core::pathbf::PathBfCodec;
use canary_core::sketch::{Dsm, FlowHashes, HashPipe, HashPipeConfig, MeterConfig, Usm};
use canary_core::topo::{LinkIx, Routing, SwitchIx, Topology};
use canary_core::FlowId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    pub traffic: TrafficConfig,
    pub meters: MeterConfig,
    pub hashpipe: HashPipeConfig,
    /// Per-hop latency (serialisation, propagation, queueing), ns.
    pub hop_latency_ns: u64,
    /// A parity flip reaches each switch within this much time of the controller's command.
    pub max_flip_skew_ns: u64,
    pub seed: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            traffic: TrafficConfig::default(),
            meters: MeterConfig::default(),
            hashpipe: HashPipeConfig::default(),
            hop_latency_ns: 5_000,
            max_flip_skew_ns: 50_000,
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
}

struct SwitchState {
    monitor: bool,
    mask: u32,
    usm: [Usm; 2],
    dsm: [Dsm; 2],
    hashpipe: HashPipe,
    /// DSM rules by flow: the pathBFs each matches.
    dsm_rules: HashMap<FlowId, Vec<u32>>,
    usm_rules: HashSet<FlowId>,
    /// HH rules: pathBF → η.
    hh_rules: HashMap<u32, u32>,
    parity: Parity,
    prev_parity: Parity,
    flip_at: u64,
    down: bool,
}

impl SwitchState {
    fn parity_at(&self, t: u64) -> usize {
        self.parity_value_at(t).index()
    }

    fn parity_value_at(&self, t: u64) -> Parity {
        if t >= self.flip_at {
            self.parity
        } else {
            self.prev_parity
        }
    }
}

struct Flow {
    id: FlowId,
    h: FlowHashes,
    host: u32,
    slot: u32,
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
    /// Bit i: the switch at path position i has a USM (resp. DSM) rule for this flow.
    usm_at: u16,
    dsm_at: u16,
    live: bool,
}

#[derive(Clone, Copy)]
struct Packet {
    flow: u32,
    hop: u8,
    /// 0: not counted upstream; 1 + parity: counted in that parity.
    mark: u8,
    bf: u32,
    t: u64,
}

/// Per-link Bernoulli loss, drawn as geometric gaps between drops (one draw per drop).
struct LinkLoss {
    p: f64,
    until_drop: u64,
}

pub struct SimFabric {
    topo: Topology,
    routing: Routing,
    cfg: SimConfig,
    switches: Vec<SwitchState>,
    links: Vec<LinkLoss>,
    flows: Vec<Flow>,
    free: Vec<u32>,
    by_id: HashMap<FlowId, u32>,
    next_send: BinaryHeap<Reverse<(u64, u32)>>,
    /// Slots waiting to open a new flow: (time, host, slot).
    idle_slots: BinaryHeap<Reverse<(u64, u32, u32)>>,
    pending: Vec<Packet>,
    reports: Vec<HhReport>,
    reported: HashSet<(SwitchIx, FlowId)>,
    now: u64,
    port_seq: u32,
    rng: ChaCha8Rng,
    loss_rng: ChaCha8Rng,
    pub stats: SimStats,
}

impl SimFabric {
    /// A fabric over `topo` (switch IDs as the pathBF audit left them) with per-directed-link
    /// drop probabilities `loss`.
    pub fn new(topo: Topology, codec: &PathBfCodec, loss: Vec<f64>, cfg: SimConfig) -> Self {
        assert_eq!(
            loss.len(),
            topo.links.len(),
            "one loss rate per directed link"
        );
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let mut loss_rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x5eed_1055);
        let switches = topo
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| SwitchState {
                monitor: s.monitor,
                mask: codec.masks[i],
                usm: [Usm::new(cfg.meters).unwrap(), Usm::new(cfg.meters).unwrap()],
                dsm: [Dsm::new(cfg.meters).unwrap(), Dsm::new(cfg.meters).unwrap()],
                hashpipe: HashPipe::new(cfg.hashpipe).unwrap(),
                dsm_rules: HashMap::new(),
                usm_rules: HashSet::new(),
                hh_rules: HashMap::new(),
                parity: Parity::Even,
                prev_parity: Parity::Even,
                flip_at: 0,
                down: false,
            })
            .collect();
        let links = loss
            .iter()
            .map(|&p| LinkLoss {
                p,
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
        let routing = Routing::new(&topo);
        Self {
            topo,
            routing,
            cfg,
            switches,
            links,
            flows: Vec::new(),
            free: Vec::new(),
            by_id: HashMap::new(),
            next_send: BinaryHeap::new(),
            idle_slots,
            pending: Vec::new(),
            reports: Vec::new(),
            reported: HashSet::new(),
            now: 0,
            port_seq: 0,
            rng,
            loss_rng,
            stats: SimStats::default(),
        }
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Time for every packet in flight to reach its end (longest path, plus flip skew).
    pub fn drain_time(&self) -> Duration {
        let hops = 2 * self.topo.top_layer() as u64 + 1;
        Duration::from_nanos(2 * (hops * self.cfg.hop_latency_ns + self.cfg.max_flip_skew_ns))
    }

    /// Takes a switch down (it answers nothing and forwards nothing) or brings it back with
    /// empty tables and meters, as a restarted switch comes back.
    pub fn set_switch_down(&mut self, s: SwitchIx, down: bool) {
        let cfg = &self.cfg;
        let sw = &mut self.switches[s as usize];
        if sw.down && !down {
            sw.usm = [Usm::new(cfg.meters).unwrap(), Usm::new(cfg.meters).unwrap()];
            sw.dsm = [Dsm::new(cfg.meters).unwrap(), Dsm::new(cfg.meters).unwrap()];
            sw.hashpipe = HashPipe::new(cfg.hashpipe).unwrap();
            sw.dsm_rules.clear();
            sw.usm_rules.clear();
            sw.hh_rules.clear();
            for f in self.flows.iter_mut().filter(|f| f.live) {
                refresh_rule_bits(f, &self.switches);
            }
        }
        self.switches[s as usize].down = down;
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
        let id = FlowId {
            src: self.topo.hosts[host as usize].addr,
            dst: self.topo.hosts[dst as usize].addr,
            proto: 6,
            sport: 1024 + (self.port_seq % 64_000) as u16,
            dport: self.rng.random_range(1024..u16::MAX),
        };
        let h = FlowHashes::of(&id);
        let path = self.routing.path(
            &self.topo,
            src_sw,
            self.topo.hosts[dst as usize].switch,
            h.c32,
        );
        let links = path
            .windows(2)
            .map(|w| self.topo.link(w[0], w[1]).unwrap())
            .collect();
        let shape = self
            .cfg
            .traffic
            .draw(self.cfg.traffic.class(slot), &mut self.rng);
        let mut flow = Flow {
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
            usm_at: 0,
            dsm_at: 0,
            live: true,
        };
        refresh_rule_bits(&mut flow, &self.switches);
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
        // A recycled 5-tuple: the older flow keeps running but rule changes follow the new one.
        self.by_id.insert(id, ix);
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
                mark: 0,
                bf: 0,
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
    /// lies beyond `until` (false).
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
            if sw.monitor {
                let dsm_rule = f.dsm_at & (1 << hop) != 0
                    && sw
                        .dsm_rules
                        .get(&f.id)
                        .is_some_and(|bfs| bfs.contains(&p.bf));
                if dsm_rule {
                    if p.mark > 0 {
                        sw.dsm[(p.mark - 1) as usize].update(&f.id, f.h, p.bf);
                    }
                } else {
                    let count = sw.hashpipe.update(&f.id, f.h);
                    // A digest is not re-sent for a flow until the controller has taken it.
                    if !sw.hh_rules.is_empty()
                        && sw.hh_rules.get(&p.bf).is_some_and(|&eta| count > eta)
                        && self.reported.insert((s, f.id))
                    {
                        self.reports.push(HhReport {
                            switch: s,
                            flow: f.id,
                            path_bf: p.bf,
                        });
                        self.stats.reports += 1;
                    }
                }
                p.mark = 0;
                p.bf = sw.mask;
                if !last && f.usm_at & (1 << hop) != 0 {
                    let par = sw.parity_at(p.t);
                    sw.usm[par].update(&f.id, f.h);
                    p.mark = 1 + par as u8;
                }
            } else {
                p.bf |= sw.mask;
            }
            if last {
                return self.finish(fi, true);
            }
            let l = &mut self.links[f.links[hop] as usize];
            if l.until_drop == 0 {
                l.until_drop = gap(l.p, &mut self.loss_rng);
                return self.finish(fi, false);
            }
            l.until_drop -= 1;
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
            if self.by_id.get(&f.id) == Some(&(fi as u32)) {
                self.by_id.remove(&f.id);
            }
            self.free.push(fi as u32);
        }
        true
    }

    fn rule_changed(&mut self, flow: FlowId) {
        if let Some(&fi) = self.by_id.get(&flow) {
            refresh_rule_bits(&mut self.flows[fi as usize], &self.switches);
        }
    }
}

/// Recomputes which hops of a flow's path have rules for it.
fn refresh_rule_bits(f: &mut Flow, switches: &[SwitchState]) {
    f.usm_at = 0;
    f.dsm_at = 0;
    for (i, &s) in f.path.iter().enumerate() {
        let sw = &switches[s as usize];
        if sw.usm_rules.contains(&f.id) {
            f.usm_at |= 1 << i;
        }
        if sw.dsm_rules.contains_key(&f.id) {
            f.dsm_at |= 1 << i;
        }
    }
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

    async fn set_parity(&mut self, parity: Parity) -> Vec<(SwitchIx, SwitchResult<()>)> {
        let mut out = Vec::new();
        for s in 0..self.switches.len() {
            let skew = self.rng.random_range(0..=self.cfg.max_flip_skew_ns);
            let sw = &mut self.switches[s];
            if !sw.monitor {
                continue;
            }
            if sw.down {
                out.push((s as SwitchIx, Err(switch_down())));
                continue;
            }
            sw.prev_parity = sw.parity_value_at(self.now);
            sw.parity = parity;
            sw.flip_at = self.now + skew;
            out.push((s as SwitchIx, Ok(())));
        }
        out
    }

    async fn harvest(&mut self, parity: Parity) -> Vec<(SwitchIx, SwitchResult<MeterSnapshot>)> {
        let mut out = Vec::new();
        for (s, sw) in self.switches.iter_mut().enumerate() {
            if !sw.monitor {
                continue;
            }
            if sw.down {
                out.push((s as SwitchIx, Err(switch_down())));
                continue;
            }
            let i = parity.index();
            let snap = MeterSnapshot {
                switch: s as SwitchIx,
                parity,
                usm: sw.usm[i].clone(),
                dsm: sw.dsm[i].clone(),
            };
            sw.usm[i].reset();
            sw.dsm[i].reset();
            sw.hashpipe.reset();
            out.push((s as SwitchIx, Ok(snap)));
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
            let flow = match *op {
                RuleOp::InstallDsm { flow, path_bf, .. } => {
                    let bfs = sw.dsm_rules.entry(flow).or_default();
                    if !bfs.contains(&path_bf) {
                        bfs.push(path_bf);
                    }
                    Some(flow)
                }
                RuleOp::RemoveDsm { flow, path_bf, .. } => {
                    if let Some(bfs) = sw.dsm_rules.get_mut(&flow) {
                        bfs.retain(|&b| b != path_bf);
                        if bfs.is_empty() {
                            sw.dsm_rules.remove(&flow);
                        }
                    }
                    Some(flow)
                }
                RuleOp::InstallUsm { flow, .. } => {
                    sw.usm_rules.insert(flow);
                    Some(flow)
                }
                RuleOp::RemoveUsm { flow, .. } => {
                    sw.usm_rules.remove(&flow);
                    Some(flow)
                }
                RuleOp::InstallHh { path_bf, eta, .. } => {
                    sw.hh_rules.insert(path_bf, eta);
                    None
                }
                RuleOp::RemoveHh { path_bf, .. } => {
                    sw.hh_rules.remove(&path_bf);
                    None
                }
            };
            if let Some(f) = flow {
                self.rule_changed(f);
            }
        }
        failed
    }

    async fn take_reports(&mut self) -> Vec<HhReport> {
        self.reported.clear();
        std::mem::take(&mut self.reports)
    }
}
