use super::*;
use crate::fabric::{MeterSnapshot, Parity};
use crate::pathbf::PathBfCodec;
use crate::pathbf::PathBfParams;
use crate::sketch::{CleanLookup, FlowHashes};
use crate::sketch::{Dsm, MeterConfig, Usm};
use crate::topo::{fattree::fattree, MonitorPlacement, Routing, Topology};
use std::collections::HashMap;

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
                let usm_count = match up.usm.clean_lookup(&rec.flow, FlowHashes::of(&rec.flow)) {
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

/// Splitting every switch's records over partitions and joining each partition alone gives
/// the whole epoch's entries and counts.
#[test]
fn the_parts_of_every_partition_join_to_the_whole() {
    for seed in 0..40 {
        let (s, c, snaps) = random_epoch(seed, 3, 16, 120, (seed % 8) as u32);
        let records: Vec<SwitchRecords> = snaps
            .iter()
            .map(|x| SwitchRecords::decode(&s, &c, x))
            .collect();
        let whole = join(&s, &records);
        for parts in [1u32, 2, 3, 5] {
            let mut by_part: Vec<Vec<SwitchRecords>> = vec![Vec::new(); parts as usize];
            for r in records.clone() {
                for (p, part) in r.split(|sw| partition_of(sw, parts)) {
                    by_part[p as usize].push(part);
                }
            }
            let mut counts = std::collections::BTreeMap::<SegmentId, SegmentCount>::new();
            let mut entries = Vec::new();
            let mut anomalies = Anomalies::default();
            for part in &by_part {
                let d = join(&s, part);
                for (seg, c) in d.segments {
                    let t = counts.entry(seg).or_default();
                    t.sent += c.sent;
                    t.lost += c.lost;
                    t.flows += c.flows;
                }
                entries.extend(d.entries.to_vec());
                anomalies.add(&d.anomalies);
            }
            let mut want = whole.entries.to_vec();
            want.sort_by_key(|e| (e.segment, e.flow, e.sent));
            entries.sort_by_key(|e| (e.segment, e.flow, e.sent));
            assert_eq!(entries, want, "seed {seed}, {parts} parts");
            assert_eq!(counts, whole.segments, "seed {seed}, {parts} parts");
            assert_eq!(anomalies, whole.anomalies, "seed {seed}, {parts} parts");
        }
    }
}
