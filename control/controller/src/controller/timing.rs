//! When an epoch starts and how long it waits for packets in flight.

use super::Controller;
use canary_core::detect::EpochDetection;
use canary_core::model::EPOCH_TAGS;
use std::time::Duration;

impl Controller {
    pub(super) fn adapt_drain(&mut self, det: &EpochDetection) {
        let late =
            !det.torn_at.is_empty() || det.anomalies.negative_loss > 0 || det.anomalies.late > 0;
        let next = next_drain(self.drain_now, self.cfg.drain, self.cfg.epoch, late);
        if next > self.drain_now {
            tracing::warn!(
                "packets arrive after the drain: drain raised from {:?} to {:?}",
                self.drain_now,
                next
            );
        }
        self.drain_now = next;
    }
}

/// The epoch switches counting in `tags` are in: the newest tag (monitors differ by one when the
/// controller before died mid-flip), and the first epoch from `first` on with that tag.
pub(super) fn resume_epoch(tags: &[u16], first: u64) -> u64 {
    let n = EPOCH_TAGS;
    let pos = |t: u16| u64::from(t.max(2) - 2) % n;
    let base = pos(tags[0]);
    // Forward distance from the first tag; within half a wrap is ahead, beyond is behind.
    let newest = tags
        .iter()
        .map(|&t| (pos(t) + n - base) % n)
        .filter(|&d| d < n / 2)
        .max()
        .map_or(base, |d| (base + d) % n);
    first + (newest + n - first % n) % n
}

/// The drain after an epoch. Late packets (torn reads, more packets downstream than upstream, or
/// packets a second read found: packets of an epoch that reached their DSM after its harvest)
/// double it, up to half
/// the epoch; each clean epoch brings it a tenth of the way back down to the configured drain.
pub(super) fn next_drain(
    now: Duration,
    configured: Duration,
    epoch: Duration,
    late: bool,
) -> Duration {
    if late {
        let cap = (epoch / 2).max(configured);
        (now * 2).max(Duration::from_millis(1)).min(cap)
    } else {
        now.mul_f64(0.9).max(configured)
    }
}
