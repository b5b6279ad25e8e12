//! `canary eval`: every localizer of the papers on one simulated fabric, side by side.

use anyhow::{Context, Result};
use canary_controller::config::Pipeline;
use canary_controller::simulate::SimulateOptions;
use canary_lab::eval;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct EvalArgs {
    /// `fattree:K` or a YAML topology file.
    #[arg(long, default_value = "fattree:8")]
    topology: String,
    /// A YAML fault file, `random:P%`, or `none`.
    #[arg(long, default_value = "random:10%")]
    faults: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run every seed of an inclusive range (`1..10`) and print per-seed F1 and the mean.
    #[arg(long)]
    seeds: Option<String>,
    /// Vary one parameter, `AXIS=V1,V2,…` with AXIS one of probes, loss, faults, k, noise,
    /// flows; every value runs every seed of `--seeds` (or `--seed`). `--svg` then draws
    /// precision, recall and F1 against the axis.
    #[arg(long)]
    sweep: Option<String>,
    /// Comma-separated: canary, canary-cd1, flock-canary, netbouncer, netbouncer-stage,
    /// netbouncer-paper, flock, flock-a2, 007, detector.
    #[arg(
        long,
        default_value = "canary,netbouncer,netbouncer-stage,flock,007,detector"
    )]
    localizers: String,
    /// Write the scored verdicts as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Canary: packets to count per segment and epoch.
    #[arg(long, default_value_t = 1000)]
    alpha: u64,
    /// Canary: loss-rate groups (stages).
    #[arg(long, default_value_t = 5)]
    groups: usize,
    /// Bounce and probe-matrix probes per path.
    #[arg(long, default_value_t = 100)]
    probes: u32,
    /// Background loss: every healthy link drops at a rate drawn from U(0, P).
    #[arg(long, default_value_t = 0.0)]
    noise: f64,
    /// 007 and Flock(A2): TCP connections each host opens in the 30-s epoch.
    #[arg(long, default_value_t = 60)]
    flows: u32,
    /// deTector: every link on at least this many probe paths (α-coverage).
    #[arg(long, default_value_t = 2)]
    pmc_alpha: u32,
    /// deTector: any this many simultaneous link failures identifiable (β-identifiability).
    #[arg(long, default_value_t = 1)]
    pmc_beta: u32,
    /// NetBouncer (all three variants): weight λ of CD's regulariser (the paper's: 1).
    #[arg(long, default_value_t = 1.0)]
    nb_lambda: f64,
    /// Canary: epochs to simulate.
    #[arg(long, default_value_t = 10)]
    epochs: u32,
    /// Write the bounce probes in Flock's trace format, and its companion topology file
    /// (`a b` per undirected link) as FILE.topo.
    #[arg(long)]
    export_flock_trace: Option<PathBuf>,
    /// Feed NetBouncer(-stage) and Flock from this Flock trace instead of simulated probes.
    #[arg(long)]
    flock_trace: Option<PathBuf>,
    /// Draw per-stage precision, recall and F1 (the paper's Fig. 8) as SVG.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Calibrate flock, flock-a2, netbouncer-paper and 007 first (Flock paper §5.2: grid
    /// search, highest recall at precision > P, P from 98 % down by 5 % until recall >= 25 %) on
    /// these training seeds (`A..B`, disjoint from the test seeds), then evaluate with the chosen
    /// parameters. With `--sweep`, at every value.
    #[arg(long, value_name = "SEEDS")]
    calibrate: Option<String>,
    /// The training set's fault spec (default: `--faults`, i.e. the evaluated one).
    #[arg(long, value_name = "SPEC", requires = "calibrate")]
    calibrate_faults: Option<String>,
}

pub fn command(a: EvalArgs) -> Result<()> {
    if !(a.nb_lambda.is_finite() && a.nb_lambda >= 0.0) {
        anyhow::bail!(
            "--nb-lambda must be a finite number >= 0, got {}",
            a.nb_lambda
        );
    }
    let mut opts = eval::EvalOptions {
        sim: SimulateOptions {
            topology: a.topology,
            faults: a.faults,
            epochs: a.epochs,
            seed: a.seed,
            noise: a.noise,
            pipeline: Pipeline {
                groups: a.groups,
                alpha: a.alpha,
                ..Default::default()
            },
            ..Default::default()
        },
        localizers: eval::parse_kinds(&a.localizers)?,
        probes: a.probes,
        tcp: canary_sim::tcp007::Tcp007Params {
            conns_per_host: a.flows,
            ..Default::default()
        },
        pmc: canary_core::localize::PmcParams {
            alpha: a.pmc_alpha,
            beta: a.pmc_beta,
            ..Default::default()
        },
        nb_lambda: a.nb_lambda,
        export_flock_trace: a.export_flock_trace,
        flock_trace: a.flock_trace,
        calibration: None,
    };
    let test_seeds = match &a.seeds {
        Some(s) => eval::sweep::parse_seeds(s)?,
        None => vec![a.seed],
    };
    let calibrate = match &a.calibrate {
        Some(s) => {
            let spec = eval::calibrate::CalibrateSpec {
                seeds: eval::sweep::parse_seeds(s)
                    .map_err(|e| anyhow::anyhow!("--calibrate: {e}"))?,
                faults: a.calibrate_faults.clone(),
            };
            spec.check_disjoint(&test_seeds)?;
            if !opts
                .localizers
                .iter()
                .any(|&k| eval::calibrate::calibrated_kind(k))
            {
                eprintln!(
                    "warning: --calibrate tunes flock, flock-a2, netbouncer-paper and 007; none \
                     of them is in --localizers"
                );
            }
            Some(spec)
        }
        None => None,
    };
    let calibrated_title = |title: String| match &calibrate {
        Some(c) => format!(
            "{title}, calibrated on seeds {}",
            eval::calibrate::seed_list(&c.seeds)
        ),
        None => title,
    };
    let write_json = |path: &PathBuf, text: String| {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    if let Some(spec) = &a.sweep {
        if opts.export_flock_trace.is_some() || opts.flock_trace.is_some() {
            anyhow::bail!("--sweep simulates every point's probes: drop the Flock trace options");
        }
        let (axis, values) = eval::axis::parse_sweep(spec)?;
        let seeds = test_seeds;
        let mut shown = None;
        let report =
            eval::axis::run_axis(&opts, axis, &values, &seeds, calibrate.as_ref(), |v, r| {
                eprintln!("{}={v}", axis.name());
                if let Some(c) = r
                    .calibration
                    .as_ref()
                    .filter(|&c| shown.as_ref() != Some(c))
                {
                    eprint!("{}", c.render());
                    shown = Some(c.clone());
                }
                eprint!("{}", eval::render_table(r));
            })?;
        print!("{}", report.render());
        if let Some(path) = &a.json {
            write_json(path, serde_json::to_string_pretty(&report)?)?;
        }
        if let Some(path) = &a.svg {
            let title = calibrated_title(format!(
                "{} {}, seeds {} (mean)",
                opts.sim.topology,
                opts.sim.faults,
                a.seeds.as_deref().unwrap_or(&a.seed.to_string())
            ));
            eval::plot::render_sweep_svg(
                path,
                &title,
                axis.label(),
                axis.log_scale(),
                &report.series(),
            )?;
        }
        return Ok(());
    }
    if let Some(spec) = &calibrate {
        opts.calibration = eval::calibrate::run(&opts, spec)?;
        if let Some(c) = &opts.calibration {
            eprint!("{}", c.render());
        }
    }
    let Some(seeds) = a.seeds else {
        let r = eval::run(&opts)?;
        if let Some(c) = &r.calibration {
            print!("{}", c.render());
        }
        print!("{}", eval::render_table(&r));
        if let Some(path) = &a.json {
            write_json(path, serde_json::to_string_pretty(&r)?)?;
        }
        if let Some(path) = &a.svg {
            let series: Vec<_> = r
                .localizers
                .0
                .iter()
                .map(|(n, x)| (n.clone(), x.stages.clone()))
                .collect();
            let title = calibrated_title(format!("{} seed {}", r.topology, r.seed));
            eval::plot::render_svg(path, &title, &series)?;
        }
        return Ok(());
    };
    if opts.export_flock_trace.is_some() {
        anyhow::bail!("--export-flock-trace writes one seed's probes: use it without --seeds");
    }
    let mut runs = Vec::new();
    for seed in eval::sweep::parse_seeds(&seeds)? {
        opts.sim.seed = seed;
        let r = eval::run(&opts)?;
        eprint!("{}", eval::render_table(&r));
        runs.push(r);
    }
    let sweep = eval::sweep::SweepReport::new(runs);
    print!("{}", sweep.render());
    if let Some(path) = &a.json {
        write_json(path, serde_json::to_string_pretty(&sweep)?)?;
    }
    if let Some(path) = &a.svg {
        let title = calibrated_title(format!("{} seeds {seeds} (mean)", opts.sim.topology));
        eval::plot::render_svg(path, &title, &sweep.mean_stages())?;
    }
    Ok(())
}
