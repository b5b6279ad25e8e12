//! A synthesized epoch of meter snapshots, for fabrics too large for the packet simulator.
//!
//! Every segment gets `flows_per_segment` (β) flows with random 5-tuples, each sending
//! `packets_per_segment / flows_per_segment` (α/β) packets. The upstream monitor's USM counts
//! all of them; the downstream monitor's DSM counts a binomial draw through the segment's links
//! (survival `Π (1 − loss[l])`) and records the segment's pathBF, exactly as the data plane would
//! after a perfectly drained epoch. Bulk counts go through `update_n`, so the meters are real
//! `Usm`/`Dsm` state with real hash collisions.
//!
//! Meter width: one width for every meter, the next power of two ≥ `width_factor` × the flows
//! of the busiest meter (a switch's USM and DSM are separate meters, each sized for the flows it
//! counts). With `width_factor = 4` and d = 3 rows, Theorem 2 gives each flow a clean bucket with
//! probability ≥ 0.989.
//!
//! Not modelled: flow selection (every segment simply has β flows), HashPipe, packets in flight
//! at harvest time, parity skew, flows crossing several segments (each segment's flows are its
//! own).

use canary_core::detect::Expected;
use canary_core::fabric::{MeterSnapshot, Parity};
use canary_core::fault::{hits_flow, LinkLoss};
use canary_core::pathbf::PathBfCodec;
use canary_core::sketch::{Dsm, FlowHashes, MeterConfig, SketchConfigError, Usm};
use canary_core::topo::{LinkIx, SegmentId, Segments, SwitchIx, Topology};
use canary_core::FlowId;
use rand::Rng;
use rand_distr::{Binomial, Distribution};

/// What to synthesize.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SynthConfig {
    /// β: flows per segment.
    pub flows_per_segment: u32,
    /// α: packets per segment (each flow sends α/β, at least 1).
    pub packets_per_segment: u64,
    /// d: meter rows.
    pub rows: usize,
    /// Width = next power of two ≥ this × flows of the busiest meter.
    pub width_factor: usize,
}

impl Default for SynthConfig {
    /// Table III's α = 1000, β = 20; d = 3, w ≥ 4 × flows.
    fn default() -> Self {
        Self {
            flows_per_segment: 20,
            packets_per_segment: 1000,
            rows: 3,
            width_factor: 4,
        }
    }
}

/// One synthesized epoch.
#[derive(Clone, Debug)]
pub struct SynthEpoch {
    /// One snapshot per monitor switch, in switch order.
    pub snapshots: Vec<MeterSnapshot>,
    pub meters: MeterConfig,
    /// Flows counted by the busiest meter.
    pub busiest_meter_flows: usize,
    /// Flows and packets sent (upstream counts), packets that reached their DSM.
    pub flows: u64,
    pub sent: u64,
    pub delivered: u64,
    /// Every synthesized flow on its segment: the flows flow selection would have found and
    /// seen arrive, whose absence downstream is loss.
    pub expected: Vec<Expected>,
}

/// The meter shape for `busiest` flows per meter.
pub fn meter_config(
    busiest: usize,
    rows: usize,
    width_factor: usize,
) -> Result<MeterConfig, SketchConfigError> {
    MeterConfig::new(rows, (busiest * width_factor).max(1).next_power_of_two())
}

/// Flows counted by the busiest meter: per monitor, β × the segments it is the upstream (USM) or
/// the downstream (DSM) end of.
pub fn busiest_meter_flows(topo: &Topology, segments: &Segments, flows_per_segment: u32) -> usize {
    let mut up = vec![0usize; topo.switches.len()];
    let mut down = vec![0usize; topo.switches.len()];
    for s in &segments.list {
        up[s.upstream() as usize] += 1;
        down[s.downstream() as usize] += 1;
    }
    up.iter().chain(&down).copied().max().unwrap_or(0) * flows_per_segment as usize
}

/// Fills a USM and a DSM per monitor for one epoch. `loss[l]` is what directed link `l` drops:
/// its probability, on the share of flows [`hits_flow`] picks.
///
/// # Errors
/// When the busiest meter needs a width the data plane cannot realise (see [`MeterConfig`]).
pub fn synth_epoch(
    topo: &Topology,
    segments: &Segments,
    codec: &PathBfCodec,
    loss: &[LinkLoss],
    cfg: &SynthConfig,
    rng: &mut impl Rng,
) -> Result<SynthEpoch, SketchConfigError> {
    let busiest = busiest_meter_flows(topo, segments, cfg.flows_per_segment);
    let meters = meter_config(busiest, cfg.rows, cfg.width_factor)?;
    let all: Vec<SegmentId> = (0..segments.len() as SegmentId).collect();
    let mut e = synth_watched(topo, segments, codec, loss, cfg, meters, &all, rng)?;
    e.busiest_meter_flows = busiest;
    Ok(e)
}

/// As [`synth_epoch`], for the `watched` segments only (the others count nothing, as when the
/// controller selected no flows on them), into meters of the given shape: a switch's real
/// meters, however many flows land in them.
///
/// # Errors
/// When `meters` is not a shape the data plane can realise.
#[allow(clippy::too_many_arguments)]
pub fn synth_watched(
    topo: &Topology,
    segments: &Segments,
    codec: &PathBfCodec,
    loss: &[LinkLoss],
    cfg: &SynthConfig,
    meters: MeterConfig,
    watched: &[SegmentId],
    rng: &mut impl Rng,
) -> Result<SynthEpoch, SketchConfigError> {
    assert_eq!(
        loss.len(),
        topo.links.len(),
        "one loss rate per directed link"
    );
    meters.validate()?;
    let mut state = MonitorMeters::new(topo, meters)?;
    let synth = SegmentSynth {
        topo,
        segments,
        codec,
        loss,
        p: loss.iter().map(|l| l.p).collect(),
        flows_per_segment: cfg.flows_per_segment,
        per_flow: (cfg.packets_per_segment / u64::from(cfg.flows_per_segment.max(1))).max(1),
    };
    let mut counts = Counts::default();
    for &i in watched {
        synth.segment(i, &mut state, &mut counts, rng);
    }
    let busiest_meter_flows = state.busiest();
    Ok(SynthEpoch {
        snapshots: state.snapshots(),
        meters,
        busiest_meter_flows,
        flows: counts.flows,
        sent: counts.sent,
        delivered: counts.delivered,
        expected: counts.expected,
    })
}

/// A USM and a DSM per monitor, and how many flows each has been given.
struct MonitorMeters {
    monitors: Vec<SwitchIx>,
    /// By switch: its index among `monitors` (`usize::MAX` if not a monitor).
    slot: Vec<usize>,
    usm: Vec<Usm>,
    dsm: Vec<Dsm>,
    up_flows: Vec<usize>,
    down_flows: Vec<usize>,
}

impl MonitorMeters {
    fn new(topo: &Topology, meters: MeterConfig) -> Result<Self, SketchConfigError> {
        let monitors: Vec<SwitchIx> = topo.monitors().collect();
        let mut slot = vec![usize::MAX; topo.switches.len()];
        for (i, &m) in monitors.iter().enumerate() {
            slot[m as usize] = i;
        }
        let mut usm: Vec<Usm> = Vec::with_capacity(monitors.len());
        let mut dsm: Vec<Dsm> = Vec::with_capacity(monitors.len());
        for _ in &monitors {
            usm.push(Usm::new(meters)?);
            dsm.push(Dsm::new(meters)?);
        }
        Ok(Self {
            up_flows: vec![0; monitors.len()],
            down_flows: vec![0; monitors.len()],
            monitors,
            slot,
            usm,
            dsm,
        })
    }

    /// Flows given to the busiest meter.
    fn busiest(&self) -> usize {
        self.up_flows
            .iter()
            .chain(&self.down_flows)
            .copied()
            .max()
            .unwrap_or(0)
    }

    /// One snapshot per monitor, in switch order.
    fn snapshots(self) -> Vec<MeterSnapshot> {
        self.monitors
            .iter()
            .zip(self.usm.into_iter().zip(self.dsm))
            .map(|(&switch, (usm, dsm))| MeterSnapshot {
                switch,
                epoch: 0,
                parity: Parity::Even,
                usm,
                dsm,
            })
            .collect()
    }
}

/// What the synthesized flows add up to.
#[derive(Default)]
struct Counts {
    flows: u64,
    sent: u64,
    delivered: u64,
    expected: Vec<Expected>,
}

/// Synthesizes the flows of one segment at a time.
struct SegmentSynth<'a> {
    topo: &'a Topology,
    segments: &'a Segments,
    codec: &'a PathBfCodec,
    loss: &'a [LinkLoss],
    /// Each link's loss probability.
    p: Vec<f64>,
    flows_per_segment: u32,
    /// Packets each flow sends.
    per_flow: u64,
}

impl SegmentSynth<'_> {
    /// β random flows on segment `i`, counted by its upstream USM and downstream DSM.
    fn segment(
        &self,
        i: SegmentId,
        state: &mut MonitorMeters,
        counts: &mut Counts,
        rng: &mut impl Rng,
    ) {
        let i = i as usize;
        let seg = &self.segments.list[i];
        // A fault on a share of flows drops only those flows' packets.
        let by_flow = seg.links.iter().any(|&l| self.loss[l as usize].flows < 1.0);
        let survive = seg.delivery(&self.p);
        let draw = Binomial::new(self.per_flow, survive.clamp(0.0, 1.0)).expect("p in [0, 1]");
        let (u, d) = (
            state.slot[seg.upstream() as usize],
            state.slot[seg.downstream() as usize],
        );
        let bf = self.codec.segment_bf[i];
        state.up_flows[u] += self.flows_per_segment as usize;
        state.down_flows[d] += self.flows_per_segment as usize;
        for _ in 0..self.flows_per_segment {
            let flow = self.random_flow(rng);
            let h = FlowHashes::of(&flow);
            let got = if by_flow {
                let survive = self.flow_survival(&seg.links, h.c32);
                Binomial::new(self.per_flow, survive.clamp(0.0, 1.0))
                    .expect("p in [0, 1]")
                    .sample(rng)
            } else {
                draw.sample(rng)
            };
            counts.expected.push(Expected {
                flow,
                segment: i as SegmentId,
            });
            state.usm[u].update_n(&flow, h, self.per_flow as u32);
            state.dsm[d].update_n(&flow, h, bf, got as u32);
            counts.flows += 1;
            counts.sent += self.per_flow;
            counts.delivered += got;
        }
    }

    /// A TCP flow between two random hosts, from and to random unprivileged ports.
    fn random_flow(&self, rng: &mut impl Rng) -> FlowId {
        let hosts = &self.topo.hosts;
        let n_hosts = hosts.len();
        FlowId::v4(
            hosts[rng.random_range(0..n_hosts)].addr,
            hosts[rng.random_range(0..n_hosts)].addr,
            6,
            rng.random_range(1024..=u16::MAX),
            rng.random_range(1024..=u16::MAX),
        )
    }

    /// The share of a flow's packets (hash `c32`) that survive `links`: only the links whose
    /// fault [`hits_flow`] this flow drop its packets.
    fn flow_survival(&self, links: &[LinkIx], c32: u32) -> f64 {
        links
            .iter()
            .map(|&l| {
                let ll = self.loss[l as usize];
                if hits_flow(c32, l, ll.flows) {
                    1.0 - ll.p
                } else {
                    1.0
                }
            })
            .product()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::detect::minus_meters;
    use canary_core::topo::{fattree::fattree, MonitorPlacement, Routing};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn minus_meters_recovers_the_synthesized_losses() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let r = Routing::new(&t);
        let s = Segments::new(&t, &r);
        let c = PathBfCodec::new(&t, &s, Default::default()).unwrap();
        let mut loss = vec![LinkLoss { p: 0.0, flows: 1.0 }; t.links.len()];
        let bad = t.link_by_names("agg1_0", "core1").unwrap();
        loss[bad as usize].p = 0.2;
        let e = synth_epoch(
            &t,
            &s,
            &c,
            &loss,
            &SynthConfig::default(),
            &mut ChaCha8Rng::seed_from_u64(1),
        )
        .unwrap();
        assert!(e.meters.width >= 4 * e.busiest_meter_flows);
        assert_eq!(e.flows, s.len() as u64 * 20);
        let det = minus_meters(&s, &c, &e.snapshots);
        assert_eq!(det.anomalies.undecodable + det.anomalies.ambiguous, 0);
        assert!(det.flows() as f64 > 0.95 * e.flows as f64);
        for (&seg, cnt) in &det.segments {
            let rate = cnt.lost as f64 / cnt.sent as f64;
            if s.get(seg).links.contains(&bad) {
                assert!((rate - 0.2).abs() < 0.08, "{rate}");
            } else {
                assert_eq!(cnt.lost, 0);
            }
        }
    }
}
