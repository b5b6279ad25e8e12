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
use crate::sketch::{CleanLookup, FlowHashes};
use crate::topo::{LinkIx, SegmentId, Segments, SwitchIx};
use crate::FlowId;
use rayon::prelude::*;
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
    pub entries: Vec<MmEntry>,
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
    pub fn flows(&self) -> u64 {
        self.entries.len() as u64
    }
}

/// Algorithm 3 over every harvested monitor. `snapshots` holds the switches that answered.
///
/// Done in two parallel passes so that each meter is read where it lives rather than at random:
/// first every downstream switch decodes its clean DSM records and sorts them by upstream switch;
/// then every upstream switch looks up, in its own USM and in bucket order, the records addressed
/// to it. (Looking each record up in its upstream USM as it comes scatters reads over all meters,
/// 9 GB at k = 32, where nearly every read missed cache and TLB.)
pub fn minus_meters(
    segments: &Segments,
    codec: &PathBfCodec,
    snapshots: &[MeterSnapshot],
) -> EpochDetection {
    let by_switch: HashMap<SwitchIx, &MeterSnapshot> =
        snapshots.iter().map(|s| (s.switch, s)).collect();
    let decoded: Vec<(Vec<Pending>, Anomalies)> = snapshots
        .par_iter()
        .map(|snap| decode_dsm(segments, codec, &by_switch, snap))
        .collect();
    let looked_up: Vec<(Vec<MmEntry>, Anomalies)> = snapshots
        .par_iter()
        .map(|snap| lookup_usm(snap, &decoded))
        .collect();
    let mut out = EpochDetection::default();
    for (i, snap) in snapshots.iter().enumerate() {
        let torn = decoded[i].1.torn + looked_up[i].1.torn;
        if torn > 0 {
            out.torn_at.insert(snap.switch, torn);
        }
    }
    out.entries
        .reserve(looked_up.iter().map(|p| p.0.len()).sum());
    for (_, a) in &decoded {
        out.anomalies.add(a);
    }
    for (entries, a) in looked_up {
        out.anomalies.add(&a);
        let mut sums: HashMap<SegmentId, SegmentCount> = HashMap::new();
        for e in &entries {
            let c = sums.entry(e.segment).or_default();
            c.sent += e.sent;
            c.lost += e.lost;
            c.flows += 1;
        }
        for (s, c) in sums {
            let t = out.segments.entry(s).or_default();
            t.sent += c.sent;
            t.lost += c.lost;
            t.flows += c.flows;
        }
        out.entries.extend(entries);
    }
    out
}

/// A clean DSM record decoded to its segment, waiting for its upstream count.
struct Pending {
    upstream: SwitchIx,
    segment: SegmentId,
    flow: FlowId,
    h: FlowHashes,
    count: u32,
}

/// First pass, one downstream switch: clean DSM records decoded, sorted by upstream switch.
fn decode_dsm(
    segments: &Segments,
    codec: &PathBfCodec,
    by_switch: &HashMap<SwitchIx, &MeterSnapshot>,
    snap: &MeterSnapshot,
) -> (Vec<Pending>, Anomalies) {
    let mut a = Anomalies {
        dirty_dsm_buckets: snap.dsm.dirty_buckets() as u64,
        dirty_usm_buckets: snap.usm.dirty_buckets() as u64,
        ..Default::default()
    };
    let mut out = Vec::new();
    let (records, torn) = snap.dsm.clean_flows_checked();
    a.torn += torn;
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
        let h = FlowHashes::of(&rec.flow);
        out.push(Pending {
            upstream,
            segment,
            flow: rec.flow,
            h,
            count: rec.count,
        });
    }
    out.sort_unstable_by_key(|p| p.upstream);
    (out, a)
}

/// Second pass, one upstream switch: its USM counts for every record addressed to it.
fn lookup_usm(
    snap: &MeterSnapshot,
    decoded: &[(Vec<Pending>, Anomalies)],
) -> (Vec<MmEntry>, Anomalies) {
    let u = snap.switch;
    let mut a = Anomalies::default();
    let mut entries = Vec::new();
    for (v, _) in decoded {
        let lo = v.partition_point(|p| p.upstream < u);
        let hi = v.partition_point(|p| p.upstream <= u);
        for p in &v[lo..hi] {
            let usm_count = match snap.usm.clean_lookup(&p.flow, p.h) {
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
            entries.push(MmEntry {
                flow: p.flow,
                segment: p.segment,
                sent: p.count as u64 + lost as u64,
                lost: lost as u64,
            });
        }
    }
    (entries, a)
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
        let c = PathBfCodec::new(&t, &s, PathBfParams::default());
        (t, s, c)
    }

    fn flow(n: u32) -> FlowId {
        FlowId {
            src: 0x0a00_0002 + n,
            dst: 0x0a03_0102,
            proto: 6,
            sport: 1000 + n as u16,
            dport: 80,
        }
    }

    fn snap(switch: SwitchIx) -> MeterSnapshot {
        let cfg = MeterConfig::new(3, 64).unwrap();
        MeterSnapshot {
            switch,
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
        assert_eq!(det.entries[0].lost, 8);
        assert_eq!(det.entries[0].sent, (1u64 << 32) + 5);
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
