//! What a synthesized run (`canary simulate --synth-meters`) measures beyond its epochs'
//! reports: the watch plan that fits the switches' memory, each epoch's cost to the controller,
//! and each fault's time to detect. `canary_lab::scale` makes it.

use canary_core::schedule::EvidenceAge;
use canary_core::score::Score;
use canary_core::sketch::MeterConfig;
use canary_core::topo::LinkIx;
use serde::{Deserialize, Serialize};

/// The fabric and the plan that watches it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScaleSetup {
    pub topology: String,
    pub switches: usize,
    pub hosts: usize,
    pub monitors: usize,
    pub segments: usize,
    pub links: usize,
    pub meters: MeterConfig,
    /// Segments one monitor starts (and ends) per round.
    pub segments_per_monitor: usize,
    pub rounds: usize,
    /// Epochs between two watches of a segment: the bound on its evidence's age.
    pub period: u64,
    /// The adaptive plan (`rounds` are then its sweep's half-rounds, `period` the bound).
    #[serde(default)]
    pub adaptive: bool,
    pub prepare_s: f64,
    pub plan_ms: f64,
}

/// One epoch: what was watched, how old the evidence is, what was blamed, and the time the
/// controller spent on it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScaleEpoch {
    pub epoch: u64,
    pub watched: usize,
    /// Flows the watched segments sent, and those whose loss the meters gave back.
    pub flows_sent: u64,
    pub flows_counted: u64,
    pub evidence: EvidenceAge,
    /// Lossy segments held back until their links' other segments are watched, and loss-free
    /// segments set aside as older than a loss on one of their links (the adaptive plan).
    #[serde(default)]
    pub waiting: usize,
    #[serde(default)]
    pub stale: usize,
    /// By index, for the lab's own checks; the document names them in its epochs' reports.
    #[serde(skip)]
    pub blamed: Vec<LinkIx>,
    pub score: Score,
    /// Minus meters alone, then with the evidence update and success probabilities.
    pub minus_meters_ms: f64,
    pub detect_ms: f64,
    pub localize_ms: f64,
    /// Minus meters + evidence + success probabilities + Canary.
    pub epoch_ms: f64,
}

/// When each fault was first blamed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScaleFault {
    pub link: [String; 2],
    pub loss: f64,
    /// Epochs from its onset to the first epoch that blamed it (1: the epoch it began).
    pub time_to_detect: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScaleRun {
    pub setup: ScaleSetup,
    pub faults: Vec<ScaleFault>,
    pub epochs: Vec<ScaleEpoch>,
    /// The epochs after the first full period (every segment seen at least once), scored
    /// together.
    pub after_first_period: Score,
    /// The first epoch from which every epoch's F1 is at least 0.95, the accuracy the paper
    /// reports for Canary at every k it ran (Fig. 10).
    pub accurate_from: Option<u64>,
    pub peak_rss_mb: Option<f64>,
}
