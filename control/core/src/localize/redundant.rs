//! Blames the other blamed links already explain.
//!
//! Canary's stages can blame a second link beside a faulty one when the faulty link's segments
//! fall into different loss groups: in the higher stage the lower-loss segment counts as
//! loss-free, so it clears the faulty link there and the stage puts the higher segment's loss on
//! that segment's other link. Seen on the testbed with a fault on half the flows of
//! `edge1_0→agg1_1` (its three segments at 19/102, 20/165 and 19/240 lost): `agg1_1→core3`
//! was blamed at 1.1 % beside it, though 20/165 is what `edge1_0→agg1_1`'s own 11 % predicts.
//! The same split happens to a fault on every flow whose segments straddle a group boundary.
//!
//! Our decision (the paper does not prune): a blamed link stays only if the counts need it.
//! Each segment's counts are binomial under the blamed links' losses (every other link
//! perfect), fitted by maximum likelihood. A blamed link that shares a lossy segment with
//! another must be worth [`KEEP_AT`] in twice the log-likelihood against the fit without it,
//! where its neighbours are fitted again. The link worth least is dropped first, with any
//! others below the bar that share no lossy segment with a link dropped in the same round; the
//! rest are fitted again, and so on. A link that shares no lossy segment with another blamed
//! link always stays (without it its segments' loss has no home), so a single blame is never
//! dropped here.

use super::canary::SubProblem;

/// Twice the log-likelihood a blamed link beside another must be worth: χ²(1) at 0.999
/// (Wilks). A second fault beside another is kept when chance would show as much once in a
/// thousand.
pub const KEEP_AT: f64 = 10.83;

/// A segment's predicted loss stays inside (0, 1), so that counts it cannot produce weigh as
/// very unlikely instead of impossible.
const EDGE: f64 = 1e-12;
/// Coordinate-ascent sweeps at most, and the change in any link's success that ends them.
const SWEEPS: usize = 30;
const SETTLED: f64 = 1e-7;
/// Newton or bisection steps for one link's success at most.
const STEPS: usize = 60;

/// The segments through each blamed link: all of them (the likelihood), the lossy ones (the
/// fit; a loss-free segment adds to a link's kept packets whatever the others' losses), and
/// the packets delivered over each. Indexed by link; empty for links never blamed.
struct Through {
    all: Vec<Vec<usize>>,
    lossy: Vec<Vec<usize>>,
    kept: Vec<f64>,
}

impl Through {
    /// Only the lossy segments: enough to tell whether any two blamed links share one.
    fn lossy_only(sub: &SubProblem, blamed: &[u32]) -> Self {
        let is_blamed = mask(sub.n_links, blamed);
        let mut lossy = vec![Vec::new(); sub.n_links];
        for (p, s) in sub.segments.iter().enumerate() {
            if s.success < 1.0 {
                for &l in s.links.iter().filter(|&&l| is_blamed[l as usize]) {
                    lossy[l as usize].push(p);
                }
            }
        }
        Through {
            all: Vec::new(),
            lossy,
            kept: Vec::new(),
        }
    }

    /// Every segment through a blamed link, and the packets each delivered.
    fn complete(&mut self, sub: &SubProblem, blamed: &[u32]) {
        let is_blamed = mask(sub.n_links, blamed);
        self.all = vec![Vec::new(); sub.n_links];
        self.kept = vec![0.0; sub.n_links];
        for (p, s) in sub.segments.iter().enumerate() {
            let kept = counts(s.success, s.sent).1;
            for &l in s.links.iter().filter(|&&l| is_blamed[l as usize]) {
                self.all[l as usize].push(p);
                self.kept[l as usize] += kept;
            }
        }
    }
}

/// `blamed` (local links, with their losses as first estimated) without those the others
/// explain, in their order.
pub fn prune(sub: &SubProblem, blamed: &[u32], loss: &[f64]) -> Vec<u32> {
    let mut kept = blamed.to_vec();
    if blamed.len() < 2 {
        return kept;
    }
    let mut through = Through::lossy_only(sub, blamed);
    let mut x = vec![1.0; sub.n_links];
    for (&l, &q) in blamed.iter().zip(loss) {
        x[l as usize] = 1.0 - q;
    }
    loop {
        let is_blamed = mask(sub.n_links, &kept);
        // Only a link that shares a lossy segment with another blamed link can be dropped, and
        // only its neighbours' fits enter what it is worth.
        let near: Vec<(u32, Vec<u32>)> = kept
            .iter()
            .map(|&l| (l, neighbours(sub, &through, &is_blamed, l)))
            .filter(|(_, n)| !n.is_empty())
            .collect();
        if near.is_empty() {
            break;
        }
        if through.all.is_empty() {
            through.complete(sub, blamed);
        }
        let beside: Vec<u32> = near.iter().map(|(l, _)| *l).collect();
        fit(sub, &through, &beside, &mut x);
        let mut weak: Vec<(f64, usize)> = near
            .iter()
            .enumerate()
            .map(|(i, (l, n))| (worth(sub, &through, &x, *l, n), i))
            .filter(|&(w, _)| w < KEEP_AT)
            .collect();
        if weak.is_empty() {
            break;
        }
        // The weakest first; a link beside one dropped in this round waits for the next, where
        // it is weighed without it. Links apart from each other go together: a large
        // sub-problem drops its strays in a few rounds, not one round each.
        weak.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut touched = vec![false; sub.n_links];
        for (_, i) in weak {
            let (l, n) = &near[i];
            if touched[*l as usize] {
                continue;
            }
            kept.retain(|&k| k != *l);
            x[*l as usize] = 1.0;
            for &m in n {
                touched[m as usize] = true;
            }
        }
    }
    kept
}

/// Which of `n` links are among `links`.
fn mask(n: usize, links: &[u32]) -> Vec<bool> {
    let mut on = vec![false; n];
    for &l in links {
        on[l as usize] = true;
    }
    on
}

/// The blamed links other than `link` that share a lossy segment with it, ascending.
fn neighbours(sub: &SubProblem, through: &Through, is_blamed: &[bool], link: u32) -> Vec<u32> {
    let mut near: Vec<u32> = through.lossy[link as usize]
        .iter()
        .flat_map(|&p| sub.segments[p].links.iter().copied())
        .filter(|&m| m != link && is_blamed[m as usize])
        .collect();
    near.sort_unstable();
    near.dedup();
    near
}

/// Twice the log-likelihood `link` adds to the fit `x`: against the fit without it, with its
/// neighbours `near` fitted again.
fn worth(sub: &SubProblem, through: &Through, x: &[f64], link: u32, near: &[u32]) -> f64 {
    let mut segments: Vec<usize> = std::iter::once(link)
        .chain(near.iter().copied())
        .flat_map(|l| through.all[l as usize].iter().copied())
        .collect();
    segments.sort_unstable();
    segments.dedup();
    let with = log_likelihood(sub, &segments, x);
    let mut without = x.to_vec();
    without[link as usize] = 1.0;
    fit(sub, through, near, &mut without);
    2.0 * (with - log_likelihood(sub, &segments, &without))
}

/// Maximum-likelihood successes of `free` links, the others held at `x`: coordinate ascent,
/// each step the exact maximum along one link (the log-likelihood is concave in each).
fn fit(sub: &SubProblem, through: &Through, free: &[u32], x: &mut [f64]) {
    for _ in 0..SWEEPS {
        let mut moved: f64 = 0.0;
        for &l in free {
            let best = best_success(sub, through, l, x);
            moved = moved.max((best - x[l as usize]).abs());
            x[l as usize] = best;
        }
        if moved < SETTLED {
            break;
        }
    }
}

/// The success of `link` that maximizes the likelihood of its segments, the other links held
/// at `x`. With `c` the delivery of a segment's other links, the derivative in the link's
/// success `s` is `kept / s − Σ lost·c / (1 − c·s)`, decreasing in `s`: its root by Newton's
/// method kept inside a shrinking bracket (a step that leaves it bisects instead).
fn best_success(sub: &SubProblem, through: &Through, link: u32, x: &[f64]) -> f64 {
    let kept = through.kept[link as usize];
    let lossy: Vec<(f64, f64)> = through.lossy[link as usize]
        .iter()
        .map(|&p| {
            let s = &sub.segments[p];
            let c: f64 = s
                .links
                .iter()
                .filter(|&&l| l != link)
                .map(|&l| x[l as usize])
                .product();
            (c, counts(s.success, s.sent).0)
        })
        .filter(|&(c, _)| c > 0.0)
        .collect();
    if lossy.is_empty() {
        return 1.0;
    }
    if kept == 0.0 {
        return 0.0;
    }
    // The slope and its derivative at s.
    let at = |s: f64| {
        lossy
            .iter()
            .fold((kept / s, -kept / (s * s)), |(f, d), &(c, lost)| {
                let r = (1.0 - c * s).max(EDGE);
                (f - lost * c / r, d - lost * c * c / (r * r))
            })
    };
    // Every `c` is a product of successes, at most 1, so the root lies in (0, 1].
    if at(1.0 - 1e-12).0 >= 0.0 {
        return 1.0;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    let mut s = 0.5;
    for _ in 0..STEPS {
        let (f, d) = at(s);
        if f > 0.0 {
            lo = s;
        } else {
            hi = s;
        }
        let newton = s - f / d;
        let next = if newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        if (next - s).abs() < 1e-11 {
            return next;
        }
        s = next;
    }
    s
}

/// Lost and delivered packets of a segment.
fn counts(success: f64, sent: f64) -> (f64, f64) {
    let lost = ((1.0 - success) * sent).max(0.0);
    (lost, (sent - lost).max(0.0))
}

/// The binomial log-likelihood of `segments` with links at successes `x` (constant terms left
/// out: they cancel in a ratio).
fn log_likelihood(sub: &SubProblem, segments: &[usize], x: &[f64]) -> f64 {
    segments
        .iter()
        .map(|&p| {
            let s = &sub.segments[p];
            let delivered: f64 = s.links.iter().map(|&l| x[l as usize]).product();
            let q = (1.0 - delivered).clamp(EDGE, 1.0 - EDGE);
            let (lost, kept) = counts(s.success, s.sent);
            lost * q.ln() + kept * (1.0 - q).ln()
        })
        .sum()
}

#[cfg(test)]
#[path = "tests_redundant.rs"]
mod tests;
