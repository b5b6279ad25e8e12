//! pathBF: the Bloom filter of switch IDs each packet carries (Sec. III-B).
//!
//! Encoding is what the data plane does: a monitor switch clears the filter and adds itself, any
//! other switch adds itself. "Adding" ORs the switch's m-bit mask, which the controller computes
//! here and installs as a table parameter, so the data plane never hashes switch IDs.
//!
//! A packet reaching a downstream monitor therefore carries exactly the OR of the masks of the
//! segment's upstream monitor and intermediate switches: a fixed value per segment. The decoder
//! maps (downstream switch, pathBF) to the segment with exactly that value. The offline audit
//! finds segments that would not decode (two segments into one switch with one value) and, as the
//! paper proposes after Theorem 1, reassigns switch IDs until none remain. It also measures the
//! paper's own notion (a wrong candidate between the same two monitors passing the Bloom
//! membership test) so the observed rate can be set against Theorem 1.

use crate::topo::{SegmentId, Segments, SwitchIx, Topology};
use std::collections::HashMap;

/// pathBF parameters the data plane cannot use; each names the field at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathBfParamsError {
    #[error("pathBF bits must be a power of two in 8..=32, got {0}")]
    Bits(u32),
    #[error("pathBF hashes must be 1..={max} for {bits} bits, got {hashes}")]
    Hashes { bits: u32, hashes: u32, max: u32 },
}

impl PathBfParamsError {
    /// The field at fault: `bits` or `hashes`.
    pub fn field(&self) -> &'static str {
        match self {
            Self::Bits(_) => "bits",
            Self::Hashes { .. } => "hashes",
        }
    }
}

/// Bloom filter size `b` (bits) and hash count `m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathBfParams {
    pub bits: u32,
    pub hashes: u32,
}

impl Default for PathBfParams {
    fn default() -> Self {
        Self {
            bits: 32,
            hashes: 3,
        }
    }
}

impl PathBfParams {
    /// Bit positions of a switch ID: `h_i(id) = splitmix64(i << 32 | id) mod b`.
    ///
    /// Only the controller hashes switch IDs (the data plane ORs a mask it is given), so this
    /// need not be a hash the switch computes. It must mix well: CRC slices are affine in the ID,
    /// and with IDs derived from similar names they made wrong candidates pass the membership
    /// test three times as often as independent hashes do.
    pub fn positions(&self, id: u32) -> impl Iterator<Item = u32> {
        let bits = self.bits as u64;
        (0..self.hashes)
            .map(move |i| (crate::topo::mix64((i as u64) << 32 | id as u64) % bits) as u32)
    }

    pub fn mask(&self, id: u32) -> u32 {
        self.positions(id).fold(0, |m, p| m | 1 << p)
    }

    pub fn validate(&self) -> Result<(), PathBfParamsError> {
        if !self.bits.is_power_of_two() || !(8..=32).contains(&self.bits) {
            return Err(PathBfParamsError::Bits(self.bits));
        }
        let max = 32 / self.bits.trailing_zeros();
        if self.hashes == 0 || self.hashes > max {
            return Err(PathBfParamsError::Hashes {
                bits: self.bits,
                hashes: self.hashes,
                max,
            });
        }
        Ok(())
    }

    /// Theorem 1: probability that a wrong bottom-to-bottom candidate of `h` switches passes the
    /// membership test, `(1 − e^{−(h−1)m/b})^{(h−2)m}`.
    pub fn theorem1(&self, h: u32) -> f64 {
        self.false_match(h, h - 2)
    }

    /// Theorem 1's argument for a candidate that differs from the true segment in `differing`
    /// switches (the theorem assumes all h−2 intermediate switches differ; in a fat-tree, two
    /// paths through cores of the same plane share both agg switches and differ in one).
    pub fn false_match(&self, h: u32, differing: u32) -> f64 {
        let (m, b) = (self.hashes as f64, self.bits as f64);
        (1.0 - (-((h - 1) as f64) * m / b).exp()).powf(differing as f64 * m)
    }
}

/// One hop of the data plane: the pathBF a packet leaves `switch` with.
pub fn encode_hop(bf: u32, mask: u32, monitor: bool) -> u32 {
    if monitor {
        mask
    } else {
        bf | mask
    }
}

/// Masks per switch, the pathBF value of every segment, and the decoder.
#[derive(Clone, Debug)]
pub struct PathBfCodec {
    pub params: PathBfParams,
    pub masks: Vec<u32>,
    pub segment_bf: Vec<u32>,
    decode: HashMap<(SwitchIx, u32), Vec<SegmentId>>,
    /// The same map per downstream switch, as small open-addressed tables: `minus_meters`
    /// decodes every clean DSM record, and one shared SipHash map over all segments (15 MB at
    /// k = 32) costs a cache miss per record.
    by_downstream: Vec<SwitchDecoder>,
}

/// What a (downstream switch, pathBF) pair decodes to, without the list of candidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodedId {
    Segment(SegmentId),
    Ambiguous,
    Unknown,
}

/// One downstream switch's pathBF values, linear probing on a multiplicative hash.
#[derive(Clone, Debug, Default)]
struct SwitchDecoder {
    /// `32 - log2(slots.len())`.
    shift: u32,
    /// (pathBF, segment or [`SwitchDecoder::AMBIGUOUS`]); empty slots hold [`SwitchDecoder::EMPTY`].
    slots: Vec<(u32, u32)>,
}

impl SwitchDecoder {
    const EMPTY: u32 = u32::MAX;
    const AMBIGUOUS: u32 = u32::MAX - 1;

    fn new(entries: &[(u32, u32)]) -> Self {
        let bits = (2 * entries.len())
            .next_power_of_two()
            .max(2)
            .trailing_zeros();
        let mut d = SwitchDecoder {
            shift: 32 - bits,
            slots: vec![(0, Self::EMPTY); 1 << bits],
        };
        for &(bf, seg) in entries {
            let i = d.find(bf);
            let slot = &mut d.slots[i];
            slot.1 = if slot.1 == Self::EMPTY {
                seg
            } else {
                Self::AMBIGUOUS
            };
            slot.0 = bf;
        }
        d
    }

    /// The slot holding `bf`, or the empty slot where it would go.
    fn find(&self, bf: u32) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = (bf.wrapping_mul(0x9e37_79b1) >> self.shift) as usize;
        loop {
            let (k, v) = self.slots[i];
            if v == Self::EMPTY || k == bf {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    fn get(&self, bf: u32) -> DecodedId {
        if self.slots.is_empty() {
            return DecodedId::Unknown;
        }
        match self.slots[self.find(bf)].1 {
            Self::EMPTY => DecodedId::Unknown,
            Self::AMBIGUOUS => DecodedId::Ambiguous,
            s => DecodedId::Segment(s),
        }
    }
}

/// What a (downstream switch, pathBF) pair decodes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    Segment(SegmentId),
    /// Several segments into this switch share the value; the audit should have prevented it.
    Ambiguous(Vec<SegmentId>),
    /// No segment into this switch carries this value (a corrupted or foreign pathBF).
    Unknown,
}

impl PathBfCodec {
    /// The codec of `topo`'s segments; fails on parameters the data plane cannot use (they
    /// would divide by zero or shift past 32 bits when computing masks).
    pub fn new(
        topo: &Topology,
        segments: &Segments,
        params: PathBfParams,
    ) -> Result<Self, PathBfParamsError> {
        params.validate()?;
        let masks: Vec<u32> = topo.switches.iter().map(|s| params.mask(s.id)).collect();
        let segment_bf: Vec<u32> = segments
            .list
            .iter()
            .map(|seg| {
                let mut bf = 0;
                for &s in &seg.switches[..seg.switches.len() - 1] {
                    bf = encode_hop(bf, masks[s as usize], topo.switches[s as usize].monitor);
                }
                bf
            })
            .collect();
        let mut decode: HashMap<(SwitchIx, u32), Vec<SegmentId>> = HashMap::new();
        assert!(
            segments.list.len() < SwitchDecoder::AMBIGUOUS as usize,
            "segment ids fit below the decoder's markers"
        );
        let mut per_switch: Vec<Vec<(u32, u32)>> = vec![Vec::new(); topo.switches.len()];
        for (i, seg) in segments.list.iter().enumerate() {
            decode
                .entry((seg.downstream(), segment_bf[i]))
                .or_default()
                .push(i as SegmentId);
            per_switch[seg.downstream() as usize].push((segment_bf[i], i as SegmentId));
        }
        let by_downstream = per_switch.iter().map(|e| SwitchDecoder::new(e)).collect();
        Ok(Self {
            params,
            masks,
            segment_bf,
            decode,
            by_downstream,
        })
    }

    /// [`PathBfCodec::decode`] without the candidates of an ambiguous value, faster.
    pub fn decode_id(&self, downstream: SwitchIx, bf: u32) -> DecodedId {
        match self.by_downstream.get(downstream as usize) {
            Some(d) => d.get(bf),
            None => DecodedId::Unknown,
        }
    }

    pub fn decode(&self, downstream: SwitchIx, bf: u32) -> Decoded {
        match self.decode.get(&(downstream, bf)).map(Vec::as_slice) {
            None => Decoded::Unknown,
            Some([one]) => Decoded::Segment(*one),
            Some(many) => Decoded::Ambiguous(many.to_vec()),
        }
    }

    /// The paper's decoding test: every switch of `candidate` before its downstream end passes
    /// the Bloom membership test of `bf`.
    pub fn passes(&self, segments: &Segments, candidate: SegmentId, bf: u32) -> bool {
        let seg = segments.get(candidate);
        seg.switches[..seg.switches.len() - 1].iter().all(|&s| {
            let m = self.masks[s as usize];
            bf & m == m
        })
    }
}

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

#[cfg(test)]
mod tests;
