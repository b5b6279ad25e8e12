//! The simulated fabric: flows, packets, lossy links, and the `Fabric` implementation. Every
//! switch is the reference model (`canary_core::model::SwitchModel`): a flow's path is the one the
//! switches' forwarding tables give it (the ECMP member the data plane picks), and every packet
//! passes each switch's meter step, so the simulator's counts, paths and digests are what the
//! P4 program would produce.

mod batch;
mod control;
mod hosts;
mod links;
mod maintenance;
mod queue;
mod run;
mod switches;

use crate::traffic::TrafficConfig;
use canary_core::capacity::Capacity;
use canary_core::fabric::{HhReport, SwitchError};
use canary_core::fault::LinkLoss;
use canary_core::model::{epoch_tag, SwitchConfig, SwitchModel};
use canary_core::pathbf::PathBfCodec;
use canary_core::topo::{
    FloodTree, ForwardingState, PortEnds, PortMap, Routing, SwitchIx, Topology,
};
use hosts::Hosts;
use links::LinkDrops;
use queue::{Event, EventQueue};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use switches::{SimSwitch, Switches};

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

/// Generation numbers of switch tables, never reused.
#[derive(Default)]
struct Generations(u64);

impl Generations {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

pub struct SimFabric {
    topo: Topology,
    ports: PortMap,
    /// `ports` by port number, and the longest route (in switches) before it counts as a loop.
    ends: PortEnds,
    max_hops: usize,
    forwarding: Vec<ForwardingState>,
    masks: Vec<u32>,
    cfg: SimConfig,
    /// Traffic, links and packets' progress; and what the switches count of the packets. The
    /// two sides share nothing while time runs, so they run at once ([`SimFabric::advance`]).
    hosts: Hosts,
    net: Switches,
    gens: Generations,
    now: u64,
    pub stats: SimStats,
    /// Directed links out of service now ([`SimFabric::set_out_of_service`]), and the switches
    /// whose forwarding changed since the controller last asked.
    out_of_service: Vec<canary_core::topo::LinkIx>,
    forwarding_changed: Vec<SwitchIx>,
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
        let forwarding = ForwardingState::all(&topo, &routing, &tree, &ports);
        let masks = codec.masks.clone();
        let mut gens = Generations::default();
        let switches: Vec<SimSwitch> = (0..topo.switches.len())
            .map(|i| SimSwitch {
                model: configured(&cfg, &topo, &masks, &forwarding, i, 0),
                epoch: 0,
                prev_epoch: 0,
                flip_at: 0,
                down: false,
                gen: gens.next(),
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
        let mut queue = EventQueue::new();
        for host in 0..topo.hosts.len() as u32 {
            for slot in 0..cfg.traffic.slots_per_host() {
                // Stagger the first flows over one RTT so bursts do not line up.
                let t = rng.random_range(0..cfg.traffic.rtt_ns.max(1));
                queue.push(t, Event::Open { host, slot });
            }
        }
        let hosts = Hosts {
            flows: Vec::new(),
            free: Vec::new(),
            queue,
            pending: Vec::new(),
            links,
            routers: switches.iter().map(|s| s.model.router()).collect(),
            down: vec![false; switches.len()],
            port_seq: 0,
            rng,
            loss_rng,
            parks: 0,
            stats: SimStats::default(),
        };
        let net = Switches::new(switches, cfg.hop_latency_ns, cfg.traffic.line_gap_ns);
        Self {
            ends: PortEnds::new(&topo, &ports),
            max_hops: 4 * (topo.top_layer() as usize + 1),
            topo,
            ports,
            forwarding,
            masks,
            cfg,
            hosts,
            net,
            gens,
            now: 0,
            stats: SimStats::default(),
            out_of_service: Vec::new(),
            forwarding_changed: Vec::new(),
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
        for sw in &mut f.net.switches {
            sw.model = SwitchModel::new(f.cfg.capacity);
            sw.gen = f.gens.next();
        }
        f.net.driven = true;
        f
    }

    /// From now on each directed link drops as `losses` says (a fault schedule's next epoch).
    /// A link whose rate changes draws its next drop afresh.
    pub fn set_losses(&mut self, losses: &[LinkLoss]) {
        let h = &mut self.hosts;
        assert_eq!(losses.len(), h.links.len(), "one loss per directed link");
        for (l, new) in h.links.iter_mut().zip(losses) {
            if l.p != new.p {
                l.p = new.p;
                l.until_drop = gap(new.p, &mut h.loss_rng);
            }
            l.flows = new.flows;
        }
    }

    /// Switch `s`'s model, for a driver to write into and read from.
    pub fn switch_mut(&mut self, s: SwitchIx) -> &mut SwitchModel {
        let sw = &mut self.net.switches[s as usize];
        sw.gen = self.gens.next();
        &mut sw.model
    }

    /// Lets `d` of fabric time pass: traffic flows, packets are counted.
    pub fn advance(&mut self, d: Duration) {
        self.advance_to(self.now + d.as_nanos() as u64);
    }

    /// The HH digests switch `s` sent since they were last taken.
    pub fn take_reports_of(&mut self, s: SwitchIx) -> Vec<HhReport> {
        let net = &mut self.net;
        let (mine, rest): (Vec<HhReport>, Vec<HhReport>) = std::mem::take(&mut net.reports)
            .into_iter()
            .partition(|r| r.switch == s);
        net.reports = rest;
        net.reported.retain(|(sw, _)| *sw != s);
        mine
    }

    /// Whether switch `s` is down (forwarding nothing).
    pub fn is_down(&self, s: SwitchIx) -> bool {
        self.net.switches[s as usize].down
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The switch model of `s` (its tables and registers), for tests.
    pub fn model(&self, s: SwitchIx) -> &SwitchModel {
        &self.net.switches[s as usize].model
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
        let sw = &mut self.net.switches[s as usize];
        sw.gen = self.gens.next();
        if self.net.driven {
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

#[cfg(test)]
mod tests;
