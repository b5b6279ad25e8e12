//! NetBouncer (Tan et al., NSDI 2019) over bounce-probe results, and NetBouncer-stage (Canary
//! Sec. IV-D: CD in several rounds, links found in a round removed before the next).
//!
//! Model: **undirected** links. A bounce probe crosses every link of its path twice (up and
//! down); the paper's `x_ℓ` is the round-trip success of undirected link `ℓ` and eq. 1 is
//! `y_j = Π_{ℓ∈p_j} x_ℓ` with every undirected link counted **once** per path. So a path
//! `{a→b, b→a}` contributes one factor `x_{ab}`, and `1 − x_{ab}` estimates the round-trip loss
//! `1 − (1−d_{a→b})(1−d_{b→a})`. Undirected link `u` is the directed pair `{2u, 2u+1}`
//! ([`Topology::new`] stores both directions of each physical link next to each other).
//!
//! Pipeline ([`NetBouncer::run`]): drop paths with `sent = 0`; optional device-failure detection
//! (DFD: a switch crossed by probes but by no loss-free path is a bad device, and every path
//! through a bad device is removed); then `rounds` CD runs ([`cd::solve`], λ from `cd`), each
//! freezing at 0 the links blamed by the previous rounds; a link is blamed when its estimate
//! passes [`Threshold`]. `rounds = 1` is plain NetBouncer.
//!
//! Not done here: building the probing plan or simulating probes (see [`bounce_plan`] and
//! `canary_sim::bounce_probes`), RTT analysis, devices other than switches (no servers in the plan).

use serde::{Deserialize, Serialize};

use super::canary::BLAME_EPS;
use super::cd::{self, CdParams, CdProblem};
use super::{BlamedLink, Localizer, Verdict};
use crate::topo::{LinkIx, SwitchIx, Topology};

/// One probed path and its outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbePath {
    /// Directed links in the order the probes walk them.
    pub links: Vec<LinkIx>,
    pub sent: u32,
    pub received: u32,
}

/// When CD's estimate `x` makes a link bad.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Threshold {
    /// `x < 1` (up to `1e-12`): how the Canary authors flagged links in their comparison
    /// (the NetBouncer paper's own threshold is 0.999).
    BelowOne,
    /// `x ≤ t`: the NetBouncer paper uses `t = 0.999` in simulation, `0.99` in production.
    AtMost(f64),
}

impl Threshold {
    pub fn is_bad(self, x: f64) -> bool {
        match self {
            Self::BelowOne => x < 1.0 - BLAME_EPS,
            Self::AtMost(t) => x <= t,
        }
    }
}

/// NetBouncer's knobs. Default: Canary's comparison (no DFD, `x < 1`, λ = 1, one round).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetBouncerParams {
    pub cd: CdParams,
    pub threshold: Threshold,
    /// Run device-failure detection first.
    pub dfd: bool,
    /// DFD also flags a switch whose loss-free share of paths is below this (0 = the paper's
    /// strict rule: flagged only with no loss-free path at all).
    pub dfd_min_clean_fraction: f64,
    /// CD rounds: 1 = NetBouncer, 5 = NetBouncer-stage.
    pub rounds: usize,
}

impl Default for NetBouncerParams {
    fn default() -> Self {
        Self {
            cd: CdParams::default(),
            threshold: Threshold::BelowOne,
            dfd: false,
            dfd_min_clean_fraction: 0.0,
            rounds: 1,
        }
    }
}

impl NetBouncerParams {
    /// The paper's own setting: DFD on, bad iff `x ≤ 0.999`.
    pub fn paper() -> Self {
        Self {
            dfd: true,
            threshold: Threshold::AtMost(0.999),
            ..Self::default()
        }
    }

    /// NetBouncer-stage as Canary evaluates it: 5 rounds, `x < 1`, no DFD.
    pub fn staged() -> Self {
        Self {
            rounds: 5,
            ..Self::default()
        }
    }
}

/// Full NetBouncer output, on undirected links (`u` = directed links `2u`, `2u + 1`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NbReport {
    /// Switches flagged by DFD, ascending.
    pub bad_devices: Vec<SwitchIx>,
    /// `(undirected link, round, estimated round-trip loss 1 − x)` in discovery order.
    pub bad_links: Vec<(u32, usize, f64)>,
    /// Last CD estimate per undirected link; `None` = on no remaining path (unknown).
    pub x: Vec<Option<f64>>,
    /// Undirected links blamed after each round, cumulative, ascending.
    pub rounds: Vec<Vec<u32>>,
    /// CD sweeps per round.
    pub iterations: Vec<usize>,
}

/// NetBouncer (and NetBouncer-stage) as a [`Localizer`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NetBouncer {
    pub params: NetBouncerParams,
}

/// Undirected index of a directed link.
pub fn undirected(l: LinkIx) -> u32 {
    l / 2
}

/// Sorted, de-duplicated undirected links of a directed path.
pub fn undirected_set(links: &[LinkIx]) -> Vec<u32> {
    let mut v: Vec<u32> = links.iter().map(|&l| undirected(l)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// NetBouncer's probing plan on a layered Clos: for every (bottom, top-layer) switch pair, every
/// strictly upward path bottom→…→top followed by the same links back down (in a fat-tree exactly
/// one path per pair: edge→agg→core→agg→edge). Directed links, in walking order.
pub fn bounce_plan(topo: &Topology) -> Vec<Vec<LinkIx>> {
    let top = topo.top_layer();
    let layer = |s: SwitchIx| topo.switches[s as usize].layer;
    let n = topo.switches.len() as SwitchIx;
    let mut plan = Vec::new();
    for t in (0..n).filter(|&s| layer(s) == top && top > 0) {
        // Switches from which `t` is reachable by upward hops only.
        let mut reach = vec![false; n as usize];
        reach[t as usize] = true;
        for l in (0..top).rev() {
            for s in (0..n).filter(|&s| layer(s) == l) {
                reach[s as usize] = topo
                    .neighbors(s)
                    .iter()
                    .any(|&v| layer(v) == l + 1 && reach[v as usize]);
            }
        }
        for b in (0..n).filter(|&s| layer(s) == 0 && reach[s as usize]) {
            let mut stack = vec![vec![b]];
            while let Some(up) = stack.pop() {
                let u = *up.last().expect("non-empty");
                if u == t {
                    let link = |a, c| topo.link(a, c).expect("adjacent switches");
                    let mut links: Vec<LinkIx> = up.windows(2).map(|w| link(w[0], w[1])).collect();
                    links.extend(up.windows(2).rev().map(|w| link(w[1], w[0])));
                    plan.push(links);
                    continue;
                }
                for &v in topo.neighbors(u).iter().rev() {
                    if layer(v) == layer(u) + 1 && reach[v as usize] {
                        let mut next = up.clone();
                        next.push(v);
                        stack.push(next);
                    }
                }
            }
        }
    }
    plan
}

/// DFD: switches crossed by some path but by no loss-free one (or by too few, see
/// [`NetBouncerParams::dfd_min_clean_fraction`]). Ascending.
pub fn detect_bad_devices(
    topo: &Topology,
    probes: &[ProbePath],
    min_clean_fraction: f64,
) -> Vec<SwitchIx> {
    let n = topo.switches.len();
    let (mut total, mut clean) = (vec![0u32; n], vec![0u32; n]);
    for p in probes.iter().filter(|p| p.sent > 0) {
        let mut devs: Vec<SwitchIx> = p
            .links
            .iter()
            .flat_map(|&l| [topo.links[l as usize].from, topo.links[l as usize].to])
            .collect();
        devs.sort_unstable();
        devs.dedup();
        for d in devs {
            total[d as usize] += 1;
            clean[d as usize] += u32::from(p.received >= p.sent);
        }
    }
    (0..n)
        .filter(|&s| {
            total[s] > 0
                && (clean[s] == 0 || f64::from(clean[s]) < min_clean_fraction * f64::from(total[s]))
        })
        .map(|s| s as SwitchIx)
        .collect()
}

impl NetBouncer {
    pub fn new(params: NetBouncerParams) -> Self {
        Self { params }
    }

    /// Runs DFD (if enabled) and the CD rounds.
    pub fn run(&self, topo: &Topology, probes: &[ProbePath]) -> NbReport {
        let p = &self.params;
        let n_und = topo.links.len() / 2;
        debug_assert!(
            (0..topo.links.len() as LinkIx).all(|l| topo.reverse(l) == l ^ 1),
            "directions of a physical link are stored next to each other"
        );
        let bad_devices = if p.dfd {
            detect_bad_devices(topo, probes, p.dfd_min_clean_fraction)
        } else {
            Vec::new()
        };
        let mut is_bad_dev = vec![false; topo.switches.len()];
        for &d in &bad_devices {
            is_bad_dev[d as usize] = true;
        }
        let through_bad = |pp: &ProbePath| {
            pp.links.iter().any(|&l| {
                let lk = topo.links[l as usize];
                is_bad_dev[lk.from as usize] || is_bad_dev[lk.to as usize]
            })
        };
        let kept: Vec<&ProbePath> = probes
            .iter()
            .filter(|pp| pp.sent > 0 && !through_bad(pp))
            .collect();
        let paths: Vec<Vec<u32>> = kept.iter().map(|pp| undirected_set(&pp.links)).collect();
        let y: Vec<f64> = kept
            .iter()
            .map(|pp| (f64::from(pp.received) / f64::from(pp.sent)).min(1.0))
            .collect();
        let weight: Vec<f64> = kept.iter().map(|pp| f64::from(pp.sent)).collect();
        let mut covered = vec![false; n_und];
        for &u in paths.iter().flatten() {
            covered[u as usize] = true;
        }

        let mut frozen: Vec<Option<f64>> = vec![None; n_und];
        let mut report = NbReport {
            bad_devices,
            x: vec![None; n_und],
            ..NbReport::default()
        };
        for round in 0..p.rounds.max(1) {
            let problem = CdProblem {
                n_links: n_und,
                paths: &paths,
                y: &y,
                weight: &weight,
                frozen: &frozen,
            };
            let sol = cd::solve(&problem, &p.cd);
            for (u, &xu) in sol.x.iter().enumerate() {
                if !covered[u] || frozen[u].is_some() {
                    continue;
                }
                report.x[u] = Some(xu);
                if p.threshold.is_bad(xu) {
                    frozen[u] = Some(0.0);
                    report.bad_links.push((u as u32, round, 1.0 - xu));
                }
            }
            let mut so_far: Vec<u32> = report.bad_links.iter().map(|b| b.0).collect();
            so_far.sort_unstable();
            report.rounds.push(so_far);
            report.iterations.push(sol.iterations);
        }
        report
    }
}

impl Localizer for NetBouncer {
    type Input = Vec<ProbePath>;

    fn name(&self) -> &'static str {
        if self.params.rounds > 1 {
            "netbouncer-stage"
        } else {
            "netbouncer"
        }
    }

    /// Blames both directions of every bad undirected link (loss = `1 − x`, stage = round) and
    /// every link of every bad device (stage 0, loss = the device's pooled path loss, a score).
    fn localize(&self, topo: &Topology, input: &Vec<ProbePath>) -> Verdict {
        let report = self.run(topo, input);
        let mut blamed = Vec::new();
        let mut device_links = Vec::new();
        for &d in &report.bad_devices {
            let (mut sent, mut recv) = (0u64, 0u64);
            for pp in input
                .iter()
                .filter(|pp| pp.links.iter().any(|&l| topo.links[l as usize].from == d))
            {
                sent += u64::from(pp.sent);
                recv += u64::from(pp.received.min(pp.sent));
            }
            let loss = if sent > 0 {
                1.0 - recv as f64 / sent as f64
            } else {
                0.0
            };
            for &v in topo.neighbors(d) {
                for link in [topo.link(d, v), topo.link(v, d)].into_iter().flatten() {
                    device_links.push(link);
                    blamed.push(BlamedLink {
                        link,
                        loss,
                        stage: 0,
                    });
                }
            }
        }
        for &(u, stage, loss) in &report.bad_links {
            for link in [2 * u, 2 * u + 1] {
                blamed.push(BlamedLink { link, loss, stage });
            }
        }
        let stages = report
            .rounds
            .iter()
            .map(|und| {
                let mut v: Vec<LinkIx> = device_links.clone();
                v.extend(und.iter().flat_map(|&u| [2 * u, 2 * u + 1]));
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        Verdict {
            blamed,
            stages,
            ..Default::default()
        }
    }
}
