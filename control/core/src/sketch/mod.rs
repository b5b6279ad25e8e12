//! Reference model of Canary's data-plane meters: USM, DSM and HashPipe.
//!
//! This module is the specification the P4 program (BMv2 and Tofino) is held to bucket for
//! bucket: given the same packets in the same order, the switch registers must equal these
//! structures. Hence only hashes both targets compute natively are used — CRC-32/ISO-HDLC and
//! CRC-16/ARC over the 13-byte flow key — and every index is a disjoint bit slice of those two
//! values (salted copies of one CRC are correlated; see [`hash`] for the slice table).
//!
//! * [`Usm`] / [`Dsm`]: `d × w` meters updated by the paper's Algorithms 2 and 1; clean buckets
//!   hold exact per-flow counts ([`Dsm::clean_flows`], [`Usm::clean_count`]).
//! * [`HashPipe`]: heavy-hitter selection feeding the HH table.
//! * [`p_clean`]: Theorem 2, the probability a flow keeps a clean bucket.
//!
//! The comparison sketches of the paper's overhead experiments (Sec. IV-B, Table I) live here too,
//! on seeded hashes ([`seeded`]) rather than the P4 contract: [`flowradar`], [`lossradar`],
//! [`fermat`] (ChameleMon's FermatSketch), and the original 6-stage HashPipe ([`hashpipe_orig`]).
//! Their decoders return [`DecodeError`] rather than a partial answer.
//!
//! Not modelled here: the match+action tables that choose which flows are counted (DSM, USM and
//! HH tables), the odd/even epoch instances, DSCP marking, digests, and register read-out. Those
//! are control-plane or pipeline concerns; this module only models register state transitions.

pub mod error;
pub mod fermat;
pub mod flowradar;
pub mod hash;
pub mod hashpipe;
pub mod hashpipe_orig;
pub mod lossradar;
pub mod meter;
pub mod seeded;

#[cfg(test)]
mod tests;

pub use error::{DecodeError, SketchConfigError};
pub use hash::{
    crc16, crc32, ecmp_member, ecmp_member_key_tna, ecmp_mod_term, ecmp_mul_term, hashpipe_index,
    meter_index, FlowHashes,
};
pub use hashpipe::{fingerprint, HashPipe, HashPipeConfig, HashPipeSlot, HASHPIPE_ENTRY_BITS};
pub use meter::{
    p_clean, Bucket, CleanFlows, CleanLookup, Dsm, DsmBucket, DsmRecord, Meter, MeterConfig, Usm,
    UsmBucket, UsmRecord, DSM_BUCKET_BITS, USM_BUCKET_BITS,
};
