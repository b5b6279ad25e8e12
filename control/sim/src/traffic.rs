//! The traffic model: heavy-tailed flows in two classes, as data-center measurements describe
//! them (most flows are small mice, most bytes ride a few long elephants).
//!
//! Each host keeps a fixed number of flow slots per class busy (closed loop): a finished flow's
//! slot opens a new one after an exponential think time. A flow's size is bounded-Pareto (in
//! packets) and its rate log-uniform. It sends one window per RTT, as TCP does: the window starts
//! at `initial_window` and doubles every RTT (slow start) up to `rate × rtt`, so mice finish in
//! small bursts and elephants are the flows HashPipe sees as heavy.

use rand::Rng;
use rand_distr::{Distribution, Exp, Pareto};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowClass {
    /// Flows of this class each host keeps open.
    pub flows_per_host: u32,
    /// Pareto shape and minimum of the flow size in packets; sizes are capped at `size_max`.
    pub size_shape: f64,
    pub size_min: f64,
    pub size_max: f64,
    /// Rates are log-uniform in this range, packets per second.
    pub rate_min: f64,
    pub rate_max: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrafficConfig {
    pub elephants: FlowClass,
    pub mice: FlowClass,
    /// A burst carries `rate × rtt` packets (at least 1, at most `max_burst`) once slow start,
    /// from `initial_window`, has reached it.
    pub rtt_ns: u64,
    pub initial_window: u32,
    pub max_burst: u32,
    /// Spacing of packets inside a burst (1500 B at 10 Gb/s).
    pub line_gap_ns: u64,
    /// Mean pause before a slot opens its next flow.
    pub think_ns: f64,
}

impl Default for TrafficConfig {
    fn default() -> Self {
        Self {
            elephants: FlowClass {
                flows_per_host: 80,
                size_shape: 1.2,
                size_min: 2_000.0,
                size_max: 2e6,
                rate_min: 500.0,
                rate_max: 5_000.0,
            },
            mice: FlowClass {
                flows_per_host: 120,
                size_shape: 1.2,
                size_min: 4.0,
                size_max: 2_000.0,
                rate_min: 200.0,
                rate_max: 2_000.0,
            },
            rtt_ns: 10_000_000,
            initial_window: 4,
            max_burst: 64,
            line_gap_ns: 1_200,
            think_ns: 1e6,
        }
    }
}

/// Size, rate and burst shape of one new flow.
#[derive(Clone, Copy, Debug)]
pub struct FlowShape {
    pub packets: u64,
    /// The window in steady state, and the first one.
    pub burst: u32,
    pub first_burst: u32,
    /// Time from the start of one burst to the next.
    pub burst_period_ns: u64,
}

impl TrafficConfig {
    pub fn slots_per_host(&self) -> u32 {
        self.elephants.flows_per_host + self.mice.flows_per_host
    }

    /// The class of a host's slot number.
    pub fn class(&self, slot: u32) -> &FlowClass {
        if slot < self.elephants.flows_per_host {
            &self.elephants
        } else {
            &self.mice
        }
    }

    pub fn draw(&self, class: &FlowClass, rng: &mut impl Rng) -> FlowShape {
        let size: f64 = Pareto::new(class.size_min, class.size_shape)
            .expect("valid Pareto")
            .sample(rng);
        let packets = size.min(class.size_max).round().max(1.0) as u64;
        let rate = (rng.random_range(class.rate_min.ln()..=class.rate_max.ln())).exp();
        let burst = ((rate * self.rtt_ns as f64 / 1e9).round() as u32).clamp(1, self.max_burst);
        let burst_period_ns = (burst as f64 / rate * 1e9) as u64;
        FlowShape {
            packets,
            burst,
            first_burst: self.initial_window.min(burst),
            burst_period_ns: burst_period_ns.max(burst as u64 * self.line_gap_ns),
        }
    }

    pub fn think(&self, rng: &mut impl Rng) -> u64 {
        Exp::new(1.0 / self.think_ns).expect("positive").sample(rng) as u64
    }
}
