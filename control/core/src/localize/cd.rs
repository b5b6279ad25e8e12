//! NetBouncer's coordinate-descent (CD) solver for the regularised latent-factor model.
//!
//! Minimises `f(x) = Σ_j (y_j − Π_{i∈p_j} x_i)² + λ Σ_i x_i (1 − x_i)` subject to `0 ≤ x ≤ 1`,
//! one coordinate at a time (Gauss–Seidel, links in index order), each update being the exact
//! minimiser of `f` along that coordinate (see [`cd_update`]).
//!
//! Paths are assumed to list each link at most once (the model counts a link once per path).

use serde::{Deserialize, Serialize};

/// Solver parameters. Defaults: `λ = 1`, at most 100 sweeps, stop when `f` drops by < `1e-4`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CdParams {
    /// Weight of the `x(1 − x)` regulariser.
    pub lambda: f64,
    /// Maximum number of full sweeps over the links.
    pub max_iter: usize,
    /// Stop as soon as one sweep decreases the objective by less than this.
    pub epsilon: f64,
}

impl Default for CdParams {
    fn default() -> Self {
        Self {
            lambda: 1.0,
            max_iter: 100,
            epsilon: 1e-4,
        }
    }
}

/// One CD instance. All slices indexed by path have the same length as `paths`.
#[derive(Clone, Copy, Debug)]
pub struct CdProblem<'a> {
    /// Number of links; link indices in `paths` must be `< n_links`.
    pub n_links: usize,
    /// Link indices of every path (or segment).
    pub paths: &'a [Vec<u32>],
    /// Observed (or mapped) success rate of every path, in `[0, 1]`.
    pub y: &'a [f64],
    /// Sample size `n_j` of every path; used only to initialise `x`.
    pub weight: &'a [f64],
    /// Per link: `Some(v)` pins the link at `v` (e.g. removed links at 0.0); empty = none frozen.
    pub frozen: &'a [Option<f64>],
}

/// Result of [`solve`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CdSolution {
    /// Estimated success probability of every link.
    pub x: Vec<f64>,
    /// Number of full sweeps performed.
    pub iterations: usize,
    /// Final value of the objective `f(x)`.
    pub objective: f64,
}

/// Exact minimiser on `[0, 1]` of the one-dimensional `f(x) = (r/2) x² − s x + c`.
///
/// `r > 0`: clamp of the vertex `s / r`; `r == 0`: linear, 1 if `s > 0` else 0;
/// `r < 0`: concave, the better endpoint (`f(1) − f(0) = r/2 − s`, so 0 iff `s/r > 1/2`).
pub fn cd_update(r: f64, s: f64) -> f64 {
    if r > 0.0 {
        (s / r).clamp(0.0, 1.0)
    } else if r == 0.0 {
        if s > 0.0 {
            1.0
        } else {
            0.0
        }
    } else if s / r > 0.5 {
        0.0
    } else {
        1.0
    }
}

/// Link → paths adjacency in compressed (CSR) form.
struct Adjacency {
    offsets: Vec<usize>,
    paths: Vec<u32>,
}

impl Adjacency {
    fn build(n_links: usize, paths: &[Vec<u32>]) -> Self {
        let mut offsets = vec![0usize; n_links + 1];
        for path in paths {
            for &l in path {
                offsets[l as usize + 1] += 1;
            }
        }
        for i in 0..n_links {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut out = vec![0u32; offsets[n_links]];
        for (j, path) in paths.iter().enumerate() {
            for &l in path {
                out[fill[l as usize]] = j as u32;
                fill[l as usize] += 1;
            }
        }
        Self {
            offsets,
            paths: out,
        }
    }

    fn of(&self, link: usize) -> &[u32] {
        &self.paths[self.offsets[link]..self.offsets[link + 1]]
    }
}

/// The objective `f(x)` (squared path residuals plus `λ Σ x(1 − x)`).
pub fn objective(problem: &CdProblem<'_>, x: &[f64], lambda: f64) -> f64 {
    let residual: f64 = problem
        .paths
        .iter()
        .zip(problem.y)
        .map(|(path, &y)| {
            let prod: f64 = path.iter().map(|&l| x[l as usize]).product();
            (y - prod) * (y - prod)
        })
        .sum();
    let penalty: f64 = x.iter().map(|&v| v * (1.0 - v)).sum();
    residual + lambda * penalty
}

/// Runs NetBouncer's CD to convergence (or `max_iter` sweeps).
///
/// Initialisation: `x_i = Σ_{j∋i} n_j y_j / Σ_{j∋i} n_j` (plain mean if all weights are zero;
/// 1.0 for links on no path); frozen links keep their value throughout.
///
/// # Panics
/// If `y`/`weight` lengths differ from `paths`, a non-empty `frozen` is not `n_links` long, or a
/// path names a link `≥ n_links`.
pub fn solve(problem: &CdProblem<'_>, params: &CdParams) -> CdSolution {
    let n = problem.n_links;
    assert_eq!(problem.y.len(), problem.paths.len(), "y length != paths");
    assert_eq!(
        problem.weight.len(),
        problem.paths.len(),
        "weight length != paths"
    );
    assert!(
        problem.frozen.is_empty() || problem.frozen.len() == n,
        "frozen must be empty or n_links long"
    );
    let frozen = |i: usize| problem.frozen.get(i).copied().flatten();
    let adj = Adjacency::build(n, problem.paths);

    let mut x: Vec<f64> = (0..n)
        .map(|i| {
            if let Some(v) = frozen(i) {
                return v;
            }
            let js = adj.of(i);
            if js.is_empty() {
                return 1.0;
            }
            let (mut num, mut den, mut plain) = (0.0, 0.0, 0.0);
            for &j in js {
                let (y, w) = (problem.y[j as usize], problem.weight[j as usize]);
                num += w * y;
                den += w;
                plain += y;
            }
            let v = if den > 0.0 {
                num / den
            } else {
                plain / js.len() as f64
            };
            v.clamp(0.0, 1.0)
        })
        .collect();

    let lambda = params.lambda;
    let mut last = objective(problem, &x, lambda);
    let mut iterations = 0;
    while iterations < params.max_iter {
        iterations += 1;
        for i in 0..n {
            if frozen(i).is_some() {
                continue;
            }
            let (mut sum_p2, mut sum_yp) = (0.0, 0.0);
            for &j in adj.of(i) {
                let j = j as usize;
                let p: f64 = problem.paths[j]
                    .iter()
                    .filter(|&&l| l as usize != i)
                    .map(|&l| x[l as usize])
                    .product();
                sum_p2 += p * p;
                sum_yp += problem.y[j] * p;
            }
            let r = 2.0 * sum_p2 - 2.0 * lambda;
            let s = 2.0 * sum_yp - lambda;
            x[i] = cd_update(r, s);
        }
        let now = objective(problem, &x, lambda);
        let decrease = last - now;
        last = now;
        if decrease < params.epsilon {
            break;
        }
    }
    CdSolution {
        x,
        iterations,
        objective: last,
    }
}
