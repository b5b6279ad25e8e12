//! The offline audit of decodability (Theorem 1 set against what is observed) and the repair
//! that reassigns switch IDs until every segment decodes. Apart from the codec: the controller
//! decodes every epoch, the audit runs once, before switches are configured.

use super::{Decoded, PathBfCodec, PathBfParams, PathBfParamsError};
use crate::topo::{SegmentId, Segments, SwitchIx, Topology};
use std::collections::HashMap;

/// The audit's findings.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Audit {
    pub segments: usize,
    /// Segments our decoder cannot tell apart: same downstream switch, same pathBF value.
    pub undecodable: Vec<SegmentId>,
    /// Per segment length h (switches): wrong candidates between the same two monitors that were
    /// tested, how many passed the membership test, and Theorem 1's prediction of that rate.
    pub membership: Vec<MembershipStat>,
    /// Switch IDs changed by [`repair`], as (switch, old ID, new ID).
    pub reassigned: Vec<(SwitchIx, u32, u32)>,
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct MembershipStat {
    pub h: u32,
    /// Intermediate switches in which the wrong candidates differ from the true segment.
    pub differing: u32,
    pub candidates: u64,
    pub passed: u64,
    pub observed_rate: f64,
    pub theorem1: f64,
    /// Segments with at least one wrong candidate passing (the paper's decoding failure).
    pub ambiguous_segments: u64,
    pub segments: u64,
}

/// Audits decodability under the topology's current switch IDs.
pub fn audit(
    topo: &Topology,
    segments: &Segments,
    params: PathBfParams,
) -> Result<Audit, PathBfParamsError> {
    let codec = PathBfCodec::new(topo, segments, params)?;
    let mut undecodable = Vec::new();
    for (i, seg) in segments.list.iter().enumerate() {
        if matches!(
            codec.decode(seg.downstream(), codec.segment_bf[i]),
            Decoded::Ambiguous(_)
        ) {
            undecodable.push(i as SegmentId);
        }
    }
    let mut by_ends: HashMap<(SwitchIx, SwitchIx), Vec<SegmentId>> = HashMap::new();
    for (i, seg) in segments.list.iter().enumerate() {
        by_ends
            .entry((seg.upstream(), seg.downstream()))
            .or_default()
            .push(i as SegmentId);
    }
    let mut stats: HashMap<(u32, u32), MembershipStat> = HashMap::new();
    let mut ambiguous: HashMap<u32, (u64, u64)> = HashMap::new();
    for group in by_ends.values() {
        for &truth in group {
            let tsw = &segments.get(truth).switches;
            let h = tsw.len() as u32;
            let mut any = false;
            for &other in group {
                let osw = &segments.get(other).switches;
                if other == truth || osw.len() != tsw.len() {
                    continue;
                }
                let differing = tsw.iter().zip(osw).filter(|(a, b)| a != b).count() as u32;
                let st = stats
                    .entry((h, differing))
                    .or_insert_with(|| MembershipStat {
                        h,
                        differing,
                        ..Default::default()
                    });
                st.candidates += 1;
                if codec.passes(segments, other, codec.segment_bf[truth as usize]) {
                    st.passed += 1;
                    any = true;
                }
            }
            let a = ambiguous.entry(h).or_default();
            a.0 += any as u64;
            a.1 += 1;
        }
    }
    let mut membership: Vec<MembershipStat> = stats
        .into_values()
        .map(|mut s| {
            s.observed_rate = if s.candidates == 0 {
                0.0
            } else {
                s.passed as f64 / s.candidates as f64
            };
            s.theorem1 = params.false_match(s.h, s.differing);
            (s.ambiguous_segments, s.segments) = ambiguous[&s.h];
            s
        })
        .collect();
    membership.sort_by_key(|s| (s.h, s.differing));
    Ok(Audit {
        segments: segments.len(),
        undecodable,
        membership,
        reassigned: vec![],
    })
}

/// Reassigns switch IDs until every segment decodes (at most `max_rounds` passes). For every
/// group of segments into one switch that share a pathBF value, each segment but the first gets
/// a new ID for one of its switches that the first does not contain, as the paper suggests
/// ("use the second largest MAC address"). Returns the final audit with the changes listed.
pub fn repair(
    topo: &mut Topology,
    segments: &Segments,
    params: PathBfParams,
    max_rounds: u32,
) -> Result<Audit, PathBfParamsError> {
    let mut reassigned = Vec::new();
    let mut used: std::collections::HashSet<u32> = topo.switches.iter().map(|s| s.id).collect();
    for round in 0..max_rounds {
        let codec = PathBfCodec::new(topo, segments, params)?;
        let mut groups: Vec<&Vec<SegmentId>> =
            codec.decode.values().filter(|g| g.len() > 1).collect();
        if groups.is_empty() {
            break;
        }
        groups.sort();
        let mut changed = std::collections::HashSet::new();
        for group in groups {
            let first = &segments.get(group[0]).switches;
            for &seg in &group[1..] {
                let sw = &segments.get(seg).switches;
                let differing: Vec<SwitchIx> = sw[..sw.len() - 1]
                    .iter()
                    .copied()
                    .filter(|s| !first.contains(s))
                    .collect();
                let Some(&victim) = differing.get(round as usize % differing.len().max(1)) else {
                    continue;
                };
                if !changed.insert(victim) {
                    continue;
                }
                let old = topo.switches[victim as usize].id;
                let mut salt = round;
                let new = loop {
                    let name = format!("{}#{}", topo.switches[victim as usize].name, salt);
                    let id = crate::sketch::hash::crc32(name.as_bytes());
                    if used.insert(id) {
                        break id;
                    }
                    salt += 1000;
                };
                topo.switches[victim as usize].id = new;
                reassigned.push((victim, old, new));
            }
        }
    }
    Ok(Audit {
        reassigned,
        ..audit(topo, segments, params)?
    })
}
