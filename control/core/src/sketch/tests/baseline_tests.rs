//! The comparison sketches: exact recovery when memory suffices, a typed error when it does not,
//! and never an answer the sketch contradicts (a FermatSketch can be genuinely ambiguous; see
//! `decoders_are_exact_or_fail`).

use super::random_flows;
use crate::sketch::error::DecodeError;
use crate::sketch::fermat::{self, FermatConfig, FermatSketch, P};
use crate::sketch::flowradar::{self, FlowRadar, FlowRadarConfig};
use crate::sketch::hashpipe_orig::OriginalHashPipe;
use crate::sketch::lossradar::{LossRadar, LossRadarConfig, LossRadarDiff, PacketId};
use crate::FlowId;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// `n` flows with 1..=max packets each, and for each the packets lost (each lost with
/// probability `p`).
fn traffic(seed: u64, n: usize, max: u32, p: f64) -> Vec<(FlowId, u32, Vec<u16>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xabc);
    random_flows(seed, n)
        .into_iter()
        .map(|f| {
            let pkts = rng.random_range(1..=max);
            let lost = (0..pkts as u16).filter(|_| rng.random_bool(p)).collect();
            (f, pkts, lost)
        })
        .collect()
}

fn lost_per_flow(t: &[(FlowId, u32, Vec<u16>)]) -> BTreeMap<FlowId, u32> {
    t.iter()
        .filter(|(_, _, l)| !l.is_empty())
        .map(|(f, _, l)| (*f, l.len() as u32))
        .collect()
}

fn flowradars(t: &[(FlowId, u32, Vec<u16>)], cfg: FlowRadarConfig) -> (FlowRadar, FlowRadar) {
    let (mut up, mut down) = (FlowRadar::new(cfg), FlowRadar::new(cfg));
    for (f, n, lost) in t {
        for i in 0..*n as u16 {
            up.insert(f);
            if !lost.contains(&i) {
                down.insert(f);
            }
        }
    }
    (up, down)
}

fn lossradars(t: &[(FlowId, u32, Vec<u16>)], cfg: LossRadarConfig) -> (LossRadar, LossRadar) {
    let (mut up, mut down) = (LossRadar::new(cfg), LossRadar::new(cfg));
    for (flow, n, lost) in t {
        for ipid in 0..*n as u16 {
            let p = PacketId { flow: *flow, ipid };
            up.insert(&p);
            if !lost.contains(&ipid) {
                down.insert(&p);
            }
        }
    }
    (up, down)
}

fn fermats(t: &[(FlowId, u32, Vec<u16>)], cfg: FermatConfig) -> (FermatSketch, FermatSketch) {
    let (mut up, mut down) = (FermatSketch::new(cfg), FermatSketch::new(cfg));
    for (f, n, lost) in t {
        for i in 0..*n as u16 {
            up.insert(f);
            if !lost.contains(&i) {
                down.insert(f);
            }
        }
    }
    (up, down)
}

fn lost_packets(t: &[(FlowId, u32, Vec<u16>)]) -> Vec<PacketId> {
    let mut v: Vec<PacketId> = t
        .iter()
        .flat_map(|(flow, _, l)| l.iter().map(|&ipid| PacketId { flow: *flow, ipid }))
        .collect();
    v.sort_unstable();
    v
}

// ---- FlowRadar ----

#[test]
fn flowradar_decodes_every_flow_and_its_losses_when_large_enough() {
    let t = traffic(1, 200, 40, 0.05);
    let (up, down) = flowradars(&t, FlowRadarConfig::new(200, 7));
    let sent = up.decode().unwrap();
    assert_eq!(sent.len(), 200);
    for (f, n, _) in &t {
        assert_eq!(sent[f], *n);
    }
    let losses = flowradar::losses(&up, &down).unwrap();
    assert_eq!(losses, lost_per_flow(&t));
    assert!(!losses.is_empty());
}

#[test]
fn flowradar_too_small_fails_cleanly() {
    let t = traffic(2, 200, 10, 0.0);
    let (up, _) = flowradars(&t, FlowRadarConfig::new(20, 7));
    assert!(matches!(up.decode(), Err(DecodeError::Stuck { .. })));
}

#[test]
fn flowradar_memory_is_table_plus_a_ninth() {
    let cfg = FlowRadarConfig::new(100, 0);
    assert_eq!(cfg.memory_bits(), 300 * 144 + 300 * 16);
}

// ---- LossRadar ----

#[test]
fn lossradar_recovers_every_lost_packet_when_large_enough() {
    let t = traffic(3, 300, 60, 0.02);
    let truth = lost_packets(&t);
    assert!(truth.len() > 100);
    let cfg = LossRadarConfig::new(truth.len(), 9);
    let (up, down) = lossradars(&t, cfg);
    let diff = up.subtract(&down).unwrap();
    assert_eq!(diff, LossRadarDiff::of_lost(cfg, &truth));
    assert_eq!(diff.decode().unwrap(), truth);
}

#[test]
fn lossradar_too_small_fails_cleanly() {
    let t = traffic(4, 300, 60, 0.05);
    let (up, down) = lossradars(&t, LossRadarConfig::new(10, 9));
    let r = up.subtract(&down).unwrap().decode();
    assert!(matches!(r, Err(DecodeError::Stuck { .. })), "{r:?}");
}

#[test]
fn lossradar_rejects_mismatched_and_reversed_meters() {
    let t = traffic(5, 50, 20, 0.1);
    let (up, down) = lossradars(&t, LossRadarConfig::new(50, 1));
    let other = LossRadar::new(LossRadarConfig::new(50, 2));
    assert_eq!(
        up.subtract(&other),
        Err(DecodeError::Mismatch("LossRadar meters"))
    );
    assert!(matches!(
        down.subtract(&up),
        Err(DecodeError::Inconsistent { .. })
    ));
}

#[test]
fn lossradar_no_loss_decodes_to_nothing() {
    let t = traffic(6, 50, 20, 0.0);
    let (up, down) = lossradars(&t, LossRadarConfig::new(1, 1));
    assert_eq!(up.subtract(&down).unwrap().decode().unwrap(), vec![]);
}

// ---- FermatSketch ----

fn mul_ref(a: u128, mut b: u128) -> u128 {
    let (mut acc, mut x) = (0u128, a);
    while b > 0 {
        if b & 1 == 1 {
            acc = fermat::add_mod(acc, x);
        }
        x = fermat::add_mod(x, x);
        b >>= 1;
    }
    acc
}

proptest! {
    #[test]
    fn fermat_mul_mod_matches_double_and_add(a in 0u128..P, b in 0u128..P) {
        prop_assert_eq!(fermat::mul_mod(a, b), mul_ref(a, b));
    }

    #[test]
    fn fermat_inverse_inverts(a in 1u128..P) {
        prop_assert_eq!(fermat::mul_mod(a, fermat::inv_mod(a)), 1);
    }
}

#[test]
fn fermat_mul_mod_edge_values() {
    for (a, b) in [
        (P - 1, P - 1),
        (P - 1, 2),
        (1 << 106, 1 << 106),
        (1 << 126, 1 << 126),
        (u64::MAX as u128, P - 1),
    ] {
        assert_eq!(fermat::mul_mod(a, b), mul_ref(a, b));
    }
    assert_eq!(fermat::mul_mod(P - 1, P - 1), 1, "(-1)² = 1");
}

#[test]
fn fermat_recovers_every_lossy_flow_when_large_enough() {
    let t = traffic(7, 500, 100, 0.01);
    let truth = lost_per_flow(&t);
    assert!(truth.len() > 50);
    let (up, down) = fermats(&t, FermatConfig::new(truth.len(), 3));
    let diff = up.subtract(&down).unwrap();
    assert_eq!(diff.decode().unwrap(), truth);
    // The upstream sketch alone decodes to every flow's size.
    let (big, _) = fermats(&t, FermatConfig::new(500, 3));
    let sizes = big.decode().unwrap();
    assert_eq!(sizes.len(), 500);
    assert!(t.iter().all(|(f, n, _)| sizes[f] == *n));
}

#[test]
fn fermat_insert_n_is_n_inserts() {
    let cfg = FermatConfig::new(16, 1);
    let (mut a, mut b) = (FermatSketch::new(cfg), FermatSketch::new(cfg));
    for (i, f) in random_flows(8, 30).iter().enumerate() {
        a.insert_n(f, i as u32 + 1);
        for _ in 0..=i {
            b.insert(f);
        }
    }
    assert_eq!(a, b);
}

#[test]
fn fermat_too_small_fails_cleanly() {
    let t = traffic(9, 400, 50, 0.1);
    let (up, down) = fermats(&t, FermatConfig::new(8, 3));
    assert!(up.subtract(&down).unwrap().decode().is_err());
    let other = FermatSketch::new(FermatConfig::new(8, 4));
    assert_eq!(
        up.subtract(&other),
        Err(DecodeError::Mismatch("FermatSketches"))
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the load, each decoder returns exactly the truth or an error, never a wrong answer.
    #[test]
    fn decoders_are_exact_or_fail(seed in 0u64..1_000, flows in 1usize..120, width in 1usize..80) {
        let t = traffic(seed, flows, 30, 0.1);
        let (up, down) = flowradars(&t, FlowRadarConfig::new(width, seed));
        if let Ok(l) = flowradar::losses(&up, &down) {
            prop_assert_eq!(l, lost_per_flow(&t));
        }
        let (up, down) = lossradars(&t, LossRadarConfig::new(width, seed));
        if let Ok(l) = up.subtract(&down).unwrap().decode() {
            prop_assert_eq!(l, lost_packets(&t));
        }
        let (up, down) = fermats(&t, FermatConfig::new(width, seed));
        let diff = up.subtract(&down).unwrap();
        if let Ok(l) = diff.decode() {
            let truth = lost_per_flow(&t);
            if l != truth {
                // A Fermat bucket set can be ambiguous: flows whose weighted mean ID is a valid
                // key that hashes to the same bucket in every row are indistinguishable from
                // that one pseudo-flow (always so at width 1, where every row is one bucket).
                // No decoder can tell them apart; what it must never do is return an answer the
                // sketch contradicts.
                let mut again = FermatSketch::new(diff.config());
                for (f, n) in &l {
                    again.insert_n(f, *n);
                }
                prop_assert_eq!(again.buckets(), diff.buckets(), "a decode the sketch contradicts");
            }
        }
    }
}

// ---- original HashPipe ----

#[test]
fn original_hashpipe_keeps_the_heavy_flows() {
    let flows = random_flows(10, 400);
    let mut hp = OriginalHashPipe::new(6, 16, 5);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for _ in 0..40_000 {
        // Flows 0..5 carry half the packets.
        let i = if rng.random_bool(0.5) {
            rng.random_range(0..5)
        } else {
            rng.random_range(5..400)
        };
        hp.update(&flows[i]);
    }
    let est = hp.estimates();
    for f in &flows[..5] {
        assert!(est.get(f).copied().unwrap_or(0) > 3_000, "{f} lost");
    }
    assert_eq!(hp.memory_bits(), 6 * 16 * 136);
}
