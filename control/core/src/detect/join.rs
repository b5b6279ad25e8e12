//! Algorithm 3, the minus meters: every clean DSM record joined with its flow's clean USM count at
//! the segment's upstream monitor.
//!
//! Algorithm 3's body is missing from the paper's text; this is our reconstruction from
//! Sec. III-E. For each harvested DSM, every flow with a clean bucket gives (flow, pathBF, count).
//! The pathBF decodes to the segment, hence to its upstream monitor (the paper compares against
//! "all upstream USMs"; decoding first and asking only the right one is equivalent and avoids
//! accidental matches). A clean USM bucket of the same flow gives the upstream count, and
//! `lost = USM − DSM`. Entries without a clean USM bucket are dropped.
//!
//! The work splits in two: each monitor's meters are read into records where they are harvested
//! ([`SwitchRecords::decode`]), then the records meet by upstream switch ([`join`]), which is
//! all the join needs to see of an epoch. Each part is partitionable: decoding by switch, the
//! join by upstream switch.

use super::records::{DsmEntry, Expected, SwitchRecords};
use super::{Anomalies, EpochDetection, MmEntry, SegmentCount};
use crate::fabric::MeterSnapshot;
use crate::pathbf::PathBfCodec;
use crate::sketch::CleanLookup;
use crate::topo::{SegmentId, Segments, SwitchIx};
use crate::FlowId;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

/// Algorithm 3 over every harvested monitor: [`SwitchRecords::decode`] of each snapshot (in
/// parallel), then [`join`]. `snapshots` holds the switches that answered.
pub fn minus_meters(
    segments: &Segments,
    codec: &PathBfCodec,
    snapshots: &[MeterSnapshot],
) -> EpochDetection {
    minus_meters_expecting(segments, codec, snapshots, &[])
}

/// [`minus_meters`], with the flows `expected` at their segments' downstream monitors: those
/// the DSM proves never arrived lost everything their USM counted
/// ([`SwitchRecords::decode_expecting`]).
pub fn minus_meters_expecting(
    segments: &Segments,
    codec: &PathBfCodec,
    snapshots: &[MeterSnapshot],
    expected: &[Expected],
) -> EpochDetection {
    let by_switch = expected_by_downstream(segments, expected);
    let none = Vec::new();
    let records: Vec<SwitchRecords> = snapshots
        .par_iter()
        .map(|s| {
            let here = by_switch.get(&s.switch).unwrap_or(&none);
            SwitchRecords::decode_expecting(segments, codec, s, here)
        })
        .collect();
    join(segments, &records)
}

/// The expected flows grouped by the monitor they are expected at.
pub fn expected_by_downstream(
    segments: &Segments,
    expected: &[Expected],
) -> FxHashMap<SwitchIx, Vec<Expected>> {
    let mut by: FxHashMap<SwitchIx, Vec<Expected>> = FxHashMap::default();
    for e in expected {
        by.entry(segments.get(e.segment).downstream())
            .or_default()
            .push(*e);
    }
    by
}

/// The minus meters of one epoch from its records: the switches' own records, or any parts of
/// them that together hold each answering switch's own part ([`SwitchRecords::split`]) and the
/// DSM records of the segments that start at those switches.
///
/// `entries` come grouped by upstream switch (in the order of the parts that carry its USM),
/// then by the part the DSM record came in (in `records` order), then in DSM bucket order. A
/// switch whose own part appears twice (it answered twice) has its records looked up twice, as
/// two harvests of it would be.
pub fn join(segments: &Segments, records: &[SwitchRecords]) -> EpochDetection {
    let mut out = EpochDetection::default();
    let switches = records
        .iter()
        .flat_map(|r| std::iter::once(r.switch).chain(r.dsm.iter().map(|e| e.upstream)))
        .map(|s| s as usize + 1)
        .max()
        .unwrap_or(0);
    let mut answered = vec![false; switches];
    for r in records.iter().filter(|r| r.answered) {
        answered[r.switch as usize] = true;
        out.anomalies.add(&r.anomalies);
        if r.anomalies.torn > 0 {
            *out.torn_at.entry(r.switch).or_default() += r.anomalies.torn;
        }
    }
    let pending = ByUpstream::of(records, &answered, &mut out.anomalies);
    let mut looked_up: Vec<LookedUp> = records
        .par_iter()
        .filter(|r| r.answered)
        .map(|r| look_up(r, pending.to(r.switch)))
        .collect();
    let mut dense = vec![SegmentCount::default(); segments.list.len()];
    for (r, l) in records.iter().filter(|r| r.answered).zip(&mut looked_up) {
        out.anomalies.add(&l.anomalies);
        out.vanished += l.vanished;
        if l.anomalies.torn > 0 {
            *out.torn_at.entry(r.switch).or_default() += l.anomalies.torn;
        }
        for e in &l.entries {
            let t = &mut dense[e.segment as usize];
            t.sent += e.sent;
            t.lost += e.lost;
            t.flows += 1;
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

/// Every DSM record whose upstream switch answered, grouped by upstream switch (a counting sort,
/// so each is placed once).
struct ByUpstream<'a> {
    records: Vec<&'a DsmEntry>,
    /// Records for upstream switch `u` are `records[start[u]..start[u + 1]]`.
    start: Vec<u32>,
}

impl<'a> ByUpstream<'a> {
    fn of(records: &'a [SwitchRecords], answered: &[bool], a: &mut Anomalies) -> Self {
        let mut start = vec![0u32; answered.len() + 1];
        for e in records.iter().flat_map(|r| &r.dsm) {
            if answered[e.upstream as usize] {
                start[e.upstream as usize + 1] += 1;
            } else {
                a.upstream_missing += 1;
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut next = start.clone();
        let mut placed: Vec<Option<&DsmEntry>> = vec![None; start[start.len() - 1] as usize];
        for e in records.iter().flat_map(|r| &r.dsm) {
            if answered[e.upstream as usize] {
                let slot = &mut next[e.upstream as usize];
                placed[*slot as usize] = Some(e);
                *slot += 1;
            }
        }
        ByUpstream {
            records: placed
                .into_iter()
                .map(|e| e.expect("every slot filled"))
                .collect(),
            start,
        }
    }

    fn to(&self, u: SwitchIx) -> &[&'a DsmEntry] {
        let u = u as usize;
        &self.records[self.start[u] as usize..self.start[u + 1] as usize]
    }
}

/// The lookups at one upstream switch.
struct LookedUp {
    entries: Vec<MmEntry>,
    anomalies: Anomalies,
    /// Of `entries`, flows that never arrived.
    vanished: u64,
}

/// Upstream switch `r.switch`'s USM counts for every DSM record addressed to it.
fn look_up(r: &SwitchRecords, pending: &[&DsmEntry]) -> LookedUp {
    let mut a = Anomalies::default();
    let usm: FxHashMap<FlowId, CleanLookup> = r.usm.iter().map(|u| (u.flow, u.lookup())).collect();
    let mut entries = Vec::with_capacity(pending.len());
    let mut vanished = 0;
    for p in pending {
        let usm_count = match usm.get(&p.flow).copied().unwrap_or(CleanLookup::Missing) {
            CleanLookup::Count(c) => c,
            // An expected flow that sent nothing (it ended) or whose USM buckets collided: no
            // loss can be told, and no collision worth reporting downstream.
            CleanLookup::Missing if p.vanished => continue,
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
        vanished += u64::from(p.vanished);
        entries.push(MmEntry {
            flow: p.flow,
            segment: p.segment,
            sent: p.count as u64 + lost as u64,
            lost: lost as u64,
        });
    }
    LookedUp {
        entries,
        anomalies: a,
        vanished,
    }
}

/// Which upstream switches a join partition owns: `switch mod parts`. Harvest workers send each
/// switch's parts by it and join workers take theirs.
pub fn partition_of(switch: SwitchIx, parts: u32) -> u32 {
    switch % parts.max(1)
}
