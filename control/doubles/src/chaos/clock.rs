//! [`PlaneClock`]: the simulated data plane's time, as the fabric above the chaos drivers sees it.

use super::{lock, Plane};
use canary_core::fabric::Fabric;
use canary_switch::fabric::Clock;
use std::time::Duration;

/// The data plane's clock: waiting lets its traffic flow. Time moves in steps of at most
/// [`PlaneClock::STEP`], each followed by a yield, so that another process of the test (a
/// standby asking who is primary) sees time pass as a wall clock would show it.
#[derive(Clone)]
pub struct PlaneClock(pub Plane);

impl PlaneClock {
    pub const STEP: Duration = Duration::from_millis(5);
}

impl Clock for PlaneClock {
    fn now(&self) -> Duration {
        lock(&self.0).now()
    }
    async fn wait(&mut self, d: Duration) {
        let mut left = d;
        loop {
            let step = left.min(Self::STEP);
            lock(&self.0).advance(step);
            left -= step;
            tokio::task::yield_now().await;
            if left.is_zero() {
                return;
            }
        }
    }
}
