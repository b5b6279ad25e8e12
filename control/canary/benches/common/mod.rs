//! Shared by the benchmarks: a prepared fat-tree with the paper's random faults, a synthesized
//! epoch of meters, and the timed epoch (detect + localize).
#![allow(dead_code)] // each bench uses part of this

use canary_controller::setup::{load_topology, prepare, Prepared};
use canary_core::detect::{minus_meters, observations, Observations, Window};
use canary_core::fabric::MeterSnapshot;
use canary_core::fault::{self, Fault};
use canary_core::localize::{Canary, Localizer, Verdict};
use canary_core::topo::MonitorPlacement;
use canary_sim::synth::{synth_epoch, SynthConfig, SynthEpoch};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

pub const SEED: u64 = 1;

/// A k-ary fat-tree with top+bottom monitors, audited like `canary simulate` does, with
/// `random:10%` faults (no background noise) drawn from `seed`.
pub struct Fixture {
    pub k: u32,
    pub prep: Prepared,
    pub faults: Vec<Fault>,
    pub loss: Vec<f64>,
    pub rng: ChaCha8Rng,
}

impl Fixture {
    pub fn new(k: u32, seed: u64) -> Self {
        let topo = load_topology(
            &format!("fattree:{k}"),
            Some(MonitorPlacement::TopAndBottom),
        )
        .expect("fat-tree");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let faults = fault::random(&topo, 10.0, &mut rng);
        let loss = fault::loss_vector(&topo, &faults, 0.0, &mut rng);
        let prep = prepare(topo, Default::default()).expect("pathBF audit");
        Self {
            k,
            prep,
            faults,
            loss,
            rng,
        }
    }

    /// One epoch of meters: β = 20 flows per segment, α = 1000 packets per segment.
    pub fn synth(&mut self) -> SynthEpoch {
        self.synth_with(SynthConfig::default().width_factor)
    }

    /// As [`Fixture::synth`], meters `width_factor` × the busiest meter's flows wide.
    pub fn synth_with(&mut self, width_factor: usize) -> SynthEpoch {
        synth_epoch(
            &self.prep.topo,
            &self.prep.segments,
            &self.prep.codec,
            &canary_core::fault::LinkLoss::on_every_flow(&self.loss),
            &SynthConfig {
                width_factor,
                ..Default::default()
            },
            &mut self.rng,
        )
        .expect("meter width within the data plane's limits")
    }

    /// Minus meters and success probabilities over a one-epoch window, as the controller does.
    pub fn observe(&self, snapshots: &[MeterSnapshot]) -> Observations {
        let det = minus_meters(&self.prep.segments, &self.prep.codec, snapshots);
        let mut window = Window::new(1);
        window.push(det.segments);
        observations(&self.prep.segments, &window.totals(), 1)
    }

    /// The timed epoch: `minus_meters` + `observations` + `Canary.localize`.
    pub fn epoch(&self, snapshots: &[MeterSnapshot], canary: &Canary) -> Verdict {
        let obs = self.observe(snapshots);
        canary.localize(&self.prep.topo, &obs)
    }

    /// The same epoch split into its phases, timed once: (detect, observations, localize).
    pub fn epoch_phases(
        &self,
        snapshots: &[MeterSnapshot],
        canary: &Canary,
    ) -> (Duration, Duration, Duration, Verdict) {
        let t = Instant::now();
        let det = minus_meters(&self.prep.segments, &self.prep.codec, snapshots);
        let detect = t.elapsed();
        let t = Instant::now();
        let mut window = Window::new(1);
        window.push(det.segments);
        let obs = observations(&self.prep.segments, &window.totals(), 1);
        let observe = t.elapsed();
        let t = Instant::now();
        let v = canary.localize(&self.prep.topo, &obs);
        (detect, observe, t.elapsed(), v)
    }

    /// F1 of a verdict against the injected faults (a sanity check on the input).
    pub fn f1(&self, v: &Verdict) -> f64 {
        let truth: Vec<u32> = self.faults.iter().map(|f| f.link).collect();
        let blamed: Vec<u32> = v.blamed.iter().map(|b| b.link).collect();
        canary_core::score::Score::of(&blamed, &truth, self.prep.topo.links.len()).f1
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
