//! `canary simulate`: the whole pipeline on the simulated fabric, scored against the injected
//! faults. The controller sees only what the meters recorded, through the `Fabric` trait.

use crate::cluster::wire::Parts;
use crate::cluster::{ClusterConfig, ClusterStages};
use crate::config::Pipeline;
use crate::controller::Controller;
use crate::error::{Error, Result};
use crate::report::{EpochReport, FaultTimingReport, LinkReport, OverTimeReport, Summary};
use crate::run_document::{RunDocument, RunKind};
use crate::setup::{load_fault_plan, load_topology, prepare};
use canary_core::fault::{background, link_losses, out_of_service_at, with_faults, Fault};
use canary_core::localize::Localizer;
use canary_core::pathbf::PathBfParams;
use canary_core::score::{as_scored, over_time, Score};
use canary_core::topo::{LinkIx, Topology};
use canary_sim::{SimConfig, SimFabric};
use rand::SeedableRng;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct SimulateOptions {
    pub topology: String,
    pub faults: String,
    pub epochs: u32,
    pub seed: u64,
    /// Selection, detection and localization: what `canary run` takes too.
    pub pipeline: Pipeline,
    /// Equal-count loss groups instead of fixed loss ranges (Fig. 9).
    pub quantile_groups: bool,
    pub noise: f64,
    pub epoch: Duration,
    pub elephants_per_host: u32,
    pub mice_per_host: u32,
    /// Share of the flows over IPv6.
    pub ipv6_share: f64,
    pub pathbf: PathBfParams,
    /// Run decoding, joins and localization on a cluster's workers.
    pub cluster: Option<(ClusterConfig, Parts)>,
}

impl Default for SimulateOptions {
    fn default() -> Self {
        Self {
            topology: "fattree:4".into(),
            faults: "random:10%".into(),
            epochs: 10,
            seed: 1,
            pipeline: Pipeline::default(),
            quantile_groups: false,
            noise: 0.0,
            epoch: Duration::from_millis(100),
            elephants_per_host: SimConfig::default().traffic.elephants.flows_per_host,
            mice_per_host: SimConfig::default().traffic.mice.flows_per_host,
            ipv6_share: 0.0,
            pathbf: PathBfParams::default(),
            cluster: None,
        }
    }
}

/// The document of a finished run: its faults, its epochs, and the summary scored on them.
pub fn document(
    kind: RunKind,
    ctl: &Controller,
    faults: &[Fault],
    seed: u64,
    epochs: Vec<EpochReport>,
) -> RunDocument {
    let summary = summarize(ctl, faults, &epochs);
    RunDocument::new(kind, &ctl.topo, seed, faults, epochs, summary)
}

/// Runs a simulation; `on_epoch` sees each report as it is made.
pub fn run(opts: &SimulateOptions, on_epoch: impl FnMut(&EpochReport)) -> Result<RunDocument> {
    Ok(run_full(opts, on_epoch)?.result)
}

/// A finished run with what other localizers need to be fed the same measurements.
pub struct FullRun {
    pub result: RunDocument,
    /// The topology as the run used it (switch IDs after the pathBF audit).
    pub topo: canary_core::topo::Topology,
    pub faults: Vec<Fault>,
    /// Per-directed-link drop probabilities the simulator applied (faults plus noise).
    pub loss: Vec<f64>,
    /// Canary's segment observations over the whole run (what the summary localized).
    pub observations: canary_core::detect::Observations,
}

/// Runs a simulation and keeps what other localizers need.
///
/// Not on a rayon worker thread: the run blocks its thread on its own runtime, and a worker
/// waiting on the localizer's parallel work may steal another run and block again inside the
/// first (tokio refuses that, with a panic). Callers that run simulations side by side give
/// each its own thread.
pub fn run_full(opts: &SimulateOptions, mut on_epoch: impl FnMut(&EpochReport)) -> Result<FullRun> {
    if let Some(worker) = rayon::current_thread_index() {
        return Err(Error::given(
            format!("a simulation on rayon worker thread {worker}"),
            "runs must not nest in rayon's pool: give each simulation its own thread",
        ));
    }
    let topo = load_topology(&opts.topology, opts.pipeline.monitors)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(opts.seed);
    let (faults, maintenance) = load_fault_plan(&opts.faults, &topo, &mut rng)?;
    let bg = background(&topo, opts.noise, &mut rng);
    let loss = with_faults(&bg, &faults);
    let prep = prepare(topo, opts.pathbf)?;
    let mut sim_cfg = SimConfig {
        seed: opts.seed,
        ..Default::default()
    };
    sim_cfg.traffic.elephants.flows_per_host = opts.elephants_per_host;
    sim_cfg.traffic.mice.flows_per_host = opts.mice_per_host;
    sim_cfg.ipv6_share = opts.ipv6_share;
    let mut fabric = SimFabric::new(prep.topo.clone(), &prep.codec, loss.clone(), sim_cfg);
    let mut cfg = opts
        .pipeline
        .controller_config(opts.epoch, fabric.drain_time());
    cfg.canary = opts.pipeline.localizer(opts.quantile_groups);
    let mut ctl = Controller::new(prep.topo, prep.segments, prep.codec, cfg);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("the simulation's runtime", e))?;
    let mut epochs = Vec::with_capacity(opts.epochs as usize);
    // Per fault, per epoch: what a test of its link knowing its loss gained from the counts.
    let mut gains: Vec<Vec<f64>> = vec![Vec::new(); faults.len()];
    let mut h = None;
    rt.block_on(async {
        if let Some((cluster, parts)) = &opts.cluster {
            ClusterStages::attach(&mut ctl, cluster, *parts, opts.pathbf, None).await?;
        }
        ctl.start(&mut fabric).await;
        for e in 0..opts.epochs {
            // The faults as the schedule has them in this epoch (and their share of flows).
            fabric.set_losses(&link_losses(&bg, &faults, u64::from(e)));
            // Links the fabric's own control takes out of service: routes move, nothing drops.
            fabric.set_out_of_service(&out_of_service_at(&maintenance, u64::from(e)));
            let r = ctl.run_epoch(&mut fabric).await;
            for (f, g) in faults.iter().zip(&mut gains) {
                let (gain, threshold) = ctl
                    .information(f.link, f.loss * f.flows)
                    .unwrap_or((0.0, f64::INFINITY));
                g.push(gain);
                h = Some(threshold);
            }
            on_epoch(&r);
            epochs.push(r);
        }
        Ok::<(), Error>(())
    })?;
    let mut result = document(RunKind::Packets, &ctl, &faults, opts.seed, epochs);
    if let Some(h) = h {
        add_bounds(&mut result.summary.over_time, &ctl.topo, &faults, &gains, h);
    }
    Ok(FullRun {
        result,
        observations: ctl.run_observations(),
        topo: ctl.topo,
        faults,
        loss,
    })
}

/// Each fault episode's information limit: the first epoch from its onset at which a test of
/// its link knowing its loss could have decided, on the packets actually counted.
fn add_bounds(
    o: &mut OverTimeReport,
    topo: &Topology,
    faults: &[Fault],
    gains: &[Vec<f64>],
    h: f64,
) {
    for t in &mut o.faults {
        let Some(i) = faults.iter().position(|f| {
            topo.link_names(f.link) == [t.link[0].as_str(), t.link[1].as_str()] && f.loss == t.loss
        }) else {
            continue;
        };
        let end = t.repair.unwrap_or(gains[i].len() as u64);
        let episode = (t.onset..end).filter_map(|e| Some((e, *gains[i].get(e as usize)?)));
        t.bound = canary_core::decide::decidable_at(episode, h);
    }
}

/// Localizes the whole run's counts at once (the most packets, the tightest estimates) and
/// scores the verdict on directed links.
pub fn summarize(ctl: &Controller, faults: &[Fault], reports: &[EpochReport]) -> Summary {
    let epochs = reports.len();
    let topo = &ctl.topo;
    let t = std::time::Instant::now();
    let obs = ctl.run_observations();
    let verdict = ctl.localizer().localize(topo, &obs);
    let localize_ms = t.elapsed().as_secs_f64() * 1e3;
    let truth: Vec<LinkIx> = faults.iter().map(|f| f.link).collect();
    let blamed: Vec<LinkIx> = verdict.blamed.iter().map(|b| b.link).collect();
    // A device fault blamed as its switch (all links in, or all out) scores as found.
    let blamed = as_scored(topo, faults, &blamed);
    let score = Score::of(&blamed, &truth, topo.links.len());
    let stages = verdict
        .stages
        .iter()
        .map(|s| Score::of(s, &truth, topo.links.len()))
        .collect();
    let report = |l: LinkIx, loss: f64| {
        let [a, b] = topo.link_names(l);
        LinkReport {
            link: [a.into(), b.into()],
            loss,
            stage: None,
            ci95: None,
            since: None,
            flows: None,
            held: false,
        }
    };
    let missed = faults
        .iter()
        .filter(|f| !blamed.contains(&f.link))
        .map(|f| report(f.link, f.loss))
        .collect();
    let false_positives = verdict
        .blamed
        .iter()
        .filter(|b| !truth.contains(&b.link) && blamed.contains(&b.link))
        .map(|b| report(b.link, b.loss))
        .collect();
    Summary {
        epochs,
        blamed: ctl.link_reports(&verdict, &obs, None),
        precision: score.precision,
        recall: score.recall,
        f1: score.f1,
        tp: score.tp,
        fp: score.fp,
        fn_: score.fn_,
        accuracy: score.accuracy,
        stages,
        missed,
        false_positives,
        localize_ms,
        coverage: ctl.all_segment_reports(&obs),
        over_time: over_time_report(topo, faults, reports),
    }
}

/// The run scored epoch by epoch against the schedule (every fault constant: from epoch 0 on).
pub fn over_time_report(
    topo: &Topology,
    faults: &[Fault],
    reports: &[EpochReport],
) -> OverTimeReport {
    let blamed: Vec<Vec<LinkIx>> = reports
        .iter()
        .map(|r| {
            r.blamed
                .iter()
                .filter_map(|b| topo.link_by_names(&b.link[0], &b.link[1]))
                .collect()
        })
        .collect();
    let o = over_time(topo, faults, &blamed);
    let names = |l: LinkIx| topo.link_names(l).map(String::from);
    OverTimeReport {
        faults: o
            .faults
            .iter()
            .map(|t| FaultTimingReport {
                link: names(t.link),
                device: t.device.map(|d| topo.name_of(d).to_string()),
                loss: t.loss,
                onset: t.onset,
                repair: t.repair,
                detected: t.detected,
                cleared: t.cleared,
                bound: None,
            })
            .collect(),
        false_positive_link_epochs: o.false_positive_link_epochs,
        link_epochs: o.link_epochs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a rayon worker a run would risk tokio's nested-runtime panic when the worker steals
    /// another run: it is refused with an error that says why, and runs on a plain thread.
    #[test]
    fn a_run_on_a_rayon_worker_is_refused_and_runs_on_its_own_thread() {
        let opts = SimulateOptions {
            topology: "fattree:4".into(),
            epochs: 1,
            ..Default::default()
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("a pool");
        let on_worker = pool.install(|| run(&opts, |_| {}));
        let Err(e) = on_worker else {
            panic!("a run on a rayon worker was not refused");
        };
        let e = e.to_string();
        assert!(e.contains("rayon worker thread 0"), "{e}");
        assert!(e.contains("its own thread"), "{e}");
        let doc = std::thread::scope(|s| s.spawn(|| run(&opts, |_| {})).join())
            .expect("the run's thread")
            .expect("runs on its own thread");
        assert_eq!(doc.epochs.len(), 1);
    }
}
