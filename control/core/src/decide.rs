//! Which segments lose packets beyond the fabric's background, and when they stop.
//!
//! A healthy link still loses a little (congestion, bit errors): at most `background` per
//! packet, the operator's figure for the fabric. A segment of `L` links then loses at most
//! `p0 = 1 − (1 − background)^L`. Each segment is watched with Page's CUSUM on the packets it
//! carried, one per alternative loss rate `p1` on a grid (`p0·4`, `p0·16`, … below ½): every
//! epoch adds the log-likelihood ratio of its `lost` of `sent` under `p1` against `p0`, and
//! the sum restarts at 0 when it falls below. A segment is declared lossy when any sum reaches
//! `h`. A lossy segment is watched by a second CUSUM, of `p0` against the least its loss has
//! been (the rate that declared it, raised to the lower end of the 99.7 % Wilson interval of its
//! counts since the loss began); when that one reaches `h` the segment is all-clear, and
//! watched as before.
//!
//! Why this bound holds: from any epoch on, the likelihood ratio of a segment whose loss is at
//! most `p0` is a supermartingale of mean at most 1, so by Ville's inequality it ever reaches
//! `e^h` with probability at most `e^-h`. A CUSUM alarm at epoch `t` is such a ratio from some
//! earlier epoch reaching `e^h`; one new start per epoch, per arm, per segment. So the expected
//! number of false alarms per epoch over the fabric is at most `arms × segments × e^-h`, and
//! `h = ln(arms × segments / false_alarms)` gives the rate the operator asked for. The same
//! argument bounds false all-clears of a segment still losing at least that rate; only the
//! segments declared lossy run that test, so its threshold is `ln(1 / false_alarms)`: at most
//! `false_alarms` false all-clears per epoch per lossy segment.
//!
//! The expected packets to a decision grow like `h / KL(p ‖ p0)`: a small loss is found once
//! enough packets have crossed the segment, however many epochs that takes.
//!
//! [`lossy_in_total`] and [`link_lossy_in_total`] are the same tests once, on counts taken
//! together (a whole run).

use crate::detect::SegmentCount;
use crate::topo::SegmentId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionParams {
    /// The most a healthy link loses, per packet.
    pub background: f64,
    /// Expected false alarms per epoch over the whole fabric (healthy segments declared lossy).
    pub false_alarms: f64,
}

impl Default for DecisionParams {
    fn default() -> Self {
        Self {
            background: 1e-4,
            false_alarms: 1e-6,
        }
    }
}

impl DecisionParams {
    /// The first problem with the parameters, naming the field.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.background > 0.0 && self.background < 0.1) {
            return Err(format!(
                "background: {} is not a per-packet loss in (0, 0.1)",
                self.background
            ));
        }
        if !(self.false_alarms > 0.0 && self.false_alarms < 1.0) {
            return Err(format!(
                "false_alarms: {} is not a rate per epoch in (0, 1)",
                self.false_alarms
            ));
        }
        Ok(())
    }

    /// The most a healthy segment of `links` links loses.
    pub fn p0(&self, links: usize) -> f64 {
        1.0 - (1.0 - self.background).powi(links as i32)
    }
}

/// Alternative loss rates watched for a segment whose healthy loss is `p0`.
fn arms(p0: f64) -> Vec<f64> {
    std::iter::successors(Some(p0 * 4.0), |p| Some(p * 4.0))
        .take_while(|&p| p < 0.5)
        .collect()
}

/// The log-likelihood ratio of `lost` of `sent` under loss `p1` against loss `p0`.
fn llr(c: &SegmentCount, p1: f64, p0: f64) -> f64 {
    let kept = (c.sent - c.lost.min(c.sent)) as f64;
    c.lost as f64 * (p1 / p0).ln() + kept * ((1.0 - p1) / (1.0 - p0)).ln()
}

/// One CUSUM: its sum, and the packets since it last stood at 0 (the change it is weighing).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Cusum {
    sum: f64,
    from: u64,
    sent: u64,
    lost: u64,
}

impl Cusum {
    fn add(&mut self, epoch: u64, c: &SegmentCount, step: f64) {
        if self.sum <= 0.0 {
            *self = Cusum {
                from: epoch,
                ..Default::default()
            };
        }
        self.sum = (self.sum + step).max(0.0);
        self.sent += c.sent;
        self.lost += c.lost;
    }
}

/// A segment declared lossy.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lossy {
    /// The epoch the loss began, as the CUSUM dates it (when its sum last left 0).
    pub since: u64,
    /// The epoch it was declared.
    pub declared: u64,
    /// Packets sent and lost from `since` on: the loss estimate.
    pub sent: u64,
    pub lost: u64,
    /// The loss the all-clear test weighs against `p0`: the rate that declared it, raised to
    /// what the counts since show it has at least been.
    pub rate: f64,
    #[serde(skip)]
    clear: Cusum,
}

#[derive(Clone, Debug)]
enum State {
    Watching(Vec<Cusum>),
    Lossy(Lossy),
}

/// A segment's state changing in an epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change {
    Declared { segment: SegmentId, since: u64 },
    Cleared { segment: SegmentId },
}

/// The sequential decision over every segment of a fabric.
#[derive(Clone, Debug)]
pub struct Decider {
    params: DecisionParams,
    p0: Vec<f64>,
    arms: Vec<Vec<f64>>,
    h: f64,
    /// The all-clear's threshold: only lossy segments run that test, one each.
    h_clear: f64,
    state: Vec<State>,
    /// Each link's pooled test, when the decider knows which links each segment crosses.
    links: Option<LinkWatch>,
}

impl Decider {
    /// `links[s]`: how many links segment `s` crosses. Segments are tested one by one.
    pub fn new(links: &[usize], params: DecisionParams) -> Self {
        let p0: Vec<f64> = links.iter().map(|&l| params.p0(l.max(1))).collect();
        let arms: Vec<Vec<f64>> = p0.iter().map(|&p| arms(p)).collect();
        let total_arms: usize = arms.iter().map(Vec::len).sum::<usize>().max(1);
        let state = arms
            .iter()
            .map(|a| State::Watching(vec![Cusum::default(); a.len()]))
            .collect();
        Self {
            h: threshold(total_arms, params.false_alarms),
            h_clear: threshold(1, params.false_alarms),
            params,
            p0,
            arms,
            state,
            links: None,
        }
    }

    pub fn params(&self) -> DecisionParams {
        self.params
    }

    /// The log-likelihood ratio a decision needs.
    pub fn threshold(&self) -> f64 {
        self.h
    }

    /// Adds one epoch's counts (segments not observed stand still) and says what changed.
    pub fn observe(
        &mut self,
        epoch: u64,
        counts: &BTreeMap<SegmentId, SegmentCount>,
    ) -> Vec<Change> {
        let mut changes = Vec::new();
        for (&segment, c) in counts {
            let s = segment as usize;
            if s >= self.state.len() || c.sent == 0 {
                continue;
            }
            let p0 = self.p0[s];
            match &mut self.state[s] {
                State::Watching(cusums) => {
                    let mut fired: Option<(f64, Cusum)> = None;
                    for (k, &p1) in self.arms[s].iter().enumerate() {
                        let cu = &mut cusums[k];
                        cu.add(epoch, c, llr(c, p1, p0));
                        // Of several arms at once, the one whose change began first.
                        if cu.sum >= self.h && fired.is_none_or(|(_, f)| cu.from < f.from) {
                            fired = Some((p1, *cu));
                        }
                    }
                    if let Some((rate, cu)) = fired {
                        self.state[s] = State::Lossy(Lossy {
                            since: cu.from,
                            declared: epoch,
                            sent: cu.sent,
                            lost: cu.lost,
                            rate,
                            clear: Cusum::default(),
                        });
                        changes.push(Change::Declared {
                            segment,
                            since: cu.from,
                        });
                    }
                }
                State::Lossy(l) => {
                    l.sent += c.sent;
                    l.lost += c.lost;
                    // Weighed against the least the loss has been, by its counts so far (the
                    // lower end of a 99.7 % interval) and never below the rate that declared it:
                    // the larger the loss, the sooner its repair shows.
                    let q = l.lost as f64 / l.sent as f64;
                    let low = crate::score::wilson(q, l.sent, 3.0)[0];
                    l.rate = l.rate.max(low.min(0.5));
                    let step = llr(c, p0, l.rate);
                    l.clear.add(epoch, c, step);
                    if l.clear.sum >= self.h_clear {
                        self.state[s] = State::Watching(vec![Cusum::default(); self.arms[s].len()]);
                        changes.push(Change::Cleared { segment });
                    }
                }
            }
        }
        changes
    }

    /// The segments declared lossy now.
    pub fn lossy(&self) -> impl Iterator<Item = (SegmentId, &Lossy)> + '_ {
        self.state
            .iter()
            .enumerate()
            .filter_map(|(s, st)| match st {
                State::Lossy(l) => Some((s as SegmentId, l)),
                State::Watching(_) => None,
            })
    }

    /// Whether a lossy segment's recent counts are half-way to its all-clear: the loss is
    /// probably over, but not yet shown to be.
    pub fn clearing(&self, l: &Lossy) -> bool {
        l.clear.sum >= self.h_clear / 2.0
    }

    /// Segment `s`'s healthy loss.
    pub fn p0(&self, s: SegmentId) -> f64 {
        self.p0[s as usize]
    }

    /// Ends segment `s`'s loss: the all-clear of the link it was lossy through
    /// ([`LinkClearing`]). Whether it is watched as before; a loss it still has is found again.
    pub fn force_clear(&mut self, s: SegmentId) -> bool {
        let i = s as usize;
        if !matches!(self.state.get(i), Some(State::Lossy(_))) {
            return false;
        }
        self.state[i] = State::Watching(vec![Cusum::default(); self.arms[i].len()]);
        true
    }

    pub fn lossy_segment(&self, s: SegmentId) -> Option<&Lossy> {
        match self.state.get(s as usize) {
            Some(State::Lossy(l)) => Some(l),
            _ => None,
        }
    }
}

/// The first epoch at which `gains` (each epoch's log-likelihood ratio, from the loss's onset
/// on) sum to `h`.
pub fn decidable_at(gains: impl IntoIterator<Item = (u64, f64)>, h: f64) -> Option<u64> {
    let mut sum = 0.0;
    gains.into_iter().find_map(|(e, g)| {
        sum += g;
        (sum >= h).then_some(e)
    })
}

/// `h` for `arms` CUSUMs and the asked false alarms per epoch.
fn threshold(arms: usize, false_alarms: f64) -> f64 {
    (arms as f64 / false_alarms).ln().max(0.0)
}

/// The Bernoulli Kullback-Leibler divergence KL(q ‖ p).
fn kl(q: f64, p: f64) -> f64 {
    let term = |a: f64, b: f64| if a <= 0.0 { 0.0 } else { a * (a / b).ln() };
    term(q, p) + term(1.0 - q, 1.0 - p)
}

/// The same test once, on counts taken together: whether `lost` of `sent` is beyond what a
/// healthy segment of `links` links loses, with the false alarms spread over `tests` tests
/// ([`total_tests`]). By Chernoff's bound,
/// P(loss ≥ lost | p0) ≤ exp(−sent · KL(lost/sent ‖ p0)).
pub fn lossy_in_total(
    c: &SegmentCount,
    links: usize,
    tests: usize,
    params: &DecisionParams,
) -> bool {
    if c.sent == 0 || c.lost == 0 {
        return false;
    }
    let p0 = params.p0(links.max(1));
    let q = c.lost as f64 / c.sent as f64;
    q > p0 && c.sent as f64 * kl(q, p0) >= threshold(tests.max(1), params.false_alarms)
}

/// How many tests a whole run's decision makes: one per segment of the fabric's `segments`, and
/// one per arm of each of the `links` that segments cross ([`link_lossy_in_total`]).
pub fn total_tests(segments: usize, links: usize, params: &DecisionParams) -> usize {
    segments + links * link_watch::link_arms(params.background).len()
}

/// A link's test once, on the run's counts of the segments through it (each with its number of
/// links): whether, at one of the rates a link is watched for, they lose more together than
/// healthy segments can ([`LinkWatch`]'s pooled ratio, summed once). A likelihood ratio reaches
/// e^h under health with probability at most e^−h, so each arm counts as one of the `tests`.
pub fn link_lossy_in_total(
    through: &[(SegmentCount, usize)],
    tests: usize,
    params: &DecisionParams,
) -> bool {
    if through.iter().all(|(c, _)| c.lost == 0) {
        return false;
    }
    let h = threshold(tests.max(1), params.false_alarms);
    link_watch::link_arms(params.background).iter().any(|&q| {
        let gain: f64 = through
            .iter()
            .filter(|(c, _)| c.sent > 0)
            .map(|(c, links)| link_watch::link_llr(c, params.p0((*links).max(1)), q))
            .sum();
        gain >= h
    })
}

#[cfg(test)]
mod tests;

mod evidence;
mod hold;
mod link_clear;
mod link_watch;
mod observations;
mod timeline;
pub use evidence::{smallest_shown, EvidenceMap, EvidenceTracker, LinkEvidence};
pub use hold::{hold, Held, Release};
pub use link_clear::LinkClearing;
pub use link_watch::{LinkFired, LinkWatch};
pub use observations::{decided_observations, total_observations};
pub use timeline::{Cleared, LinkTimeline};
