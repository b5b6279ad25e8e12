//! Incidents: what an operator follows instead of epochs. A link (or a device) blamed epoch
//! after epoch is one incident, with an id, from its first epoch to its all-clear; blamed again
//! soon after, the same incident flaps; a blame that moves to a neighbour in the same epoch
//! corrects the first. The rules are in `docs/design.md`, "Incidents".
//!
//! [`Tracker`] derives them from the stream of epoch reports (pure: no I/O, no clock; the
//! wall-clock time of each epoch is given to it). [`Store`] keeps them in an SQLite file beside
//! the report, so a restarted controller, or a standby taking over, continues the same ones
//! ([`Store::resume`]). [`render`] prints them as `canary incidents` does.

mod error;
mod filter;
mod journal;
mod render;
mod source;
mod store;
mod track;
mod wall;

pub use error::IncidentsError;
pub use filter::{Filter, Since};
pub use journal::Journal;
pub use render::{render_incident, render_table};
pub use source::{epochs_of, is_database, load};
pub use store::{default_path, Store};
pub use track::{rebuild, TrackConfig, Tracker};
pub use wall::{after, parse_rfc3339, rfc3339, rfc3339_at};

use serde::{Deserialize, Serialize};
use std::fmt;

/// What an incident is about: a directed link, or a switch whose every link in (or out) is
/// blamed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Subject {
    Link {
        link: [String; 2],
    },
    Device {
        switch: String,
        inbound: bool,
        /// Its links in and out are all blamed (`inbound` is then moot).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        both: bool,
    },
}

impl Subject {
    /// The switches it touches: two for a link, one for a device.
    pub fn switches(&self) -> Vec<&str> {
        match self {
            Subject::Link { link } => vec![&link[0], &link[1]],
            Subject::Device { switch, .. } => vec![switch],
        }
    }

    /// Another subject sharing a switch with this one.
    pub fn is_neighbour(&self, other: &Subject) -> bool {
        self != other && self.switches().iter().any(|s| other.switches().contains(s))
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Link { link } => write!(f, "{}→{}", link[0], link[1]),
            Subject::Device {
                switch,
                inbound,
                both,
            } => write!(
                f,
                "device {switch} (all links {})",
                match (both, inbound) {
                    (true, _) => "in and out",
                    (false, true) => "in",
                    (false, false) => "out",
                }
            ),
        }
    }
}

/// Where an incident stands.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Blamed for the first time in its latest epoch.
    New,
    /// Blamed without a break since its first epoch.
    Ongoing,
    /// Blamed again within the flap window of an all-clear, possibly clear again for now (and
    /// for less than the window): `episodes` says how often it was blamed.
    Flapping,
    /// All-clear.
    Cleared,
    /// Its blame moved to a neighbouring link or device in the epoch it cleared:
    /// `corrected_to` is the incident that took it over.
    Corrected,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::New => "new",
            State::Ongoing => "ongoing",
            State::Flapping => "flapping",
            State::Cleared => "cleared",
            State::Corrected => "corrected",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An estimate of the loss on the subject, in one epoch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub loss: f64,
    /// The 95 % interval of the estimate, when the report had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<[f64; 2]>,
    pub epoch: u64,
    /// Set when the loss fell on some of the flows only: how many of the flows counted lost
    /// packets, and what those lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<canary_core::detect::FlowShare>,
}

/// One blame episode (or a run of them, when it flaps) of one subject.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    /// Unique in its database; a restarted controller or a standby goes on counting.
    pub id: u64,
    pub subject: Subject,
    pub state: State,
    /// Blame episodes: 1, and one more each time it was blamed again within the flap window.
    pub episodes: u32,
    /// Blamed in its last epoch: open.
    pub blamed_now: bool,
    pub first_epoch: u64,
    /// The wall-clock time (UTC, RFC 3339) of the first epoch, when the reports had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_at: Option<String>,
    /// The last epoch it was blamed in.
    pub last_epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_at: Option<String>,
    /// The epoch of its latest all-clear (the first epoch not blamed), while it is not blamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleared_epoch: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleared_at: Option<String>,
    /// The highest estimate over its epochs.
    pub peak: Estimate,
    /// The estimate of the last epoch it was blamed in.
    pub current: Estimate,
    /// Epochs since the evidence of its last blame was counted (segments watched in rounds),
    /// when the report had an evidence map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_age: Option<u64>,
    /// The incident its blame moved to (state `corrected`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected_to: Option<u64>,
    /// The incident whose blame moved to this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrects: Option<u64>,
}
