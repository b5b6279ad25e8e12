//! The blamed links as series: each one's estimate, its interval, the epoch it has been blamed
//! since, whether it is held; and the blames that ended, as all-clears or as corrections.

use super::{FGauge, LinkLabel};
use crate::report::EpochReport;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// A blame that moved: from `from`→`to` onto the link `now_on` ("c→d").
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CorrectionLabel {
    pub from: String,
    pub to: String,
    pub now_on: String,
}

#[derive(Default)]
pub(super) struct BlameGauges {
    loss: Family<LinkLabel, FGauge>,
    ci_low: Family<LinkLabel, FGauge>,
    ci_high: Family<LinkLabel, FGauge>,
    since: Family<LinkLabel, Gauge>,
    all_clear: Family<LinkLabel, Counter>,
    held: Family<LinkLabel, Gauge>,
    undecided: Family<LinkLabel, Gauge>,
    corrected: Family<CorrectionLabel, Counter>,
}

impl BlameGauges {
    pub(super) fn register(&self, r: &mut Registry) {
        r.register(
            "link_loss_estimate",
            "Estimated loss rate of each link blamed in the last epoch",
            self.loss.clone(),
        );
        r.register(
            "link_loss_ci95_lower",
            "Lower end of the 95 % interval of each blamed link's loss estimate",
            self.ci_low.clone(),
        );
        r.register(
            "link_loss_ci95_upper",
            "Upper end of the 95 % interval of each blamed link's loss estimate",
            self.ci_high.clone(),
        );
        r.register(
            "link_blamed_since_epoch",
            "The epoch since which each blamed link has been blamed without a break",
            self.since.clone(),
        );
        r.register(
            "link_all_clear",
            "All-clears of each link: blamed in an epoch, not in the next",
            self.all_clear.clone(),
        );
        r.register(
            "link_blame_held",
            "1 for each link blamed by holding in the last epoch: not named by that epoch's \
             localization, but not cleared by a test and its loss not moved to another link",
            self.held.clone(),
        );
        r.register(
            "link_loss_undecided",
            "1 for each candidate link of a loss the last epoch's counts could not place on one \
             link: none of them is blamed for it",
            self.undecided.clone(),
        );
        r.register(
            "link_blame_corrected",
            "Blames that moved: the loss of the segments through `from`->`to` placed on the \
             link `now_on` instead",
            self.corrected.clone(),
        );
    }

    /// The last epoch's blamed links replace the gauges; its ended blames add to the counters.
    pub(super) fn observe(&self, r: &EpochReport) {
        self.loss.clear();
        self.ci_low.clear();
        self.ci_high.clear();
        self.since.clear();
        self.held.clear();
        self.undecided.clear();
        for l in r.undecided.iter().flatten() {
            let label = LinkLabel {
                from: l[0].clone(),
                to: l[1].clone(),
            };
            self.undecided.get_or_create(&label).set(1);
        }
        for b in &r.blamed {
            let label = LinkLabel {
                from: b.link[0].clone(),
                to: b.link[1].clone(),
            };
            self.loss.get_or_create(&label).set(b.loss);
            if let Some([lo, hi]) = b.ci95 {
                self.ci_low.get_or_create(&label).set(lo);
                self.ci_high.get_or_create(&label).set(hi);
            }
            if let Some(since) = b.since {
                self.since.get_or_create(&label).set(since as i64);
            }
            if b.held {
                self.held.get_or_create(&label).set(1);
            }
        }
        for c in &r.cleared {
            // A correction is not an all-clear: the loss is still there, on another link.
            match &c.corrected_to {
                Some([x, y]) => self
                    .corrected
                    .get_or_create(&CorrectionLabel {
                        from: c.link[0].clone(),
                        to: c.link[1].clone(),
                        now_on: format!("{x}->{y}"),
                    })
                    .inc(),
                None => self
                    .all_clear
                    .get_or_create(&LinkLabel {
                        from: c.link[0].clone(),
                        to: c.link[1].clone(),
                    })
                    .inc(),
            };
        }
    }
}
