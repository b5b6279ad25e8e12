//! The incidents of a stream of epoch reports: a state machine fed one report at a time.

use super::{Estimate, Incident, State, Subject};
use crate::report::EpochReport;
use std::collections::{BTreeMap, BTreeSet};

/// The rules' one setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrackConfig {
    /// A subject blamed again at most this many epochs after its all-clear continues its
    /// incident, which is then flapping; a flapping incident clear for longer is cleared.
    pub flap_window: u64,
}

impl Default for TrackConfig {
    fn default() -> Self {
        Self { flap_window: 10 }
    }
}

/// The incidents open, or cleared recently enough to flap, and where the stream is.
#[derive(Clone, Debug)]
pub struct Tracker {
    cfg: TrackConfig,
    live: BTreeMap<u64, Incident>,
    next_id: u64,
    last_epoch: Option<u64>,
}

/// One epoch's blame, as subjects: each device, then each blamed link no device covers.
fn blamed_subjects(r: &EpochReport) -> Vec<(Subject, Estimate, Option<u64>)> {
    let age = |link: &[String; 2]| -> Option<u64> {
        if r.evidence_map.is_empty() {
            return None;
        }
        Some(
            r.evidence_map
                .links
                .iter()
                .find(|e| &e.link == link)
                .map_or(0, |e| e.age_epochs),
        )
    };
    let estimate = |b: &crate::report::LinkReport| Estimate {
        loss: b.loss,
        ci95: b.ci95,
        epoch: r.epoch,
        flows: b.flows,
    };
    let mut covered = BTreeSet::new();
    let mut out = Vec::new();
    for d in &r.devices {
        let links: Vec<&crate::report::LinkReport> = r
            .blamed
            .iter()
            .filter(|b| {
                let (from, to) = (b.link[0] == d.switch, b.link[1] == d.switch);
                if d.both {
                    from || to
                } else if d.inbound {
                    to
                } else {
                    from
                }
            })
            .collect();
        let Some(worst) = links.iter().max_by(|a, b| a.loss.total_cmp(&b.loss)) else {
            continue;
        };
        covered.extend(links.iter().map(|b| b.link.clone()));
        let oldest = links.iter().filter_map(|b| age(&b.link)).max();
        let subject = Subject::Device {
            switch: d.switch.clone(),
            inbound: d.inbound,
            both: d.both,
        };
        out.push((subject, estimate(worst), oldest));
    }
    for b in r.blamed.iter().filter(|b| !covered.contains(&b.link)) {
        let subject = Subject::Link {
            link: b.link.clone(),
        };
        out.push((subject, estimate(b), age(&b.link)));
    }
    out
}

impl Tracker {
    pub fn new(cfg: TrackConfig) -> Self {
        Self {
            cfg,
            live: BTreeMap::new(),
            next_id: 1,
            last_epoch: None,
        }
    }

    /// Goes on from a stored state: the incidents that were live (open, or cleared within the
    /// flap window), the next id to give, and the last epoch taken.
    pub fn resume(
        cfg: TrackConfig,
        live: Vec<Incident>,
        next_id: u64,
        last_epoch: Option<u64>,
    ) -> Self {
        let next_id = live.iter().map(|i| i.id + 1).fold(next_id.max(1), u64::max);
        Self {
            cfg,
            live: live.into_iter().map(|i| (i.id, i)).collect(),
            next_id,
            last_epoch,
        }
    }

    pub fn config(&self) -> TrackConfig {
        self.cfg
    }

    /// The last epoch taken.
    pub fn last_epoch(&self) -> Option<u64> {
        self.last_epoch
    }

    /// The next id to be given.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// The incidents open now, or cleared within the flap window.
    pub fn live(&self) -> impl Iterator<Item = &Incident> {
        self.live.values()
    }

    /// Takes one epoch's report, `at` its wall-clock time (UTC, RFC 3339) if known, and returns
    /// the incidents it changed, by id. An epoch at or before the last one taken changes nothing
    /// (a report read twice); nor does an incomplete one (nothing was blamed from it, so it
    /// clears nothing either).
    pub fn observe(&mut self, r: &EpochReport, at: Option<&str>) -> Vec<Incident> {
        if self.last_epoch.is_some_and(|l| r.epoch <= l) {
            return vec![];
        }
        self.last_epoch = Some(r.epoch);
        if r.incomplete.is_some() {
            return vec![];
        }
        let at = at.map(String::from);
        let blamed = blamed_subjects(r);
        let mut changed = BTreeSet::new();
        // The report's own word on each blame that ended: an all-clear, or a correction to the
        // link its loss is on now. Only an ending it does not explain is matched by adjacency
        // (reports written before corrections were reported).
        let ended: BTreeMap<Subject, Option<Subject>> = r
            .cleared
            .iter()
            .map(|c| {
                let to = c.corrected_to.clone().map(|link| Subject::Link { link });
                (
                    Subject::Link {
                        link: c.link.clone(),
                    },
                    to,
                )
            })
            .collect();
        // All-clear: open incidents whose subject is not blamed now.
        let mut cleared_now = Vec::new();
        let mut corrections = Vec::new();
        for i in self.live.values_mut().filter(|i| i.blamed_now) {
            if blamed.iter().all(|(s, ..)| s != &i.subject) {
                i.blamed_now = false;
                i.cleared_epoch = Some(r.epoch);
                i.cleared_at = at.clone();
                i.state = if i.episodes > 1 {
                    State::Flapping
                } else {
                    State::Cleared
                };
                changed.insert(i.id);
                match ended.get(&i.subject) {
                    Some(Some(to)) => corrections.push((i.id, to.clone())),
                    Some(None) => {}
                    None if i.episodes == 1 => cleared_now.push(i.id),
                    None => {}
                }
            }
        }
        for (subject, est, age) in blamed {
            let id = self.blame(r.epoch, subject, est, age, &at, &mut cleared_now);
            changed.insert(id);
        }
        for (from, to) in corrections {
            let Some(now) = self
                .live
                .values()
                .find(|i| i.blamed_now && i.subject == to)
                .map(|i| i.id)
            else {
                continue;
            };
            let o = self.live.get_mut(&from).expect("cleared now");
            o.state = State::Corrected;
            o.corrected_to = Some(now);
            let n = self.live.get_mut(&now).expect("blamed now");
            n.corrects.get_or_insert(from);
            changed.insert(now);
        }
        // Past the flap window: a flapping incident is cleared, and none can come back.
        let window = self.cfg.flap_window;
        let past = |i: &Incident| i.cleared_epoch.is_some_and(|c| c + window < r.epoch);
        for i in self.live.values_mut() {
            if !i.blamed_now && i.state == State::Flapping && past(i) {
                i.state = State::Cleared;
                changed.insert(i.id);
            }
        }
        let out: Vec<Incident> = changed
            .iter()
            .filter_map(|id| self.live.get(id).cloned())
            .collect();
        self.live
            .retain(|_, i| i.blamed_now || (i.state != State::Corrected && !past(i)));
        out
    }

    /// `subject` is blamed in `epoch`: goes on with its open incident, reopens one cleared within
    /// the window (flapping), or opens a new one (correcting a neighbour's cleared this epoch).
    /// Returns the incident's id.
    fn blame(
        &mut self,
        epoch: u64,
        subject: Subject,
        est: Estimate,
        age: Option<u64>,
        at: &Option<String>,
        cleared_now: &mut Vec<u64>,
    ) -> u64 {
        let window = self.cfg.flap_window;
        let found = self
            .live
            .values()
            .filter(|i| i.subject == subject && i.state != State::Corrected)
            .filter(|i| i.blamed_now || i.cleared_epoch.is_some_and(|c| epoch <= c + window))
            .map(|i| i.id)
            .max();
        if let Some(id) = found {
            let i = self.live.get_mut(&id).expect("found");
            if !i.blamed_now {
                i.episodes += 1;
                i.blamed_now = true;
                i.cleared_epoch = None;
                i.cleared_at = None;
                cleared_now.retain(|&c| c != id);
            }
            i.state = if i.episodes > 1 {
                State::Flapping
            } else {
                State::Ongoing
            };
            if est.loss > i.peak.loss {
                i.peak = est.clone();
            }
            i.current = est;
            i.last_epoch = epoch;
            i.last_at = at.clone();
            i.evidence_age = age;
            return id;
        }
        let id = self.next_id;
        self.next_id += 1;
        let corrects = cleared_now
            .iter()
            .position(|c| self.live[c].subject.is_neighbour(&subject))
            .map(|k| cleared_now.remove(k));
        if let Some(old) = corrects {
            let o = self.live.get_mut(&old).expect("cleared now");
            o.state = State::Corrected;
            o.corrected_to = Some(id);
        }
        let incident = Incident {
            id,
            subject,
            state: State::New,
            episodes: 1,
            blamed_now: true,
            first_epoch: epoch,
            first_at: at.clone(),
            last_epoch: epoch,
            last_at: at.clone(),
            cleared_epoch: None,
            cleared_at: None,
            peak: est.clone(),
            current: est,
            evidence_age: age,
            corrected_to: None,
            corrects,
        };
        self.live.insert(id, incident);
        id
    }
}

/// Every incident of a finished run's reports (a run's JSON document or report file), each
/// epoch dated by its own `at`.
pub fn rebuild(cfg: TrackConfig, reports: &[EpochReport]) -> Vec<Incident> {
    let mut t = Tracker::new(cfg);
    let mut all = BTreeMap::new();
    for r in reports {
        for i in t.observe(r, r.at.as_deref()) {
            all.insert(i.id, i);
        }
    }
    all.into_values().collect()
}

#[cfg(test)]
#[path = "track_tests.rs"]
mod tests;
