use super::{flow, random_flows};
use crate::sketch::*;
use crate::FlowId;

fn one_bucket() -> MeterConfig {
    MeterConfig::new(1, 1).unwrap()
}

#[test]
fn bucket_sizes() {
    assert_eq!(DSM_BUCKET_BITS, 169);
    assert_eq!(USM_BUCKET_BITS, 137);
    assert_eq!(HASHPIPE_ENTRY_BITS, 136);
    assert_eq!(MeterConfig::default(), MeterConfig::new(3, 1024).unwrap());
}

#[test]
fn empty_bucket_installs_the_first_packet() {
    let f = flow(1);
    let h = FlowHashes::of(&f);
    let mut dsm = Dsm::default();
    let mut usm = Usm::default();
    assert_eq!((dsm.occupied(), usm.occupied()), (0, 0));
    assert!(dsm.buckets().iter().all(|b| *b == DsmBucket::default()));
    dsm.update(&f, h, 0xA5);
    usm.update(&f, h);
    for row in 0..3 {
        let col = meter_index(h, row, 1024);
        let want = DsmBucket {
            dirty: false,
            flow: Some(f),
            path_bf: 0xA5,
            count: 1,
        };
        assert_eq!(*dsm.bucket(row, col), want);
        assert_eq!(usm.bucket(row, col).count, 1);
    }
    assert_eq!((dsm.occupied(), usm.occupied()), (3, 3));
    assert_eq!(dsm.dirty_buckets() + usm.dirty_buckets(), 0);
    assert_eq!(usm.clean_count(&f, h), Some(1));
    assert_eq!(usm.clean_count(&flow(2), FlowHashes::of(&flow(2))), None);
    dsm.reset();
    usm.reset();
    assert_eq!((dsm.occupied(), usm.occupied()), (0, 0));
    assert_eq!(dsm, Dsm::default());
}

#[test]
fn collision_dirties_usm_and_dsm() {
    let (a, b) = (flow(1), flow(2));
    let (ha, hb) = (FlowHashes::of(&a), FlowHashes::of(&b));
    let mut usm = Usm::new(one_bucket()).unwrap();
    let mut dsm = Dsm::new(one_bucket()).unwrap();
    for _ in 0..3 {
        usm.update(&a, ha);
        dsm.update(&a, ha, 7);
    }
    usm.update(&b, hb);
    dsm.update(&b, hb, 7);
    // The colliding packet dirties the bucket; the bucket keeps its first flow and counts on
    // (a dirty count is never read).
    for _ in 0..5 {
        usm.update(&a, ha);
        dsm.update(&b, hb, 7);
    }
    let u = *usm.bucket(0, 0);
    assert_eq!((u.dirty, u.flow, u.count), (true, Some(a), 9));
    let d = *dsm.bucket(0, 0);
    assert_eq!((d.dirty, d.flow, d.path_bf, d.count), (true, Some(a), 7, 9));
    assert_eq!(usm.clean_count(&a, ha), None);
    assert!(dsm.clean_flows().is_empty());
    assert_eq!((usm.dirty_buckets(), dsm.occupied()), (1, 1));
}

#[test]
fn path_change_dirties_every_dsm_bucket_of_the_flow() {
    let f = flow(9);
    let h = FlowHashes::of(&f);
    let mut dsm = Dsm::default();
    dsm.update_n(&f, h, 0b101, 3);
    assert_eq!(dsm.clean_flows().len(), 1);
    dsm.update(&f, h, 0b110);
    assert_eq!(dsm.dirty_buckets(), 3);
    assert!(dsm.clean_flows().is_empty());
    assert!(dsm
        .buckets()
        .iter()
        .filter(|b| b.dirty)
        .all(|b| b.count == 4));
}

/// A flow that meets a different flow in each of its d rows has no clean record.
#[test]
fn flow_colliding_in_every_row_has_no_clean_record() {
    let cfg = MeterConfig::new(3, 64).unwrap();
    let victim = flow(0);
    let hv = FlowHashes::of(&victim);
    let candidates = random_flows(11, 5000);
    let colliders: Vec<FlowId> = (0..3)
        .map(|row| {
            *candidates
                .iter()
                .find(|c| {
                    let hc = FlowHashes::of(c);
                    // Collide in `row` only, so each collider stays clean elsewhere.
                    (0..3).all(|r| (meter_index(hc, r, 64) == meter_index(hv, r, 64)) == (r == row))
                })
                .expect("a collider in every row")
        })
        .collect();
    let mut dsm = Dsm::new(cfg).unwrap();
    let mut usm = Usm::new(cfg).unwrap();
    for f in std::iter::once(&victim).chain(&colliders) {
        let h = FlowHashes::of(f);
        dsm.update_n(f, h, 1, 10);
        usm.update_n(f, h, 10);
    }
    let clean = dsm.clean_flows();
    assert_eq!(clean.len(), 3);
    assert!(clean.iter().all(|r| r.flow != victim && r.count == 10));
    assert_eq!(usm.clean_count(&victim, hv), None);
    assert_eq!(usm.dirty_buckets(), 3);
}

/// Interleaved traffic: every flow with a clean bucket reports exactly its packet count.
#[test]
fn clean_flows_have_exact_counts() {
    let cfg = MeterConfig::new(3, 256).unwrap();
    let flows = random_flows(5, 150);
    let mut dsm = Dsm::new(cfg).unwrap();
    let mut usm = Usm::new(cfg).unwrap();
    let size = |i: usize| (i % 7 + 1) as u32;
    for round in 0..7 {
        for (i, f) in flows.iter().enumerate() {
            if round < size(i) {
                dsm.update(f, FlowHashes::of(f), i as u32);
                usm.update(f, FlowHashes::of(f));
            }
        }
    }
    let clean = dsm.clean_flows();
    assert!(clean.len() > 100 && clean.len() < 150, "{}", clean.len());
    for r in &clean {
        let i = flows.iter().position(|f| *f == r.flow).unwrap();
        assert_eq!((r.count, r.path_bf), (size(i), i as u32));
    }
    for (i, f) in flows.iter().enumerate() {
        let c = usm.clean_count(f, FlowHashes::of(f));
        assert!(c.is_none_or(|c| c == size(i)));
        // Same hashes network-wide: clean in the USM iff clean in the DSM here.
        assert_eq!(c.is_some(), clean.iter().any(|r| r.flow == *f));
    }
}

#[test]
fn theorem2_golden_values() {
    assert!((p_clean(3, 1024, 50) - 0.99990).abs() < 1e-5);
    assert!((p_clean(3, 1024, 400) - 0.96639).abs() < 1e-5);
    assert_eq!(p_clean(3, 1024, 1), 1.0);
    assert_eq!(p_clean(3, 1024, 0), 1.0);
}

/// Monte-Carlo check of Theorem 2 with the real hash slices: F = 400, d = 3, w = 1024.
#[test]
fn theorem2_monte_carlo() {
    let (trials, f) = (25, 400);
    let mut clean = 0;
    for t in 0..trials {
        let flows = random_flows(1000 + t, f);
        let mut usm = Usm::default();
        for fl in &flows {
            usm.update_n(fl, FlowHashes::of(fl), 3);
        }
        clean += flows
            .iter()
            .filter(|fl| usm.clean_count(fl, FlowHashes::of(fl)).is_some())
            .count();
    }
    let frac = clean as f64 / (trials as usize * f) as f64;
    let want = p_clean(3, 1024, f);
    assert!((frac - want).abs() < 0.02, "{frac} vs {want}");
}

/// A switch's rows are separate register arrays read one after another: a packet counted
/// between two reads leaves clean buckets that disagree. Such a flow is reported as torn and
/// left out, never resolved by picking a row.
#[test]
fn torn_reads_are_left_out_not_guessed() {
    let f = flow(1);
    let h = FlowHashes::of(&f);
    let mut dsm = Dsm::default();
    let mut usm = Usm::default();
    dsm.update_n(&f, h, 0x11, 5);
    usm.update_n(&f, h, 5);
    assert_eq!(dsm.clean_flows_checked().1, 0);
    assert_eq!(usm.clean_lookup(&f, h), CleanLookup::Count(5));

    let config = MeterConfig::default();
    let col = meter_index(h, 2, config.width);
    let mut dsm_buckets = dsm.buckets().to_vec();
    dsm_buckets[2 * config.width + col].count += 1;
    let torn = Dsm::from_buckets(config, dsm_buckets).unwrap();
    assert_eq!(torn.clean_flows_checked(), (vec![], 1));

    let mut usm_buckets = usm.buckets().to_vec();
    usm_buckets[2 * config.width + col].count += 1;
    let torn = Usm::from_buckets(config, usm_buckets).unwrap();
    assert_eq!(torn.clean_lookup(&f, h), CleanLookup::Torn);
    assert_eq!(torn.clean_count(&f, h), None);
}
