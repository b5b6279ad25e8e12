//! Canary's segment grouping (Step 1) and success-rate mapping (Step 2-1, eq. 4).

use serde::{Deserialize, Serialize};

/// How lossy segments are divided into groups (stages).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Grouping {
    /// Loss boundaries in descending order, e.g. `[1.0, 0.2, 0.1, 0.05, 0.01, 0.001]`: group `k`
    /// covers loss `[b[k+1], b[k])`, the first group `[b[1], b[0]]`.
    Fixed(Vec<f64>),
    /// Equal-count groups of the lossy segments sorted by loss (paper's Fig. 9/10 "evenly divide");
    /// segments with exactly equal success stay in one group, so later groups may be smaller or
    /// empty.
    Quantile(usize),
}

impl Grouping {
    /// The paper's five groups: `[0.2, 1], [0.1, 0.2), [0.05, 0.1), [0.01, 0.05), [floor, 0.01)`.
    pub fn paper(floor: f64) -> Self {
        Self::Fixed(vec![1.0, 0.2, 0.1, 0.05, 0.01, floor])
    }

    /// `n` fixed groups: 5 → [`Grouping::paper`]; 3 → `[1, 0.1, 0.01, floor]`; 1 → `[1, floor]`;
    /// any other `n` → boundaries log-evenly spaced between `floor` and 1 (`n = 0` acts as 1).
    pub fn fixed_n(n: usize, floor: f64) -> Self {
        match n {
            5 => Self::paper(floor),
            3 => Self::Fixed(vec![1.0, 0.1, 0.01, floor]),
            0 | 1 => Self::Fixed(vec![1.0, floor]),
            _ => {
                let lf = floor.max(1e-12).ln();
                let mut b: Vec<f64> = (0..n).map(|k| (lf * k as f64 / n as f64).exp()).collect();
                b.push(floor);
                Self::Fixed(b)
            }
        }
    }

    /// Number of groups (= stages) this grouping produces.
    pub fn len(&self) -> usize {
        match self {
            Self::Fixed(b) => b.len().saturating_sub(1),
            Self::Quantile(g) => *g,
        }
    }

    /// True if the grouping has no group at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Maps a segment's success rate from its group's range `[a, b]` to `[0, 0.8]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mapping {
    /// Paper's eq. 4: `y' = exp(ln 0.8 · ln(y − a) / ln(b − a))`.
    #[default]
    Log,
    /// The authors' simulator: `y' = 0.8 · (y − a) / (b − a)`.
    Linear,
}

/// Upper end of the mapped range.
pub const MAPPED_TOP: f64 = 0.8;

/// Applies `mapping` to success `y` in the success range `[a, b]`: `y ≤ a → 0`, `y ≥ b → 0.8`.
/// For [`Mapping::Log`] with `b − a = 1` (where `ln(b − a) = 0`) it falls back to `0.8 · y`.
pub fn map_success(y: f64, a: f64, b: f64, mapping: Mapping) -> f64 {
    if y >= b {
        return MAPPED_TOP;
    }
    if y <= a {
        return 0.0;
    }
    let v = match mapping {
        Mapping::Linear => MAPPED_TOP * (y - a) / (b - a),
        Mapping::Log => {
            let den = (b - a).ln();
            if den.abs() < 1e-15 {
                MAPPED_TOP * y
            } else {
                (MAPPED_TOP.ln() * (y - a).ln() / den).exp()
            }
        }
    };
    v.clamp(0.0, MAPPED_TOP)
}

/// How far below the smallest member success a quantile group's range starts.
const QUANTILE_MARGIN: f64 = 1e-9;

/// Group assignment of the segments of one sub-problem.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Groups {
    /// Per segment: its group index, or `None` (loss-free or below the floor).
    pub of_segment: Vec<Option<usize>>,
    /// Per group: the success range `[a, b]` used for the mapping.
    pub range: Vec<(f64, f64)>,
}

/// Assigns segments (given by success rate) to groups; `loss < floor` (and loss 0) → no group.
pub(crate) fn assign(success: &[f64], grouping: &Grouping, floor: f64) -> Groups {
    let loss = |y: f64| (1.0 - y).clamp(0.0, 1.0);
    let lossy = |y: f64| loss(y) > 0.0 && loss(y) >= floor;
    match grouping {
        Grouping::Fixed(b) => {
            let n = b.len().saturating_sub(1);
            let of_segment = success
                .iter()
                .map(|&y| {
                    let l = loss(y);
                    if !lossy(y) {
                        return None;
                    }
                    (0..n).find(|&k| l >= b[k + 1] && (l < b[k] || (k == 0 && l <= b[0])))
                })
                .collect();
            let range = (0..n).map(|k| (1.0 - b[k], 1.0 - b[k + 1])).collect();
            Groups { of_segment, range }
        }
        Grouping::Quantile(g) => {
            let g = *g;
            let mut order: Vec<usize> = (0..success.len()).filter(|&i| lossy(success[i])).collect();
            // Descending loss = ascending success; ties broken by index for determinism.
            order.sort_by(|&i, &j| success[i].total_cmp(&success[j]).then(i.cmp(&j)));
            let mut of_segment = vec![None; success.len()];
            let mut range = vec![(0.0, MAPPED_TOP); g];
            if g == 0 {
                return Groups { of_segment, range };
            }
            let (base, extra) = (order.len() / g, order.len() % g);
            let (mut start, mut target) = (0, 0);
            for (k, r) in range.iter_mut().enumerate() {
                target += base + usize::from(k < extra);
                // Never split equal rates across groups: a tie left in a lower group would be
                // forced to y' = 1 and contradict its twin, splitting the blame.
                let mut end = target.max(start);
                while end > start
                    && end < order.len()
                    && success[order[end]] == success[order[end - 1]]
                {
                    end += 1;
                }
                let members = &order[start..end];
                start = end;
                if let (Some(&lo), Some(&hi)) = (members.first(), members.last()) {
                    *r = ((success[lo] - QUANTILE_MARGIN).max(0.0), success[hi]);
                }
                for &m in members {
                    of_segment[m] = Some(k);
                }
            }
            Groups { of_segment, range }
        }
    }
}
