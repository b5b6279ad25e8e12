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
                background: false,
            }
        })
        .collect();
    Observations { segments }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Parity;
    use crate::pathbf::PathBfParams;
    use crate::sketch::{Dsm, MeterConfig, Usm};
    use crate::topo::{fattree::fattree, MonitorPlacement, Routing, Topology};

    fn setup() -> (Topology, Segments, PathBfCodec) {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let r = Routing::new(&t);
        let s = Segments::new(&t, &r);
        let c = PathBfCodec::new(&t, &s, PathBfParams::default()).unwrap();
        (t, s, c)
    }

    fn flow(n: u32) -> FlowId {
        FlowId::v4(0x0a00_0002 + n, 0x0a03_0102, 6, 1000 + n as u16, 80)
    }

    fn snap(switch: SwitchIx) -> MeterSnapshot {
        let cfg = MeterConfig::new(3, 64).unwrap();
        MeterSnapshot {
            switch,
            epoch: 0,
            parity: Parity::Even,
            usm: Usm::new(cfg).unwrap(),
            dsm: Dsm::new(cfg).unwrap(),
        }
    }

    fn count(snap: &mut MeterSnapshot, f: FlowId, up: u32, down: Option<(u32, u32)>) {
        let h = FlowHashes::of(&f);
        if up > 0 {
            snap.usm.update_n(&f, h, up);
        }
        if let Some((bf, n)) = down {
            snap.dsm.update_n(&f, h, bf, n);
        }
    }

    /// The straightforward Algorithm 3 the optimised [`minus_meters`] must agree with: every
    /// clean DSM record (grouped by flow) decoded and looked up at once in its upstream USM.
    fn minus_meters_reference(
        segments: &Segments,
        codec: &PathBfCodec,
        snapshots: &[MeterSnapshot],
    ) -> EpochDetection {
        use crate::pathbf::Decoded;
        let by_switch: HashMap<SwitchIx, &MeterSnapshot> =
            snapshots.iter().map(|s| (s.switch, s)).collect();
        let mut out = EpochDetection::default();
        let a = &mut out.anomalies;
        for snap in snapshots {
            a.dirty_dsm_buckets += snap.dsm.dirty_buckets() as u64;
            a.dirty_usm_buckets += snap.usm.dirty_buckets() as u64;
            let (records, torn) = snap.dsm.clean_flows_checked();
            a.torn += torn;
            if torn > 0 {
                *out.torn_at.entry(snap.switch).or_default() += torn;
            }
            for rec in records {
                let segment = match codec.decode(snap.switch, rec.path_bf) {
                    Decoded::Segment(s) => s,
                    Decoded::Ambiguous(_) => {
                        a.ambiguous += 1;
                        continue;
                    }
                    Decoded::Unknown => {
                        a.undecodable += 1;
                        continue;
                    }
                };
                let upstream = segments.get(segment).upstream();
                if !by_switch.contains_key(&upstream) {
                    a.upstream_missing += 1;
                    continue;
                }
                // Every snapshot of the upstream switch (a switch may answer twice).
                for up in snapshots.iter().filter(|s| s.switch == upstream) {
                    let usm_count = match up.usm.clean_lookup(&rec.flow, FlowHashes::of(&rec.flow))
                    {
                        CleanLookup::Count(c) => c,
                        CleanLookup::Missing => {
                            a.no_clean_usm += 1;
                            continue;
                        }
                        CleanLookup::Torn => {
                            a.torn += 1;
                            *out.torn_at.entry(up.switch).or_default() += 1;
                            continue;
                        }
                    };
                    let lost = usm_count.wrapping_sub(rec.count);
                    if lost > u32::MAX / 2 {
                        a.negative_loss += 1;
                        continue;
                    }
                    out.entries.push(MmEntry {
                        flow: rec.flow,
                        segment,
                        sent: rec.count as u64 + lost as u64,
                        lost: lost as u64,
                    });
                }
            }
        }
        for e in &out.entries {
            let c = out.segments.entry(e.segment).or_default();
            c.sent += e.sent;
            c.lost += e.lost;
            c.flows += 1;
        }
        out
    }

    /// A random epoch on the k = 4 fat-tree in small meters: many collisions and dirty buckets,
    /// flows on several segments, negative losses, corrupted pathBFs; `tamper` bit 0 makes some
    /// clean buckets disagree with their rows (torn reads), bit 1 moves DSM buckets out of their
    /// flows' columns (a meter read back wrong), bit 2 drops or repeats snapshots.
    fn random_epoch(
        seed: u64,
        rows: usize,
        width: usize,
        flows: usize,
        tamper: u32,
    ) -> (Segments, PathBfCodec, Vec<MeterSnapshot>) {
        use crate::sketch::Bucket;
        use rand::{Rng, SeedableRng};
        let (t, s, c) = setup();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let cfg = MeterConfig::new(rows, width).unwrap();
        let monitors: Vec<SwitchIx> = t.monitors().collect();
        let mut snaps: Vec<MeterSnapshot> = monitors
            .iter()
            .map(|&m| MeterSnapshot {
                switch: m,
                epoch: 0,
                parity: Parity::Even,
                usm: Usm::new(cfg).unwrap(),
                dsm: Dsm::new(cfg).unwrap(),
            })
            .collect();
        let slot = |sw: SwitchIx| monitors.iter().position(|&m| m == sw).unwrap();
        for _ in 0..flows {
            let seg = rng.random_range(0..s.len());
            // Few distinct flows, so one flow often crosses several segments.
            let f = flow(rng.random_range(0..2 * flows as u32 + 1));
            let h = FlowHashes::of(&f);
            let up = rng.random_range(0..20);
            let down = if rng.random_bool(0.1) {
                up + rng.random_range(1..3)
            } else {
                rng.random_range(0..=up)
            };
            let bf = if rng.random_bool(0.05) {
                rng.random()
            } else {
                c.segment_bf[seg]
            };
            let g = s.get(seg as SegmentId);
            snaps[slot(g.upstream())].usm.update_n(&f, h, up);
            snaps[slot(g.downstream())].dsm.update_n(&f, h, bf, down);
        }
        fn rebuild<B: Bucket>(
            m: &crate::sketch::Meter<B>,
            edit: impl FnOnce(&mut [B]),
        ) -> crate::sketch::Meter<B> {
            let mut b = m.buckets().to_vec();
            edit(&mut b);
            crate::sketch::Meter::from_buckets(m.config(), b).unwrap()
        }
        let n = rows * width;
        for snap in &mut snaps {
            if tamper & 1 != 0 && rng.random_bool(0.3) {
                let (i, j) = (rng.random_range(0..n), rng.random_range(0..n));
                snap.dsm = rebuild(&snap.dsm, |b| b[i].count = b[i].count.wrapping_add(1));
                snap.usm = rebuild(&snap.usm, |b| b[j].count = b[j].count.wrapping_add(1));
            }
            if tamper & 2 != 0 && rng.random_bool(0.2) {
                let (i, j) = (rng.random_range(0..n), rng.random_range(0..n));
                snap.dsm = rebuild(&snap.dsm, |b| b.swap(i, j));
            }
        }
        if tamper & 4 != 0 {
            snaps.retain(|_| rng.random_bool(0.8));
            if let Some(again) = snaps.first().cloned() {
                snaps.push(again);
            }
        }
        (s, c, snaps)
    }

    fn sorted(mut d: EpochDetection) -> EpochDetection {
        let mut e = d.entries.to_vec();
        e.sort_by_key(|e| (e.segment, e.flow, e.sent, e.lost));
        d.entries = e.into_iter().collect();
        d
    }

    fn check_against_reference(
        seed: u64,
        rows: usize,
        width: usize,
        flows: usize,
        tamper: u32,
    ) -> Anomalies {
        let (s, c, snaps) = random_epoch(seed, rows, width, flows, tamper);
        let fast = minus_meters(&s, &c, &snaps);
        let slow = minus_meters_reference(&s, &c, &snaps);
        let a = slow.anomalies;
        assert_eq!(
            sorted(fast),
            sorted(slow),
            "seed {seed} rows {rows} width {width} flows {flows} tamper {tamper}"
        );
        a
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        #[test]
        fn minus_meters_equals_the_reference(
            seed in proptest::prelude::any::<u64>(),
            rows in 1usize..=3,
            width_log in 0u32..6,
            flows in 0usize..150,
            tamper in 0u32..8,
        ) {
            check_against_reference(seed, rows, 1 << width_log, flows, tamper);
        }
    }

    /// The random epochs above do reach every case.
    #[test]
    fn reference_comparison_reaches_every_anomaly() {
        let mut all = Anomalies::default();
        for seed in 0..200 {
            let rows = 1 + seed as usize % 3;
            let a = check_against_reference(seed, rows, 16, 100, seed as u32 % 8);
            all.add(&a);
        }
        assert!(all.torn > 0, "{all:?}");
        assert!(all.no_clean_usm > 0, "{all:?}");
        assert!(all.negative_loss > 0, "{all:?}");
        assert!(all.undecodable > 0, "{all:?}");
        assert!(all.upstream_missing > 0, "{all:?}");
        assert!(
            all.dirty_dsm_buckets > 0 && all.dirty_usm_buckets > 0,
            "{all:?}"
        );
    }

    /// The paper's Fig. 4: the DSM at an edge switch against the USMs of the cores upstream.
    /// f1 and f4 lose packets on their segments, f2 and f3 lose none, f5 has no clean USM bucket.
    #[test]
    fn papers_fig4_example() {
        let (t, s, c) = setup();
        let e = t.switch("edge3_1").unwrap();
        let seg = |core: &str| {
            let path = [
                t.switch(core).unwrap(),
                t.switch(if core == "core0" || core == "core1" {
                    "agg3_0"
                } else {
                    "agg3_1"
                })
                .unwrap(),
                e,
            ];
            s.find(&path).unwrap()
        };
        let (s17, s20) = (seg("core0"), seg("core3"));
        let mut down = snap(e);
        let mut c0 = snap(t.switch("core0").unwrap());
        let mut c3 = snap(t.switch("core3").unwrap());
        count(&mut c0, flow(1), 100, None);
        count(
            &mut down,
            flow(1),
            0,
            Some((c.segment_bf[s17 as usize], 95)),
        );
        count(&mut c0, flow(2), 50, None);
        count(
            &mut down,
            flow(2),
            0,
            Some((c.segment_bf[s17 as usize], 50)),
        );
        count(&mut c3, flow(4), 200, None);
        count(
            &mut down,
            flow(4),
            0,
            Some((c.segment_bf[s20 as usize], 180)),
        );
        // f5 collides in every USM row with flows f6..: find flows sharing f5's buckets.
        let f5 = flow(5);
        count(&mut c3, f5, 40, None);
        count(&mut down, f5, 0, Some((c.segment_bf[s20 as usize], 40)));
        let h5 = FlowHashes::of(&f5);
        let w = 64;
        for row in 0..3 {
            let target = crate::sketch::meter_index(h5, row, w);
            let other = (100..100_000)
                .map(flow)
                .find(|f| crate::sketch::meter_index(FlowHashes::of(f), row, w) == target)
                .unwrap();
            c3.usm.update(&other, FlowHashes::of(&other));
        }
        let det = minus_meters(&s, &c, &[down, c0, c3]);
        let by_flow: HashMap<FlowId, MmEntry> = det.entries.iter().map(|e| (e.flow, *e)).collect();
        assert_eq!(
            by_flow[&flow(1)],
            MmEntry {
                flow: flow(1),
                segment: s17,
                sent: 100,
                lost: 5
            }
        );
        assert_eq!(by_flow[&flow(2)].lost, 0);
        assert_eq!(
            by_flow[&flow(4)],
            MmEntry {
                flow: flow(4),
                segment: s20,
                sent: 200,
                lost: 20
            }
        );
        assert!(!by_flow.contains_key(&f5), "no clean USM bucket: dropped");
        assert_eq!(det.anomalies.no_clean_usm, 1);
        let obs = observations(
            &s,
            &{
                let mut w = Window::new(1);
                w.push(det.segments.clone());
                w.totals()
            },
            1,
        );
        let y: HashMap<SegmentId, f64> = obs
            .segments
            .iter()
            .map(|o| (o.segment, o.success))
            .collect();
        assert!(
            (y[&s17] - 145.0 / 150.0).abs() < 1e-12,
            "eq. 2 aggregates the segment's flows"
        );
        assert!((y[&s20] - 0.9).abs() < 1e-12);
    }

    #[test]
    fn wrapped_usm_counter_still_gives_the_exact_loss() {
        let (t, s, c) = setup();
        let e = t.switch("edge3_1").unwrap();
        let core = t.switch("core0").unwrap();
        let sg = s.find(&[core, t.switch("agg3_0").unwrap(), e]).unwrap();
        let (mut down, mut up) = (snap(e), snap(core));
        // Upstream counted 2^32 + 5 packets (its register wrapped to 5); 8 were lost.
        count(&mut up, flow(1), u32::MAX, None);
        count(&mut up, flow(1), 6, None);
        count(
            &mut down,
            flow(1),
            0,
            Some((c.segment_bf[sg as usize], u32::MAX - 2)),
        );
        let det = minus_meters(&s, &c, &[down, up]);
        let e = det.entries.to_vec();
        assert_eq!(e[0].lost, 8);
        assert_eq!(e[0].sent, (1u64 << 32) + 5);
    }

    #[test]
    fn unknown_pathbf_and_negative_loss_are_counted_not_used() {
        let (t, s, c) = setup();
        let e = t.switch("edge3_1").unwrap();
        let core = t.switch("core0").unwrap();
        let sg = s.find(&[core, t.switch("agg3_0").unwrap(), e]).unwrap();
        let (mut down, mut up) = (snap(e), snap(core));
        count(&mut down, flow(1), 0, Some((0xdead_beef, 10)));
        count(&mut up, flow(2), 10, None);
        count(&mut down, flow(2), 0, Some((c.segment_bf[sg as usize], 12)));
        let det = minus_meters(&s, &c, &[down, up]);
        assert!(det.entries.is_empty());
        assert_eq!(det.anomalies.undecodable, 1);
        assert_eq!(det.anomalies.negative_loss, 1);
    }

    #[test]
    fn missing_upstream_switch_is_not_loss() {
        let (t, s, c) = setup();
        let e = t.switch("edge3_1").unwrap();
        let sg = s
            .find(&[t.switch("core0").unwrap(), t.switch("agg3_0").unwrap(), e])
            .unwrap();
        let mut down = snap(e);
        count(&mut down, flow(1), 0, Some((c.segment_bf[sg as usize], 10)));
        let det = minus_meters(&s, &c, &[down]);
        assert!(det.segments.is_empty());
        assert_eq!(det.anomalies.upstream_missing, 1);
    }

    #[test]
    fn n_prime_filter_treats_rarely_lossy_segments_as_loss_free() {
        let (_, s, _) = setup();
        let mut w = Window::new(5);
        for e in 0..5u64 {
            let mut m = BTreeMap::new();
            m.insert(
                0,
                SegmentCount {
                    sent: 1000,
                    lost: u64::from(e == 2),
                    flows: 10,
                },
            );
            m.insert(
                1,
                SegmentCount {
                    sent: 1000,
                    lost: 3,
                    flows: 10,
                },
            );
            w.push(m);
        }
        let obs = observations(&s, &w.totals(), 3);
        assert_eq!(
            obs.segments[0].success, 1.0,
            "lost in 1 of 5 epochs < n' = 3"
        );
        assert!((obs.segments[1].success - (1.0 - 15.0 / 5000.0)).abs() < 1e-12);
    }
}
