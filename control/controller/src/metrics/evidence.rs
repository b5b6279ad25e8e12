//! The evidence map as gauges: per directed link, the smallest loss its evidence could show and
//! the age of that evidence; unwatched links show a bound of 1 (nothing could show).

use super::{FGauge, LinkLabel};
use crate::report::EvidenceReport;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Default)]
pub(super) struct EvidenceGauges {
    min_loss: Family<LinkLabel, FGauge>,
    packets: Family<LinkLabel, Gauge>,
    age: Family<LinkLabel, Gauge>,
    unwatched: Gauge,
}

impl EvidenceGauges {
    pub(super) fn register(&self, r: &mut Registry) {
        r.register(
            "link_evidence_min_loss",
            "Smallest loss the last epoch's evidence could show on each directed link (1: none)",
            self.min_loss.clone(),
        );
        r.register(
            "link_evidence_packets",
            "Packets of the segments through each directed link in the last epoch's evidence",
            self.packets.clone(),
        );
        r.register(
            "link_evidence_age_epochs",
            "Epochs since a segment through each watched link was last counted",
            self.age.clone(),
        );
        r.register(
            "links_unwatched",
            "Directed links no segment through which was ever counted",
            self.unwatched.clone(),
        );
    }

    pub(super) fn observe(&self, e: &EvidenceReport) {
        let label = |l: &[String; 2]| LinkLabel {
            from: l[0].clone(),
            to: l[1].clone(),
        };
        self.min_loss.clear();
        self.packets.clear();
        self.age.clear();
        for l in &e.links {
            let k = label(&l.link);
            self.min_loss.get_or_create(&k).set(l.min_loss);
            self.packets.get_or_create(&k).set(l.packets as i64);
            self.age.get_or_create(&k).set(l.age_epochs as i64);
        }
        for l in &e.unwatched {
            self.min_loss.get_or_create(&label(l)).set(1.0);
        }
        self.unwatched.set(e.unwatched.len() as i64);
    }
}
