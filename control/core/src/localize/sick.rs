//! Sick switches: a switch that drops on every port, in and out, named as the device.
//!
//! Every segment through a transit switch crosses one of its links in and one out, so drops on
//! all of them (each at r) look like drops on its links in alone (each at about 2r), on its
//! links out alone, or on the links to one layer both ways: equally small covers of the same
//! lossy segments, and CD picks one by the noise of the epoch, a verdict that flips from epoch
//! to epoch (NetBouncer Sec. 4 on device failures). One component explains them all: the
//! switch. So when the segments observed through a transit switch are lossy (declared, or
//! losing beyond the background while not yet declared), those segments reach most of its
//! links in and most of its links out, and none of its links' loss-free segments carried,
//! together, enough packets to have shown the device's loss, the switch is named, and
//! every one of its links in and out is blamed at the rate the device hypothesis gives them,
//! `r = 1 − √(success)` of its segments pooled. That verdict depends only on which segments are
//! declared lossy, so it holds from epoch to epoch as they do.
//!
//! A switch with one or two bad links is not named: the segments through its healthy links
//! stay clean. They are weighed per link, all together: on the testbed a cable dropping 3 %
//! both ways between agg1_0 and core0 made every segment through agg1_0 and core0 lossy,
//! covering 3 of agg1_0's 4 links each way; its two segments through core1 → agg1_0 lost
//! nothing in 86 and 103 packets, neither enough alone to rule out the device's 1.9 % a link
//! (4.0 % and 2.1 % chance), together enough (0.08 %); weighed one by one, the switch was
//! named for an epoch. A monitor switch is not either: its segments start or end at it, so its
//! links in and out lie on different segments and are told apart as links.

use super::{BlamedLink, Verdict};
use crate::detect::Observations;
use crate::topo::{LinkIx, SwitchIx, Topology};
use std::collections::{BTreeMap, BTreeSet};

/// Fewest segments through a switch for a device verdict.
const MIN_SEGMENTS: usize = 3;
/// The share of its links in (and out) its lossy segments must reach.
const COVER: f64 = 0.75;
/// The loss-free segments through one of the switch's links veto the device when the device's
/// loss would have left them all clean with less than this probability.
const CLEAN_VETO: f64 = 0.01;

/// The transit switches whose every observed segment is lossy, reaching most of their links
/// in and out, each with the loss rate of its links under the device hypothesis.
pub fn sick_switches(topo: &Topology, obs: &Observations) -> Vec<(SwitchIx, f64)> {
    #[derive(Default)]
    struct Seen {
        ins: BTreeSet<LinkIx>,
        outs: BTreeSet<LinkIx>,
        lossy: usize,
        sent: u64,
        kept: f64,
        /// Per link of the switch, the packets of the loss-free segments through it.
        clean: BTreeMap<LinkIx, u64>,
    }
    let mut by: BTreeMap<SwitchIx, Seen> = BTreeMap::new();
    for s in &obs.segments {
        for pair in s.links.windows(2) {
            let (a, b) = (topo.links[pair[0] as usize], topo.links[pair[1] as usize]);
            let x = a.to;
            if b.from != x || topo.switches[x as usize].monitor {
                continue;
            }
            let e = by.entry(x).or_default();
            if s.success < 1.0 || s.set_aside() {
                // Declared lossy, or losing beyond the background and not yet declared.
                e.ins.insert(pair[0]);
                e.outs.insert(pair[1]);
            }
            if s.success < 1.0 {
                e.lossy += 1;
                e.sent += s.sent;
                e.kept += s.success * s.sent as f64;
            } else if !s.set_aside() {
                for &l in pair {
                    *e.clean.entry(l).or_default() += s.sent;
                }
            }
        }
    }
    by.into_iter()
        .filter_map(|(x, e)| {
            let n = topo.neighbors(x).len() as f64;
            if e.lossy < MIN_SEGMENTS
                || (e.ins.len() as f64) < COVER * n
                || (e.outs.len() as f64) < COVER * n
            {
                return None;
            }
            let success = (e.kept / e.sent.max(1) as f64).clamp(0.0, 1.0);
            let r = 1.0 - success.sqrt();
            // Loss-free segments through one link that would together have shown the device's
            // loss (two of each one's links at r) with probability 99 % say it is not the
            // whole switch.
            let veto = e
                .clean
                .values()
                .any(|&n| (1.0 - r).powi(2).powf(n as f64) < CLEAN_VETO);
            (!veto).then_some((x, r))
        })
        .collect()
}

/// `v` with each sick switch named: its links blamed by CD replaced by all its links in and
/// out, at the device's rate. Returns the switches named.
pub fn name_sick_switches(topo: &Topology, obs: &Observations, v: &mut Verdict) -> Vec<SwitchIx> {
    let sick = sick_switches(topo, obs);
    for &(x, r) in &sick {
        let stage = v
            .blamed
            .iter()
            .filter(|b| touches(topo, b.link, x))
            .map(|b| b.stage)
            .min()
            .unwrap_or(0);
        v.blamed.retain(|b| !touches(topo, b.link, x));
        for &m in topo.neighbors(x) {
            for link in [topo.link(m, x), topo.link(x, m)].into_iter().flatten() {
                v.blamed.push(BlamedLink {
                    link,
                    loss: r,
                    stage,
                });
            }
        }
    }
    v.blamed.sort_by_key(|b| b.link);
    v.blamed.dedup_by_key(|b| b.link);
    sick.into_iter().map(|(x, _)| x).collect()
}

fn touches(topo: &Topology, l: LinkIx, x: SwitchIx) -> bool {
    let k = topo.links[l as usize];
    k.from == x || k.to == x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::{observations, WindowCount};
    use crate::topo::{fattree::fattree, MonitorPlacement, Routing, Segments};

    /// k = 8 fat-tree segments, each losing what `loss` (per directed link) gives.
    fn observe(loss: impl Fn(LinkIx) -> f64) -> (Topology, Observations) {
        let t = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
        let segs = Segments::new(&t, &Routing::new(&t));
        let l: Vec<f64> = (0..t.links.len() as LinkIx).map(loss).collect();
        let totals = segs
            .list
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let lost = ((1.0 - s.delivery(&l)) * 5000.0).round() as u64;
                (i as u32, WindowCount::of_one_epoch(5000, lost))
            })
            .collect();
        let obs = observations(&segs, &totals, 1);
        (t, obs)
    }

    #[test]
    fn a_switch_losing_on_every_port_both_ways_is_named_with_all_its_links() {
        let t0 = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
        let x = t0.switch("agg1_0").unwrap();
        let (t, obs) = observe(|l| {
            let k = t0.links[l as usize];
            if k.from == x || k.to == x {
                0.02
            } else {
                0.0
            }
        });
        let sick = sick_switches(&t, &obs);
        assert_eq!(sick.len(), 1);
        assert_eq!(sick[0].0, x);
        assert!((sick[0].1 - 0.02).abs() < 0.002, "{}", sick[0].1);
        // Whatever cover CD chose, the verdict is every link in and out.
        let mut v = Verdict {
            blamed: t
                .neighbors(x)
                .iter()
                .map(|&m| BlamedLink {
                    link: t.link(m, x).unwrap(),
                    loss: 0.04,
                    stage: 3,
                })
                .collect(),
            stages: vec![],
            ..Default::default()
        };
        assert_eq!(name_sick_switches(&t, &obs, &mut v), vec![x]);
        assert_eq!(v.blamed.len(), 2 * t.neighbors(x).len());
        assert!(v
            .blamed
            .iter()
            .all(|b| touches(&t, b.link, x) && b.stage == 3));
    }

    /// The k = 4 testbed's epoch (seed 3, k4-three-links): a cable dropping 3 % both ways
    /// between agg1_0 and core0. `lossy` and `clean`: (from, via, to, sent, lost).
    fn testbed_epoch(segments: &[(&str, &str, &str, u64, u64)]) -> (Topology, Observations) {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let segs = Segments::new(&t, &Routing::new(&t));
        let totals = segments
            .iter()
            .map(|&(a, b, c, sent, lost)| {
                let ids: Vec<SwitchIx> = [a, b, c].iter().map(|n| t.switch(n).unwrap()).collect();
                let s = segs.find(&ids).unwrap();
                (s, WindowCount::of_one_epoch(sent, lost))
            })
            .collect();
        let obs = observations(&segs, &totals, 1);
        (t, obs)
    }

    #[test]
    fn a_cable_dropping_both_ways_is_not_its_switch() {
        let cable = [
            ("edge1_0", "agg1_0", "core0", 91, 4),
            ("edge1_1", "agg1_0", "core0", 44, 1),
            ("core0", "agg1_0", "edge1_0", 149, 4),
            ("core0", "agg1_0", "edge1_1", 69, 4),
        ];
        let clean = [
            ("edge1_0", "agg1_0", "edge1_1", 55, 0),
            ("edge1_0", "agg1_0", "core1", 73, 0),
            ("edge1_1", "agg1_0", "edge1_0", 16, 0),
            ("edge1_1", "agg1_0", "core1", 60, 0),
            ("core1", "agg1_0", "edge1_0", 86, 0),
            ("core1", "agg1_0", "edge1_1", 103, 0),
        ];
        let all: Vec<_> = cable.iter().chain(&clean).copied().collect();
        let (t, obs) = testbed_epoch(&all);
        // Each core1 segment alone would have kept 2-4 % of the device's chances; the two
        // through core1 → agg1_0 together, 0.08 %.
        assert!(sick_switches(&t, &obs).is_empty());
        // The same counts with those core1 segments a tenth as busy: the device is named.
        let thin: Vec<_> = all
            .iter()
            .map(|&(a, b, c, n, l)| {
                if c == "core1" || a == "core1" {
                    (a, b, c, n / 10, l)
                } else {
                    (a, b, c, n, l)
                }
            })
            .collect();
        let (t, obs) = testbed_epoch(&thin);
        assert_eq!(sick_switches(&t, &obs).len(), 1);
    }

    #[test]
    fn a_switch_with_one_bad_link_in_and_one_out_is_not_a_device() {
        let t0 = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
        let bad = [
            t0.link_by_names("core0", "agg1_0").unwrap(),
            t0.link_by_names("agg1_0", "edge1_0").unwrap(),
        ];
        let (t, obs) = observe(|l| if bad.contains(&l) { 0.05 } else { 0.0 });
        assert!(sick_switches(&t, &obs).is_empty());
        // A monitor losing on every port is told apart link by link.
        let e = t0.switch("edge1_0").unwrap();
        let (t, obs) = observe(|l| {
            let k = t0.links[l as usize];
            if k.from == e || k.to == e {
                0.02
            } else {
                0.0
            }
        });
        assert!(sick_switches(&t, &obs).is_empty());
    }
}
