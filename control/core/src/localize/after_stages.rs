//! What the stages' blames become: homes for the losses they left without one, the blames the
//! others explain pruned, each remaining blame weighed against its rivals, the losses
//! estimated from the raw counts, and those below the floor dropped. Each step is its own
//! module; this is their order.

use super::canary::{estimate_losses, Blame, CanaryParams, Diagnosis, StageSnapshot, SubProblem};
use super::groups;
use super::redundant;
use super::settle;
use super::unexplained;

/// The diagnosis from the stages' blames (`stage_of`: link and stage, in the order found) and
/// their snapshots.
pub(super) fn finish(
    sub: &SubProblem,
    grp: &groups::Groups,
    params: &CanaryParams,
    mut stage_of: Vec<(u32, usize)>,
    mut stages: Vec<StageSnapshot>,
) -> Diagnosis {
    if params.likelihood_ties {
        // In rounds, pins and losses are from different epochs: not there.
        home_unexplained(sub, grp, &mut stage_of, &mut stages);
    }
    let links: Vec<u32> = stage_of.iter().map(|&(l, _)| l).collect();
    let mut losses = estimate_losses(sub, &links);
    let needed = redundant::prune(sub, &links, &losses);
    if needed.len() < links.len() {
        losses = estimate_losses(sub, &needed);
    }
    stage_of.retain(|(l, _)| needed.contains(l));
    let mut undecided = Vec::new();
    if params.likelihood_ties {
        // Weighed once the blames are few: a link the others explain is already gone.
        let settled = settle::settle(sub, &stage_of, params.floor);
        if settled.blamed != stage_of {
            stage_of = settled.blamed;
            let links: Vec<u32> = stage_of.iter().map(|&(l, _)| l).collect();
            losses = estimate_losses(sub, &links);
            for (g, snap) in stages.iter_mut().enumerate() {
                snap.blamed_so_far = stage_of
                    .iter()
                    .filter(|&&(_, s)| s <= g)
                    .map(|&(l, _)| l)
                    .collect();
                snap.blamed_so_far.sort_unstable();
            }
        }
        undecided = settled.undecided;
    }
    // Our decision: a link whose loss, estimated from the raw counts, is below the noise floor
    // explains nothing the floor would not already call noise. CD can blame such a link when it
    // shares its only lossy segments with a faulty neighbour (seen on k = 12: eight links at
    // 2e-5..5e-4 beside links losing 0.5..0.9); it is not reported.
    let blamed: Vec<Blame> = stage_of
        .iter()
        .zip(losses)
        .map(|(&(link, stage), loss)| Blame { link, stage, loss })
        .filter(|b| b.loss >= params.floor)
        .collect();
    // A link the others explain, or below the floor, leaves every stage's snapshot too.
    for snap in &mut stages {
        snap.blamed_so_far
            .retain(|l| blamed.iter().any(|b| b.link == *l));
    }
    Diagnosis {
        blamed,
        stages,
        undecided,
    }
}

/// Gives every lossy segment the stages left without a blamed link a home
/// ([`unexplained::homes`]), at the stage of its highest-loss segment, and adds it to the
/// snapshots from that stage on.
fn home_unexplained(
    sub: &SubProblem,
    grp: &groups::Groups,
    stage_of: &mut Vec<(u32, usize)>,
    stages: &mut [StageSnapshot],
) {
    let links: Vec<u32> = stage_of.iter().map(|&(l, _)| l).collect();
    for link in unexplained::homes(sub, &links) {
        let stage = sub
            .segments
            .iter()
            .zip(&grp.of_segment)
            .filter(|(s, _)| s.success < 1.0 && s.links.contains(&link))
            .filter_map(|(_, g)| *g)
            .min()
            .unwrap_or(grp.range.len().saturating_sub(1));
        stage_of.push((link, stage));
        for snap in stages.iter_mut().skip(stage) {
            snap.blamed_so_far.push(link);
            snap.blamed_so_far.sort_unstable();
        }
    }
}
