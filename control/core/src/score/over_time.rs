//! A run scored epoch by epoch against its fault schedule: when each fault was first blamed
//! after it began, when its link was all-clear after the repair, and the links blamed with no
//! fault on them.

use super::Score;
use crate::fault::Fault;
use crate::topo::{LinkIx, SwitchIx, Topology};
use serde::{Deserialize, Serialize};

/// One episode of one fault: it began in `onset` and was repaired in `repair` (`None`: not
/// within the run); first blamed in `detected`, all-clear in `cleared`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultTiming {
    pub link: LinkIx,
    pub device: Option<SwitchIx>,
    pub loss: f64,
    pub onset: u64,
    pub repair: Option<u64>,
    pub detected: Option<u64>,
    pub cleared: Option<u64>,
}

impl FaultTiming {
    /// Epochs from the onset to the first blame.
    pub fn time_to_detect(&self) -> Option<u64> {
        self.detected.map(|d| d - self.onset)
    }

    /// Epochs from the repair to the all-clear.
    pub fn time_to_clear(&self) -> Option<u64> {
        Some(self.cleared? - self.repair?)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OverTime {
    pub faults: Vec<FaultTiming>,
    /// Link-epochs blamed while no fault was on the link, not counting a repaired fault's
    /// link before its all-clear (that is time to clear).
    pub false_positive_link_epochs: u64,
    /// Every epoch's verdict against the faults active in it, summed over the epochs.
    pub link_epochs: Score,
}

/// Scores `blamed[e]`, the links blamed in epoch `e`, against `faults` (a device blamed as a
/// device scores as its fault: [`super::as_scored`]).
pub fn over_time(topo: &Topology, faults: &[Fault], blamed: &[Vec<LinkIx>]) -> OverTime {
    let n_links = topo.links.len();
    let blamed: Vec<Vec<LinkIx>> = blamed
        .iter()
        .map(|b| super::as_scored(topo, faults, b))
        .collect();
    let end = blamed.len() as u64;
    let is_blamed = |l: LinkIx, e: u64| blamed[e as usize].contains(&l);
    let mut out = OverTime::default();
    // Epochs each link spent between a repair and its all-clear.
    let mut clearing: Vec<(LinkIx, u64, u64)> = Vec::new();
    for f in faults.iter().filter(|f| f.loss > 0.0) {
        let onsets = f.when.onsets(end);
        let repairs = f.when.repairs(end);
        for (i, &onset) in onsets.iter().enumerate() {
            let next = onsets.get(i + 1).copied().unwrap_or(end);
            let repair = repairs.iter().copied().find(|&r| r > onset && r <= next);
            let detected = (onset..next).find(|&e| is_blamed(f.link, e));
            // An episode never blamed has nothing to clear.
            let cleared = repair
                .filter(|_| detected.is_some())
                .and_then(|r| (r..next).find(|&e| !is_blamed(f.link, e)));
            if let Some(r) = repair {
                clearing.push((f.link, r, cleared.unwrap_or(next)));
            }
            out.faults.push(FaultTiming {
                link: f.link,
                device: f.device,
                loss: f.loss,
                onset,
                repair,
                detected,
                cleared,
            });
        }
    }
    let (mut tp, mut fp, mut fn_, mut tn) = (0usize, 0usize, 0usize, 0usize);
    for e in 0..end {
        let truth = crate::fault::active_links(faults, e);
        let s = Score::of(&blamed[e as usize], &truth, n_links);
        tp += s.tp;
        fp += s.fp;
        fn_ += s.fn_;
        tn += n_links - s.tp - s.fp - s.fn_;
        for &l in blamed[e as usize].iter().filter(|l| !truth.contains(l)) {
            if !clearing
                .iter()
                .any(|&(x, a, b)| x == l && (a..b).contains(&e))
            {
                out.false_positive_link_epochs += 1;
            }
        }
    }
    out.link_epochs = Score::from_counts(tp, fp, fn_, tn);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::When;
    use crate::topo::{fattree::fattree, MonitorPlacement};

    fn topo() -> Topology {
        fattree(4, MonitorPlacement::TopAndBottom).unwrap()
    }

    fn fault(link: LinkIx, from: u64, until: Option<u64>) -> Fault {
        let mut f = Fault::constant(link, 0.01);
        f.when = When {
            from,
            until,
            flap: None,
        };
        f
    }

    #[test]
    fn detection_and_clearing_are_counted_from_the_onset_and_the_repair() {
        // Link 1 faulty in 2..5, blamed 3..7 (cleared at 7); link 4 blamed once, no fault.
        let faults = [fault(1, 2, Some(5))];
        let blamed: Vec<Vec<LinkIx>> = (0..10)
            .map(|e| {
                let mut v = vec![];
                if (3..7).contains(&e) {
                    v.push(1);
                }
                if e == 8 {
                    v.push(4);
                }
                v
            })
            .collect();
        let s = over_time(&topo(), &faults, &blamed);
        assert_eq!(s.faults.len(), 1);
        let t = s.faults[0];
        assert_eq!(
            (t.onset, t.repair, t.detected, t.cleared),
            (2, Some(5), Some(3), Some(7))
        );
        assert_eq!((t.time_to_detect(), t.time_to_clear()), (Some(1), Some(2)));
        // Epochs 5 and 6 are time to clear, not false positives; epoch 8 is one.
        assert_eq!(s.false_positive_link_epochs, 1);
        assert_eq!(s.link_epochs.tp, 2);
        assert_eq!(s.link_epochs.fn_, 1);
        assert_eq!(s.link_epochs.fp, 3);
    }

    #[test]
    fn a_flapping_fault_has_an_episode_per_period_and_an_undetected_one_says_so() {
        let mut f = fault(2, 0, Some(8));
        f.when.flap = Some(crate::fault::Flap { period: 4, on: 2 });
        let blamed: Vec<Vec<LinkIx>> = (0..10)
            .map(|e| if e < 3 { vec![2] } else { vec![] })
            .collect();
        let s = over_time(&topo(), &[f], &blamed);
        let eps: Vec<_> = s
            .faults
            .iter()
            .map(|t| (t.onset, t.repair, t.detected, t.cleared))
            .collect();
        assert_eq!(
            eps,
            vec![(0, Some(2), Some(0), Some(3)), (4, Some(6), None, None)]
        );
    }
}
