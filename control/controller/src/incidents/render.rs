//! Incidents as `canary incidents` prints them: a table, or one incident in full.

use super::{Estimate, Incident, State};
use std::fmt::Write;

/// The state with its count of episodes when it flaps: `flapping (4 episodes)`.
fn state(i: &Incident) -> String {
    match i.state {
        State::Flapping => format!("flapping ({} episodes)", i.episodes),
        State::Corrected => match i.corrected_to {
            Some(to) => format!("corrected (→ {to})"),
            None => "corrected".into(),
        },
        s if i.episodes > 1 => format!("{s} ({} episodes)", i.episodes),
        s => s.to_string(),
    }
}

fn estimate(e: &Estimate) -> String {
    let mut s = match e.ci95 {
        Some([lo, hi]) => format!("{:.4} [{lo:.4}, {hi:.4}]", e.loss),
        None => format!("{:.4}", e.loss),
    };
    if let Some(f) = &e.flows {
        s += &format!(" on {} of {} flows", f.hit, f.flows);
    }
    s
}

fn epoch_at(epoch: u64, at: &Option<String>) -> String {
    match at {
        Some(at) => format!("{epoch} ({at})"),
        None => epoch.to_string(),
    }
}

/// Until when: still blamed, or the all-clear.
fn until(i: &Incident) -> String {
    match (i.blamed_now, i.cleared_epoch) {
        (true, _) => format!("blamed in {}", i.last_epoch),
        (false, Some(c)) => format!("clear from {c}"),
        (false, None) => format!("last blamed {}", i.last_epoch),
    }
}

/// One line per incident under a header.
pub fn render_table(incidents: &[Incident]) -> String {
    let mut s = String::new();
    if incidents.is_empty() {
        s.push_str("no incidents\n");
        return s;
    }
    let _ = writeln!(
        s,
        "{:>4}  {:<24} {:<28} {:<32} {:<16} {:>7}  {:<25} age",
        "id", "state", "subject", "first epoch", "until", "peak", "current [95 %]"
    );
    for i in incidents {
        let _ = writeln!(
            s,
            "{:>4}  {:<24} {:<28} {:<32} {:<16} {:>7.4}  {:<25} {}",
            i.id,
            state(i),
            i.subject.to_string(),
            epoch_at(i.first_epoch, &i.first_at),
            until(i),
            i.peak.loss,
            estimate(&i.current),
            i.evidence_age.map_or("-".into(), |a| a.to_string()),
        );
    }
    s
}

/// One incident, a field per line.
pub fn render_incident(i: &Incident) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "incident {}: {}", i.id, i.subject);
    let _ = writeln!(s, "  state          {}", state(i));
    let _ = writeln!(s, "  episodes       {}", i.episodes);
    let _ = writeln!(
        s,
        "  first blamed   epoch {}",
        epoch_at(i.first_epoch, &i.first_at)
    );
    let _ = writeln!(
        s,
        "  last blamed    epoch {}",
        epoch_at(i.last_epoch, &i.last_at)
    );
    if let Some(c) = i.cleared_epoch {
        let _ = writeln!(s, "  all-clear      epoch {}", epoch_at(c, &i.cleared_at));
    }
    let _ = writeln!(
        s,
        "  peak loss      {} in epoch {}",
        estimate(&i.peak),
        i.peak.epoch
    );
    let _ = writeln!(
        s,
        "  current loss   {} in epoch {}",
        estimate(&i.current),
        i.current.epoch
    );
    if let Some(a) = i.evidence_age {
        let _ = writeln!(s, "  evidence age   {a} epochs");
    }
    if let Some(to) = i.corrected_to {
        let _ = writeln!(s, "  corrected by   incident {to} (the blame moved there)");
    }
    if let Some(from) = i.corrects {
        let _ = writeln!(s, "  corrects       incident {from} (its blame moved here)");
    }
    s
}
