//! A loss's home weighed under every shape a fault can have (our decision; the paper weighs
//! packets only).
//!
//! A fault spreads its loss over every packet through the link (a dirty fibre, a bad optic),
//! or it catches some of the link's flows and not the others (a bad ECMP member, a corrupted
//! TCAM entry, a hash-dependent bug). Against the first, a loss-free segment's packets clear
//! its links; against the second, only its flows do: the flows the fault does not catch lose
//! nothing, however many packets they carry. A link is the likelier home of a loss only when
//! it is so under both shapes. On the testbed (issue 32) a fault on half the flows of
//! edge1_0→agg1_1 was blamed on agg1_1→core3 for the rest of a run: the faulty link's other
//! segment carried 364 clean packets, all of flows the fault did not catch, which by packets
//! pinned it harder than the neighbour's 263.
//!
//! Under "the loss is on `l`, at rate r on a share s of its flows", every flow through `l` is
//! caught with probability s and then loses at r on top of its segment's healthy loss ε; the
//! others, and every flow not through `l`, lose at ε. A flow of n packets that lost k weighs
//! (1 − s)·ε^k(1 − ε)^(n−k) + s·q^k(1 − q)^(n−k), q = 1 − (1 − r)(1 − ε). The hypothesis is
//! weighed at its likeliest (s, r), as the uniform one is at its likeliest rate (the
//! generalized likelihood ratio). Where a segment kept no count per flow (it had many,
//! `crate::detect::FlowWindow`), each of its packets stands for a flow.

use super::canary::SegmentObs;
use crate::detect::FlowCount;

/// Flows of the same counts on one segment: one term of a likelihood.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Flows {
    /// How many flows.
    pub count: f64,
    pub sent: f64,
    pub lost: f64,
    /// The segment's loss without a fault.
    pub eps: f64,
}

/// A segment's flows: one term per flow where it kept them, else its lost and its delivered
/// packets as flows of one packet each.
pub(super) fn flows_of(s: &SegmentObs, eps: f64) -> Vec<Flows> {
    flows_of_counts(s.sent, s.success, &s.flows, eps)
}

/// [`flows_of`] from a segment's packets (`sent`, the share `success` delivered) and its
/// counts per flow (`flows`, empty where it kept none).
pub(super) fn flows_of_counts(
    sent: f64,
    success: f64,
    flows: &[FlowCount],
    eps: f64,
) -> Vec<Flows> {
    if flows.is_empty() {
        let lost = (sent * (1.0 - success)).round().max(0.0);
        return [(lost, 1.0), (sent - lost, 0.0)]
            .into_iter()
            .filter(|&(count, _)| count > 0.0)
            .map(|(count, lost)| Flows {
                count,
                sent: 1.0,
                lost,
                eps,
            })
            .collect();
    }
    flows
        .iter()
        .map(|f| Flows {
            count: 1.0,
            sent: f64::from(f.sent),
            lost: f64::from(f.lost.min(f.sent)),
            eps,
        })
        .collect()
}

/// ln L of `flows` on no faulty link: each at its segment's healthy loss.
pub(super) fn healthy(flows: &[Flows]) -> f64 {
    flows
        .iter()
        .map(|f| f.count * binomial(f.sent, f.lost, f.eps))
        .sum()
}

/// ln L of `flows`, every one through the faulty link, at the likeliest share and rate: the
/// best of a loss on every flow (s = 1, whose likeliest rate is the pooled one) and of EM
/// (expectation-maximization) from two starting shares. EM never lowers the likelihood, and
/// the likelihood here has at most the two modes the starts aim at (most flows caught, or
/// few caught at a high rate).
pub(super) fn likeliest_share(flows: &[Flows]) -> f64 {
    if flows.is_empty() {
        return 0.0;
    }
    let eps = flows.iter().map(|f| f.eps).fold(1e-9, f64::max);
    let (sent, lost) = flows.iter().fold((0.0, 0.0), |(n, k), f| {
        (n + f.count * f.sent, k + f.count * f.lost)
    });
    let pooled = rate_of(lost / sent.max(1.0), eps);
    let mut best = log_likelihood(flows, 1.0, pooled, eps).0;
    for s0 in [0.5, 0.1] {
        best = best.max(em(flows, s0, pooled, eps));
    }
    best
}

/// The fault's own rate r that makes a segment of healthy loss `eps` lose `q`.
fn rate_of(q: f64, eps: f64) -> f64 {
    (1.0 - (1.0 - q) / (1.0 - eps)).clamp(0.0, 1.0 - 1e-9)
}

/// EM from share `s` (the rate starts where the caught flows would lose the pooled loss):
/// the log-likelihood it ends at.
fn em(flows: &[Flows], s: f64, pooled: f64, eps: f64) -> f64 {
    let (mut s, mut r) = (s, (pooled / s).min(0.5));
    let mut last = f64::NEG_INFINITY;
    for _ in 0..60 {
        let (ll, caught) = log_likelihood(flows, s, r, eps);
        if ll - last < 1e-7 {
            return ll.max(last);
        }
        last = ll;
        s = (caught.flows / caught.all).clamp(1e-4, 1.0);
        r = rate_of(caught.lost / caught.sent.max(1e-12), eps);
    }
    last
}

/// The flows' expected counts under "caught by the fault", each weighed by its chance of
/// having been caught, and how many flows there are: EM's next share and rate.
#[derive(Default)]
struct Caught {
    flows: f64,
    sent: f64,
    lost: f64,
    all: f64,
}

/// ln L of `flows` at share `s` and rate `r`, and their counts weighed by each flow's chance of
/// having been caught (the binomial coefficients left out: they are the same under every
/// hypothesis on the same counts). Every flow shares one healthy loss `eps` here.
fn log_likelihood(flows: &[Flows], s: f64, r: f64, eps: f64) -> (f64, Caught) {
    let q = (1.0 - (1.0 - r) * (1.0 - eps)).clamp(1e-12, 1.0 - 1e-12);
    let e = eps.clamp(1e-12, 1.0 - 1e-12);
    let (lq, l1q, le, l1e) = (q.ln(), (-q).ln_1p(), e.ln(), (-e).ln_1p());
    let (ls, l1s) = (
        s.ln(),
        if s < 1.0 {
            (-s).ln_1p()
        } else {
            f64::NEG_INFINITY
        },
    );
    let mut total = 0.0;
    let mut caught = Caught::default();
    for f in flows {
        let a = ls + f.lost * lq + (f.sent - f.lost) * l1q;
        let b = l1s + f.lost * le + (f.sent - f.lost) * l1e;
        let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
        let tail = (lo - hi).exp();
        total += f.count * (hi + tail.ln_1p());
        let w = if a >= b {
            1.0 / (1.0 + tail)
        } else {
            tail / (1.0 + tail)
        };
        caught.flows += f.count * w;
        caught.sent += f.count * w * f.sent;
        caught.lost += f.count * w * f.lost;
        caught.all += f.count;
    }
    (total, caught)
}

/// ln of `lost` of `sent` at loss `p`, without the binomial coefficient.
fn binomial(sent: f64, lost: f64, p: f64) -> f64 {
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    lost * p.ln() + (sent - lost) * (-p).ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(sent: f64, lost: f64) -> Flows {
        Flows {
            count: 1.0,
            sent,
            lost,
            eps: 1e-4,
        }
    }

    /// Flows that all lost about a tenth are likeliest with every flow caught; a share fits
    /// them no better.
    #[test]
    fn a_loss_on_every_flow_is_likeliest_caught_whole() {
        let flows: Vec<Flows> = (0..8).map(|_| flow(100.0, 10.0)).collect();
        let whole: f64 = flows.iter().map(|f| binomial(f.sent, f.lost, 0.1)).sum();
        let best = likeliest_share(&flows);
        assert!((best - whole).abs() < 0.05, "{best} against {whole}");
    }

    /// Half the flows lost a fifth, half nothing: a share of about one half fits them far
    /// better than any loss on every flow does.
    #[test]
    fn a_loss_on_half_the_flows_is_likeliest_a_share() {
        let flows: Vec<Flows> = (0..8)
            .map(|i| flow(100.0, if i % 2 == 0 { 20.0 } else { 0.0 }))
            .collect();
        let every: f64 = flows.iter().map(|f| binomial(f.sent, f.lost, 0.1)).sum();
        let half: f64 = flows
            .iter()
            .map(|f| {
                (0.5f64).ln() + binomial(f.sent, f.lost, if f.lost > 0.0 { 0.2 } else { 1e-4 })
            })
            .sum();
        let best = likeliest_share(&flows);
        assert!(best >= half - 0.5, "{best} against {half}");
        assert!(best > every + 20.0, "{best} against {every}");
    }

    /// Clean flows weigh against a share fault by their number, not their packets: three
    /// clean flows of 100 packets cost a share fault about what three of 10 do, where against
    /// a loss on every flow the first cost ten times as much.
    #[test]
    fn clean_flows_weigh_by_their_number_against_a_share() {
        let lossy = flow(20.0, 4.0);
        let with = |n: f64| {
            let mut v = vec![lossy];
            v.extend((0..3).map(|_| flow(n, 0.0)));
            likeliest_share(&v)
        };
        let (big, small) = (with(100.0), with(10.0));
        assert!((big - small).abs() < 1.0, "{big} against {small}");
        let alone = likeliest_share(&[lossy]);
        assert!(
            alone - big > 1.0 && alone - big < 4.0,
            "{alone} against {big}"
        );
    }

    /// A segment without counts per flow is its packets, each a flow of one.
    #[test]
    fn a_segment_without_flows_is_its_packets() {
        let s = SegmentObs {
            links: vec![0],
            success: 0.9,
            sent: 50.0,
            flows: Vec::new(),
        };
        let f = flows_of(&s, 1e-4);
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].count, f[0].lost), (5.0, 1.0));
        assert_eq!((f[1].count, f[1].lost), (45.0, 0.0));
    }
}
