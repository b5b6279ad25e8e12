//! deTector's probing (paper §3): each path of the probe matrix is probed round trip — source
//! ToR to destination ToR along the chosen switches (source routing, IP-in-IP to the core) and
//! back along the same switches — `n` times per window, with independent Bernoulli drops on
//! every directed link crossed.
//!
//! Confirmation probes: on every lost probe the pinger immediately sends `confirmations` (paper:
//! 2) identical probes; they are counted in `sent`/`lost` like the others and trigger no further
//! confirmations. In this stationary loss model they only add samples (the ratio `lost/sent`
//! stays unbiased); in the paper they separate persistent from transient loss patterns.
//!
//! Not modelled: pingers (2–4 servers per ToR, each path given to ≥ 2 of them), server–ToR
//! links, latency-as-loss, probe timing.

use canary_core::localize::PathProbe;
use canary_core::topo::{LinkIx, SwitchIx, Topology};
use rand::Rng;

/// Probing parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct PmProbeParams {
    /// Probes per path per window.
    pub probes: u32,
    /// Confirmation probes per lost probe.
    pub confirmations: u32,
}

impl Default for PmProbeParams {
    fn default() -> Self {
        Self {
            probes: 100,
            confirmations: 2,
        }
    }
}

/// Directed links of the round trip over `path` (out, then back).
pub fn round_trip(topo: &Topology, path: &[SwitchIx]) -> Vec<LinkIx> {
    let out = path
        .windows(2)
        .map(|h| topo.link(h[0], h[1]).expect("probe paths follow links"));
    let back = path
        .windows(2)
        .rev()
        .map(|h| topo.link(h[1], h[0]).expect("probe paths follow links"));
    out.chain(back).collect()
}

/// Probes every path once per window. `loss[l]` is the drop probability of directed link `l`.
pub fn probe_paths(
    topo: &Topology,
    paths: &[Vec<SwitchIx>],
    loss: &[f64],
    params: &PmProbeParams,
    rng: &mut impl Rng,
) -> Vec<PathProbe> {
    paths
        .iter()
        .map(|p| {
            let links = round_trip(topo, p);
            let lost_one = |rng: &mut dyn rand::RngCore| {
                links.iter().any(|&l| rng.random_bool(loss[l as usize]))
            };
            let (mut sent, mut lost) = (0, 0);
            for _ in 0..params.probes {
                sent += 1;
                if lost_one(rng) {
                    lost += 1;
                    for _ in 0..params.confirmations {
                        sent += 1;
                        lost += u32::from(lost_one(rng));
                    }
                }
            }
            PathProbe { links, sent, lost }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::localize::{probe_matrix, Detector, Localizer, PmcParams};
    use canary_core::topo::{fattree::fattree, MonitorPlacement, Routing};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn round_trip_returns_over_the_same_switches() {
        let t = fattree(4, MonitorPlacement::Bottom).unwrap();
        let p: Vec<SwitchIx> = ["edge0_0", "agg0_1", "core2", "agg2_1", "edge2_0"]
            .iter()
            .map(|n| t.switch(n).unwrap())
            .collect();
        let rt = round_trip(&t, &p);
        assert_eq!(rt.len(), 8);
        for i in 0..4 {
            assert_eq!(rt[7 - i], t.reverse(rt[i]));
        }
    }

    #[test]
    fn pll_finds_a_single_ten_percent_link_on_k4() {
        let t = fattree(4, MonitorPlacement::Bottom).unwrap();
        let r = Routing::new(&t);
        let m = probe_matrix(&t, &r, &PmcParams::default());
        for (seed, name) in [(1u64, ["agg1_0", "core1"]), (2, ["edge3_1", "agg3_0"])] {
            let bad = t.link_by_names(name[0], name[1]).unwrap();
            let mut loss = vec![0.0; t.links.len()];
            loss[bad as usize] = 0.1; // one direction only
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let probes = probe_paths(&t, &m.paths, &loss, &PmProbeParams::default(), &mut rng);
            assert!(probes.iter().all(|p| p.sent >= 100));
            let v = Detector::default().localize(&t, &probes);
            let mut got: Vec<LinkIx> = v.blamed.iter().map(|b| b.link).collect();
            got.sort_unstable();
            let mut want = vec![bad, t.reverse(bad)];
            want.sort_unstable();
            assert_eq!(got, want, "{name:?}");
            let est = v.blamed[0].loss;
            assert!((0.06..0.14).contains(&est), "{name:?}: estimate {est}");
        }
    }
}
