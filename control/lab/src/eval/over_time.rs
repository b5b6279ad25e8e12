//! Every localizer on one fault schedule. Each epoch is drawn with the faults active in it; each
//! localizer gets its own telemetry of that epoch alone (its probes, its TCP flows) and gives a
//! verdict, as it would run in production once per probing round; Canary's verdicts are its
//! run's epoch reports. Every localizer's verdicts are then scored epoch by epoch against the
//! schedule: time to detect, time to clear, false-positive link-epochs.

use super::params::{flock_for, nb_params, vote007_for};
use super::{stream, EvalOptions, Kind};
use canary_controller::report::OverTimeReport;
use canary_core::fault::{link_losses, Fault};
use canary_core::localize::{Detector, FlockInput, Localizer, NetBouncer};
use canary_core::score::{over_time, OverTime};
use canary_core::topo::{LinkIx, Routing, Topology};
use canary_sim::bounce_probes::bounce_probes;
use canary_sim::matrix_probes::{probe_paths, PmProbeParams};
use canary_sim::tcp007::simulate_epoch;
use serde::{Deserialize, Serialize};

/// A localizer's timing over a schedule's fault episodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub episodes: usize,
    pub detected: usize,
    /// Mean epochs from an onset to the first blame, over the episodes detected.
    pub mean_detect: Option<f64>,
    /// Repairs of the episodes detected.
    pub repairs: usize,
    pub cleared: usize,
    /// Mean epochs from a repair to the all-clear, over the repairs cleared.
    pub mean_clear: Option<f64>,
    pub false_positive_link_epochs: u64,
    /// Canary only: the time to detect as a ratio to each detected episode's information limit
    /// (`FaultTimingReport::ratio_to_bound`), the mean and the worst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ratio_to_bound: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_ratio_to_bound: Option<f64>,
}

impl Timing {
    fn of(
        episodes: impl Iterator<Item = (u64, Option<u64>, Option<u64>, Option<u64>)>,
        fp: u64,
    ) -> Self {
        let mut t = Timing {
            false_positive_link_epochs: fp,
            ..Default::default()
        };
        let (mut detect, mut clear) = (0u64, 0u64);
        for (onset, detected, repair, cleared) in episodes {
            t.episodes += 1;
            if let Some(d) = detected {
                t.detected += 1;
                detect += d - onset;
            }
            // Repairs of the episodes it detected: an undetected one has nothing to clear.
            if let Some(r) = repair.filter(|_| detected.is_some()) {
                t.repairs += 1;
                if let Some(c) = cleared {
                    t.cleared += 1;
                    clear += c - r;
                }
            }
        }
        t.mean_detect = (t.detected > 0).then(|| detect as f64 / t.detected as f64);
        t.mean_clear = (t.cleared > 0).then(|| clear as f64 / t.cleared as f64);
        t
    }

    pub fn of_core(o: &OverTime) -> Self {
        Self::of(
            o.faults
                .iter()
                .map(|f| (f.onset, f.detected, f.repair, f.cleared)),
            o.false_positive_link_epochs,
        )
    }

    pub fn of_report(o: &OverTimeReport) -> Self {
        let mut t = Self::of(
            o.faults
                .iter()
                .map(|f| (f.onset, f.detected, f.repair, f.cleared)),
            o.false_positive_link_epochs,
        );
        let ratios: Vec<f64> = o.faults.iter().filter_map(|f| f.ratio_to_bound()).collect();
        if !ratios.is_empty() {
            t.mean_ratio_to_bound = Some(ratios.iter().sum::<f64>() / ratios.len() as f64);
            t.worst_ratio_to_bound = Some(ratios.iter().copied().fold(0.0, f64::max));
        }
        t
    }
}

/// The links `k` blames in each of `epochs` epochs, each from that epoch's telemetry alone;
/// `None` for the localizers that only run on Canary's whole-run observations.
pub fn verdicts(
    k: Kind,
    opts: &EvalOptions,
    topo: &Topology,
    faults: &[Fault],
    background: &[f64],
    epochs: u32,
) -> Option<Vec<Vec<LinkIx>>> {
    let routing = Routing::new(topo);
    let mut out = Vec::with_capacity(epochs as usize);
    for e in 0..u64::from(epochs) {
        // A fault on a share of flows drops, averaged over flows, that share of its rate: what
        // probes and TCP flows drawn per path see on average.
        let loss: Vec<f64> = link_losses(background, faults, e)
            .iter()
            .map(|l| l.p * l.flows)
            .collect();
        // Per epoch, per telemetry: streams apart from the whole-run ones (1..=3).
        let rng = |tag: u64| stream(opts.sim.seed, 16 * (e + 1) + tag);
        let v = match k {
            Kind::Canary | Kind::CanaryCd1 | Kind::FlockCanary => return None,
            Kind::NetBouncer | Kind::NetBouncerStage | Kind::NetBouncerPaper => {
                let probes = bounce_probes(topo, &loss, opts.probes, &mut rng(1));
                NetBouncer::new(nb_params(k, opts)).localize(topo, &probes)
            }
            Kind::Flock => {
                let probes = bounce_probes(topo, &loss, opts.probes, &mut rng(1));
                flock_for(k, opts).localize(topo, &FlockInput::from_probes(&probes))
            }
            Kind::FlockA2 | Kind::Vote007 => {
                let epoch = simulate_epoch(topo, &routing, &loss, &opts.tcp, &mut rng(2));
                if k == Kind::Vote007 {
                    vote007_for(opts).localize(topo, &epoch.reports)
                } else {
                    flock_for(k, opts).localize(topo, &FlockInput::from_flows_a2(&epoch.reports))
                }
            }
            Kind::Detector => {
                let m = canary_core::localize::probe_matrix(topo, &routing, &opts.pmc);
                let params = PmProbeParams {
                    probes: opts.probes,
                    ..Default::default()
                };
                let input = probe_paths(topo, &m.paths, &loss, &params, &mut rng(3));
                Detector::default().localize(topo, &input)
            }
        };
        out.push(v.blamed.iter().map(|b| b.link).collect());
    }
    Some(out)
}

/// `k`'s timing on the schedule, from its per-epoch verdicts.
pub fn timing(topo: &Topology, faults: &[Fault], blamed: &[Vec<LinkIx>]) -> Timing {
    Timing::of_core(&over_time(topo, faults, blamed))
}
