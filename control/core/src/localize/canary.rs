//! Canary's multi-stage localization (paper Sec. III-F, Steps 1–3, eq. 4) and the single-CD
//! NetBouncer baseline, both over the segments of one sub-problem.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::after_stages;
use super::cd::{self, CdParams, CdProblem};
use super::groups::{self, Grouping, Mapping};

/// A link counts as blamed when CD leaves it below `1 − BLAME_EPS` (spec §6.10 item 6).
pub const BLAME_EPS: f64 = 1e-12;

/// Rounds of the raw-data loss estimator (see [`estimate_losses`]).
const ESTIMATE_ROUNDS: usize = 10;

/// One measured segment: its links, success rate `y_p` and packets counted upstream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SegmentObs {
    /// Link indices along the segment (each at most once).
    pub links: Vec<u32>,
    /// Measured success rate `y_p` in `[0, 1]`; 1.0 = loss-free.
    pub success: f64,
    /// Packets sent on the segment (sample size).
    pub sent: f64,
    /// Its flows, one count each, when it had few (`crate::detect::FlowWindow`); empty when
    /// its packets stand for its flows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<crate::detect::FlowCount>,
}

/// One independent localization problem (e.g. one pod).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubProblem {
    /// Number of links; link indices are `< n_links`.
    pub n_links: usize,
    /// Every segment observed in the sub-problem, loss-free ones included.
    pub segments: Vec<SegmentObs>,
}

/// Parameters of the Canary localizer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CanaryParams {
    /// Regulariser weight used by every CD run; overrides `cd.lambda`.
    pub lambda: f64,
    /// How lossy segments are grouped into stages.
    pub groups: Grouping,
    /// Noise floor: segments with loss below it are treated as loss-free.
    pub floor: f64,
    /// Success-rate mapping within a group.
    pub mapping: Mapping,
    /// CD solver settings (its `lambda` is replaced by [`CanaryParams::lambda`]).
    pub cd: CdParams,
    /// Where every link of a lossy segment is pinned healthy by loss-free segments, the link
    /// whose pins the loss is likeliest to have missed gives way (`pins::weak_pins_yield`).
    /// Only sound when pins and losses were counted over the same epochs: the controller turns
    /// it off when segments are watched in rounds.
    #[serde(default = "yes")]
    pub likelihood_ties: bool,
}

fn yes() -> bool {
    true
}

impl Default for CanaryParams {
    fn default() -> Self {
        let floor = 0.001;
        Self {
            lambda: 1.0,
            groups: Grouping::paper(floor),
            floor,
            mapping: Mapping::Log,
            cd: CdParams::default(),
            likelihood_ties: true,
        }
    }
}

impl CanaryParams {
    fn cd_params(&self) -> CdParams {
        CdParams {
            lambda: self.lambda,
            ..self.cd
        }
    }
}

/// A link found faulty.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Blame {
    /// Link index.
    pub link: u32,
    /// Stage (group index, highest loss first) that found it.
    pub stage: usize,
    /// Estimated loss rate in `[0, 1]`.
    pub loss: f64,
}

/// State after one stage (one entry per group, empty groups included).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageSnapshot {
    /// Every link blamed up to and including this stage, ascending.
    pub blamed_so_far: Vec<u32>,
    /// CD sweeps run in this stage (0 if the stage was skipped).
    pub cd_iterations: usize,
}

/// Localization result of one sub-problem.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// Blamed links, ordered by stage then link index.
    pub blamed: Vec<Blame>,
    /// Per-stage snapshots.
    pub stages: Vec<StageSnapshot>,
    /// Losses the counts could not place on one link: each its candidate links
    /// ([`super::settle`]). Nothing is blamed for them.
    #[serde(default)]
    pub undecided: Vec<Vec<u32>>,
}

impl Diagnosis {
    /// Indices of all blamed links, ascending.
    pub fn links(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.blamed.iter().map(|b| b.link).collect();
        v.sort_unstable();
        v
    }
}

/// Canary's multi-stage CD on one sub-problem.
///
/// Groups are processed in descending loss order. In stage `g` segments of group `g` get their
/// mapped success, higher-loss groups 0, lower-loss groups and loss-free segments (including
/// those below the noise floor) 1; CD runs with already-blamed links frozen at 0; every other
/// link left below 1 is blamed with stage `g`. Empty groups are skipped but still get a snapshot.
/// Our departure: a lower group's segment whose counts cannot rule out the stage's loss range
/// ([`loss_could_reach`]) sits the stage out instead of pinning its links at "healthy".
///
/// Blamed losses come from the raw data, not from CD (see [`estimate_losses`]); what the stages
/// blamed is then finished by [`after_stages::finish`].
pub fn multi_stage(sub: &SubProblem, params: &CanaryParams) -> Diagnosis {
    let success: Vec<f64> = sub.segments.iter().map(|s| s.success).collect();
    let paths: Vec<Vec<u32>> = sub.segments.iter().map(|s| s.links.clone()).collect();
    let weight: Vec<f64> = sub.segments.iter().map(|s| s.sent).collect();
    let grp = groups::assign(&success, &params.groups, params.floor);
    let cd_params = params.cd_params();
    let ceiling = ceilings(sub, params.lambda);

    let mut frozen: Vec<Option<f64>> = vec![None; sub.n_links];
    let mut stage_of: Vec<(u32, usize)> = Vec::new();
    let mut stages = Vec::with_capacity(grp.range.len());
    let mut y = vec![1.0; success.len()];
    for (g, &(a, b)) in grp.range.iter().enumerate() {
        let mut any = false;
        for (si, (yi, (&s, og))) in y
            .iter_mut()
            .zip(success.iter().zip(&grp.of_segment))
            .enumerate()
        {
            *yi = match *og {
                Some(h) if h < g => 0.0,
                Some(h) if h == g => {
                    any = true;
                    groups::map_success(s, a, b, params.mapping) * ceiling_scale(&ceiling, si)
                }
                _ => 1.0,
            };
        }
        let mut cd_iterations = 0;
        if any {
            // A lower group's segment pins its links at "healthy" in this stage; one whose own
            // counts cannot rule out this stage's loss (too few packets) does not.
            let lowest = 1.0 - b;
            let keep: Vec<usize> = (0..y.len())
                .filter(|&si| match grp.of_segment[si] {
                    Some(h) if h > g => loss_could_reach(success[si], weight[si]) < lowest,
                    _ => true,
                })
                .collect();
            let (sp, sy, sw);
            let (paths_g, y_g, weight_g) = if keep.len() == y.len() {
                (&paths[..], &y[..], &weight[..])
            } else {
                sp = keep.iter().map(|&i| paths[i].clone()).collect::<Vec<_>>();
                sy = keep.iter().map(|&i| y[i]).collect::<Vec<_>>();
                sw = keep.iter().map(|&i| weight[i]).collect::<Vec<_>>();
                (&sp[..], &sy[..], &sw[..])
            };
            let problem = CdProblem {
                n_links: sub.n_links,
                paths: paths_g,
                y: y_g,
                weight: weight_g,
                frozen: &frozen,
            };
            let sol = cd::solve(&problem, &cd_params);
            cd_iterations = sol.iterations;
            for (i, &xi) in sol.x.iter().enumerate() {
                if frozen[i].is_none() && xi < 1.0 - BLAME_EPS {
                    frozen[i] = Some(0.0);
                    stage_of.push((i as u32, g));
                }
            }
        }
        let mut blamed_so_far: Vec<u32> = stage_of.iter().map(|&(l, _)| l).collect();
        blamed_so_far.sort_unstable();
        stages.push(StageSnapshot {
            blamed_so_far,
            cd_iterations,
        });
    }

    after_stages::finish(sub, &grp, params, stage_of, stages)
}

/// The highest loss a segment's counts leave plausible: the upper end of the Wilson interval at
/// z = 3 (99.7 %) of its loss, from its success rate and packets.
pub(super) fn loss_could_reach(success: f64, sent: f64) -> f64 {
    if sent <= 0.0 {
        return 1.0;
    }
    let (p, n, z2) = ((1.0 - success).clamp(0.0, 1.0), sent, 9.0);
    let centre = p + z2 / (2.0 * n);
    let spread = 3.0 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre + spread) / (1.0 + z2 / n)).min(1.0)
}

/// The top of each segment's mapped range. The paper maps every group to [0, 0.8] so that CD
/// works in its "comfort zone"; but CD with regulariser λ blames a link seen on n segments only
/// when their mean y′ is below `1 − λ/(2n)` (the coordinate update's fixed point), so on small
/// fabrics, where a link lies on two or three segments, 0.8 is too high and no mapped loss can
/// ever be blamed. Our decision: a segment's ceiling is `min(0.8, 1 − λ/(2n) − 0.05)` with n the
/// fewest observed segments through any of its links. On a k = 8 fat-tree every link lies on at
/// least four segments and the ceiling is the paper's 0.8.
fn ceilings(sub: &SubProblem, lambda: f64) -> Vec<f64> {
    let mut per_link = vec![0u32; sub.n_links];
    for s in &sub.segments {
        for &l in &s.links {
            per_link[l as usize] += 1;
        }
    }
    sub.segments
        .iter()
        .map(|s| {
            let n = s
                .links
                .iter()
                .map(|&l| per_link[l as usize])
                .min()
                .unwrap_or(1)
                .max(1);
            (1.0 - lambda / (2.0 * n as f64) - 0.05).clamp(0.05, groups::MAPPED_TOP)
        })
        .collect()
}

fn ceiling_scale(ceiling: &[f64], segment: usize) -> f64 {
    ceiling[segment] / groups::MAPPED_TOP
}

/// NetBouncer's plain CD once on the raw success rates (the baseline). Blames every link with
/// `x < 1 − 1e-12`, all at stage 0, with loss `1 − x` (NetBouncer's own estimate).
pub fn single_cd(sub: &SubProblem, params: &CanaryParams) -> Diagnosis {
    let y: Vec<f64> = sub.segments.iter().map(|s| s.success).collect();
    let paths: Vec<Vec<u32>> = sub.segments.iter().map(|s| s.links.clone()).collect();
    let weight: Vec<f64> = sub.segments.iter().map(|s| s.sent).collect();
    let problem = CdProblem {
        n_links: sub.n_links,
        paths: &paths,
        y: &y,
        weight: &weight,
        frozen: &[],
    };
    let sol = cd::solve(&problem, &params.cd_params());
    let blamed: Vec<Blame> = sol
        .x
        .iter()
        .enumerate()
        .filter(|(_, &x)| x < 1.0 - BLAME_EPS)
        .map(|(i, &x)| Blame {
            link: i as u32,
            stage: 0,
            loss: (1.0 - x).clamp(0.0, 1.0),
        })
        .collect();
    let stages = vec![StageSnapshot {
        blamed_so_far: blamed.iter().map(|b| b.link).collect(),
        cd_iterations: sol.iterations,
    }];
    Diagnosis {
        blamed,
        stages,
        undecided: Vec::new(),
    }
}

/// Runs [`multi_stage`] on every sub-problem in parallel (rayon); output order = input order.
pub fn localize_all(subs: &[SubProblem], params: &CanaryParams) -> Vec<Diagnosis> {
    subs.par_iter().map(|s| multi_stage(s, params)).collect()
}

/// Loss estimates of the `blamed` links from the RAW (unmapped) segment data.
///
/// Our decision (the paper does not say how Canary reports loss rates; the mapped CD values are
/// meaningless as rates): with all non-blamed links taken as perfect, iterate
/// `x_L = Σ_p sent_p · y_p / Π_{j∈B∩p, j≠L} x_j  /  Σ_p sent_p` over the segments `p` through
/// `L`, starting from the plain sent-weighted mean of `y_p`. A segment whose other blamed links
/// are estimated at 0 carries no information about `L` and is skipped. Loss = `1 − x_L`,
/// clamped to `[0, 1]`. Output order follows `blamed`.
pub fn estimate_losses(sub: &SubProblem, blamed: &[u32]) -> Vec<f64> {
    let mut slot: Vec<Option<usize>> = vec![None; sub.n_links];
    for (k, &l) in blamed.iter().enumerate() {
        slot[l as usize] = Some(k);
    }
    // Segments through each blamed link.
    let mut through: Vec<Vec<usize>> = vec![Vec::new(); blamed.len()];
    for (p, seg) in sub.segments.iter().enumerate() {
        for &l in &seg.links {
            if let Some(k) = slot[l as usize] {
                through[k].push(p);
            }
        }
    }
    let weighted_mean = |ps: &[usize], f: &dyn Fn(usize) -> Option<f64>| -> Option<f64> {
        let (mut num, mut den) = (0.0, 0.0);
        for &p in ps {
            if let Some(v) = f(p) {
                let w = sub.segments[p].sent.max(0.0);
                num += w * v;
                den += w;
            }
        }
        (den > 0.0).then(|| num / den)
    };
    let mut x: Vec<f64> = through
        .iter()
        .map(|ps| weighted_mean(ps, &|p| Some(sub.segments[p].success)).unwrap_or(1.0))
        .collect();
    for _ in 0..ESTIMATE_ROUNDS {
        for k in 0..blamed.len() {
            let ratio = |p: usize| {
                let seg = &sub.segments[p];
                let others: f64 = seg
                    .links
                    .iter()
                    .filter_map(|&l| slot[l as usize].filter(|&o| o != k))
                    .map(|o| x[o])
                    .product();
                (others > 0.0).then(|| (seg.success / others).clamp(0.0, 1.0))
            };
            if let Some(v) = weighted_mean(&through[k], &ratio) {
                x[k] = v;
            }
        }
    }
    x.iter().map(|&v| (1.0 - v).clamp(0.0, 1.0)).collect()
}
