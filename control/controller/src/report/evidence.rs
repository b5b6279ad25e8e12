//! The evidence map of an epoch report: what each directed link's evidence could show.

use super::is_zero;
use serde::{Deserialize, Serialize};

/// What the evidence the epoch localized from could show on each directed link
/// ([`canary_core::decide::EvidenceTracker`]): the packets of the segments through it, pooled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EvidenceReport {
    /// Every link some segment through which was ever counted, in the topology's link order.
    pub links: Vec<LinkEvidenceReport>,
    /// Links no segment through which was ever counted: nothing watches them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unwatched: Vec<[String; 2]>,
}

impl EvidenceReport {
    pub fn is_empty(&self) -> bool {
        self.links.is_empty() && self.unwatched.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkEvidenceReport {
    pub link: [String; 2],
    /// The smallest loss its packets could show the decision, rounded up to 4 significant
    /// digits; 1 when none could (no packets in the evidence now, or too few).
    pub min_loss: f64,
    /// Packets of the segments through it in the evidence.
    pub packets: u64,
    /// Epochs since a segment through it was last counted; absent: 0, this epoch.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub age_epochs: u64,
}
