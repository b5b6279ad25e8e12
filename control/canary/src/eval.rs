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
    #[arg(long, default_value = canary_controller::setup::DEFAULT_TOPOLOGY)]
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
    let mut opts = options(&a)?;
    let test_seeds = match &a.seeds {
        Some(s) => eval::sweep::parse_seeds(s)?,
        None => vec![a.seed],
    };
    let calibrate = calibration(&a, &opts, &test_seeds)?;
    let out = Outputs {
        args: &a,
        calibrate: calibrate.as_ref(),
    };
    if let Some(spec) = &a.sweep {
        return sweep_axis(&opts, spec, &test_seeds, &out);
    }
    if let Some(spec) = &calibrate {
        opts.calibration = eval::calibrate::run(&opts, spec)?;
        if let Some(c) = &opts.calibration {
            eprint!("{}", c.render());
        }
    }
    match &a.seeds {
        None => one_seed(&opts, &out),
        Some(seeds) => every_seed(&mut opts, seeds, &out),
    }
}

/// The evaluation's options from the flags (calibration comes later, if asked for).
fn options(a: &EvalArgs) -> Result<eval::EvalOptions> {
    if !(a.nb_lambda.is_finite() && a.nb_lambda >= 0.0) {
        anyhow::bail!(
            "--nb-lambda must be a finite number >= 0, got {}",
            a.nb_lambda
        );
    }
    Ok(eval::EvalOptions {
        sim: SimulateOptions {
            topology: a.topology.clone(),
            faults: a.faults.clone(),
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
        export_flock_trace: a.export_flock_trace.clone(),
        flock_trace: a.flock_trace.clone(),
        calibration: None,
    })
}

/// `--calibrate`'s training set, checked against the test seeds; a warning if none of the
/// localizers it tunes is evaluated.
fn calibration(
    a: &EvalArgs,
    opts: &eval::EvalOptions,
    test_seeds: &[u64],
) -> Result<Option<eval::calibrate::CalibrateSpec>> {
    let Some(s) = &a.calibrate else {
        return Ok(None);
    };
    let spec = eval::calibrate::CalibrateSpec {
        seeds: eval::sweep::parse_seeds(s).map_err(|e| anyhow::anyhow!("--calibrate: {e}"))?,
        faults: a.calibrate_faults.clone(),
    };
    spec.check_disjoint(test_seeds)?;
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
    Ok(Some(spec))
}

/// Where the results go besides stdout: `--json` and `--svg`, the picture's title saying
/// what the calibration trained on.
struct Outputs<'a> {
    args: &'a EvalArgs,
    calibrate: Option<&'a eval::calibrate::CalibrateSpec>,
}

impl Outputs<'_> {
    fn title(&self, title: String) -> String {
        match &self.calibrate {
            Some(c) => format!(
                "{title}, calibrated on seeds {}",
                eval::calibrate::seed_list(&c.seeds)
            ),
            None => title,
        }
    }

    /// Writes `--json`, if given, with the text `json` makes.
    fn json(&self, json: impl FnOnce() -> serde_json::Result<String>) -> Result<()> {
        let Some(path) = &self.args.json else {
            return Ok(());
        };
        let text = json()?;
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    }
}

/// `--sweep`: every value of one axis, each over every test seed.
fn sweep_axis(opts: &eval::EvalOptions, spec: &str, seeds: &[u64], out: &Outputs) -> Result<()> {
    if opts.export_flock_trace.is_some() || opts.flock_trace.is_some() {
        anyhow::bail!("--sweep simulates every point's probes: drop the Flock trace options");
    }
    let (axis, values) = eval::axis::parse_sweep(spec)?;
    let mut shown = None;
    let report = eval::axis::run_axis(opts, axis, &values, seeds, out.calibrate, |v, r| {
        eprintln!("{}={v}", axis.name());
        // A calibration is shown when it differs from the one shown before.
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
    out.json(|| serde_json::to_string_pretty(&report))?;
    if let Some(path) = &out.args.svg {
        let a = out.args;
        let title = out.title(format!(
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
    Ok(())
}

/// One seed: the localizers' table, per stage on the SVG.
fn one_seed(opts: &eval::EvalOptions, out: &Outputs) -> Result<()> {
    let r = eval::run(opts)?;
    if let Some(c) = &r.calibration {
        print!("{}", c.render());
    }
    print!("{}", eval::render_table(&r));
    out.json(|| serde_json::to_string_pretty(&r))?;
    if let Some(path) = &out.args.svg {
        let series: Vec<_> = r
            .localizers
            .0
            .iter()
            .map(|(n, x)| (n.clone(), x.stages.clone()))
            .collect();
        let title = out.title(format!("{} seed {}", r.topology, r.seed));
        eval::plot::render_svg(path, &title, &series)?;
    }
    Ok(())
}

/// `--seeds`: every seed's table, then the mean over them.
fn every_seed(opts: &mut eval::EvalOptions, seeds: &str, out: &Outputs) -> Result<()> {
    if opts.export_flock_trace.is_some() {
        anyhow::bail!("--export-flock-trace writes one seed's probes: use it without --seeds");
    }
    let mut runs = Vec::new();
    for seed in eval::sweep::parse_seeds(seeds)? {
        opts.sim.seed = seed;
        let r = eval::run(opts)?;
        eprint!("{}", eval::render_table(&r));
        runs.push(r);
    }
    let sweep = eval::sweep::SweepReport::new(runs);
    print!("{}", sweep.render());
    out.json(|| serde_json::to_string_pretty(&sweep))?;
    if let Some(path) = &out.args.svg {
        let title = out.title(format!("{} seeds {seeds} (mean)", opts.sim.topology));
        eval::plot::render_svg(path, &title, &sweep.mean_stages())?;
    }
    Ok(())
}
