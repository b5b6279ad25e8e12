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
use crate::pathbf::{DecodedId, PathBfCodec};
use crate::sketch::{CleanLookup, FlowHashes};
use crate::topo::{LinkIx, SegmentId, Segments, SwitchIx};
use crate::FlowId;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

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
}

impl EpochDetection {
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

/// Algorithm 3 over every harvested monitor. `snapshots` holds the switches that answered.
///
/// Done in two parallel passes so that each meter is read where it lives rather than at random:
/// first every downstream switch reads its clean DSM records (hashing each flow once), decodes
/// them and buckets them by upstream switch; then every upstream switch looks up, in its own
/// USM, the records addressed to it. (Looking each record up in its upstream USM as it comes
/// scatters reads over all meters, 9 GB at k = 32, where nearly every read missed cache and TLB.)
/// The results are those of looking each clean DSM record up at once; the tests hold it to that.
///
/// `entries` come grouped by upstream switch (in `snapshots` order), then by downstream switch
/// (in `snapshots` order); within a group, in DSM bucket order. The meters are read in position
/// order (see [`Dsm::clean_flows_hashed`] and [`Usm::clean_lookups`]).
///
/// [`Dsm::clean_flows_hashed`]: crate::sketch::Dsm::clean_flows_hashed
/// [`Usm::clean_lookups`]: crate::sketch::Usm::clean_lookups
pub fn minus_meters(
    segments: &Segments,
    codec: &PathBfCodec,
    snapshots: &[MeterSnapshot],
) -> EpochDetection {
    let switches = snapshots
        .iter()
        .map(|s| s.switch as usize + 1)
        .max()
        .unwrap_or(0);
    let mut harvested = vec![false; switches];
    for s in snapshots {
        harvested[s.switch as usize] = true;
    }
    let upstream_of: Vec<SwitchIx> = segments.list.par_iter().map(|s| s.upstream()).collect();
    let ctx = DecodeCtx {
        codec,
        upstream_of: &upstream_of,
        harvested: &harvested,
    };
    let decoded: Vec<ByUpstream> = snapshots
        .par_iter()
        .map(|snap| decode_dsm(&ctx, snap))
        .collect();
    let mut looked_up: Vec<LookedUp> = snapshots
        .par_iter()
        .map(|snap| lookup_usm(snap, &decoded))
        .collect();
    let mut out = EpochDetection::default();
    for (i, snap) in snapshots.iter().enumerate() {
        let torn = decoded[i].anomalies.torn + looked_up[i].anomalies.torn;
        if torn > 0 {
            *out.torn_at.entry(snap.switch).or_default() += torn;
        }
    }
    for d in &decoded {
        out.anomalies.add(&d.anomalies);
    }
    let mut dense = vec![SegmentCount::default(); segments.list.len()];
    for l in &mut looked_up {
        out.anomalies.add(&l.anomalies);
        for &(s, c) in &l.sums {
            let t = &mut dense[s as usize];
            t.sent += c.sent;
            t.lost += c.lost;
            t.flows += c.flows;
        }
        out.entries.parts.push(std::mem::take(&mut l.entries));
    }
    out.segments = dense
        .into_iter()
        .enumerate()
        .filter(|(_, c)| c.flows > 0)
        .map(|(s, c)| (s as SegmentId, c))
        .collect();
    out
}

/// What the first pass needs besides the snapshot.
struct DecodeCtx<'a> {
    codec: &'a PathBfCodec,
    upstream_of: &'a [SwitchIx],
    harvested: &'a [bool],
}

/// A clean DSM record decoded to its segment, waiting for its upstream count.
#[derive(Clone, Copy)]
struct Pending {
    flow: FlowId,
    h: FlowHashes,
    segment: SegmentId,
    count: u32,
}

/// One downstream switch's pending records, grouped by upstream switch.
struct ByUpstream {
    records: Vec<Pending>,
    /// Records for upstream switch `u` are `records[start[u]..start[u + 1]]`.
    start: Vec<u32>,
    anomalies: Anomalies,
}

impl ByUpstream {
    fn to(&self, u: SwitchIx) -> &[Pending] {
        let u = u as usize;
        &self.records[self.start[u] as usize..self.start[u + 1] as usize]
    }
}

/// First pass, one downstream switch: clean DSM records decoded, grouped by upstream switch
/// (a counting sort).
fn decode_dsm(ctx: &DecodeCtx, snap: &MeterSnapshot) -> ByUpstream {
    let mut a = Anomalies {
        dirty_dsm_buckets: snap.dsm.dirty_buckets() as u64,
        dirty_usm_buckets: snap.usm.dirty_buckets() as u64,
        ..Default::default()
    };
    let flows = snap.dsm.clean_flows_scan();
    a.torn += flows.torn();
    // Decode every record once, count records per upstream switch, then place them in
    // upstream order (a counting sort through their indices, so each record is copied once).
    const DROPPED: (SwitchIx, SegmentId) = (SwitchIx::MAX, 0);
    let mut decoded = Vec::with_capacity(flows.len());
    let mut start = vec![0u32; ctx.harvested.len() + 1];
    for i in 0..flows.len() {
        let (rec, _) = flows.get(i);
        let routed = route(ctx, snap.switch, rec.path_bf, &mut a);
        if let Some((upstream, _)) = routed {
            start[upstream as usize + 1] += 1;
        }
        decoded.push(routed.unwrap_or(DROPPED));
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut next = start.clone();
    let mut order = vec![0u32; start[start.len() - 1] as usize];
    for (i, &(u, _)) in decoded.iter().enumerate() {
        if u != DROPPED.0 {
            let slot = &mut next[u as usize];
            order[*slot as usize] = i as u32;
            *slot += 1;
        }
    }
    let records = order
        .into_iter()
        .map(|i| {
            let (rec, h) = flows.get(i as usize);
            Pending {
                flow: rec.flow,
                h,
                segment: decoded[i as usize].1,
                count: rec.count,
            }
        })
        .collect();
    ByUpstream {
        records,
        start,
        anomalies: a,
    }
}

/// The segment a clean DSM record's pathBF names and that segment's upstream switch, if the
/// record can be used; otherwise counts why not.
fn route(
    ctx: &DecodeCtx,
    switch: SwitchIx,
    path_bf: u32,
    a: &mut Anomalies,
) -> Option<(SwitchIx, SegmentId)> {
    let segment = match ctx.codec.decode_id(switch, path_bf) {
        DecodedId::Segment(s) => s,
        DecodedId::Ambiguous => {
            a.ambiguous += 1;
            return None;
        }
        DecodedId::Unknown => {
            a.undecodable += 1;
            return None;
        }
    };
    let upstream = ctx.upstream_of[segment as usize];
    if !ctx
        .harvested
        .get(upstream as usize)
        .copied()
        .unwrap_or(false)
    {
        a.upstream_missing += 1;
        return None;
    }
    Some((upstream, segment))
}

/// Second pass' result for one upstream switch.
struct LookedUp {
    entries: Vec<MmEntry>,
    /// Per-segment sums of `entries`.
    sums: Vec<(SegmentId, SegmentCount)>,
    anomalies: Anomalies,
}

/// Second pass, one upstream switch: its USM counts for every record addressed to it.
fn lookup_usm(snap: &MeterSnapshot, decoded: &[ByUpstream]) -> LookedUp {
    let u = snap.switch;
    let mut a = Anomalies::default();
    let pending: Vec<&Pending> = decoded.iter().flat_map(|d| d.to(u)).collect();
    let found = snap.usm.clean_lookups(&pending, |p| (&p.flow, p.h));
    let mut entries = Vec::with_capacity(pending.len());
    let mut sums: HashMap<SegmentId, SegmentCount, BuildHasherDefault<IdHasher>> =
        HashMap::default();
    for (p, found) in pending.into_iter().zip(found) {
        let usm_count = match found {
            CleanLookup::Count(c) => c,
            CleanLookup::Missing => {
                a.no_clean_usm += 1;
                continue;
            }
            CleanLookup::Torn => {
                a.torn += 1;
                continue;
            }
        };
        let lost = usm_count.wrapping_sub(p.count);
        if lost > u32::MAX / 2 {
            a.negative_loss += 1;
            continue;
        }
        let e = MmEntry {
            flow: p.flow,
            segment: p.segment,
            sent: p.count as u64 + lost as u64,
            lost: lost as u64,
        };
        let c = sums.entry(e.segment).or_default();
        c.sent += e.sent;
        c.lost += e.lost;
        c.flows += 1;
        entries.push(e);
    }
    LookedUp {
        entries,
        sums: sums.into_iter().collect(),
        anomalies: a,
    }
}

/// FxHash-style hasher for small integer keys (segment ids): SipHash costs more than the sums.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
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
    })
}

#[cfg(test)]
mod tests;
