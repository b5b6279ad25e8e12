//! Unit tests of deTector's PMC (coverage, identifiability by brute force, path counts) and of
//! the reconstructed PLL on hand-made path results.

use std::collections::{BTreeSet, HashSet};

use super::detector::{candidate_paths, pll, undirected, DetectorParams, PmcParams, SetCount};
use super::{probe_matrix, Detector, Localizer, PathProbe};
use crate::topo::{fattree::fattree, LinkIx, MonitorPlacement, Routing, Topology};

fn setup(k: u32) -> (Topology, Routing) {
    let t = fattree(k, MonitorPlacement::Bottom).unwrap();
    let r = Routing::new(&t);
    (t, r)
}

/// Undirected link (canonical index) → set of chosen paths through it.
fn signatures(t: &Topology, paths: &[Vec<u32>]) -> Vec<(LinkIx, BTreeSet<usize>)> {
    (0..t.links.len() as LinkIx)
        .filter(|&l| undirected(t, l) == l)
        .map(|l| {
            let sig = paths
                .iter()
                .enumerate()
                .filter(|(_, p)| {
                    p.windows(2)
                        .any(|h| undirected(t, t.link(h[0], h[1]).unwrap()) == l)
                })
                .map(|(i, _)| i)
                .collect();
            (l, sig)
        })
        .collect()
}

#[test]
fn pmc_k4_covers_and_identifies_every_single_link_failure() {
    let (t, r) = setup(4);
    for (alpha, set_count) in [
        (1, SetCount::Split),
        (2, SetCount::Split),
        (2, SetCount::Touched),
    ] {
        let params = PmcParams {
            alpha,
            beta: 1,
            set_count,
        };
        let m = probe_matrix(&t, &r, &params);
        assert!(m.identifiable && m.covered, "{params:?}");
        let sigs = signatures(&t, &m.paths);
        assert_eq!(sigs.len(), 32);
        let distinct: HashSet<&BTreeSet<usize>> = sigs.iter().map(|s| &s.1).collect();
        assert_eq!(
            distinct.len(),
            32,
            "{params:?}: a single failure is always identifiable"
        );
        for (l, s) in &sigs {
            assert!(
                s.len() >= alpha as usize,
                "{params:?}: link {l} on {} paths",
                s.len()
            );
        }
    }
}

#[test]
fn pmc_selects_far_fewer_paths_than_all_tor_pairs() {
    for (k, cands, max_paths) in [(4u32, 104usize, 24usize), (8, 7360, 192)] {
        let (t, r) = setup(k);
        assert_eq!(candidate_paths(&t, &r).len(), cands);
        let m = probe_matrix(&t, &r, &PmcParams::default());
        let tor_pairs = (k * k / 2) * (k * k / 2 - 1) / 2;
        println!(
            "k={k}: PMC(α=2, β=1) picks {} of {cands} paths ({tor_pairs} ToR pairs)",
            m.paths.len()
        );
        assert!(m.identifiable && m.covered);
        for (alpha, sc) in [
            (1, SetCount::Split),
            (1, SetCount::Touched),
            (2, SetCount::Touched),
        ] {
            let p = PmcParams {
                alpha,
                beta: 1,
                set_count: sc,
            };
            println!(
                "k={k}: {p:?} picks {}",
                probe_matrix(&t, &r, &p).paths.len()
            );
        }
        assert!(m.paths.len() <= max_paths, "k={k}: {} paths", m.paths.len());
        // α-coverage needs at least α·|E| / 4 paths (a path has at most 4 links).
        assert!(m.paths.len() >= (2 * t.undirected_links()).div_ceil(4));
    }
}

#[test]
fn pmc_beta2_on_k4_separates_pairs_when_it_claims_to() {
    let (t, r) = setup(4);
    let m = probe_matrix(
        &t,
        &r,
        &PmcParams {
            alpha: 1,
            beta: 2,
            set_count: SetCount::Split,
        },
    );
    let sigs = signatures(&t, &m.paths);
    let mut seen = HashSet::new();
    let mut unique = true;
    for i in 0..sigs.len() {
        unique &= seen.insert(sigs[i].1.clone());
        for j in i + 1..sigs.len() {
            unique &= seen.insert(
                sigs[i]
                    .1
                    .union(&sigs[j].1)
                    .copied()
                    .collect::<BTreeSet<_>>(),
            );
        }
    }
    println!(
        "k=4 β=2: {} paths, identifiable = {}",
        m.paths.len(),
        m.identifiable
    );
    assert_eq!(unique, m.identifiable);
    let m1 = probe_matrix(
        &t,
        &r,
        &PmcParams {
            alpha: 1,
            beta: 1,
            set_count: SetCount::Split,
        },
    );
    assert!(m.paths.len() >= m1.paths.len());
}

#[test]
fn pll_blames_the_shared_link_and_estimates_its_loss() {
    // Links 0..6. Link 0 is bad: both its paths lose ~10 %. Link 1 shares one lossy path with
    // link 0 but also lies on two clean paths (hit 1/3). Link 5 lies on one noisy path only.
    let paths = vec![
        (vec![0, 1], 100, 10),
        (vec![0, 2], 100, 12),
        (vec![1, 3], 100, 0),
        (vec![1, 4], 100, 0),
        (vec![2, 4], 100, 0),
        (vec![3, 5], 100, 0),
        (vec![4, 5], 100, 1),
    ];
    let p = DetectorParams::default();
    let s = pll(6, &paths, &p);
    assert_eq!(s.iter().map(|x| x.link).collect::<Vec<_>>(), vec![0]);
    assert!((s[0].loss - 0.11).abs() < 1e-12);
    assert_eq!(s[0].hit, 1.0);
    // A lower hit-ratio threshold admits link 5 (hit 1/2) and link 4 (1/3 < 0.4: still out).
    let lax = DetectorParams {
        theta_hit: 0.4,
        ..p.clone()
    };
    let got: Vec<u32> = pll(6, &paths, &lax).iter().map(|x| x.link).collect();
    assert_eq!(got, vec![0, 5]);
    // θ_cov = 0.5: the second link explains 1 of 3 lossy paths and is dropped.
    let cov = DetectorParams {
        theta_cov: 0.5,
        ..lax
    };
    assert_eq!(pll(6, &paths, &cov).len(), 1);
}

#[test]
fn detector_blames_both_directions() {
    let (t, _) = setup(4);
    let l = t.link_by_names("edge0_0", "agg0_0").unwrap();
    let other = t.link_by_names("agg0_0", "edge0_1").unwrap();
    let probe = |links: Vec<LinkIx>, lost| PathProbe {
        links,
        sent: 100,
        lost,
    };
    let input = vec![
        probe(vec![l, other, t.reverse(other), t.reverse(l)], 20),
        probe(vec![t.reverse(other), other], 0),
        probe(vec![t.reverse(other), other], 0),
    ];
    let v = Detector::default().localize(&t, &input);
    let mut got: Vec<LinkIx> = v.blamed.iter().map(|b| b.link).collect();
    got.sort_unstable();
    let mut want = vec![l, t.reverse(l)];
    want.sort_unstable();
    assert_eq!(got, want);
    assert!(v.blamed.iter().all(|b| (b.loss - 0.2).abs() < 1e-12));
}
