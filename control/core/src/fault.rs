//! Injected faults: the fault file format and the paper's random fault mix.
//!
//! ```yaml
//! faults:
//!   - {link: [agg3_1, core5], loss: 0.002}
//!   - {link: [edge0_0, agg0_1], loss: 0.3, both_directions: true}
//! ```

use crate::topo::{LinkIx, Topology};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One faulty directed link and its per-packet drop probability.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    pub link: LinkIx,
    pub loss: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultFile {
    faults: Vec<FaultEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultEntry {
    link: [String; 2],
    loss: f64,
    #[serde(default)]
    both_directions: bool,
}

/// A fault file that could not be used; the message names the file and the entry or line.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{file}: {field}: {msg}")]
pub struct FaultFileError {
    pub file: String,
    pub field: String,
    pub msg: String,
}

/// Parses a fault file's text against a topology; `file` names it in errors.
pub fn parse(file: &str, text: &str, topo: &Topology) -> Result<Vec<Fault>, FaultFileError> {
    let err = |field: String, msg: String| FaultFileError {
        file: file.to_string(),
        field,
        msg,
    };
    let de = serde_norway::Deserializer::from_str(text);
    let parsed: FaultFile = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        err(
            if path == "." { "document".into() } else { path },
            e.into_inner().to_string(),
        )
    })?;
    let mut out: Vec<Fault> = Vec::new();
    for (i, f) in parsed.faults.iter().enumerate() {
        let [a, b] = &f.link;
        let link = topo.link_by_names(a, b).ok_or_else(|| {
            let which = if topo.switch(a).is_none() {
                format!("unknown switch `{a}`")
            } else if topo.switch(b).is_none() {
                format!("unknown switch `{b}`")
            } else {
                format!("no link between `{a}` and `{b}`")
            };
            err(format!("faults[{i}].link"), which)
        })?;
        if !(0.0..=1.0).contains(&f.loss) || f.loss.is_nan() {
            return Err(err(
                format!("faults[{i}].loss"),
                format!("{} is not a probability in [0, 1]", f.loss),
            ));
        }
        let mut links = vec![link];
        if f.both_directions {
            links.push(topo.reverse(link));
        }
        for l in links {
            if out.iter().any(|x| x.link == l) {
                let [x, y] = topo.link_names(l);
                return Err(err(
                    format!("faults[{i}]"),
                    format!("link [{x}, {y}] is given twice"),
                ));
            }
            out.push(Fault {
                link: l,
                loss: f.loss,
            });
        }
    }
    Ok(out)
}

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
    let counts = apportion(directed.len());
    let mut out = Vec::with_capacity(directed.len());
    let mut it = directed.into_iter();
    for ((lo, hi, _), c) in PAPER_MIX.iter().zip(counts) {
        for l in it.by_ref().take(c) {
            out.push(Fault {
                link: l,
                loss: rng.random_range(*lo..*hi),
            });
        }
    }
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
        Rates::PaperMix => {
            let counts = apportion(directed.len());
            let mut out = Vec::with_capacity(directed.len());
            let mut it = directed.into_iter();
            for ((lo, hi, _), c) in PAPER_MIX.iter().zip(counts) {
                for l in it.by_ref().take(c) {
                    out.push(Fault {
                        link: l,
                        loss: rng.random_range(*lo..*hi),
                    });
                }
            }
            out
        }
        Rates::Fixed(p) => directed
            .into_iter()
            .map(|link| Fault { link, loss: p })
            .collect(),
        Rates::Uniform(lo, hi) => directed
            .into_iter()
            .map(|link| Fault {
                link,
                loss: if hi > lo {
                    rng.random_range(lo..hi)
                } else {
                    lo
                },
            })
            .collect(),
    };
    out.sort_by_key(|f| f.link);
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

/// Per-directed-link drop probabilities: the faults, plus `noise` on every healthy link (a rate
/// drawn from U(0, noise), as Flock's and 007's setups model background loss).
pub fn loss_vector(topo: &Topology, faults: &[Fault], noise: f64, rng: &mut impl Rng) -> Vec<f64> {
    let mut loss: Vec<f64> = (0..topo.links.len())
        .map(|_| {
            if noise > 0.0 {
                rng.random_range(0.0..noise)
            } else {
                0.0
            }
        })
        .collect();
    for f in faults {
        loss[f.link as usize] = f.loss;
    }
    loss
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::{fattree::fattree, MonitorPlacement};
    use rand::SeedableRng;

    #[test]
    fn paper_mix_for_k8() {
        let t = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let f = random(&t, 10.0, &mut rng);
        assert_eq!(f.len(), 52);
        for (lo, hi, n) in PAPER_MIX {
            assert_eq!(
                f.iter().filter(|x| x.loss >= lo && x.loss < hi).count(),
                n as usize
            );
        }
        // Both directions of 26 links.
        assert!(f
            .iter()
            .all(|x| f.iter().any(|y| y.link == t.reverse(x.link))));
    }

    #[test]
    fn pick_gives_n_links_in_the_asked_directions_and_rates() {
        let t = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let f = pick(&t, 5, false, Rates::Fixed(0.01), &mut rng);
        assert_eq!(f.len(), 5);
        assert!(f.iter().all(|x| x.loss == 0.01));
        assert!(f
            .iter()
            .all(|x| !f.iter().any(|y| y.link == t.reverse(x.link))));
        let f = pick(&t, 4, true, Rates::Uniform(0.001, 0.01), &mut rng);
        assert_eq!(f.len(), 8);
        assert!(f.iter().all(|x| (0.001..0.01).contains(&x.loss)));
        assert!(f
            .iter()
            .all(|x| f.iter().any(|y| y.link == t.reverse(x.link))));
    }

    #[test]
    fn fault_file_errors_name_the_entry() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let ok = "faults:\n  - {link: [agg1_1, core2], loss: 0.002}\n  - {link: [edge0_0, agg0_1], loss: 0.3, both_directions: true}\n";
        assert_eq!(parse("f.yaml", ok, &t).unwrap().len(), 3);
        let e = parse("f.yaml", &ok.replace("core2", "core0"), &t).unwrap_err();
        assert_eq!(e.field, "faults[0].link");
        assert!(e.msg.contains("no link between `agg1_1` and `core0`"));
        let e = parse("f.yaml", &ok.replace("core2", "core9"), &t).unwrap_err();
        assert!(e.msg.contains("unknown switch `core9`"));
        let e = parse("f.yaml", &ok.replace("0.3", "1.3"), &t).unwrap_err();
        assert_eq!(e.field, "faults[1].loss");
        let e = parse("f.yaml", &ok.replace("loss: 0.002", "loss: high"), &t).unwrap_err();
        assert_eq!(e.field, "faults[0].loss");
        assert!(e.to_string().starts_with("f.yaml: faults[0].loss:"), "{e}");
    }
}
