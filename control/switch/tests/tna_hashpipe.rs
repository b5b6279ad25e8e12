//! p4src/tna/hashpipe.p4 and the HH decision of tna/hh_report.p4, step by step as the Tofino
//! program executes them (fingerprints, pair registers and their copies, the carry_next
//! table, the threshold countdown), against the Rust model (`canary_core::sketch::HashPipe`,
//! full keys) that v1model matches packet for packet.
//!
//! There is no Tofino model here to run the compiled program, so this checks the algorithm the
//! TNA program encodes: for every packet the digest decision, and after every packet each
//! stage's slots, equal the model's. The mirror's stateful ALU steps are checked against the
//! `RegisterAction` programs read from p4src/tna/hashpipe.p4 itself, so an edit there fails here.

#[path = "tna_hashpipe/alu.rs"]
mod alu;

use canary_core::sketch::{hashpipe_index, FlowHashes, HashPipe, HashPipeConfig};
use canary_core::FlowId;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

const ENTRIES: usize = 32;
const METER_WIDTH: usize = 1024;

/// `hp_slot_t`: {fp, count}; fp 0 = empty.
type HashPipeEntry = alu::Slot;

#[derive(Default)]
struct TnaHashPipe {
    /// stage 0: count_reg and its copy fp_reg
    s0: [HashPipeEntry; ENTRIES],
    s0_copy: [HashPipeEntry; ENTRIES],
    /// stage 1: count_reg and stage1_fp's fp_reg
    s1: [HashPipeEntry; ENTRIES],
    s1_copy: [HashPipeEntry; ENTRIES],
    /// stage 2: count_reg
    s2: [HashPipeEntry; ENTRIES],
}

fn bits(x: u32, lo: u32, n: u32) -> usize {
    ((x >> lo) & ((1 << n) - 1)) as usize
}

/// count_take's and fp_take's update (stage 0 takes every packet); returns the slot before.
fn take(v: &mut HashPipeEntry, fp: u32) -> HashPipeEntry {
    let old = *v;
    if v.fp == fp {
        v.count = v.count.wrapping_add(1);
    } else {
        *v = HashPipeEntry { fp, count: 1 };
    }
    old
}

/// count_read_own: the carried flow's count here, no update.
fn read_own(v: &HashPipeEntry, carry_fp: u32) -> u32 {
    if v.fp == carry_fp {
        v.count
    } else {
        0
    }
}

/// count_carry's update (both copies run it) and its two results: (count_carry's, fp_carry's).
fn carry(v: &mut HashPipeEntry, carry_fp: u32, carry_count: u32) -> (u32, u32) {
    if v.fp == carry_fp {
        v.count = v.count.wrapping_add(carry_count);
        (0, v.fp)
    } else if v.count < carry_count {
        let old = *v;
        *v = HashPipeEntry {
            fp: carry_fp,
            count: carry_count,
        };
        (old.count, old.fp)
    } else {
        (v.count, 0)
    }
}

impl TnaHashPipe {
    /// One packet that reaches HashPipe (`on`); returns `short` (0: the HH digest fires).
    fn packet(&mut self, h: FlowHashes, threshold: u32) -> u32 {
        let fp = h.c32 | 1;
        // Stage 0: count_take and fp_take, same update, different results.
        let i0 = bits(u32::from(h.c16), 11, 5);
        let carry_count = take(&mut self.s0[i0], fp).count;
        let mut carry_fp = take(&mut self.s0_copy[i0], fp).fp;
        let mut carry_count = carry_count;
        // Stage 1 (tests the hit itself: carry_fp == own fp).
        let hit = carry_fp == fp;
        let i1 = bits(carry_fp, 10, 5);
        let (own1, fp1) = if hit {
            (read_own(&self.s1[i1], carry_fp), 0)
        } else {
            let (own1, _) = carry(&mut self.s1[i1], carry_fp, carry_count);
            let (_, fp1) = carry(&mut self.s1_copy[i1], carry_fp, carry_count);
            (own1, fp1)
        };
        let mut count = 1;
        if hit {
            count = carry_count.wrapping_add(1).wrapping_add(own1);
        } else if !(fp1 == 0 && own1 != 0) {
            // carry_next: (0, 0) and the default carry on; (0, _) passed.
            carry_fp = fp1;
            carry_count = own1;
        }
        let mut short = threshold.saturating_sub(count);
        // Stage 2.
        let i2 = bits(carry_fp, 17, 5);
        if hit {
            short = short.saturating_sub(read_own(&self.s2[i2], carry_fp));
        } else {
            carry(&mut self.s2[i2], carry_fp, carry_count);
        }
        short
    }
}

/// A deterministic xorshift, so a failure reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn flows(n: usize) -> Vec<FlowId> {
    (0..n)
        .map(|i| {
            FlowId::v4(
                0x0a00_0000 | (i as u32 % 251),
                0x0a01_0000 | (i as u32 / 251),
                if i.is_multiple_of(5) { 6 } else { 17 },
                1000 + i as u16,
                80,
            )
        })
        .collect()
}

#[test]
fn tna_hashpipe_equals_the_model_packet_for_packet() {
    let config = HashPipeConfig::new(3, ENTRIES, METER_WIDTH).unwrap();
    for (seed, n_flows, eta) in [(1u64, 40, 2u32), (7, 150, 3), (42, 600, 20), (99, 2000, 1)] {
        let flows = flows(n_flows);
        let hashes: Vec<FlowHashes> = flows.iter().map(FlowHashes::of).collect();
        // The fingerprints must not collide (31 bits: the one place the TNA program may differ).
        let mut seen = HashMap::new();
        for (i, h) in hashes.iter().enumerate() {
            assert_eq!(seen.insert(h.c32 | 1, i), None, "fingerprint collision");
            // The P4 slices are the model's indexes.
            assert_eq!(
                bits(u32::from(h.c16), 11, 5),
                hashpipe_index(*h, 0, ENTRIES, METER_WIDTH)
            );
            assert_eq!(
                bits(h.c32, 10, 5),
                hashpipe_index(*h, 1, ENTRIES, METER_WIDTH)
            );
            assert_eq!(
                bits(h.c32, 17, 5),
                hashpipe_index(*h, 2, ENTRIES, METER_WIDTH)
            );
        }
        let by_fp: HashMap<u32, FlowId> = hashes
            .iter()
            .zip(&flows)
            .map(|(h, f)| (h.c32 | 1, *f))
            .collect();

        let mut model = HashPipe::new(config).unwrap();
        let mut tna = TnaHashPipe::default();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let (mut digests, mut packets) = (0, 0);
        for _ in 0..40_000 {
            // Skewed: a few heavy flows, many light ones.
            let r = rng.next();
            let i = if r.is_multiple_of(4) {
                (r >> 8) as usize % 5.min(n_flows)
            } else {
                (r >> 8) as usize % n_flows
            };
            let total = model.update(hashes[i]);
            let short = tna.packet(hashes[i], eta.saturating_add(1));
            assert_eq!(
                short == 0,
                total > eta,
                "packet {packets} of flow {i}: model count {total}, eta {eta}"
            );
            digests += usize::from(short == 0);
            packets += 1;

            assert_eq!(tna.s0, tna.s0_copy, "stage 0 copies diverged");
            assert_eq!(tna.s1, tna.s1_copy, "stage 1 copies diverged");
            let mut want = [[HashPipeEntry::default(); ENTRIES]; 3];
            for (stage, index, fp, count) in model.entries() {
                want[stage][index] = HashPipeEntry { fp, count };
            }
            assert_eq!(
                [tna.s0, tna.s1, tna.s2],
                want,
                "after packet {packets}: slots differ from the model ({:?})",
                by_fp.len()
            );
        }
        assert!(
            digests > 0 && digests < packets,
            "seed {seed}: {digests} digests of {packets}: the scenario tests nothing"
        );
    }
}

/// A stateful ALU step as the mirror has it: (slot, fp or carry_fp, carry_count) -> rv.
type Step = fn(&mut HashPipeEntry, u32, u32) -> u32;

/// Every `RegisterAction` of hashpipe.p4 the mirror models: its register, the inputs its
/// control passes (named as in the .p4), and the mirror's step.
const MIRROR: [(&str, &str, &[&str], Step); 5] = [
    ("count_take", "count_reg", &["fp"], |v, fp, _| {
        take(v, fp).count
    }),
    ("fp_take", "fp_reg", &["fp"], |v, fp, _| take(v, fp).fp),
    ("count_read_own", "count_reg", &["carry_fp"], |v, fp, _| {
        read_own(v, fp)
    }),
    (
        "count_carry",
        "count_reg",
        &["carry_fp", "carry_count"],
        |v, fp, c| carry(v, fp, c).0,
    ),
    (
        "fp_carry",
        "fp_reg",
        &["carry_fp", "carry_count"],
        |v, fp, c| carry(v, fp, c).1,
    ),
];

#[test]
fn the_mirrors_alu_steps_are_hashpipe_p4s_register_actions() {
    let file = "p4src/tna/hashpipe.p4";
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let alus = alu::register_actions(file, &text);
    let have: BTreeSet<&str> = alus.keys().map(String::as_str).collect();
    let modeled: BTreeSet<&str> = MIRROR.iter().map(|m| m.0).collect();
    assert_eq!(
        have, modeled,
        "{file}: its RegisterActions are not the ones the mirror models"
    );
    // Empty, the input's and another flow's slot; counts around every carried count.
    let (a, b) = (0x1234_5679, 0x0abc_def1);
    let counts = [0, 1, 2, 3, 7, u32::MAX];
    for (name, register, inputs, step) in MIRROR {
        let alu = &alus[name];
        assert_eq!(
            alu.register, register,
            "{file}: RegisterAction {name}'s register"
        );
        for (slot_fp, count, fp, carried) in combinations(&[0, a, b], &counts, &[0, a, b], &counts)
        {
            let before = HashPipeEntry { fp: slot_fp, count };
            let env: Vec<(&str, u32)> = inputs
                .iter()
                .zip([fp, carried])
                .map(|(&n, x)| (n, x))
                .collect();
            let (mut p4, mut rust) = (before, before);
            let rv_p4 = alu.run(&mut p4, &env);
            let rv_rust = step(&mut rust, fp, carried);
            assert_eq!(
                (rv_p4, p4),
                (rv_rust, rust),
                "{file}: RegisterAction {name} on slot {before:?} with {env:?}: (rv, slot) from \
                 the .p4 (left) differ from the Rust mirror's step (right)"
            );
        }
    }
}

/// Every combination of the four lists.
fn combinations(
    fps: &[u32],
    counts: &[u32],
    ins: &[u32],
    carried: &[u32],
) -> Vec<(u32, u32, u32, u32)> {
    let mut out = Vec::new();
    for &f in fps {
        for &c in counts {
            for &i in ins {
                for &k in carried {
                    out.push((f, c, i, k));
                }
            }
        }
    }
    out
}
