//! deTector (Peng et al., USENIX ATC 2017): a topology-aware prober. [`pmc`] chooses a small
//! probe matrix of ToR-to-ToR paths with α-coverage and β-identifiability (paper §4); the
//! diagnoser localizes losses from those paths' end-to-end results alone.
//!
//! **The localization step is a reconstruction.** The supplied text of the paper stops at §4.4;
//! its loss-localization algorithm PLL (§5) is missing. What the paper itself says: PLL adapts an
//! existing localization algorithm to the loss patterns of large DCNs, runs within seconds, names
//! the faulty links and estimates their loss rates. Others describe it as a greedy heuristic that
//! blames the fewest links, filtered by a *hit ratio* (NetBouncer §6.5, settings 0.6 and 0.9).
//! [`pll`] therefore implements a reconstruction — Tomo-style greedy cover with a hit-ratio
//! filter, since the supplied text lacks PLL's body — and every threshold in [`DetectorParams`] is ours, not the paper's:
//! 1. a path is lossy when it lost ≥ 1 probe (or, if `tau_path` is set, its loss rate ≥ it);
//! 2. `hit(ℓ)` = lossy paths through ℓ / probed paths through ℓ; candidates have
//!    `hit ≥ theta_hit`;
//! 3. repeatedly blame the candidate on the most still-unexplained lossy paths (ties: higher hit,
//!    then higher mean loss of its lossy paths, then lower id) until none is left or the next
//!    one would explain fewer than `theta_cov` of all lossy paths;
//! 4. a blamed link's loss is estimated from the paths no other blamed link lies on (all of its
//!    lossy paths if there are none): `1 − Σ delivered / Σ sent`. Probes are round trips, so this
//!    is the loss of both directions together.
//!
//! Links are undirected (a probe returns along its path, so a loss on either direction shows on
//! the same path); a blamed link is reported in both directions with the same estimate.
//! Not done: server–ToR links, latency-as-loss, pinger failures.

pub mod pmc;

use serde::{Deserialize, Serialize};

pub use pmc::{candidate_paths, probe_matrix, undirected, PmcParams, ProbeMatrix, SetCount};

use super::{BlamedLink, Localizer, Verdict};
use crate::topo::{LinkIx, Topology};

/// One probed path's result in a window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathProbe {
    /// Directed links the probes crossed, both directions (out and back).
    pub links: Vec<LinkIx>,
    /// Probes sent (confirmation probes included).
    pub sent: u32,
    /// Probes whose echo never came back.
    pub lost: u32,
}

/// PLL parameters (all *reconstructed*, see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DetectorParams {
    /// Minimum hit ratio for a link to be a candidate (NetBouncer evaluated 0.6 and 0.9).
    pub theta_hit: f64,
    /// Minimum share of lossy paths the next blamed link must explain (0 = off).
    pub theta_cov: f64,
    /// A path is lossy when its loss rate is ≥ this; `None` = when it lost any probe.
    pub tau_path: Option<f64>,
}

impl Default for DetectorParams {
    fn default() -> Self {
        Self {
            theta_hit: 0.9,
            theta_cov: 0.0,
            tau_path: None,
        }
    }
}

/// The deTector localizer over one window of probe-matrix results.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Detector {
    pub params: DetectorParams,
}

/// A link PLL blames.
#[derive(Clone, Debug, PartialEq)]
pub struct Suspect {
    /// Undirected link id as given in the input paths.
    pub link: u32,
    /// Estimated round-trip loss rate.
    pub loss: f64,
    pub hit: f64,
}

/// PLL over paths given as undirected link ids `< n_links` with `(sent, lost)`; ranked by
/// estimated loss, highest first.
pub fn pll(
    n_links: usize,
    paths: &[(Vec<u32>, u32, u32)],
    params: &DetectorParams,
) -> Vec<Suspect> {
    let q = |&(_, sent, lost): &(Vec<u32>, u32, u32)| {
        if sent == 0 {
            0.0
        } else {
            f64::from(lost) / f64::from(sent)
        }
    };
    let lossy: Vec<bool> = paths
        .iter()
        .map(|p| match params.tau_path {
            None => p.2 >= 1,
            Some(t) => p.2 >= 1 && q(p) >= t,
        })
        .collect();
    let n_lossy = lossy.iter().filter(|&&b| b).count();
    let mut probed = vec![0u32; n_links];
    let mut on_lossy: Vec<Vec<usize>> = vec![Vec::new(); n_links];
    for (i, p) in paths.iter().enumerate() {
        for &l in &p.0 {
            probed[l as usize] += 1;
            if lossy[i] {
                on_lossy[l as usize].push(i);
            }
        }
    }
    let hit = |l: usize| on_lossy[l].len() as f64 / f64::from(probed[l].max(1));
    let mean_q = |l: usize| {
        on_lossy[l].iter().map(|&i| q(&paths[i])).sum::<f64>() / on_lossy[l].len().max(1) as f64
    };
    let cands: Vec<usize> = (0..n_links)
        .filter(|&l| !on_lossy[l].is_empty() && hit(l) >= params.theta_hit)
        .collect();
    let mut unexplained = lossy.clone();
    let mut chosen: Vec<usize> = Vec::new();
    loop {
        let best = cands
            .iter()
            .filter(|l| !chosen.contains(l))
            .map(|&l| {
                let c = on_lossy[l].iter().filter(|&&i| unexplained[i]).count();
                (c, l)
            })
            .max_by(|a, b| {
                a.0.cmp(&b.0)
                    .then(hit(a.1).total_cmp(&hit(b.1)))
                    .then(mean_q(a.1).total_cmp(&mean_q(b.1)))
                    .then(b.1.cmp(&a.1))
            });
        let Some((c, l)) = best else { break };
        if c == 0 || (c as f64) < params.theta_cov * n_lossy as f64 {
            break;
        }
        chosen.push(l);
        for &i in &on_lossy[l] {
            unexplained[i] = false;
        }
    }
    let mut out: Vec<Suspect> = chosen
        .iter()
        .map(|&l| {
            let alone: Vec<usize> = (0..paths.len())
                .filter(|&i| {
                    paths[i].0.contains(&(l as u32))
                        && chosen
                            .iter()
                            .all(|&o| o == l || !paths[i].0.contains(&(o as u32)))
                })
                .collect();
            let basis = if alone.is_empty() {
                &on_lossy[l]
            } else {
                &alone
            };
            let sent: f64 = basis.iter().map(|&i| f64::from(paths[i].1)).sum();
            let lost: f64 = basis.iter().map(|&i| f64::from(paths[i].2)).sum();
            Suspect {
                link: l as u32,
                loss: if sent > 0.0 { lost / sent } else { 0.0 },
                hit: hit(l),
            }
        })
        .collect();
    out.sort_by(|a, b| b.loss.total_cmp(&a.loss).then(a.link.cmp(&b.link)));
    out
}

impl Localizer for Detector {
    type Input = Vec<PathProbe>;

    fn name(&self) -> &'static str {
        "deTector"
    }

    /// Undirected link ids are the canonical directed indices ([`undirected`]).
    fn localize(&self, topo: &Topology, input: &Self::Input) -> Verdict {
        let paths: Vec<(Vec<u32>, u32, u32)> = input
            .iter()
            .map(|p| {
                let mut v: Vec<u32> = p.links.iter().map(|&l| undirected(topo, l)).collect();
                v.sort_unstable();
                v.dedup();
                (v, p.sent, p.lost)
            })
            .collect();
        let mut blamed = Vec::new();
        for s in pll(topo.links.len(), &paths, &self.params) {
            for link in [s.link, topo.reverse(s.link)] {
                blamed.push(BlamedLink {
                    link,
                    loss: s.loss,
                    stage: 0,
                });
            }
        }
        let stages = vec![blamed.iter().map(|b| b.link).collect()];
        Verdict {
            blamed,
            stages,
            ..Default::default()
        }
    }
}
