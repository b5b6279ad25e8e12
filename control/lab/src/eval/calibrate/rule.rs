//! The Flock paper's §5.2 selection rule over a grid's scores, and the scoring of a grid on a
//! training set: generic over settings and samples, so it stands apart from any localizer.

use canary_core::score::Score;
use rayon::prelude::*;
use serde::Serialize;

/// The first minimum precision, in percent.
pub const START_PCT: i32 = 98;
/// How far `P` drops when no setting qualifies, in percent.
pub const STEP_PCT: i32 = 5;
/// The lowest acceptable recall at a given `P`.
pub const MIN_RECALL: f64 = 0.25;
/// Recalls (and precisions) closer than this are equal for tie-breaking.
pub const TIE_EPS: f64 = 1e-9;

/// Mean precision and recall of one grid setting over the training seeds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GridScore {
    pub precision: f64,
    pub recall: f64,
}

/// The setting the rule chose.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Pick {
    /// Index into the grid.
    pub index: usize,
    /// The minimum precision `P` at which it was chosen (0.98, 0.93, …).
    pub min_precision: f64,
    /// Its training precision and recall.
    pub precision: f64,
    pub recall: f64,
    /// False only when no setting reaches 25 % recall at any `P` (then: the best recall overall).
    pub recall_floor_met: bool,
}

/// Among the settings `eligible` admits, the highest recall; ties: higher precision, then the
/// lowest index.
fn best_recall(scores: &[GridScore], eligible: impl Fn(&GridScore) -> bool) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, s) in scores.iter().enumerate().filter(|(_, s)| eligible(s)) {
        let better = match best {
            None => true,
            Some(b) => {
                let b = &scores[b];
                s.recall > b.recall + TIE_EPS
                    || ((s.recall - b.recall).abs() <= TIE_EPS
                        && s.precision > b.precision + TIE_EPS)
            }
        };
        if better {
            best = Some(i);
        }
    }
    best
}

/// The Flock paper's §5.2 rule over the scores of a grid (see the module docs). `None` only for
/// an empty grid.
pub fn pick(scores: &[GridScore]) -> Option<Pick> {
    if scores.is_empty() {
        return None;
    }
    let mut pct = START_PCT;
    loop {
        let p = f64::from(pct) / 100.0;
        if let Some(i) = best_recall(scores, |s| s.precision > p) {
            let s = scores[i];
            let floor = s.recall >= MIN_RECALL;
            // Below 0 every setting qualifies: lowering P further changes nothing.
            if floor || p < 0.0 {
                return Some(Pick {
                    index: i,
                    min_precision: p,
                    precision: s.precision,
                    recall: s.recall,
                    recall_floor_met: floor,
                });
            }
        }
        pct -= STEP_PCT;
    }
}

/// Scores every setting of `grid` on every training sample (settings in parallel) and returns
/// the mean precision and recall per setting, in grid order.
pub fn grid_scores<P, I, F>(grid: &[P], training: &[I], score: F) -> Vec<GridScore>
where
    P: Sync,
    I: Sync,
    F: Fn(&P, &I) -> Score + Sync,
{
    let n = training.len().max(1) as f64;
    grid.par_iter()
        .map(|p| {
            let (mut precision, mut recall) = (0.0, 0.0);
            for t in training {
                let s = score(p, t);
                precision += s.precision;
                recall += s.recall;
            }
            GridScore {
                precision: precision / n,
                recall: recall / n,
            }
        })
        .collect()
}

/// Runs the grid and the rule: the chosen setting, how it was chosen, and the grid's size.
pub fn calibrate<P, I, F>(grid: &[P], training: &[I], score: F) -> Option<(P, Pick)>
where
    P: Sync + Clone,
    I: Sync,
    F: Fn(&P, &I) -> Score + Sync,
{
    let scores = grid_scores(grid, training, score);
    let chosen = pick(&scores)?;
    Some((grid[chosen.index].clone(), chosen))
}
