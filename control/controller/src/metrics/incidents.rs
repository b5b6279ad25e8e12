//! The open incidents of links as a series an alert can join on, so that a page names the
//! incident and links to the link on Canary's page (deploy/prometheus/canary-alerts.yml).

use crate::incidents::{Incident, Subject};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::OnceLock;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IncidentLabel {
    pub from: String,
    pub to: String,
    pub incident: String,
    /// The incident on the live page (`http://ADDR/#incident=ID`, which opens its link), empty
    /// when no page is served (an empty label is no label to Prometheus).
    pub page: String,
}

#[derive(Default)]
pub(super) struct IncidentGauges {
    link: Family<IncidentLabel, Gauge>,
    /// The live page's address, when the controller serves one.
    page: OnceLock<String>,
}

impl IncidentGauges {
    pub(super) fn register(&self, r: &mut Registry) {
        r.register(
            "link_incident",
            "1 for each link blamed now, labelled with its incident (`canary incidents show ID`) \
             and its place on the live page",
            self.link.clone(),
        );
    }

    pub(super) fn set_page(&self, addr: &str) {
        let _ = self.page.set(format!("http://{addr}/"));
    }

    /// The links of the incidents open after the last epoch; the others' series go away.
    pub(super) fn observe<'a>(&self, live: impl Iterator<Item = &'a Incident>) {
        self.link.clear();
        for i in live.filter(|i| i.blamed_now) {
            let Subject::Link { link: [from, to] } = &i.subject else {
                continue;
            };
            let page = self
                .page
                .get()
                .map_or(String::new(), |p| format!("{p}#incident={}", i.id));
            self.link
                .get_or_create(&IncidentLabel {
                    from: from.clone(),
                    to: to.clone(),
                    incident: i.id.to_string(),
                    page,
                })
                .set(1);
        }
    }
}
