//! The traffic model: each host keeps a fixed number of flow slots busy (closed loop); a flow
//! has a heavy-tailed size (bounded Pareto, in packets), a log-uniform rate, and sends in bursts
//! of one window per RTT, as TCP does, so heavy flows show up as long runs in HashPipe's first
//! stage. A finished flow's slot opens a new flow after an exponential think time.

use rand::Rng;
use rand_distr::{Distribution, Exp, Pareto};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrafficConfig {
    /// Flows each host keeps open.
    pub flows_per_host: u32,
    /// Pareto shape and minimum of the flow size in packets; sizes are capped at `size_max`.
    pub size_shape: f64,
    pub size_min: f64,
    pub size_max: f64,
    /// Flow rates are log-uniform in this range, packets per second.
    pub rate_min: f64,
    pub rate_max: f64,
    /// A burst carries `rate × rtt` packets (at least 1, at most `max_burst`).
    pub rtt_ns: u64,
    pub max_burst: u32,
    /// Spacing of packets inside a burst (1500 B at 10 Gb/s).
    pub line_gap_ns: u64,
    /// Mean pause before a slot opens its next flow.
    pub think_ns: f64,
}

impl Default for TrafficConfig {
    fn default() -> Self {
        Self {
            flows_per_host: 200,
            size_shape: 1.1,
            size_min: 8.0,
            size_max: 2e6,
            rate_min: 200.0,
            rate_max: 5000.0,
            rtt_ns: 10_000_000,
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
    pub burst: u32,
    /// Time from the start of one burst to the next.
    pub burst_period_ns: u64,
}

impl TrafficConfig {
    pub fn draw(&self, rng: &mut impl Rng) -> FlowShape {
        let size: f64 = Pareto::new(self.size_min, self.size_shape)
            .expect("valid Pareto")
            .sample(rng);
        let packets = size.min(self.size_max).round().max(1.0) as u64;
        let rate = (rng.random_range(self.rate_min.ln()..=self.rate_max.ln())).exp();
        let burst = ((rate * self.rtt_ns as f64 / 1e9).round() as u32).clamp(1, self.max_burst);
        let burst_period_ns = (burst as f64 / rate * 1e9) as u64;
        FlowShape {
            packets,
            burst,
            burst_period_ns: burst_period_ns.max(burst as u64 * self.line_gap_ns),
        }
    }

    pub fn think(&self, rng: &mut impl Rng) -> u64 {
        Exp::new(1.0 / self.think_ns).expect("positive").sample(rng) as u64
    }

    /// Mean offered load per host, packets per second (for sizing runs).
    pub fn mean_rate(&self) -> f64 {
        (self.rate_max - self.rate_min) / (self.rate_max / self.rate_min).ln()
    }
}
