//! Loss detection: minus meters (Algorithm 3), per-segment counts, and aggregation over epochs.
//!
//! Algorithm 3's body is missing from the paper's text; this is our reconstruction from
//! Sec. III-E. For each harvested DSM, every flow with a clean bucket gives (flow, pathBF, count).
//! The pathBF decodes to the segment, hence to its upstream monitor (the paper compares against
//! "all upstream USMs"; decoding first and asking only the right one is equivalent and avoids
//! accidental matches). A clean USM bucket of the same flow gives the upstream count, and
//! `lost = USM − DSM`. Entries without a clean USM bucket are dropped.
//!
//! The DSM counts only packets the upstream marked as counted (see the data plane), so a clean
//! pair is exact: a negative loss can only come from packets still in flight at harvest time or a
//! broken switch, and such entries are dropped and counted, never used.
//!
//! Counters are 32-bit registers. Within an epoch the DSM count never exceeds the USM count, so
//! `lost = (USM − DSM) mod 2³²` is right even when the USM register wrapped, and the flow's true
//! sent count is `DSM + lost`.

use crate::fabric::MeterSnapshot;
use crate::pathbf::{Decoded, PathBfCodec};
use crate::sketch::FlowHashes;
use crate::topo::{LinkIx, SegmentId, Segments, SwitchIx};
use crate::FlowId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// One minus-meter entry: a monitored flow's packets sent into and lost on its segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MmEntry {
    pub flow: FlowId,
    pub segment: SegmentId,
    pub sent: u64,
    pub lost: u64,
}

/// Packets and flows counted on one segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentCount {
    pub sent: u64,
    pub lost: u64,
    pub flows: u32,
}

/// What could not be used, by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anomalies {
    /// Clean DSM records whose pathBF matches no segment into the switch.
    pub undecodable: u64,
    /// Clean DSM records whose pathBF matches several segments.
    pub ambiguous: u64,
    /// Flows with a clean DSM bucket but no clean USM bucket (hash collisions upstream).
    pub no_clean_usm: u64,
    /// Flows whose upstream switch was not harvested this epoch.
    pub upstream_missing: u64,
    /// Flows with more packets downstream than upstream.
    pub negative_loss: u64,
    pub dirty_dsm_buckets: u64,
    pub dirty_usm_buckets: u64,
}

/// One epoch's detection result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EpochDetection {
    pub entries: Vec<MmEntry>,
    pub segments: BTreeMap<SegmentId, SegmentCount>,
    pub anomalies: Anomalies,
}

impl EpochDetection {
    pub fn packets(&self) -> u64 {
        self.segments.values().map(|c| c.sent).sum()
    }
    pub fn flows(&self) -> u64 {
        self.entries.len() as u64
    }
}

/// Algorithm 3 over every harvested monitor. `snapshots` holds the switches that answered.
pub fn minus_meters(
    segments: &Segments,
    codec: &PathBfCodec,
    snapshots: &[MeterSnapshot],
) -> EpochDetection {
    let by_switch: HashMap<SwitchIx, &MeterSnapshot> =
        snapshots.iter().map(|s| (s.switch, s)).collect();
    let mut out = EpochDetection::default();
    for snap in snapshots {
        out.anomalies.dirty_dsm_buckets += snap.dsm.dirty_buckets() as u64;
        out.anomalies.dirty_usm_buckets += snap.usm.dirty_buckets() as u64;
        for rec in snap.dsm.clean_flows() {
            let segment = match codec.decode(snap.switch, rec.path_bf) {
                Decoded::Segment(s) => s,
                Decoded::Ambiguous(_) => {
                    out.anomalies.ambiguous += 1;
                    continue;
                }
                Decoded::Unknown => {
                    out.anomalies.undecodable += 1;
                    continue;
                }
            };
            let Some(up) = by_switch.get(&segments.get(segment).upstream()) else {
                out.anomalies.upstream_missing += 1;
                continue;
            };
            let Some(usm_count) = up.usm.clean_count(&rec.flow, FlowHashes::of(&rec.flow)) else {
                out.anomalies.no_clean_usm += 1;
                continue;
            };
            let lost = usm_count.wrapping_sub(rec.count);
            if lost > u32::MAX / 2 {
                out.anomalies.negative_loss += 1;
                continue;
            }
            let entry = MmEntry {
                flow: rec.flow,
                segment,
                sent: rec.count as u64 + lost as u64,
                lost: lost as u64,
            };
            let c = out.segments.entry(segment).or_default();
            c.sent += entry.sent;
            c.lost += entry.lost;
            c.flows += 1;
            out.entries.push(entry);
        }
    }
    out
}

/// A segment's counts over a window of epochs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowCount {
    pub sent: u64,
    pub lost: u64,
    /// Epochs of the window in which the segment was observed, and in which it lost packets.
    pub epochs: u32,
    pub lossy_epochs: u32,
}

impl WindowCount {
    pub fn add(&mut self, c: &SegmentCount) {
        self.sent += c.sent;
        self.lost += c.lost;
        self.epochs += 1;
        self.lossy_epochs += (c.lost > 0) as u32;
    }
}

/// The last `n` epochs' segment counts (Sec. III-F: "MMs from n consecutive epochs are
/// aggregated, and we only compute success probabilities for the path segments that have packet
/// losses in no less than n′ out of the n epochs").
#[derive(Clone, Debug)]
pub struct Window {
    n: usize,
    epochs: VecDeque<BTreeMap<SegmentId, SegmentCount>>,
}

impl Window {
    pub fn new(n: usize) -> Self {
        Self {
            n: n.max(1),
            epochs: VecDeque::new(),
        }
    }

    pub fn push(&mut self, counts: BTreeMap<SegmentId, SegmentCount>) {
        if self.epochs.len() == self.n {
            self.epochs.pop_front();
        }
        self.epochs.push_back(counts);
    }

    pub fn len(&self) -> usize {
        self.epochs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.epochs.is_empty()
    }

    pub fn totals(&self) -> BTreeMap<SegmentId, WindowCount> {
        let mut out: BTreeMap<SegmentId, WindowCount> = BTreeMap::new();
        for e in &self.epochs {
            for (s, c) in e {
                out.entry(*s).or_default().add(c);
            }
        }
        out
    }
}

/// The segments handed to a localizer: success probability (eq. 2) over the window, with
/// segments that lost packets in fewer than `min_lossy_epochs` epochs taken as loss-free.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Observations {
    pub segments: Vec<ObservedSegment>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObservedSegment {
    pub segment: SegmentId,
    pub subproblem: u32,
    pub links: Vec<LinkIx>,
    pub sent: u64,
    pub lost: u64,
    /// y_p of eq. 2, or 1 when filtered as noise.
    pub success: f64,
}

pub fn observations(
    segments: &Segments,
    totals: &BTreeMap<SegmentId, WindowCount>,
    min_lossy_epochs: u32,
) -> Observations {
    let segments = totals
        .iter()
        .filter(|(_, c)| c.sent > 0)
        .map(|(&s, c)| {
            let success = if c.lossy_epochs < min_lossy_epochs {
                1.0
            } else {
                (c.sent - c.lost) as f64 / c.sent as f64
            };
            ObservedSegment {
                segment: s,
                subproblem: segments.subproblem_of[s as usize],
                links: segments.get(s).links.clone(),
                sent: c.sent,
                lost: c.lost,
                success,
            }
        })
        .collect();
    Observations { segments }
}
