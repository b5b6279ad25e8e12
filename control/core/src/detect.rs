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

use crate::topo::{LinkIx, SegmentId, Segments, SwitchIx};
use crate::FlowId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// One minus-meter entry: a monitored flow's packets sent into and lost on its segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MmEntry {
    pub flow: FlowId,
    pub segment: SegmentId,
    pub sent: u64,
    pub lost: u64,
}

/// An epoch's minus-meter entries, in the parts each upstream switch's lookups produced: at
/// k = 32 they are 7.7 M entries (300 MB), and joining them into one vector, which only ever
/// gets iterated, took 7-12 % of the epoch (fresh pages, then a copy).
#[derive(Clone, Debug, Default)]
pub struct MmEntries {
    parts: Vec<Vec<MmEntry>>,
}

impl MmEntries {
    pub fn iter(&self) -> impl Iterator<Item = &MmEntry> + '_ {
        self.parts.iter().flatten()
    }

    pub fn len(&self) -> usize {
        self.parts.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.parts.iter().all(Vec::is_empty)
    }

    pub fn push(&mut self, e: MmEntry) {
        match self.parts.last_mut() {
            Some(last) => last.push(e),
            None => self.parts.push(vec![e]),
        }
    }

    /// The entries as the parts they were made in (one per upstream switch's lookups).
    pub fn into_parts(self) -> Vec<Vec<MmEntry>> {
        self.parts
    }

    /// Entries made in `parts`, in that order.
    pub fn from_parts(parts: Vec<Vec<MmEntry>>) -> Self {
        MmEntries { parts }
    }

    /// All entries in one vector, in order.
    pub fn to_vec(&self) -> Vec<MmEntry> {
        self.iter().copied().collect()
    }
}

impl<'a> IntoIterator for &'a MmEntries {
    type Item = &'a MmEntry;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<MmEntry>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.parts.iter().flatten()
    }
}

impl FromIterator<MmEntry> for MmEntries {
    fn from_iter<I: IntoIterator<Item = MmEntry>>(it: I) -> Self {
        MmEntries {
            parts: vec![it.into_iter().collect()],
        }
    }
}

/// Equal when the entries are, however they are split into parts.
impl PartialEq for MmEntries {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Serialize for MmEntries {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for MmEntries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(MmEntries {
            parts: vec![Vec::<MmEntry>::deserialize(d)?],
        })
    }
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
    /// Flows whose clean buckets disagree across rows: the meter was read while a packet was
    /// still being counted (in flight longer than the drain time). Left out, never guessed.
    #[serde(default)]
    pub torn: u64,
    /// Packets that reached their DSM after the harvest, found by reading the downstream
    /// switches of the segments that lost packets a second time before judging the epoch
    /// (which is judged on that read): the drain was too short for them. Always written:
    /// records cross the cluster in postcard, which cannot skip a field.
    #[serde(default)]
    pub late: u64,
}

impl Anomalies {
    pub fn add(&mut self, o: &Anomalies) {
        self.undecodable += o.undecodable;
        self.ambiguous += o.ambiguous;
        self.no_clean_usm += o.no_clean_usm;
        self.upstream_missing += o.upstream_missing;
        self.negative_loss += o.negative_loss;
        self.dirty_dsm_buckets += o.dirty_dsm_buckets;
        self.dirty_usm_buckets += o.dirty_usm_buckets;
        self.torn += o.torn;
        self.late += o.late;
    }
}

/// One epoch's detection result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EpochDetection {
    pub entries: MmEntries,
    pub segments: BTreeMap<SegmentId, SegmentCount>,
    pub anomalies: Anomalies,
    /// Switches whose harvested instance was still counting while it was read (torn reads, USM
    /// or DSM side): packets of the epoch were in flight longer than the drain.
    #[serde(default)]
    pub torn_at: BTreeMap<SwitchIx, u64>,
    /// Flows expected downstream that never arrived: each entry charges everything its USM
    /// counted to its segment as lost (counted in `entries` too).
    #[serde(default)]
    pub vanished: u64,
}

impl EpochDetection {
    /// Leaves out the entries of `skip` (flow, segment) pairs, and their packets from their
    /// segments' counts: counts that measure something else than loss.
    pub fn drop_entries(&mut self, skip: &std::collections::HashSet<(FlowId, SegmentId)>) {
        if skip.is_empty() {
            return;
        }
        let parts = std::mem::take(&mut self.entries).into_parts();
        let mut kept = Vec::with_capacity(parts.len());
        for part in parts {
            let (out, keep): (Vec<MmEntry>, Vec<MmEntry>) = part
                .into_iter()
                .partition(|e| skip.contains(&(e.flow, e.segment)));
            for e in out {
                if let Some(c) = self.segments.get_mut(&e.segment) {
                    c.sent -= e.sent.min(c.sent);
                    c.lost -= e.lost.min(c.lost);
                    c.flows = c.flows.saturating_sub(1);
                    if c.flows == 0 {
                        self.segments.remove(&e.segment);
                    }
                }
            }
            kept.push(keep);
        }
        self.entries = MmEntries::from_parts(kept);
    }

    pub fn packets(&self) -> u64 {
        self.segments.values().map(|c| c.sent).sum()
    }
    pub fn lost(&self) -> u64 {
        self.segments.values().map(|c| c.lost).sum()
    }
    pub fn flows(&self) -> u64 {
        self.entries.len() as u64
    }
    /// Of [`EpochDetection::flows`], the IPv6 ones.
    pub fn flows_v6(&self) -> u64 {
        self.entries.iter().filter(|e| !e.flow.is_v4()).count() as u64
    }
}

mod flow_share;
mod flow_window;
mod join;
mod records;
mod run_flows;

pub use flow_share::{some_flows_only, FlowShare};
pub use flow_window::{FlowCount, FlowWindow, FLOW_DETAIL, FLOW_EPOCHS};
pub use join::{expected_by_downstream, join, minus_meters, minus_meters_expecting, partition_of};
pub use records::{vanished, DsmEntry, Expected, SwitchRecords, UsmEntry};
pub use run_flows::RunFlows;

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
    /// A window of one epoch in which the segment carried `sent` packets and lost `lost`.
    pub fn of_one_epoch(sent: u64, lost: u64) -> Self {
        WindowCount {
            sent,
            lost,
            epochs: 1,
            lossy_epochs: u32::from(lost > 0),
        }
    }
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
/// segments that lost packets in fewer than `min_lossy_epochs` epochs set aside as noise (success
/// 1, and [`ObservedSegment::set_aside`]: the localizers leave them out rather than let them
/// clear their links).
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
    /// Its losses are no more than a healthy segment's (the sequential decision): evidence
    /// that its links are loss-free, like a segment that lost nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// Its flows over the window, one count each, when it had few
    /// ([`FlowWindow`]); empty otherwise, and its packets stand for its flows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowCount>,
}

impl ObservedSegment {
    /// Lost packets, but not enough to count as lossy (fewer epochs than n′, or not declared
    /// and more than background): neither blames nor clears its links.
    pub fn set_aside(&self) -> bool {
        self.lost > 0 && self.success >= 1.0 && !self.background
    }
}

pub fn observations(
    segments: &Segments,
    totals: &BTreeMap<SegmentId, WindowCount>,
    min_lossy_epochs: u32,
) -> Observations {
    let segments = totals
        .iter()
        .filter_map(|(&s, c)| observed(segments, s, c, min_lossy_epochs))
        .collect();
    Observations { segments }
}

/// One segment's entry of [`observations`]; `None` when it sent nothing.
pub fn observed(
    segments: &Segments,
    s: SegmentId,
    c: &WindowCount,
    min_lossy_epochs: u32,
) -> Option<ObservedSegment> {
    if c.sent == 0 {
        return None;
    }
    let success = if c.lossy_epochs < min_lossy_epochs {
        1.0
    } else {
        (c.sent - c.lost) as f64 / c.sent as f64
    };
    Some(ObservedSegment {
        segment: s,
        subproblem: segments.subproblem_of[s as usize],
        links: segments.get(s).links.clone(),
        sent: c.sent,
        lost: c.lost,
        success,
        background: false,
        flows: Vec::new(),
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_absence;
