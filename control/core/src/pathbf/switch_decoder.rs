//! One downstream switch's pathBF values in a small open-addressed table: the fast path of
//! [`super::PathBfCodec::decode_id`], apart because it is a data structure of its own.

use super::DecodedId;

/// One downstream switch's pathBF values, linear probing on a multiplicative hash.
#[derive(Clone, Debug, Default)]
pub(super) struct SwitchDecoder {
    /// `32 - log2(slots.len())`.
    shift: u32,
    /// (pathBF, segment or [`SwitchDecoder::AMBIGUOUS`]); empty slots hold [`SwitchDecoder::EMPTY`].
    slots: Vec<(u32, u32)>,
}

impl SwitchDecoder {
    const EMPTY: u32 = u32::MAX;
    pub(super) const AMBIGUOUS: u32 = u32::MAX - 1;

    pub(super) fn new(entries: &[(u32, u32)]) -> Self {
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

    pub(super) fn get(&self, bf: u32) -> DecodedId {
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
