//! Random fault sets: the paper's mix (`random:P%`) and `links:N` / `oneway:N` with given rates.

use super::Fault;
use crate::topo::{LinkIx, Topology};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;

/// The paper's loss-rate bands for random faults (Sec. IV-D) and how many of its 52 directed
/// faulty links fall in each: 11 in [0.2, 1], 13 in [0.1, 0.2], 9 in [0.05, 0.1], 9 in
/// [0.01, 0.05], 10 in [0.001, 0.01].
pub const PAPER_MIX: [(f64, f64, u32); 5] = [
    (0.2, 1.0, 11),
    (0.1, 0.2, 13),
    (0.05, 0.1, 9),
    (0.01, 0.05, 9),
    (0.001, 0.01, 10),
];

/// `random:P%`: P% of the undirected inter-switch links (rounded), faulty in both directions,
/// each direction with its own rate drawn in the paper's mix (the same proportions for any size;
/// the directions are shuffled before rates are dealt, so the two directions of one link can fall
/// in different bands, as the paper's odd band counts imply).
pub fn random(topo: &Topology, percent: f64, rng: &mut impl Rng) -> Vec<Fault> {
    let undirected: Vec<LinkIx> = (0..topo.links.len() as LinkIx)
        .filter(|&l| topo.links[l as usize].from < topo.links[l as usize].to)
        .collect();
    let n = ((percent / 100.0) * undirected.len() as f64).round() as usize;
    let chosen: Vec<LinkIx> = undirected.choose_multiple(rng, n).copied().collect();
    let mut directed: Vec<LinkIx> = chosen.iter().flat_map(|&l| [l, topo.reverse(l)]).collect();
    directed.shuffle(rng);
    let mut out = deal_paper_mix(directed, rng);
    out.sort_by_key(|f| f.link);
    out
}

/// The loss rate given to each injected fault.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rates {
    /// The paper's five-band mix ([`PAPER_MIX`], in its proportions).
    PaperMix,
    /// Every fault drops exactly this fraction.
    Fixed(f64),
    /// Each faulty direction draws its own rate from U(lo, hi).
    Uniform(f64, f64),
}

/// `n` distinct undirected inter-switch links chosen at random; with `both_directions` both
/// directions are faulty (each with its own rate), otherwise one direction chosen at random.
/// Rates as `rates` says. `n` is capped at the number of undirected links.
pub fn pick(
    topo: &Topology,
    n: usize,
    both_directions: bool,
    rates: Rates,
    rng: &mut impl Rng,
) -> Vec<Fault> {
    let undirected: Vec<LinkIx> = (0..topo.links.len() as LinkIx)
        .filter(|&l| topo.links[l as usize].from < topo.links[l as usize].to)
        .collect();
    let chosen: Vec<LinkIx> = undirected.choose_multiple(rng, n).copied().collect();
    let mut directed: Vec<LinkIx> = Vec::new();
    for l in chosen {
        if both_directions {
            directed.extend([l, topo.reverse(l)]);
        } else if rng.random_bool(0.5) {
            directed.push(l);
        } else {
            directed.push(topo.reverse(l));
        }
    }
    directed.shuffle(rng);
    let mut out = match rates {
        Rates::PaperMix => deal_paper_mix(directed, rng),
        Rates::Fixed(p) => directed
            .into_iter()
            .map(|link| Fault::constant(link, p))
            .collect(),
        Rates::Uniform(lo, hi) => directed
            .into_iter()
            .map(|link| {
                Fault::constant(
                    link,
                    if hi > lo {
                        rng.random_range(lo..hi)
                    } else {
                        lo
                    },
                )
            })
            .collect(),
    };
    out.sort_by_key(|f| f.link);
    out
}

/// Deals the paper's bands over `directed` in order, in its proportions, each link a rate drawn
/// in its band.
fn deal_paper_mix(directed: Vec<LinkIx>, rng: &mut impl Rng) -> Vec<Fault> {
    let counts = apportion(directed.len());
    let mut out = Vec::with_capacity(directed.len());
    let mut it = directed.into_iter();
    for ((lo, hi, _), c) in PAPER_MIX.iter().zip(counts) {
        for l in it.by_ref().take(c) {
            out.push(Fault::constant(l, rng.random_range(*lo..*hi)));
        }
    }
    out
}

/// Splits `n` over the paper's bands in its proportions (largest remainder).
fn apportion(n: usize) -> [usize; 5] {
    let total: u32 = PAPER_MIX.iter().map(|b| b.2).sum();
    let exact: Vec<f64> = PAPER_MIX
        .iter()
        .map(|b| n as f64 * b.2 as f64 / total as f64)
        .collect();
    let mut counts = [0usize; 5];
    for (c, e) in counts.iter_mut().zip(&exact) {
        *c = e.floor() as usize;
    }
    let mut order: Vec<usize> = (0..5).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    let short = n - counts.iter().sum::<usize>();
    for &i in order.iter().take(short) {
        counts[i] += 1;
    }
    counts
}
