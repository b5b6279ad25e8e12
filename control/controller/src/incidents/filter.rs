//! Which incidents `canary incidents` shows: `--since` and `--state`.

use super::wall::parse_rfc3339;
use super::{Incident, State};
use time::OffsetDateTime;

/// From when: an epoch number or a wall-clock time.
#[derive(Clone, Debug, PartialEq)]
pub enum Since {
    Epoch(u64),
    Time(OffsetDateTime),
}

impl Since {
    /// `12` (an epoch) or `2026-11-27T10:42:00Z` (RFC 3339).
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Ok(e) = s.parse() {
            return Ok(Since::Epoch(e));
        }
        parse_rfc3339(s).map(Since::Time).ok_or_else(|| {
            format!("{s:?} is neither an epoch number nor an RFC 3339 time (2026-11-27T10:42:00Z)")
        })
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// Incidents open at or after this point, or blamed or cleared since.
    pub since: Option<Since>,
    /// Incidents in any of these states (all when empty).
    pub states: Vec<State>,
}

impl Filter {
    pub fn matches(&self, i: &Incident) -> bool {
        if !self.states.is_empty() && !self.states.contains(&i.state) {
            return false;
        }
        match &self.since {
            None => true,
            Some(_) if i.blamed_now => true,
            Some(Since::Epoch(e)) => i.last_epoch >= *e || i.cleared_epoch.is_some_and(|c| c >= *e),
            Some(Since::Time(t)) => [&i.last_at, &i.cleared_at]
                .into_iter()
                .flatten()
                .filter_map(|s| parse_rfc3339(s))
                .any(|at| at >= *t),
        }
    }
}
