//! Hash functions of the data plane and the bit-slice contract the P4 program must follow.
//!
//! Only two hashes are computed per packet, both over the flow key ([`FlowId::key_bytes`]:
//! srcAddr, dstAddr, protocol, srcPort, dstPort, big-endian; 13 bytes for IPv4, 37 for IPv6):
//!
//! | name  | catalogue algorithm | poly     | init     | refin/refout | xorout   | check (`"123456789"`) |
//! |-------|---------------------|----------|----------|--------------|----------|-----------------------|
//! | `c32` | CRC-32/ISO-HDLC     | 04C11DB7 | FFFFFFFF | true/true    | FFFFFFFF | `0xCBF43926`          |
//! | `c16` | CRC-16/ARC          | 8005     | 0000     | true/true    | 0000     | `0xBB3D`              |
//!
//! These are BMv2's `HashAlgorithm.crc32` and `HashAlgorithm.crc16` (verified against
//! behavioral-model `src/bm_sim/calculations.cpp`, structs `crc32`/`crc16`, and the tables in
//! `src/bm_sim/crc_tables.h`: `table_crc16[1] == 0x8005`, init 0, input bytes and the final
//! remainder reflected, no final xor). Tofino's hash engine computes any CRC given these parameters
//! (TNA `Hash` with a `CRCPolynomial`), so both targets can reproduce every index exactly.
//!
//! # Why bit slices and not salted copies
//!
//! A CRC is affine over GF(2): for messages of equal length, `crc(a ‖ x) ^ crc(b ‖ x)` does not
//! depend on `x`. Salted copies of one CRC therefore send every pair of flows that collides in one
//! row to a colliding position in every other row, which defeats the `d` rows of the meters.
//! Instead every index is a **disjoint bit slice** of `c32` and `c16`; for uniformly random keys
//! disjoint slices of a surjective affine map are independent and uniform.
//!
//! # Slice table (the contract for the P4 program)
//!
//! `L = log2(w)` (meter width), `P = log2(entries)` (HashPipe stage size); `L + P <= 16` makes all
//! six slices pairwise disjoint.
//!
//! | structure         | index                        |
//! |-------------------|------------------------------|
//! | meter row 0       | `c32[L-1:0]`                 |
//! | meter row 1       | `c32[31:32-L]`               |
//! | meter row 2       | `c16[L-1:0]`                 |
//! | HashPipe stage 0  | `c16[15:16-P]`               |
//! | HashPipe stage 1  | `c32[L+P-1:L]`               |
//! | HashPipe stage 2  | `c32[31-L:32-L-P]`           |
//!
//! In P4 (v1model): `hash(c32, HashAlgorithm.crc32, (bit<32>)0, {srcAddr, dstAddr, protocol,
//! srcPort, dstPort}, max)` with `max = 2^32` (for `crc16`, `2^16`) so the modulo is a no-op, then
//! bit-slice (`c32[9:0]` etc.; no further `%`, which would break disjointness). HashPipe
//! stages ≥ 1 hash the **carried** key (the same field order, taken from metadata), not the
//! packet's key.
//!
//! pathBF bit positions are not here: only the controller hashes switch IDs (the data plane ORs a
//! mask it is given), see `crate::pathbf`.

use crate::flow::FlowId;
use crc::{Crc, CRC_16_ARC, CRC_32_ISO_HDLC};
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

const CRC32: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);
const CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_ARC);

/// CRC-32/ISO-HDLC (BMv2 `HashAlgorithm.crc32`). Check value `0xCBF43926`.
pub fn crc32(data: &[u8]) -> u32 {
    CRC32.checksum(data)
}

/// CRC-16/ARC (BMv2 `HashAlgorithm.crc16`). Check value `0xBB3D`.
pub fn crc16(data: &[u8]) -> u16 {
    CRC16.checksum(data)
}

/// The two per-packet hashes of a flow key, from which every index is sliced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FlowHashes {
    pub c32: u32,
    pub c16: u16,
}

impl FlowHashes {
    /// Hashes the flow's wire form ([`FlowId::key_bytes`]: 13 bytes for IPv4, 37 for IPv6):
    /// [`crc32`] and [`crc16`] of it, computed from [`KeyTables`].
    pub fn of(flow: &FlowId) -> Self {
        match flow.v4_bytes() {
            Some(key) => KEY_TABLES_V4.hash(&key),
            None => KEY_TABLES_V6.hash(&flow.key_bytes()),
        }
    }
}

/// Both CRCs of a key of one length, one table lookup per byte. For messages of one length a
/// CRC (init and final xor included) is affine over GF(2): the CRC of a key is the CRC of as many
/// zero bytes XOR, for each byte position, what that byte's value adds to it. Each entry packs
/// that contribution as `c32 | c16 << 32`. Hashing is on the hot path of the simulator and of
/// `minus_meters` (millions of flows an epoch); byte-at-a-time CRCs form one long dependency
/// chain, these lookups are independent.
struct KeyTables {
    zeros: u64,
    by_byte: Vec<[u64; 256]>,
}

impl KeyTables {
    fn new(len: usize) -> Self {
        let both = |key: &[u8]| u64::from(crc32(key)) | u64::from(crc16(key)) << 32;
        let zeros = both(&vec![0; len]);
        let mut by_byte = vec![[0u64; 256]; len];
        let mut key = vec![0u8; len];
        for (i, tab) in by_byte.iter_mut().enumerate() {
            for (v, e) in tab.iter_mut().enumerate() {
                key[i] = v as u8;
                *e = both(&key) ^ zeros;
            }
            key[i] = 0;
        }
        KeyTables { zeros, by_byte }
    }

    fn hash(&self, key: &[u8]) -> FlowHashes {
        debug_assert_eq!(key.len(), self.by_byte.len());
        let x = key
            .iter()
            .zip(self.by_byte.iter())
            .fold(self.zeros, |x, (&b, tab)| x ^ tab[b as usize]);
        FlowHashes {
            c32: x as u32,
            c16: (x >> 32) as u16,
        }
    }
}

static KEY_TABLES_V4: LazyLock<KeyTables> = LazyLock::new(|| KeyTables::new(FlowId::V4_BYTES));
static KEY_TABLES_V6: LazyLock<KeyTables> = LazyLock::new(|| KeyTables::new(FlowId::V6_BYTES));

/// `n` bits of `x` starting at bit `lo` (0 when `n == 0`).
fn slice(x: u32, lo: u32, n: u32) -> usize {
    if n == 0 {
        return 0;
    }
    let mask = u32::MAX >> (32 - n);
    (x.checked_shr(lo).unwrap_or(0) & mask) as usize
}

/// log2 of a power of two (debug-asserted).
pub(crate) fn log2(n: usize) -> u32 {
    debug_assert!(n.is_power_of_two(), "{n} is not a power of two");
    n.trailing_zeros()
}

/// Column of `row` (0..3) in a meter of width `width` (a power of two, at most 2^16).
///
/// # Panics
/// If `row >= 3`.
pub fn meter_index(h: FlowHashes, row: usize, width: usize) -> usize {
    let l = log2(width);
    debug_assert!(l <= 16);
    match row {
        0 => slice(h.c32, 0, l),
        1 => slice(h.c32, 32 - l, l),
        2 => slice(u32::from(h.c16), 0, l),
        _ => panic!("meter row {row} out of range (at most 3 rows)"),
    }
}

/// Entry of HashPipe `stage` (0..3) with `entries` per stage, paired with meters of width
/// `meter_width` (the stage-1/2 slices sit next to the meter slices, see the module table).
///
/// # Panics
/// If `stage >= 3`.
pub fn hashpipe_index(h: FlowHashes, stage: usize, entries: usize, meter_width: usize) -> usize {
    let p = log2(entries);
    let l = log2(meter_width);
    debug_assert!(l + p <= 16);
    match stage {
        0 => slice(u32::from(h.c16), 16 - p, p),
        1 => slice(h.c32, l, p),
        2 => slice(h.c32, 32 - l - p, p),
        _ => panic!("HashPipe stage {stage} out of range (at most 3 stages)"),
    }
}

/// The ECMP member the data plane picks among `size` (`Forwarding` in
/// p4src/v1model/forwarding.p4): the top 16 bits of the flow's CRC-32 times the switch's pathBF
/// mask made odd, modulo `size`. Not a CRC of flow and mask: CRCs are affine over GF(2), which
/// makes every layer's choice the previous one's XOR a constant (ECMP polarization); the carries
/// of the multiplication decorrelate them.
pub fn ecmp_member(c32: u32, mask: u32, size: u16) -> u16 {
    assert!(size > 0, "an ECMP group has members");
    ((c32.wrapping_mul(mask | 1) >> 16) as u16) % size
}

/// TNA's `ecmp_mul{i}` entry for byte `i` (0 = least significant) of `c32` equal to `byte`:
/// `byte * 2^(8i) * (mask | 1) mod 2^32` (p4src/tna/forwarding.p4). Tofino has no multiplier;
/// the four terms of a flow's `c32` add up (mod 2^32) to `c32 * (mask | 1)`, the product
/// [`ecmp_member`] takes the top 16 bits of. 4 x 256 entries per switch, recomputed when its
/// mask changes.
///
/// # Panics
/// If `i >= 4`.
pub fn ecmp_mul_term(mask: u32, i: usize, byte: u8) -> u32 {
    assert!(i < 4, "c32 has 4 bytes");
    (u32::from(byte) << (8 * i)).wrapping_mul(mask | 1)
}

/// TNA's `ecmp_mod_hi` (`hi`) / `ecmp_mod_lo` entry for group size `size` and byte `byte` of
/// the 16-bit mixed value `x`: `2^8 * byte mod size` for the high byte, `byte mod size` for the
/// low one (Tofino has no remainder by a run-time value). 256 entries per distinct group size
/// and table.
pub fn ecmp_mod_term(size: u16, hi: bool, byte: u8) -> u16 {
    assert!(size > 0, "an ECMP group has members");
    let v = if hi {
        u32::from(byte) << 8
    } else {
        u32::from(byte)
    };
    (v % u32::from(size)) as u16
}

/// The `ecmp_group` member key the TNA program looks up: the sum of the two remainders, in
/// `0..2 * size - 1` and congruent to [`ecmp_member`] modulo `size` (the controller installs
/// `2 * size - 1` entries per group, key `j` -> member `j % size`).
pub fn ecmp_member_key_tna(c32: u32, mask: u32, size: u16) -> u16 {
    let prod = (0..4).fold(0u32, |acc, i| {
        acc.wrapping_add(ecmp_mul_term(mask, i, (c32 >> (8 * i)) as u8))
    });
    let x = (prod >> 16) as u16;
    ecmp_mod_term(size, true, (x >> 8) as u8) + ecmp_mod_term(size, false, x as u8)
}
