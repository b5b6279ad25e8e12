//! Canary's localizers over observed segments: the glue from detection's [`Observations`]
//! (global segment and link IDs) to the index-based solvers in [`super::canary`].
//!
//! Only sub-problems with at least one lossy segment are solved; the others blame nothing.
//! Sub-problems are independent and run in parallel (rayon).

use super::canary::{localize_all, single_cd, CanaryParams, Diagnosis, SegmentObs, SubProblem};
use super::{pins, BlamedLink, Localizer, Verdict};
use crate::detect::Observations;
use crate::topo::{LinkIx, Topology};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Canary: multi-stage CD (Sec. III-F).
#[derive(Clone, Debug, Default)]
pub struct Canary {
    pub params: CanaryParams,
    /// Links blamed the epoch before: a tie between hard pins that the likelihood leaves open
    /// goes to one of them (with [`CanaryParams::likelihood_ties`]; `pins::the_incumbent`).
    pub incumbents: Vec<LinkIx>,
}

/// NetBouncer's CD run once on Canary's segment measurements (issue: "NetBouncer's CD run once
/// on Canary's measurements").
#[derive(Clone, Debug, Default)]
pub struct CdOnSegments {
    pub params: CanaryParams,
}

/// One sub-problem's diagnosis, on global links: what a localizer worker answers for each of
/// its sub-problems ([`Canary::diagnose`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubVerdict {
    pub subproblem: u32,
    /// Global link of each local link index of the diagnosis.
    pub links: Vec<LinkIx>,
    pub diagnosis: Diagnosis,
}

/// Sub-problems with a lossy segment, in sub-problem order, and the local→global link map of
/// each.
pub fn build(obs: &Observations) -> (Vec<SubProblem>, Vec<Vec<LinkIx>>) {
    let (_, subs, globals) = build_numbered(obs, None);
    (subs, globals)
}

/// [`build`], with each sub-problem's number; `ties`: with [`CanaryParams::likelihood_ties`],
/// the links blamed the epoch before (`pins::taking_part`).
fn build_numbered(
    obs: &Observations,
    ties: Option<&[LinkIx]>,
) -> (Vec<u32>, Vec<SubProblem>, Vec<Vec<LinkIx>>) {
    let subs = obs
        .segments
        .iter()
        .map(|s| s.subproblem as usize + 1)
        .max()
        .unwrap_or(0);
    let mut by_sub: Vec<Vec<usize>> = vec![Vec::new(); subs];
    for (i, s) in obs.segments.iter().enumerate() {
        by_sub[s.subproblem as usize].push(i);
    }
    // Sub-problems are built in parallel (at k = 48 they hold 2 M segments between them).
    let (numbers, built): (Vec<u32>, Vec<(SubProblem, Vec<LinkIx>)>) = by_sub
        .into_par_iter()
        .enumerate()
        .filter(|(_, idx)| idx.iter().any(|&i| obs.segments[i].success < 1.0))
        .map(|(n, idx)| {
            let sub = one_subproblem(obs, pins::taking_part(obs, idx, ties));
            (n as u32, sub)
        })
        .unzip();
    let (subs, globals) = built.into_iter().unzip();
    (numbers, subs, globals)
}

/// Local link ids in the order the segments first name them.
fn one_subproblem(obs: &Observations, idx: Vec<usize>) -> (SubProblem, Vec<LinkIx>) {
    let mut local: HashMap<LinkIx, u32> = HashMap::new();
    let mut global: Vec<LinkIx> = Vec::new();
    let segments = idx
        .iter()
        .map(|&i| {
            let s = &obs.segments[i];
            SegmentObs {
                links: s
                    .links
                    .iter()
                    .map(|&l| {
                        *local.entry(l).or_insert_with(|| {
                            global.push(l);
                            global.len() as u32 - 1
                        })
                    })
                    .collect(),
                success: s.success,
                sent: s.sent as f64,
                flows: s.flows.clone(),
            }
        })
        .collect();
    (
        SubProblem {
            n_links: global.len(),
            segments,
        },
        global,
    )
}

/// Merges per-sub-problem diagnoses into one verdict on global links.
pub fn merge(globals: &[Vec<LinkIx>], diags: &[Diagnosis], stages: usize) -> Verdict {
    let mut blamed = Vec::new();
    let mut undecided = Vec::new();
    let mut per_stage = vec![Vec::new(); stages];
    for (global, d) in globals.iter().zip(diags) {
        for c in &d.undecided {
            let mut links: Vec<LinkIx> = c.iter().map(|&l| global[l as usize]).collect();
            links.sort_unstable();
            undecided.push(links);
        }
        for b in &d.blamed {
            blamed.push(BlamedLink {
                link: global[b.link as usize],
                loss: b.loss,
                stage: b.stage,
            });
        }
        for (s, snap) in d.stages.iter().enumerate().take(stages) {
            per_stage[s].extend(snap.blamed_so_far.iter().map(|&l| global[l as usize]));
        }
    }
    blamed.sort_by_key(|b| b.link);
    for s in &mut per_stage {
        s.sort_unstable();
    }
    undecided.sort_unstable();
    Verdict {
        blamed,
        stages: per_stage,
        undecided,
    }
}

impl Canary {
    /// The diagnosis of every sub-problem of `obs` with a lossy segment, each alone: what
    /// [`Localizer::localize`] merges. Sub-problems share nothing, so any split of the
    /// observations by sub-problem, diagnosed apart, gives the same diagnoses.
    pub fn diagnose(&self, obs: &Observations) -> Vec<SubVerdict> {
        let ties = self
            .params
            .likelihood_ties
            .then_some(self.incumbents.as_slice());
        let (numbers, subs, globals) = build_numbered(obs, ties);
        let diags = localize_all(&subs, &self.params);
        numbers
            .into_iter()
            .zip(globals)
            .zip(diags)
            .map(|((subproblem, links), diagnosis)| SubVerdict {
                subproblem,
                links,
                diagnosis,
            })
            .collect()
    }

    /// The verdict of diagnoses made anywhere ([`Canary::diagnose`]), as one localization of
    /// all their observations gives it.
    pub fn verdict(&self, mut subs: Vec<SubVerdict>) -> Verdict {
        subs.sort_by_key(|s| s.subproblem);
        let (globals, diags): (Vec<Vec<LinkIx>>, Vec<Diagnosis>) =
            subs.into_iter().map(|s| (s.links, s.diagnosis)).unzip();
        merge(&globals, &diags, self.params.groups.len().max(1))
    }
}

impl Localizer for Canary {
    type Input = Observations;
    fn name(&self) -> &'static str {
        "canary"
    }
    fn localize(&self, topo: &Topology, obs: &Observations) -> Verdict {
        let mut v = self.verdict(self.diagnose(obs));
        super::sick::name_sick_switches(topo, obs, &mut v);
        v
    }
}

impl Localizer for CdOnSegments {
    type Input = Observations;
    fn name(&self) -> &'static str {
        "canary-cd1"
    }
    fn localize(&self, _topo: &Topology, obs: &Observations) -> Verdict {
        let (subs, globals) = build(obs);
        let diags: Vec<Diagnosis> = subs
            .par_iter()
            .map(|s| single_cd(s, &self.params))
            .collect();
        merge(&globals, &diags, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Diagnosed in any split by sub-problem (as localizer workers do), the verdict is the
    /// one localization of everything gives: on a k = 8 fat-tree with a tenth of its links
    /// losing packets, split two and three ways.
    #[test]
    fn diagnoses_split_by_sub_problem_make_the_same_verdict() {
        use crate::detect::{observations, WindowCount};
        use crate::topo::{fattree::fattree, MonitorPlacement, Routing, Segments};
        use rand::{Rng, SeedableRng};
        let topo = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
        let segments = Segments::new(&topo, &Routing::new(&topo));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let loss: Vec<f64> = (0..topo.links.len())
            .map(|_| {
                if rng.random_bool(0.1) {
                    rng.random_range(0.001..0.3)
                } else {
                    0.0
                }
            })
            .collect();
        let totals = segments
            .list
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let sent = rng.random_range(200..3000u64);
                let ok = s.delivery(&loss);
                let lost = ((1.0 - ok) * sent as f64).round() as u64;
                (i as u32, WindowCount::of_one_epoch(sent, lost))
            })
            .collect();
        let obs = observations(&segments, &totals, 1);
        let canary = Canary::default();
        let whole = canary.localize(&topo, &obs);
        assert!(whole.blamed.len() > 5, "{whole:?}");
        for parts in [2u32, 3] {
            let mut subs = Vec::new();
            for p in (0..parts).rev() {
                let part = Observations {
                    segments: obs
                        .segments
                        .iter()
                        .filter(|s| s.subproblem % parts == p)
                        .cloned()
                        .collect(),
                };
                subs.extend(canary.diagnose(&part));
            }
            assert_eq!(canary.verdict(subs), whole, "{parts} parts");
        }
    }
}
