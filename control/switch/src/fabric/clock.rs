//! Where a fabric's time comes from.

use std::time::{Duration, Instant};

/// Where a fabric's time comes from: the wall clock for real switches; for the chaos driver, the
/// simulated data plane's, which lets traffic flow while the controller waits.
#[allow(async_fn_in_trait)]
pub trait Clock {
    /// Time since the fabric was connected.
    fn now(&self) -> Duration;
    async fn wait(&mut self, d: Duration);
    /// The fabric is connected: time starts.
    fn start(&mut self) {}
}

/// Real time.
#[derive(Clone, Copy, Debug)]
pub struct WallClock(Instant);

impl Default for WallClock {
    fn default() -> Self {
        WallClock(Instant::now())
    }
}

impl Clock for WallClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
    async fn wait(&mut self, d: Duration) {
        tokio::time::sleep(d).await;
    }
    fn start(&mut self) {
        self.0 = Instant::now();
    }
}
