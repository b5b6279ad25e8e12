use super::flow;
use crate::sketch::*;
use crate::FlowId;
use proptest::prelude::*;
use std::collections::HashMap;

/// Packets `(flow index, pathBF, repeat)` over a few flows and pathBFs, so collisions are common.
fn traffic() -> impl Strategy<Value = Vec<(u32, u32, u32)>> {
    prop::collection::vec((0u32..12, 0u32..3, 0u32..5), 0..60)
}

fn small_meter() -> MeterConfig {
    MeterConfig::new(3, 8).unwrap()
}

proptest! {
    #[test]
    fn dsm_update_n_is_n_updates(pkts in traffic()) {
        let mut fast = Dsm::new(small_meter()).unwrap();
        let mut slow = fast.clone();
        for (f, bf, n) in pkts {
            let (f, h) = (flow(f), FlowHashes::of(&flow(f)));
            fast.update_n(&f, h, bf, n);
            for _ in 0..n {
                slow.update(&f, h, bf);
            }
            prop_assert_eq!(&fast, &slow);
        }
    }

    #[test]
    fn hashpipe_update_n_is_n_updates(pkts in traffic()) {
        // Two entries per stage: flows collide, evict and swap all the time.
        let cfg = HashPipeConfig::new(3, 2, 1024).unwrap();
        let mut fast = HashPipe::new(cfg).unwrap();
        let mut slow = fast.clone();
        for (f, _, n) in pkts {
            let n = n + 1;
            let h = FlowHashes::of(&flow(f));
            let (first, last) = fast.update_n(h, n);
            let counts: Vec<u32> = (0..n).map(|_| slow.update(h)).collect();
            prop_assert_eq!(first, counts[0]);
            prop_assert_eq!(last, counts[counts.len() - 1]);
            // After the first, each packet reports one more than the one before.
            for w in counts[1..].windows(2) {
                prop_assert_eq!(w[1], w[0] + 1);
            }
            prop_assert_eq!(&fast, &slow);
        }
    }

    #[test]
    fn usm_update_n_is_n_updates(pkts in traffic()) {
        let mut fast = Usm::new(small_meter()).unwrap();
        let mut slow = fast.clone();
        for (f, _, n) in pkts {
            let (f, h) = (flow(f), FlowHashes::of(&flow(f)));
            fast.update_n(&f, h, n);
            for _ in 0..n {
                slow.update(&f, h);
            }
            prop_assert_eq!(&fast, &slow);
        }
    }

    /// Clean buckets hold exact counts; a flow that used two pathBFs is never reported by the DSM.
    #[test]
    fn clean_records_are_exact(pkts in traffic()) {
        let mut dsm = Dsm::new(small_meter()).unwrap();
        let mut usm = Usm::new(small_meter()).unwrap();
        let mut truth: HashMap<FlowId, (u32, Vec<u32>)> = HashMap::new();
        for (f, bf, n) in pkts {
            let (f, h) = (flow(f), FlowHashes::of(&flow(f)));
            dsm.update_n(&f, h, bf, n);
            usm.update_n(&f, h, n);
            if n > 0 {
                let t = truth.entry(f).or_default();
                t.0 += n;
                if !t.1.contains(&bf) {
                    t.1.push(bf);
                }
            }
        }
        for r in dsm.clean_flows() {
            let (count, bfs) = &truth[&r.flow];
            prop_assert_eq!((r.count, bfs.as_slice()), (*count, &[r.path_bf][..]));
        }
        for (f, (count, _)) in &truth {
            if let Some(c) = usm.clean_count(f, FlowHashes::of(f)) {
                prop_assert_eq!(c, *count);
            }
        }
        prop_assert!(dsm.occupied() <= 24 && dsm.dirty_buckets() <= dsm.occupied());
    }

    /// The hashed, position-order read-outs equal the plain ones, also on meters read back with
    /// buckets out of their flows' columns (`swap`) or clean buckets that disagree (`bump`).
    #[test]
    fn position_order_readouts_equal_the_plain_ones(
        pkts in traffic(),
        rows in 1usize..=3,
        swap in prop::option::of((0usize..24, 0usize..24)),
        bump in prop::option::of(0usize..24),
    ) {
        let cfg = MeterConfig::new(rows, 8).unwrap();
        let (mut dsm, mut usm) = (Dsm::new(cfg).unwrap(), Usm::new(cfg).unwrap());
        for (f, bf, n) in pkts {
            let (f, h) = (flow(f), FlowHashes::of(&flow(f)));
            dsm.update_n(&f, h, bf, n);
            usm.update_n(&f, h, n + bf % 2);
        }
        let n = cfg.num_buckets();
        let mut d = dsm.buckets().to_vec();
        let mut u = usm.buckets().to_vec();
        if let Some((i, j)) = swap {
            d.swap(i % n, j % n);
            u.swap(i % n, j % n);
        }
        if let Some(i) = bump {
            d[i % n].count += 1;
            u[(i + 1) % n].count += 1;
        }
        let dsm = Dsm::from_buckets(cfg, d).unwrap();
        let usm = Usm::from_buckets(cfg, u).unwrap();
        let (mut hashed, torn) = dsm.clean_flows_hashed();
        hashed.sort_by_key(|(r, _)| r.flow);
        for (r, h) in &hashed {
            prop_assert_eq!(*h, FlowHashes::of(&r.flow));
        }
        let plain: Vec<DsmRecord> = hashed.into_iter().map(|(r, _)| r).collect();
        prop_assert_eq!((plain, torn), dsm.clean_flows_checked());
        // The USM read out says of every flow what looking the flow up says.
        let read: HashMap<FlowId, CleanLookup> = usm.clean_flows().into_iter().collect();
        prop_assert_eq!(read.len(), usm.clean_flows().len(), "one entry per flow");
        for i in 0..14 {
            let f = flow(i);
            let got = read.get(&f).copied().unwrap_or(CleanLookup::Missing);
            prop_assert_eq!(got, usm.clean_lookup(&f, FlowHashes::of(&f)));
        }
    }

    /// Alone in the HashPipe, a flow's count is exact and never leaves stage 0.
    #[test]
    fn hashpipe_single_flow_is_exact(src in any::<u32>(), n in 1u32..200) {
        let mut hp = HashPipe::default();
        let f = flow(src);
        for k in 1..=n {
            prop_assert_eq!(hp.update(FlowHashes::of(&f)), k);
        }
        prop_assert_eq!(hp.estimate(FlowHashes::of(&f)), n);
        prop_assert_eq!(hp.entries().count(), 1);
    }

    /// HashPipe never over-estimates, never duplicates a key within a stage, and never holds more
    /// packets than it was fed.
    #[test]
    fn hashpipe_never_overestimates(pkts in prop::collection::vec(0u32..40, 0..300)) {
        let mut hp = HashPipe::new(HashPipeConfig::new(3, 4, 1024).unwrap()).unwrap();
        let mut truth: HashMap<FlowId, u32> = HashMap::new();
        for f in &pkts {
            let f = flow(*f);
            let own = hp.update(FlowHashes::of(&f));
            *truth.entry(f).or_default() += 1;
            prop_assert!(own >= 1 && own <= truth[&f]);
        }
        for (f, n) in &truth {
            prop_assert!(hp.estimate(FlowHashes::of(f)) <= *n);
        }
        let total: u32 = hp.entries().map(|e| e.3).sum();
        prop_assert!(total as usize <= pkts.len());
        let mut keys: Vec<_> = hp.entries().map(|e| (e.0, e.2)).collect();
        keys.sort();
        let len = keys.len();
        keys.dedup();
        prop_assert_eq!(keys.len(), len);
    }
}
