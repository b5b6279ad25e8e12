//! Prometheus metrics of a running controller, served as text over HTTP (`GET /metrics`).
//!
//! Gauges describe the last epoch (estimated loss per blamed link, packets and flows per
//! segment, phase durations); counters accumulate over the run (epochs, harvest errors,
//! digests dropped, switch disturbances).

use crate::controller::Controller;
use crate::report::EpochReport;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

mod blames;
mod evidence;
mod incidents;

pub use blames::CorrectionLabel;
pub use incidents::IncidentLabel;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LinkLabel {
    pub from: String,
    pub to: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SegmentLabel {
    pub segment: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabel {
    pub phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SwitchLabel {
    pub switch: String,
}

type FGauge = Gauge<f64, AtomicU64>;

pub struct Metrics {
    registry: Mutex<Registry>,
    segment_packets: Family<SegmentLabel, Gauge>,
    segment_lost: Family<SegmentLabel, Gauge>,
    segment_flows: Family<SegmentLabel, Gauge>,
    phase_seconds: Family<PhaseLabel, FGauge>,
    epochs: Counter,
    harvest_errors: Counter,
    digests_dropped: Counter,
    disturbed: Family<SwitchLabel, Counter>,
    flows_monitored: Gauge,
    primary: Gauge,
    takeovers: Counter,
    epochs_incomplete: Counter,
    link_streak: Family<LinkLabel, Gauge>,
    switch_up: Family<SwitchLabel, Gauge>,
    epoch_seconds: FGauge,
    rules_refused: Family<TableLabel, Counter>,
    evidence: evidence::EvidenceGauges,
    blames: blames::BlameGauges,
    incidents: incidents::IncidentGauges,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TableLabel {
    pub switch: String,
    pub table: String,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut r = Registry::with_prefix("canary");
        let m = Self {
            registry: Mutex::new(Registry::default()),
            segment_packets: Family::default(),
            segment_lost: Family::default(),
            segment_flows: Family::default(),
            phase_seconds: Family::default(),
            epochs: Counter::default(),
            harvest_errors: Counter::default(),
            digests_dropped: Counter::default(),
            disturbed: Family::default(),
            flows_monitored: Gauge::default(),
            primary: Gauge::default(),
            takeovers: Counter::default(),
            epochs_incomplete: Counter::default(),
            link_streak: Family::default(),
            switch_up: Family::default(),
            epoch_seconds: FGauge::default(),
            rules_refused: Family::default(),
            evidence: Default::default(),
            blames: Default::default(),
            incidents: Default::default(),
        };
        // The order of registration is the order of the text at /metrics.
        m.blames.register(&mut r);
        m.incidents.register(&mut r);
        m.register_segments(&mut r);
        m.register_epochs(&mut r);
        m.register_daemon(&mut r);
        m.register_alerting(&mut r);
        m.evidence.register(&mut r);
        *m.registry.lock().expect("not poisoned") = r;
        m
    }

    /// Per segment, the last epoch's counts.
    fn register_segments(&self, r: &mut Registry) {
        r.register(
            "segment_packets",
            "Packets counted on each segment in the last epoch",
            self.segment_packets.clone(),
        );
        r.register(
            "segment_lost_packets",
            "Packets lost on each segment in the last epoch",
            self.segment_lost.clone(),
        );
        r.register(
            "segment_flows",
            "Flows counted on each segment in the last epoch",
            self.segment_flows.clone(),
        );
    }

    /// What the epochs did: the last one's phases, and counters over the run.
    fn register_epochs(&self, r: &mut Registry) {
        r.register(
            "epoch_phase_seconds",
            "Duration of each phase of the last epoch",
            self.phase_seconds.clone(),
        );
        r.register("epochs", "Epochs completed", self.epochs.clone());
        r.register(
            "harvest_errors",
            "Monitor switches whose meters could not be read in an epoch",
            self.harvest_errors.clone(),
        );
        r.register(
            "digests_dropped",
            "HH digest messages dropped by the queue bound or the rate limit",
            self.digests_dropped.clone(),
        );
        r.register(
            "switch_disturbed",
            "Epochs in which a switch was unreachable, restarted or late",
            self.disturbed.clone(),
        );
        r.register(
            "flows_monitored",
            "Flows with meter rules installed",
            self.flows_monitored.clone(),
        );
    }

    /// The daemon's health: primary or standing by, and epochs it could not count.
    fn register_daemon(&self, r: &mut Registry) {
        r.register(
            "controller_primary",
            "1 while this controller is the primary writing to the switches, 0 while it stands by",
            self.primary.clone(),
        );
        r.register(
            "controller_takeovers",
            "Times this controller became primary (its start included)",
            self.takeovers.clone(),
        );
        r.register(
            "epochs_incomplete",
            "Epochs reported incomplete: nobody harvested them, or they began under another controller",
            self.epochs_incomplete.clone(),
        );
    }

    /// Blame streaks per link, switches up, tables full, and the epoch length the phases are
    /// held to: inputs of the alert rules (deploy/prometheus/canary-alerts.yml).
    fn register_alerting(&self, r: &mut Registry) {
        r.register(
            "link_blamed_epochs",
            "Consecutive epochs up to the last in which each link was blamed (what alerts wait on)",
            self.link_streak.clone(),
        );
        r.register(
            "switch_up",
            "1 if the switch answered the last epoch's flip and harvest, 0 if it did not",
            self.switch_up.clone(),
        );
        r.register(
            "epoch_length_seconds",
            "The configured epoch length (phases adding up to more overrun it)",
            self.epoch_seconds.clone(),
        );
        r.register(
            "rules_refused",
            "Rules flow selection did without because a switch table was full",
            self.rules_refused.clone(),
        );
    }

    /// The live page is served at `addr`: alerts link to it.
    pub fn set_page(&self, addr: &str) {
        self.incidents.set_page(addr);
    }

    /// The incidents open after the last epoch (`canary_link_incident`).
    pub fn observe_incidents<'a>(
        &self,
        live: impl Iterator<Item = &'a crate::incidents::Incident>,
    ) {
        self.incidents.observe(live);
    }

    /// The configured epoch length.
    pub fn set_epoch_length(&self, epoch: std::time::Duration) {
        self.epoch_seconds.set(epoch.as_secs_f64());
    }

    /// This controller became primary (`true`) or stands by.
    pub fn set_primary(&self, primary: bool) {
        if primary {
            self.takeovers.inc();
        }
        self.primary.set(i64::from(primary));
    }

    /// An epoch reported without counts (`EpochReport::incomplete`).
    pub fn observe_incomplete(&self) {
        self.epochs_incomplete.inc();
    }

    /// Records one finished epoch. `digests_dropped` is the run's total so far.
    pub fn observe(&self, ctl: &Controller, r: &EpochReport, digests_dropped: u64) {
        self.epochs.inc();
        if r.incomplete.is_some() {
            self.epochs_incomplete.inc();
        }
        let blamed: Vec<LinkLabel> = r
            .blamed
            .iter()
            .map(|b| LinkLabel {
                from: b.link[0].clone(),
                to: b.link[1].clone(),
            })
            .collect();
        let streaks: Vec<(LinkLabel, i64)> = blamed
            .iter()
            .map(|l| (l.clone(), self.link_streak.get_or_create(l).get() + 1))
            .collect();
        // A link not blamed this epoch starts again from zero (its series goes away).
        self.link_streak.clear();
        for (l, n) in streaks {
            self.link_streak.get_or_create(&l).set(n);
        }
        for sw in &ctl.topo.switches {
            // Monitors that missed the flip or harvest, and any switch whose connection broke.
            let down = r.unreachable.contains(&sw.name)
                || r.disturbed.iter().any(|d| {
                    d.switch == sw.name
                        && (d.detail.contains("unreachable") || d.detail.contains("connection"))
                });
            let up = !down;
            self.switch_up
                .get_or_create(&SwitchLabel {
                    switch: sw.name.clone(),
                })
                .set(i64::from(up));
        }
        for t in &r.tables_full {
            self.rules_refused
                .get_or_create(&TableLabel {
                    switch: t.switch.clone(),
                    table: t.table.clone(),
                })
                .inc_by(u64::from(t.refused));
        }
        self.blames.observe(r);
        self.segment_packets.clear();
        self.segment_lost.clear();
        self.segment_flows.clear();
        for (id, c) in ctl.last_counts() {
            let label = SegmentLabel {
                segment: ctl.segments.get(*id).display(&ctl.topo),
            };
            self.segment_packets
                .get_or_create(&label)
                .set(c.sent as i64);
            self.segment_lost.get_or_create(&label).set(c.lost as i64);
            self.segment_flows
                .get_or_create(&label)
                .set(i64::from(c.flows));
        }
        let p = &r.phases_ms;
        for (phase, ms) in [
            ("harvest", p.harvest),
            ("detect", p.detect),
            ("localize", p.localize),
            ("select", p.select),
        ] {
            self.phase_seconds
                .get_or_create(&PhaseLabel {
                    phase: phase.into(),
                })
                .set(ms / 1e3);
        }
        self.harvest_errors.inc_by(r.unreachable.len() as u64);
        let seen = self.digests_dropped.get();
        self.digests_dropped
            .inc_by(digests_dropped.saturating_sub(seen));
        for d in &r.disturbed {
            self.disturbed
                .get_or_create(&SwitchLabel {
                    switch: d.switch.clone(),
                })
                .inc();
        }
        self.flows_monitored.set(r.flows_monitored as i64);
        self.evidence.observe(&r.evidence_map);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry.lock().expect("not poisoned"))
            .expect("writing to a String cannot fail");
        out
    }
}

/// Serves `GET /metrics` on `addr` until the process ends; returns the bound address.
pub async fn serve(addr: &str, metrics: Arc<Metrics>) -> crate::Result<std::net::SocketAddr> {
    let what = || format!("--metrics {addr}: cannot listen");
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| crate::Error::io(what(), e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| crate::Error::io(what(), e))?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let m = metrics.clone();
            async move {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    m.render(),
                )
            }
        }),
    );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!("metrics server stopped: {e}");
        }
    });
    Ok(bound)
}
