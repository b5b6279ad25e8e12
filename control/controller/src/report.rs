//! Per-epoch reports: the data (serialised as one JSON object per epoch) and the terminal view.

use canary_core::detect::Anomalies;
use canary_core::fabric::Parity;
use canary_core::score::Score;
use canary_core::select::SelectionStats;
use serde::{Deserialize, Serialize};

mod cables;
mod evidence;
mod render;
pub mod round;
mod segments;
pub use cables::{cables, CableReport};
pub use evidence::{EvidenceReport, LinkEvidenceReport};
pub use render::{render_epoch, render_summary};
pub use segments::{FlowLoss, SegmentReport, FLOWS_SHOWN};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochReport {
    pub epoch: u64,
    /// The meter instance this epoch counted in.
    pub parity: Parity,
    /// Fabric time of the epoch's end, seconds.
    #[serde(serialize_with = "round::micros")]
    pub at_s: f64,
    /// Wall-clock time of the epoch's report (UTC, RFC 3339), set by the daemon as it writes
    /// it (and by `canary simulate --json`, dated from the run's start); absent in the
    /// simulator's own reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    pub packets_counted: u64,
    /// Of those, packets the downstream monitor did not count (this epoch alone, not the window).
    #[serde(default)]
    pub packets_lost: u64,
    pub flows_counted: u64,
    /// Of `flows_counted`, IPv6 flows.
    #[serde(default)]
    pub flows_counted_v6: u64,
    pub flows_monitored: usize,
    pub segments_total: usize,
    pub segments_observed: usize,
    /// Segments that counted fewer than α packets or β flows.
    pub segments_short: usize,
    pub window_epochs: usize,
    /// Segments with losses over the window; `used` is false when the n′ filter set them aside.
    pub lossy_segments: Vec<SegmentReport>,
    /// Segments declared lossy (with the epoch the loss began) or all-clear this epoch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segment_changes: Vec<SegmentChange>,
    pub blamed: Vec<LinkReport>,
    /// The physical links to look at: each cable with a blamed direction, both directions
    /// together, with the ports at its ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cables: Vec<CableReport>,
    /// Switches whose every link in (or out) is blamed: a device fault, which segments cannot
    /// tell from its links' (drops on all links out look like drops on all links in).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceReport>,
    /// Links blamed until the epoch before and not in this one: their all-clear.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cleared: Vec<ClearedLink>,
    /// Losses the counts cannot yet place on one link: each the candidate links, none of them
    /// blamed (`docs/design.md`, "A loss the counts cannot place"). More packets decide.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<Vec<[String; 2]>>,
    pub selection: SelectionStats,
    pub hh_rules: usize,
    pub rules: RuleCounts,
    pub anomalies: Anomalies,
    /// Monitors that did not answer this epoch: their segments are unobserved, not loss-free.
    pub unreachable: Vec<String>,
    /// Switches (monitors or not) that were down, restarted or late this epoch. Segments through
    /// them are left out of detection for the epoch: an outage is not link loss.
    #[serde(default)]
    pub disturbed: Vec<SwitchEvent>,
    /// Directed links the fabric's own control has out of service (out of every ECMP group):
    /// their flows moved elsewhere; not a fault, and nothing is blamed for the move.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_of_service: Vec<[String; 2]>,
    /// Monitored flows counted upstream of which no packet reached the monitor downstream: all
    /// their packets are counted as lost on their segment (absence is evidence).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub flows_vanished: u64,
    #[serde(default)]
    pub segments_skipped: usize,
    /// The wait between this epoch's flip and its harvest (raised while packets arrive late).
    #[serde(default)]
    #[serde(serialize_with = "round::thousandths")]
    pub drain_ms: f64,
    /// Switch tables that were full when flow selection wanted a rule in them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables_full: Vec<TableFull>,
    pub phases_ms: Phases,
    /// Why the epoch's counts were not used (a controller restarted or took over during it):
    /// nothing is blamed from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// Segments watched in rounds (the switches' meters cannot count all at once): this
    /// epoch's round and the age of the evidence localization used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchReport>,
    /// Every directed link's evidence: the smallest loss it could show, and its age.
    #[serde(default, skip_serializing_if = "EvidenceReport::is_empty")]
    pub evidence_map: EvidenceReport,
    /// The epoch's work ran on a cluster's workers: what it waited for there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterReport>,
    /// Every segment the localizer weighed, as it weighed it (`--report-observations`): its
    /// counts, whether they were a loss, background, or set aside. Given to the localizer with
    /// the topology, they give this epoch's `blamed` again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observations: Option<canary_core::detect::Observations>,
}

/// An epoch's stages on the cluster (`canary run --cluster`, `canary worker`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterReport {
    /// From handing out the registers to having every join partition's share.
    #[serde(serialize_with = "round::thousandths")]
    pub detect_ms: f64,
    /// From handing out the observations to having every localizer partition's diagnoses.
    #[serde(serialize_with = "round::thousandths")]
    pub localize_ms: f64,
    /// Bytes the controller published and took this epoch.
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// What made the epoch late, not wrong: stages whose input JetStream handed out again (a
    /// worker was lost: up to the ack wait and its restart), and pulls taken up again or
    /// messages published again by a worker or the controller (a NATS server was lost, or its
    /// servers were electing a leader).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redelivered: Vec<String>,
}

/// The round of segments an epoch watched, and how old every segment's evidence is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WatchReport {
    /// 0-based, of `rounds`.
    pub round: usize,
    pub rounds: usize,
    /// Epochs each round lasts.
    pub dwell: u32,
    /// Segments of this epoch's round.
    pub watched: usize,
    pub evidence: canary_core::schedule::EvidenceAge,
    /// Set while the first sweep over every round is not complete: the epoch from which links
    /// are blamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sweep_until: Option<u64>,
}

impl EpochReport {
    /// An epoch no controller harvested: it is in the report, marked, with nothing counted.
    pub fn missed(epoch: u64, segments_total: usize, why: String) -> Self {
        EpochReport {
            incomplete: Some(why),
            ..Self::empty(epoch, segments_total)
        }
    }

    /// An epoch with nothing counted yet, for a producer to fill in.
    pub fn empty(epoch: u64, segments_total: usize) -> Self {
        EpochReport {
            epoch,
            parity: Parity::of_epoch(epoch),
            at_s: 0.0,
            at: None,
            packets_counted: 0,
            packets_lost: 0,
            flows_counted: 0,
            flows_counted_v6: 0,
            flows_monitored: 0,
            segments_total,
            segments_observed: 0,
            segments_short: 0,
            window_epochs: 0,
            lossy_segments: vec![],
            segment_changes: vec![],
            blamed: vec![],
            cables: vec![],
            devices: vec![],
            cleared: vec![],
            undecided: vec![],
            selection: SelectionStats::default(),
            hh_rules: 0,
            rules: RuleCounts::default(),
            anomalies: Anomalies::default(),
            unreachable: vec![],
            disturbed: vec![],
            out_of_service: Vec::new(),
            flows_vanished: 0,
            segments_skipped: 0,
            drain_ms: 0.0,
            tables_full: vec![],
            phases_ms: Phases::default(),
            incomplete: None,
            watch: None,
            evidence_map: EvidenceReport::default(),
            cluster: None,
            observations: None,
        }
    }
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A switch table flow selection found full this epoch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableFull {
    pub switch: String,
    pub table: String,
    /// Entries it holds (the program's size).
    pub size: usize,
    /// Rules selection wanted there and did without.
    pub refused: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchEvent {
    pub switch: String,
    pub detail: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkReport {
    pub link: [String; 2],
    #[serde(serialize_with = "round::loss")]
    pub loss: f64,
    /// The localization stage that blamed it, from 1 (the highest-loss group), as the terminal
    /// and the page number it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<usize>,
    /// 95 % interval of the estimate: the Wilson interval with the packets counted on the
    /// segments through the link as trials (sampling uncertainty, not model error).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "round::loss_pair"
    )]
    pub ci95: Option<[f64; 2]>,
    /// The epoch since which the link has been blamed without a break.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// Set when the loss fell on some of the link's flows only (a bad ECMP member, a
    /// black-holed prefix): how many of the flows counted through it this epoch lost packets,
    /// and what those lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<canary_core::detect::FlowShare>,
    /// Blamed by holding: the localizer did not name it this epoch, but no test has cleared
    /// it and its segments' loss has not moved to another link (`canary_core::decide::hold`).
    /// Its estimate is the last one the localizer gave.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

/// A segment declared lossy (`lossy_since`: the epoch its loss began) or all-clear (`None`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SegmentChange {
    pub segment: Vec<String>,
    pub lossy_since: Option<u64>,
}

/// A switch blamed as a device: all `links` of its links in (`inbound`) or out are blamed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceReport {
    pub switch: String,
    pub inbound: bool,
    pub links: usize,
    /// Its links in and out are all blamed: a switch dropping both ways (a sick switch).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub both: bool,
}

/// A link's all-clear: blamed from epoch `since` to `last`, not in this one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClearedLink {
    pub link: [String; 2],
    pub since: u64,
    pub last: u64,
    /// Not an all-clear but a correction: the loss of the segments through this link is now
    /// placed on that link, blamed this epoch on a lossy segment they share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected_to: Option<[String; 2]>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RuleCounts {
    pub installed: u32,
    pub removed: u32,
    pub failed: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    #[serde(serialize_with = "round::thousandths")]
    pub harvest: f64,
    #[serde(serialize_with = "round::thousandths")]
    pub detect: f64,
    #[serde(serialize_with = "round::thousandths")]
    pub localize: f64,
    #[serde(serialize_with = "round::thousandths")]
    pub select: f64,
}

/// The run's verdict scored against the injected faults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub epochs: usize,
    pub blamed: Vec<LinkReport>,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub tp: usize,
    pub fp: usize,
    #[serde(rename = "fn")]
    pub fn_: usize,
    pub accuracy: f64,
    /// Score after each localization stage (the paper's Fig. 8).
    pub stages: Vec<Score>,
    pub missed: Vec<LinkReport>,
    pub false_positives: Vec<LinkReport>,
    /// Time to localize the whole run's observations.
    #[serde(serialize_with = "round::thousandths")]
    pub localize_ms: f64,
    /// Every segment observed in the run with its counts: where the monitored flows were, and
    /// where a fault could not have been seen.
    #[serde(default)]
    pub coverage: Vec<SegmentReport>,
    /// The run scored epoch by epoch against the fault schedule.
    #[serde(default)]
    pub over_time: OverTimeReport,
}

/// [`canary_core::score::OverTime`] with names.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OverTimeReport {
    pub faults: Vec<FaultTimingReport>,
    pub false_positive_link_epochs: u64,
    pub link_epochs: Score,
}

/// One episode of one injected fault: from its onset to its repair, when it was first blamed
/// and when it was all-clear.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultTimingReport {
    pub link: [String; 2],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(serialize_with = "round::loss")]
    pub loss: f64,
    pub onset: u64,
    pub repair: Option<u64>,
    pub detected: Option<u64>,
    pub cleared: Option<u64>,
    /// The information limit: the first epoch at which a sequential test of this link, knowing
    /// the fault's loss, could have decided on the packets counted through it since the onset
    /// (the decision's threshold; `canary simulate` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<u64>,
}

impl FaultTimingReport {
    /// The time to detect as a ratio to the information limit, both counting the onset's epoch.
    pub fn ratio_to_bound(&self) -> Option<f64> {
        let (d, b) = (self.detected?, self.bound?);
        Some((d - self.onset + 1) as f64 / (b - self.onset + 1) as f64)
    }
}
