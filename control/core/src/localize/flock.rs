//! Flock (Harsh et al., CoNEXT 2023): the two-level packet model and greedy maximum-likelihood
//! search with joint likelihood exploration (JLE), as the Flock paper defines it (its
//! appendix helpers are buggy and are not followed).
//!
//! A flow with `w` candidate paths, `t` packets sent and `r` bad (lost) contributes, under a
//! hypothesis `H` (set of failed components) hitting `k` of its paths,
//! `LL_F(k) = ln(((w − k) + k·R_F) / w)` with
//! `ln R_F = r·ln(p_b/p_g) + (t − r)·ln((1 − p_b)/(1 − p_g))` (normalised by the no-failure
//! hypothesis), and `LL(H) = Σ_F LL_F + |H|·ln(ρ/(1 − ρ))`. Greedy starts from `H = ∅` and adds
//! the component with the largest `Δ_H(l) = LL(H ∪ {l}) − LL(H)` while that is `> 0` (ties: lowest
//! index). JLE keeps `Δ` for every component and, after adding `l*`, refreshes only the
//! contributions of flows crossing `l*` (Theorem 3), via per-flow counters `k_F` (#failed paths)
//! and `c_F(l)` (#non-failed paths containing `l`): `Δ_H(l, F) = LL_F(k_F + c_F(l)) − LL_F(k_F)`.
//!
//! Components are plain indices. [`Flock`] maps them to links by [`Granularity`]: directed links
//! for one-way flows and Canary segments, undirected links (`u` = directed `2u`, `2u + 1`) for
//! round-trip bounce probes (a round trip cannot tell which direction lost it).
//!
//! Not done here: device components and their 5× prior, parameter calibration (the paper's §5.2
//! rule lives in the eval layer, `canary eval --calibrate`), the optional `r ≥ 1` conditioning for
//! A2 input, per-flow (latency) analysis.

use serde::{Deserialize, Serialize};

use super::netbouncer::{undirected_set, ProbePath};
use super::vote007::FlowReport007;
use super::{BlamedLink, Localizer, Verdict};
use crate::topo::{LinkIx, Topology};

/// Model hyper-parameters. Default: Canary's Table III, whose p_b is garbled in print; read
/// with the Flock code's convention `p1 = 1 − p_b` and its default `p1 = 1 − 10⁻³`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlockParams {
    /// Per-packet problem probability on a good path.
    pub p_g: f64,
    /// Per-packet problem probability on a bad path.
    pub p_b: f64,
    /// Prior failure probability of a component.
    pub rho: f64,
}

impl Default for FlockParams {
    fn default() -> Self {
        Self {
            p_g: 2.5e-4,
            p_b: 1e-3,
            rho: 2e-2,
        }
    }
}

impl FlockParams {
    /// `ln(ρ / (1 − ρ))`, added once per failed component.
    pub fn log_prior(&self) -> f64 {
        (self.rho / (1.0 - self.rho)).ln()
    }

    /// `ln R_F` of a flow with `t` packets of which `r` were bad.
    pub fn log_r(&self, t: u64, r: u64) -> f64 {
        let r = r.min(t);
        r as f64 * (self.p_b / self.p_g).ln()
            + (t - r) as f64 * ((1.0 - self.p_b) / (1.0 - self.p_g)).ln()
    }
}

/// `LL_F(k) = ln(((w − k) + k·e^{log_r}) / w)`, by log-sum-exp; 0 when `k = 0`.
pub fn flow_ll(w: usize, k: usize, log_r: f64) -> f64 {
    debug_assert!(k <= w);
    if k == 0 {
        return 0.0;
    }
    if k == w {
        return log_r;
    }
    let a = ((w - k) as f64).ln();
    let b = (k as f64).ln() + log_r;
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln() - (w as f64).ln()
}

/// One observed flow: candidate paths (component indices; one path when it is known), packets
/// sent and lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlockFlow {
    pub paths: Vec<Vec<u32>>,
    pub sent: u64,
    pub lost: u64,
}

/// What the component indices of [`FlockInput::flows`] are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Granularity {
    /// Directed link indices ([`Topology::links`]).
    #[default]
    Directed,
    /// Undirected link `u` = directed links `2u` and `2u + 1`.
    Undirected,
}

/// Flock's input for the [`Localizer`] trait.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlockInput {
    pub granularity: Granularity,
    pub flows: Vec<FlockFlow>,
}

impl FlockInput {
    /// Flock(A1): one known-path flow per probe path (`t = sent`, `r = sent − received`), on
    /// undirected links (round trips), each link once per path.
    pub fn from_probes(probes: &[ProbePath]) -> Self {
        let flows = probes
            .iter()
            .map(|p| FlockFlow {
                paths: vec![undirected_set(&p.links)],
                sent: u64::from(p.sent),
                lost: u64::from(p.sent.saturating_sub(p.received)),
            })
            .collect();
        Self {
            granularity: Granularity::Undirected,
            flows,
        }
    }

    /// Flock(A2) (paper §6.2): 007's reports of flows with ≥ 1 retransmission and a traced path,
    /// one known-path flow each on directed links (`t` = packets, `r` = retransmissions).
    /// Untraced and loss-free flows are not in A2.
    pub fn from_flows_a2(flows: &[FlowReport007]) -> Self {
        let flows = flows
            .iter()
            .filter(|f| f.retransmissions > 0)
            .filter_map(|f| {
                let p = f.path.as_ref().filter(|p| !p.is_empty())?;
                Some(FlockFlow {
                    paths: vec![p.clone()],
                    sent: u64::from(f.packets),
                    lost: u64::from(f.retransmissions),
                })
            })
            .collect();
        Self {
            granularity: Granularity::Directed,
            flows,
        }
    }

    /// Flock fed Canary's passive measurements: one known-path flow per directed segment
    /// `(links, sent, lost)`.
    pub fn from_segments<'a>(segments: impl IntoIterator<Item = (&'a [LinkIx], u64, u64)>) -> Self {
        let flows = segments
            .into_iter()
            .map(|(links, sent, lost)| FlockFlow {
                paths: vec![links.to_vec()],
                sent,
                lost,
            })
            .collect();
        Self {
            granularity: Granularity::Directed,
            flows,
        }
    }
}

/// Per-flow data the search needs: de-duplicated paths, every component on them, `ln R_F`.
struct Prepared {
    paths: Vec<Vec<u32>>,
    comps: Vec<u32>,
    log_r: f64,
}

/// `LL(H)` from scratch (`in_h[l]` = component `l` failed), prior included.
pub fn log_likelihood(flows: &[FlockFlow], in_h: &[bool], params: &FlockParams) -> f64 {
    let mut ll = in_h.iter().filter(|&&b| b).count() as f64 * params.log_prior();
    for f in flows.iter().filter(|f| !f.paths.is_empty()) {
        let k = f
            .paths
            .iter()
            .filter(|p| p.iter().any(|&c| in_h[c as usize]))
            .count();
        ll += flow_ll(f.paths.len(), k, params.log_r(f.sent, f.lost));
    }
    ll
}

/// Greedy + JLE state: the current hypothesis and `Δ_H(l)` for every component.
pub struct FlockSearch {
    flows: Vec<Prepared>,
    /// Flows crossing each component.
    by_comp: Vec<Vec<u32>>,
    in_h: Vec<bool>,
    delta: Vec<f64>,
    order: Vec<(u32, f64)>,
    cnt_old: Vec<u32>,
    cnt_new: Vec<u32>,
}

impl FlockSearch {
    /// Builds the `Δ_∅` array (prior plus `LL_F(c_F(l))` over the flows crossing `l`).
    ///
    /// # Panics
    /// If a flow names a component `≥ n_components`.
    pub fn new(n_components: usize, flows: &[FlockFlow], params: &FlockParams) -> Self {
        let mut by_comp = vec![Vec::new(); n_components];
        let prepared: Vec<Prepared> = flows
            .iter()
            .filter(|f| !f.paths.is_empty())
            .map(|f| {
                let paths: Vec<Vec<u32>> = f
                    .paths
                    .iter()
                    .map(|p| {
                        let mut p = p.clone();
                        p.sort_unstable();
                        p.dedup();
                        p
                    })
                    .collect();
                let mut comps: Vec<u32> = paths.iter().flatten().copied().collect();
                comps.sort_unstable();
                comps.dedup();
                Prepared {
                    paths,
                    comps,
                    log_r: params.log_r(f.sent, f.lost),
                }
            })
            .collect();
        for (i, f) in prepared.iter().enumerate() {
            for &c in &f.comps {
                assert!((c as usize) < n_components, "component {c} out of range");
                by_comp[c as usize].push(i as u32);
            }
        }
        let mut s = Self {
            flows: prepared,
            by_comp,
            in_h: vec![false; n_components],
            delta: vec![params.log_prior(); n_components],
            order: Vec::new(),
            cnt_old: vec![0; n_components],
            cnt_new: vec![0; n_components],
        };
        for i in 0..s.flows.len() {
            Self::count(&s.flows[i], &s.in_h, None, &mut s.cnt_old);
            let f = &s.flows[i];
            for &c in &f.comps {
                let n = s.cnt_old[c as usize] as usize;
                s.delta[c as usize] += flow_ll(f.paths.len(), n, f.log_r);
                s.cnt_old[c as usize] = 0;
            }
        }
        s
    }

    /// Counters of flow `f` under `H` (plus `extra`): returns `k_F`, fills `cnt` with `c_F(l)`
    /// for the flow's components (the caller resets them).
    fn count(f: &Prepared, in_h: &[bool], extra: Option<u32>, cnt: &mut [u32]) -> usize {
        let mut k = 0;
        for p in &f.paths {
            if p.iter().any(|&c| in_h[c as usize] || Some(c) == extra) {
                k += 1;
            } else {
                for &c in p {
                    cnt[c as usize] += 1;
                }
            }
        }
        k
    }

    /// `Δ_H(l)` for every component (`−∞` for components already in `H`).
    pub fn delta(&self) -> &[f64] {
        &self.delta
    }

    /// Components added so far with their `Δ` at the time, in order.
    pub fn hypothesis(&self) -> &[(u32, f64)] {
        &self.order
    }

    /// The component with the largest `Δ` (lowest index on ties), if any is outside `H`.
    pub fn best(&self) -> Option<(u32, f64)> {
        let mut best: Option<(u32, f64)> = None;
        for (l, &d) in self.delta.iter().enumerate() {
            if !self.in_h[l] && best.is_none_or(|(_, b)| d > b) {
                best = Some((l as u32, d));
            }
        }
        best
    }

    /// Moves to `H ∪ {l}` and refreshes `Δ` for the flows crossing `l` (eq. 2).
    pub fn add(&mut self, l: u32) {
        let li = l as usize;
        assert!(!self.in_h[li], "component {l} already in the hypothesis");
        self.order.push((l, self.delta[li]));
        for &fi in &self.by_comp[li] {
            let f = &self.flows[fi as usize];
            let w = f.paths.len();
            let k_old = Self::count(f, &self.in_h, None, &mut self.cnt_old);
            let k_new = Self::count(f, &self.in_h, Some(l), &mut self.cnt_new);
            let (ll_old, ll_new) = (flow_ll(w, k_old, f.log_r), flow_ll(w, k_new, f.log_r));
            for &c in &f.comps {
                let ci = c as usize;
                if c != l && !self.in_h[ci] {
                    let new = flow_ll(w, k_new + self.cnt_new[ci] as usize, f.log_r) - ll_new;
                    let old = flow_ll(w, k_old + self.cnt_old[ci] as usize, f.log_r) - ll_old;
                    self.delta[ci] += new - old;
                }
                self.cnt_old[ci] = 0;
                self.cnt_new[ci] = 0;
            }
        }
        self.in_h[li] = true;
        self.delta[li] = f64::NEG_INFINITY;
    }
}

/// Greedy MLE: adds the best component while its `Δ > 0`. Returns `(component, Δ at insertion)`
/// in insertion order (Flock's ranking).
pub fn greedy(n_components: usize, flows: &[FlockFlow], params: &FlockParams) -> Vec<(u32, f64)> {
    let mut search = FlockSearch::new(n_components, flows, params);
    while let Some((l, d)) = search.best() {
        if d <= 0.0 {
            break;
        }
        search.add(l);
    }
    search.order
}

/// Flock as a [`Localizer`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Flock {
    pub params: FlockParams,
}

impl Localizer for Flock {
    type Input = FlockInput;

    fn name(&self) -> &'static str {
        "flock"
    }

    /// Blames the greedy hypothesis (both directions of an undirected component), all at stage
    /// 0. Flock's model is binary: `loss` is a score, the pooled loss of the flows whose every
    /// candidate path crosses the component (0 if none).
    fn localize(&self, topo: &Topology, input: &FlockInput) -> Verdict {
        let n = match input.granularity {
            Granularity::Directed => topo.links.len(),
            Granularity::Undirected => topo.links.len() / 2,
        };
        let found = greedy(n, &input.flows, &self.params);
        let mut blamed = Vec::new();
        for &(c, _) in &found {
            let (mut sent, mut lost) = (0u64, 0u64);
            for f in &input.flows {
                if !f.paths.is_empty() && f.paths.iter().all(|p| p.contains(&c)) {
                    sent += f.sent;
                    lost += f.lost.min(f.sent);
                }
            }
            let loss = if sent > 0 {
                lost as f64 / sent as f64
            } else {
                0.0
            };
            let links: Vec<LinkIx> = match input.granularity {
                Granularity::Directed => vec![c],
                Granularity::Undirected => vec![2 * c, 2 * c + 1],
            };
            for link in links {
                blamed.push(BlamedLink {
                    link,
                    loss,
                    stage: 0,
                });
            }
        }
        let mut all: Vec<LinkIx> = blamed.iter().map(|b| b.link).collect();
        all.sort_unstable();
        Verdict {
            blamed,
            stages: vec![all],
            ..Default::default()
        }
    }
}
