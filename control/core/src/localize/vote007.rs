//! 007 (Arzani et al., NSDI 2018): democratic voting over the traced paths of retransmitting TCP
//! flows (paper §5.1, Algorithm 1).
//!
//! * Voting: every flow with `r ≥ min_retransmissions` and a discovered path of `h` links gives
//!   each of those links `1/h` of a vote; good flows cast nothing (vote value 0).
//! * [`algorithm1`]: repeatedly blame the top-voted link while its vote is ≥ `threshold` (1 %) of
//!   the votes cast, then remove the votes of every bad flow through it ("assume all flows having
//!   retransmissions and going through l_max had drops due to l_max"). The paper estimates that
//!   share with uniform-ECMP fractions; we know each flow's traced path, so we remove the exact
//!   votes (as Flock's reimplementation does: it recomputes votes from the flows that avoid
//!   every blamed link).
//! * [`per_flow_blame`]: each bad flow's most likely culprit is the link of its path with the
//!   highest raw vote ("links ranked higher have higher drop rates", Theorem 2).
//!
//! Directed links: a flow's data path is one-way, so votes go to the directed links the
//! traceroute discovered. `h` counts the links in the report, i.e. inter-switch links only in our
//! switch-level topologies (the paper's 5-hop paths include the two host links).
//!
//! 007 has no loss-rate estimate: [`BlamedLink::loss`] carries the link's *vote share* (its vote
//! when blamed divided by the votes cast) as a score.
//!
//! Not done here: path discovery and its rate limits (the simulator's `tcp007`), switch-level
//! voting, the binary/integer-program baselines, separating "noise drops" with ground truth.

use serde::{Deserialize, Serialize};

use super::{BlamedLink, Localizer, Verdict};
use crate::topo::{LinkIx, Topology};

/// What 007's agents report for one TCP flow in one epoch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowReport007 {
    /// Directed links discovered by the traceroute, in path order; `None` when the flow was not
    /// traced (no retransmission, or a rate limit denied it). A traceroute cut short by a lossy
    /// link yields a prefix of the path.
    pub path: Option<Vec<LinkIx>>,
    /// Data packets the flow sent.
    pub packets: u32,
    /// Retransmissions the TCP monitoring agent saw.
    pub retransmissions: u32,
}

/// How Algorithm 1's cutoff treats the vote total while votes are being removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum VoteTotal {
    /// `threshold × votes cast`, fixed before any adjustment (the paper speaks of 1 % of the
    /// votes cast; recomputing it after each adjustment makes the loop blame links until every
    /// bad flow is explained).
    #[default]
    Frozen,
    /// `threshold × current (adjusted) votes`: the cutoff shrinks with every blamed link.
    Recomputed,
}

/// Parameters of [`Vote007`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Vote007Params {
    /// Algorithm 1 cutoff as a fraction of the total vote (paper: 0.01).
    pub threshold: f64,
    /// Minimum retransmissions for a flow to vote (1 = the paper; 2 drops lone drops as noise).
    pub min_retransmissions: u32,
    pub total: VoteTotal,
    /// Remove the votes explained by each blamed link (Algorithm 1 line 11).
    pub adjust: bool,
}

impl Default for Vote007Params {
    fn default() -> Self {
        Self {
            threshold: 0.01,
            min_retransmissions: 1,
            total: VoteTotal::Frozen,
            adjust: true,
        }
    }
}

/// The 007 localizer over one epoch of flow reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Vote007 {
    pub params: Vote007Params,
}

/// The links a flow votes for under `params`, if it votes.
fn votes<'a>(f: &'a FlowReport007, params: &Vote007Params) -> Option<&'a [LinkIx]> {
    match &f.path {
        Some(p) if !p.is_empty() && f.retransmissions >= params.min_retransmissions.max(1) => {
            Some(p)
        }
        _ => None,
    }
}

/// Raw vote tally per directed link (`n_links` entries).
pub fn tally(n_links: usize, flows: &[FlowReport007], params: &Vote007Params) -> Vec<f64> {
    let mut v = vec![0.0; n_links];
    for p in flows.iter().filter_map(|f| votes(f, params)) {
        let share = 1.0 / p.len() as f64;
        for &l in p {
            v[l as usize] += share;
        }
    }
    v
}

/// Links by decreasing raw vote (ties: lower index first); links without votes are left out.
pub fn ranking(votes: &[f64]) -> Vec<(LinkIx, f64)> {
    let mut r: Vec<(LinkIx, f64)> = votes
        .iter()
        .enumerate()
        .filter(|(_, &v)| v > 0.0)
        .map(|(l, &v)| (l as LinkIx, v))
        .collect();
    r.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    r
}

/// Algorithm 1. Returns the blamed links in blame order with their vote at blame time.
pub fn algorithm1(
    n_links: usize,
    flows: &[FlowReport007],
    params: &Vote007Params,
) -> Vec<(LinkIx, f64)> {
    let mut v = tally(n_links, flows, params);
    let voters: Vec<&[LinkIx]> = flows.iter().filter_map(|f| votes(f, params)).collect();
    let mut through: Vec<Vec<usize>> = vec![Vec::new(); n_links];
    for (i, p) in voters.iter().enumerate() {
        for &l in *p {
            through[l as usize].push(i);
        }
    }
    let cast: f64 = voters.len() as f64; // every voting flow casts exactly one vote in total
    let mut explained = vec![false; voters.len()];
    let mut blamed_flag = vec![false; n_links];
    let mut blamed = Vec::new();
    loop {
        let best = (0..n_links)
            .filter(|&l| !blamed_flag[l] && v[l] > 0.0)
            .max_by(|&a, &b| v[a].total_cmp(&v[b]).then(b.cmp(&a)));
        let Some(best) = best else { break };
        let total = match params.total {
            VoteTotal::Frozen => cast,
            VoteTotal::Recomputed => v.iter().sum(),
        };
        // Small tolerance so that a vote equal to the cutoff passes despite rounding.
        if v[best] < params.threshold * total - 1e-9 {
            break;
        }
        blamed_flag[best] = true;
        blamed.push((best as LinkIx, v[best]));
        if params.adjust {
            for &i in &through[best] {
                if std::mem::replace(&mut explained[i], true) {
                    continue;
                }
                let share = 1.0 / voters[i].len() as f64;
                for &l in voters[i] {
                    v[l as usize] = (v[l as usize] - share).max(0.0);
                }
            }
        }
    }
    blamed
}

/// Per-flow diagnosis: for each flow that votes, the link of its path with the highest raw vote
/// (ties: the earlier link on the path); `None` for flows that cast no vote.
pub fn per_flow_blame(
    votes_by_link: &[f64],
    flows: &[FlowReport007],
    params: &Vote007Params,
) -> Vec<Option<LinkIx>> {
    flows
        .iter()
        .map(|f| {
            let p = votes(f, params)?;
            p.iter().copied().reduce(|a, b| {
                if votes_by_link[b as usize] > votes_by_link[a as usize] {
                    b
                } else {
                    a
                }
            })
        })
        .collect()
}

impl Localizer for Vote007 {
    type Input = Vec<FlowReport007>;

    fn name(&self) -> &'static str {
        "007"
    }

    fn localize(&self, topo: &Topology, input: &Self::Input) -> Verdict {
        let cast = input
            .iter()
            .filter(|f| votes(f, &self.params).is_some())
            .count()
            .max(1) as f64;
        let blamed: Vec<BlamedLink> = algorithm1(topo.links.len(), input, &self.params)
            .into_iter()
            .map(|(link, v)| BlamedLink {
                link,
                loss: v / cast,
                stage: 0,
            })
            .collect();
        let stages = vec![blamed.iter().map(|b| b.link).collect()];
        Verdict {
            blamed,
            stages,
            ..Default::default()
        }
    }
}
