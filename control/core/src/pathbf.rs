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

mod audit;
mod codec;
mod params;
mod switch_decoder;

pub use audit::{audit, repair, Audit, MembershipStat};
pub use codec::{Decoded, DecodedId, PathBfCodec};
pub use params::{PathBfParams, PathBfParamsError};

/// One hop of the data plane: the pathBF a packet leaves `switch` with.
pub fn encode_hop(bf: u32, mask: u32, monitor: bool) -> u32 {
    if monitor {
        mask
    } else {
        bf | mask
    }
}

#[cfg(test)]
mod tests;
