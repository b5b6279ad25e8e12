//! The evidence map of an epoch's report: every directed link's smallest loss its evidence could
//! show, and that evidence's age ([`canary_core::decide::EvidenceTracker`]), with names.

use super::{Controller, ControllerConfig};
use crate::report::{EvidenceReport, LinkEvidenceReport};
use canary_core::decide::EvidenceTracker;
use canary_core::detect::{Observations, SegmentCount};
use canary_core::topo::{SegmentId, Segments};
use std::collections::BTreeMap;

/// The tracker for `segments`, with the decision's parameters (its defaults under the paper's
/// n′ rule, which has no threshold of its own).
pub(super) fn tracker(segments: &Segments, cfg: &ControllerConfig) -> EvidenceTracker {
    let links: Vec<usize> = segments.list.iter().map(|s| s.links.len()).collect();
    EvidenceTracker::new(&links, cfg.decision.unwrap_or_default())
}

impl Controller {
    /// Notes the segments `counts` counted this epoch and maps what `obs`, the evidence the
    /// epoch localized from, could show on every link.
    pub(super) fn evidence_report(
        &mut self,
        counts: &BTreeMap<SegmentId, SegmentCount>,
        obs: &Observations,
    ) -> EvidenceReport {
        self.evidence.record(self.epoch, counts);
        let map = self
            .evidence
            .map(self.epoch, self.topo.links.len(), &self.segments.list, obs);
        let name = |l| self.topo.link_names(l).map(String::from);
        EvidenceReport {
            links: map
                .links
                .iter()
                .map(|e| LinkEvidenceReport {
                    link: name(e.link),
                    min_loss: round_up(e.min_loss),
                    packets: e.packets,
                    age_epochs: e.age,
                })
                .collect(),
            unwatched: map.unwatched.into_iter().map(name).collect(),
        }
    }
}

/// `x` rounded up to 4 significant digits (a bound stays a bound), at most 1.
fn round_up(x: f64) -> f64 {
    if !(x > 0.0 && x < 1.0) {
        return x.clamp(0.0, 1.0);
    }
    let scale = 10f64.powi(3 - x.log10().floor() as i32);
    ((x * scale).ceil() / scale).min(1.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn bounds_round_up_to_four_digits() {
        assert_eq!(super::round_up(0.002367721197836223), 0.002368);
        assert_eq!(super::round_up(0.0123), 0.0123);
        assert_eq!(super::round_up(0.99999), 1.0);
        assert_eq!(super::round_up(1.0), 1.0);
    }
}
