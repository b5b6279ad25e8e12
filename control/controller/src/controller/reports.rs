//! What the controller says of an epoch: the segments that lost packets, the links it blames
//! with their intervals, the segments whose verdict changed.

use super::Controller;
use crate::report::{
    ClearedLink, DeviceReport, FlowLoss, LinkReport, SegmentChange, SegmentReport, SwitchEvent,
    TableFull, FLOWS_SHOWN,
};
use canary_core::decide::{total_observations, Change, Cleared};
use canary_core::detect::{observations, some_flows_only, MmEntries, MmEntry, Observations};
use canary_core::localize::Verdict;
use canary_core::score::{devices, wilson};
use canary_core::topo::{LinkIx, SegmentId, SwitchIx};
use std::collections::BTreeMap;

impl Controller {
    pub(super) fn device_reports(&self, blamed: &[LinkIx]) -> Vec<DeviceReport> {
        devices(&self.topo, blamed)
            .into_iter()
            .map(|d| DeviceReport {
                switch: self.topo.name_of(d.switch).to_string(),
                inbound: d.inbound,
                both: d.both,
                links: self.topo.neighbors(d.switch).len(),
            })
            .collect()
    }

    /// The links no longer blamed: cleared, or `corrected` to another link.
    pub(super) fn cleared_reports(
        &self,
        cleared: &[Cleared],
        corrected: &BTreeMap<LinkIx, LinkIx>,
    ) -> Vec<ClearedLink> {
        let name = |l: LinkIx| self.topo.link_names(l).map(String::from);
        cleared
            .iter()
            .map(|c| ClearedLink {
                link: name(c.link),
                since: c.since,
                last: c.last,
                corrected_to: corrected.get(&c.link).map(|&to| name(to)),
            })
            .collect()
    }

    /// The losses the localizer could not place, less those a blamed link (held ones too)
    /// already answers for.
    pub(super) fn undecided_reports(&self, b: &super::phases::Blamed) -> Vec<Vec<[String; 2]>> {
        b.verdict
            .undecided
            .iter()
            .filter(|c| !c.iter().any(|l| b.links.contains(l)))
            .map(|c| {
                c.iter()
                    .map(|&l| self.topo.link_names(l).map(String::from))
                    .collect()
            })
            .collect()
    }

    pub(super) fn switch_events(&self, events: &BTreeMap<SwitchIx, String>) -> Vec<SwitchEvent> {
        events
            .iter()
            .map(|(&s, why)| SwitchEvent {
                switch: self.topo.name_of(s).to_string(),
                detail: why.clone(),
            })
            .collect()
    }

    /// Tables that refused rules since the last epoch, with how many.
    pub(super) fn tables_full(&mut self) -> Vec<TableFull> {
        self.selector
            .take_full()
            .into_iter()
            .map(|(f, refused)| TableFull {
                switch: self.topo.name_of(f.switch).to_string(),
                table: f.table.to_string(),
                size: f.size,
                refused,
            })
            .collect()
    }

    pub fn localizer(&self) -> canary_core::localize::Canary {
        let mut params = self.cfg.canary.clone();
        params.likelihood_ties = self.likelihood_ties();
        canary_core::localize::Canary {
            params,
            incumbents: self.incumbents(),
        }
    }

    /// The links blamed the epoch before, held ones included: a tie stays with them.
    pub(super) fn incumbents(&self) -> Vec<canary_core::topo::LinkIx> {
        self.last_verdict.iter().map(|b| b.link).collect()
    }

    /// Pins and losses weighed by likelihood only when they were counted over the same epochs:
    /// not when segments are watched in rounds, where a pin can be older than the loss (at
    /// k = 16 that blamed ten times the healthy link-epochs, docs/testbed.md).
    pub(super) fn likelihood_ties(&self) -> bool {
        self.cfg.canary.likelihood_ties && self.watching.same_epochs()
    }

    /// Observations over the whole run so far (every epoch aggregated), each segment tested
    /// once on its total.
    pub fn run_observations(&self) -> Observations {
        let mut obs = match &self.cfg.decision {
            Some(p) => total_observations(&self.segments, &self.run_totals, p),
            None => observations(&self.segments, &self.run_totals, self.cfg.min_lossy_epochs),
        };
        // As each epoch's verdict weighs a loss on some flows only, so does the run's.
        for o in &mut obs.segments {
            o.flows = self.run_flows.of(o.segment);
        }
        obs
    }

    pub(super) fn segment_changes(&self, changes: &[Change]) -> Vec<SegmentChange> {
        let names = |s| {
            self.segments
                .get(s)
                .switches
                .iter()
                .map(|&x| self.topo.name_of(x).to_string())
                .collect()
        };
        changes
            .iter()
            .map(|c| match *c {
                Change::Declared { segment, since } => SegmentChange {
                    segment: names(segment),
                    lossy_since: Some(since),
                },
                Change::Cleared { segment } => SegmentChange {
                    segment: names(segment),
                    lossy_since: None,
                },
            })
            .collect()
    }

    /// The segments of `obs` that lost packets, lossiest first, each with the flows of the
    /// epoch's minus-meter `entries` that lost packets on it.
    pub fn segment_reports(&self, obs: &Observations, entries: &MmEntries) -> Vec<SegmentReport> {
        // One pass over the epoch's entries, and none in an epoch without loss.
        let mut lossy_flows: BTreeMap<SegmentId, Vec<&MmEntry>> = obs
            .segments
            .iter()
            .filter(|o| o.lost > 0)
            .map(|o| (o.segment, Vec::new()))
            .collect();
        if !lossy_flows.is_empty() {
            for e in entries.iter().filter(|e| e.lost > 0) {
                if let Some(list) = lossy_flows.get_mut(&e.segment) {
                    list.push(e);
                }
            }
        }
        let mut v: Vec<SegmentReport> = self
            .all_segment_reports(obs)
            .into_iter()
            .zip(&obs.segments)
            .filter(|(r, _)| r.lost > 0)
            .map(|(mut r, o)| {
                let mut flows = lossy_flows.remove(&o.segment).unwrap_or_default();
                flows.sort_by_key(|e| (std::cmp::Reverse(e.lost), e.flow));
                r.flows_lossy = flows.len() as u64;
                r.flows = flows
                    .iter()
                    .take(FLOWS_SHOWN)
                    .map(|e| FlowLoss {
                        flow: e.flow.to_string(),
                        sent: e.sent,
                        lost: e.lost,
                    })
                    .collect();
                r
            })
            .collect();
        v.sort_by(|a, b| b.loss.total_cmp(&a.loss));
        v
    }

    /// Every segment of `obs`, in segment order.
    pub fn all_segment_reports(&self, obs: &Observations) -> Vec<SegmentReport> {
        obs.segments
            .iter()
            .map(|s| SegmentReport {
                segment: self
                    .segments
                    .get(s.segment)
                    .switches
                    .iter()
                    .map(|&x| self.topo.name_of(x).to_string())
                    .collect(),
                sent: s.sent,
                lost: s.lost,
                loss: s.lost as f64 / s.sent as f64,
                used: s.success < 1.0,
                age: self.watching.age(s.segment, self.epoch),
                flows_lossy: 0,
                flows: Vec::new(),
            })
            .collect()
    }

    /// The blamed links of `v`, with the 95 % interval of each estimate from the packets `obs`
    /// counted on the segments through the link.
    /// The blamed links of `v` with their intervals; with an epoch's minus-meter `entries`,
    /// whether each loss fell on some of the link's flows only.
    pub fn link_reports(
        &self,
        v: &Verdict,
        obs: &Observations,
        entries: Option<&MmEntries>,
    ) -> Vec<LinkReport> {
        // Each blamed link's entries, in one pass over the epoch's entries.
        let mut of_link: BTreeMap<LinkIx, Vec<&MmEntry>> =
            v.blamed.iter().map(|b| (b.link, Vec::new())).collect();
        for e in entries.into_iter().flat_map(|es| es.iter()) {
            for l in &self.segments.get(e.segment).links {
                if let Some(list) = of_link.get_mut(l) {
                    list.push(e);
                }
            }
        }
        let sent = sent_through(obs);
        v.blamed
            .iter()
            .map(|b| {
                let [a, c] = self.topo.link_names(b.link);
                let sent = sent_on(&sent, b.link);
                let flows =
                    entries.and_then(|_| some_flows_only(of_link[&b.link].iter().copied(), b.loss));
                LinkReport {
                    link: [a.to_string(), c.to_string()],
                    loss: b.loss,
                    stage: Some(b.stage + 1),
                    ci95: Some(wilson(b.loss, sent, 1.96)),
                    since: self.timeline.since(b.link),
                    flows,
                    held: self.held.contains(&b.link),
                }
            })
            .collect()
    }
}

/// Packets counted on the segments of `obs` through each link, indexed by link (one pass over
/// the segments, not one per blamed link: k = 32 has ~385 k segments).
fn sent_through(obs: &Observations) -> Vec<u64> {
    let mut sent = Vec::new();
    for s in &obs.segments {
        for &l in &s.links {
            let l = l as usize;
            if l >= sent.len() {
                sent.resize(l + 1, 0);
            }
            sent[l] += s.sent;
        }
    }
    sent
}

/// `sent_through(..)[link]`, 0 for a link no segment crosses.
fn sent_on(sent: &[u64], link: LinkIx) -> u64 {
    sent.get(link as usize).copied().unwrap_or(0)
}

/// Each blamed link with the least its loss has been: the lower end of a 99.7 % interval of its
/// estimate, with the packets of the segments through it as trials.
pub(super) fn least_losses(v: &Verdict, obs: &Observations) -> Vec<(LinkIx, f64)> {
    let sent = sent_through(obs);
    v.blamed
        .iter()
        .map(|b| {
            let sent = sent_on(&sent, b.link);
            (b.link, wilson(b.loss, sent, 3.0)[0])
        })
        .collect()
}
