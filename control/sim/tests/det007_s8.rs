//! Quick seeded measurement in the Canary paper's Fig. 8 setting for 007 and deTector: k = 8 fat-tree,
//! 26 bidirectional faulty links, 52 directed loss rates 11/13/9/9/10 over
//! [0.2,1] / [0.1,0.2) / [0.05,0.1) / [0.01,0.05) / [0.001,0.01), healthy links lossless.
//! Scored on directed links. Ignored by default (prints a table):
//! `cargo test -p canary-sim --test det007_s8 -- --ignored --nocapture`.

use std::collections::HashSet;

use canary_core::localize::vote007::{ranking, tally};
use canary_core::localize::{
    probe_matrix, Detector, DetectorParams, Localizer, PmcParams, Vote007, Vote007Params,
};
use canary_core::topo::{fattree::fattree, LinkIx, MonitorPlacement, Routing, Topology};
use canary_sim::{matrix_probes, tcp007};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The paper's S8 faults: `random:10%` of a k = 8 fat-tree (26 links, 52 directions).
fn faults(t: &Topology, rng: &mut impl Rng) -> Vec<f64> {
    let f = canary_core::fault::random(t, 10.0, rng);
    assert_eq!(f.len(), 52);
    canary_core::fault::loss_vector(t, &f, 0.0, rng)
}

fn score(loss: &[f64], blamed: impl IntoIterator<Item = LinkIx>) -> (usize, usize) {
    let b: HashSet<LinkIx> = blamed.into_iter().collect();
    let tp = b.iter().filter(|&&l| loss[l as usize] > 0.0).count();
    (tp, b.len() - tp)
}

#[test]
#[ignore]
fn s8_measurement() {
    let t = fattree(8, MonitorPlacement::Bottom).unwrap();
    let r = Routing::new(&t);
    let m = probe_matrix(&t, &r, &PmcParams::default());
    println!("PMC α=2 β=1: {} paths", m.paths.len());
    println!("seed | 007 TP/FP | 007(recomp) TP/FP | 007(0.5 %) TP/FP | 007 top-52 TP | bad flows | dT0.9 TP/FP | dT0.6 TP/FP");
    for seed in 0..10u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let loss = faults(&t, &mut rng);
        let e = tcp007::simulate_epoch(&t, &r, &loss, &tcp007::Tcp007Params::default(), &mut rng);
        let z = Vote007::default().localize(&t, &e.reports);
        let zr = Vote007 {
            params: Vote007Params {
                total: canary_core::localize::VoteTotal::Recomputed,
                ..Vote007Params::default()
            },
        }
        .localize(&t, &e.reports);
        let z5 = Vote007 {
            params: Vote007Params {
                threshold: 0.005,
                ..Vote007Params::default()
            },
        }
        .localize(&t, &e.reports);
        let v = tally(t.links.len(), &e.reports, &Vote007Params::default());
        let cast = e.reports.iter().filter(|f| f.path.is_some()).count() as f64;
        let max_share = ranking(&v)[0].1 / cast;
        let top = ranking(&v).into_iter().take(52).map(|x| x.0);
        let probes = matrix_probes::probe_paths(&t, &m.paths, &loss, &Default::default(), &mut rng);
        let d9 = Detector::default().localize(&t, &probes);
        let d6 = Detector {
            params: DetectorParams {
                theta_hit: 0.6,
                ..DetectorParams::default()
            },
        }
        .localize(&t, &probes);
        let bad_flows = e.reports.iter().filter(|f| f.path.is_some()).count();
        let s = |v: &canary_core::localize::Verdict| score(&loss, v.blamed.iter().map(|b| b.link));
        println!(
            "{seed} | {:?} | {:?} | {:?} | {} | {bad_flows} (denied {}+{}, max share {max_share:.4}) | {:?} | {:?}",
            s(&z),
            s(&zr),
            s(&z5),
            score(&loss, top).0,
            e.denied_host,
            e.denied_switch,
            s(&d9),
            s(&d6)
        );
    }
}
