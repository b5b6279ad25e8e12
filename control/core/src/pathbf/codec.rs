//! The codec: every switch's mask, every segment's pathBF, and the decoder from (downstream
//! switch, pathBF) back to the segment. Apart from the audit, which only asks it questions.

use super::switch_decoder::SwitchDecoder;
use super::{encode_hop, PathBfParams, PathBfParamsError};
use crate::topo::{SegmentId, Segments, SwitchIx, Topology};
use std::collections::HashMap;

/// Masks per switch, the pathBF value of every segment, and the decoder.
#[derive(Clone, Debug)]
pub struct PathBfCodec {
    pub params: PathBfParams,
    pub masks: Vec<u32>,
    pub segment_bf: Vec<u32>,
    /// Read by the repair, which looks for values shared by several segments.
    pub(super) decode: HashMap<(SwitchIx, u32), Vec<SegmentId>>,
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
