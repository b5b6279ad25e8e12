//! `canary simulate`: the whole pipeline on a simulated fabric, scored against its faults.

use crate::args::share;
use anyhow::{Context, Result};
use canary_controller::config::{Cluster, Names, Pipeline};
use canary_controller::incidents::{self, Journal, State, TrackConfig};
use canary_controller::report::{render_epoch, render_summary};
use canary_controller::simulate::{self, SimulateOptions};
use canary_core::pathbf::PathBfParams;
use clap::Args;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

#[derive(Args)]
pub struct SimulateArgs {
    /// `fattree:K` or a YAML topology file.
    #[arg(long, default_value = canary_controller::setup::DEFAULT_TOPOLOGY)]
    pub topology: String,
    /// A YAML fault file, `random:P%` (P% of undirected links, the paper's loss mix), or `none`.
    #[arg(long, default_value = "random:10%")]
    pub faults: String,
    #[arg(long, default_value_t = SimulateOptions::default().epochs,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub epochs: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub pipeline: Pipeline,
    #[command(flatten)]
    pub cluster: Cluster,
    /// Split lossy segments into equal-count groups instead of fixed loss ranges (Fig. 9).
    #[arg(long)]
    pub quantile_groups: bool,
    /// Background loss: every healthy link drops at a rate drawn from U(0, P).
    #[arg(long, default_value_t = 0.0, value_parser = share)]
    pub noise: f64,
    /// Epoch length in milliseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    epoch_ms: u64,
    /// Long, fast flows each simulated host keeps open.
    #[arg(long, default_value_t = 80)]
    elephants_per_host: u32,
    /// Short flows each simulated host keeps open.
    #[arg(long, default_value_t = 120)]
    mice_per_host: u32,
    /// Share of the simulated flows carried over IPv6, 0 to 1.
    #[arg(long, default_value_t = 0.0, value_parser = share)]
    ipv6: f64,
    /// Write the whole run as JSON.
    #[arg(long)]
    pub json: Option<String>,
    /// The run's incidents as an SQLite file, made anew (default: beside --json,
    /// `RUN.incidents.sqlite`), or `none`. `canary incidents FILE` lists them.
    #[arg(long, value_name = "FILE|none", conflicts_with = "synth_meters")]
    pub incidents: Option<String>,
    /// Serve the live page at ADDR (e.g. 127.0.0.1:8080) while the run goes, and after it
    /// until Ctrl-C.
    #[arg(long, conflicts_with = "synth_meters")]
    serve: Option<String>,
    /// With --serve: wait this long after each epoch so the page can be followed (default: the
    /// epoch length).
    #[arg(long, requires = "serve")]
    pace_ms: Option<u64>,
    /// Print only the summary (a terminal still shows the epochs' progress bar on stderr).
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the pipeline's settings this run would use (flags and defaults) as YAML, in the
    /// form of `canary run --config`'s `pipeline:` section, and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Skip the packets: synthesize each epoch's meters in the switches' real meter size and
    /// watch the segments in rounds that fit them (for fabrics the packet simulator cannot run,
    /// up to k = 48).
    #[arg(long)]
    pub synth_meters: bool,
    /// With --synth-meters: buckets per meter row instead of the program's METER_WIDTH.
    #[arg(long, requires = "synth_meters")]
    pub meter_width: Option<usize>,
    /// With --synth-meters: every fault starts at this epoch.
    #[arg(long, requires = "synth_meters")]
    pub faults_from: Option<u64>,
    /// With --synth-meters: how the segments take turns. `rounds`: a fixed rotation of rounds;
    /// `adaptive` (experimental): a sweep, and the rest of the switches' room on the segments
    /// that lost packets and the other segments of their links.
    #[arg(long, value_enum, default_value = "rounds", requires = "synth_meters")]
    pub watch_plan: canary_lab::scale::Watching,
}

pub fn command(a: SimulateArgs) -> Result<()> {
    let mut problems = a.pipeline.check();
    problems.extend(a.cluster.check());
    if let Some(e) = Names::flags().error(&problems) {
        return Err(e.into());
    }
    if a.print_config {
        print!("{}", canary_controller::config::pipeline_yaml(&a.pipeline));
        return Ok(());
    }
    if a.synth_meters {
        return crate::scale::command(a);
    }
    let opts = options(&a)?;
    let bar = crate::progress::spinner();
    crate::progress::epochs(&bar, u64::from(opts.epochs));
    let quiet = a.quiet;
    let out = std::io::stdout();
    let served = match &a.serve {
        Some(addr) => Some(canary_controller::view::Served::start(
            &canary_controller::setup::load_topology(&opts.topology, opts.pipeline.monitors)?,
            addr,
        )?),
        None => None,
    };
    let pace = Duration::from_millis(a.pace_ms.unwrap_or(a.epoch_ms));
    // The simulated epochs are dated from the run's start by their fabric time.
    let start = SystemTime::now();
    let mut journal = journal(a.incidents.as_deref(), a.json.as_deref())?;
    let mut journal_error = None;
    if let (Some(_), Some(s)) = (&journal, &served) {
        // The page lists the database's incidents as they change.
        s.page.follow_incidents(Vec::new());
    }
    let mut result = simulate::run(&opts, |r| {
        // Dated from the run's start by its fabric time, as the run's document dates it.
        let mut dated = r.clone();
        dated.at = Some(incidents::after(start, r.at_s));
        let r = &dated;
        if let Some(j) = journal.as_mut().filter(|_| journal_error.is_none()) {
            match j.observe(r, r.at.as_deref()) {
                Ok(changed) => {
                    if let Some(s) = &served {
                        s.page.incidents_changed(&changed);
                    }
                }
                Err(e) => journal_error = Some(e),
            }
        }
        if let Some(s) = &served {
            s.page.push(r);
            std::thread::sleep(pace);
        }
        bar.inc(1);
        if !quiet {
            bar.suspend(|| {
                let _ = write!(out.lock(), "{}", render_epoch(r, 8));
            });
        }
    })?;
    bar.finish_and_clear();
    if let Some(e) = journal_error {
        return Err(e.into());
    }
    print!("{}", render_summary(&result.summary, result.faults.len()));
    if let Some(j) = &journal {
        let all = j.all()?;
        let flapping = all.iter().filter(|i| i.state == State::Flapping).count();
        eprintln!(
            "incidents: {} ({flapping} flapping) in {} (`canary incidents {}`)",
            all.len(),
            j.path().display(),
            j.path().display()
        );
    }
    for r in &mut result.epochs {
        r.at = Some(incidents::after(start, r.at_s));
    }
    if let Some(path) = a.json {
        let f = std::fs::File::create(&path).with_context(|| format!("cannot write {path}"))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(f), &result)?;
    }
    if let Some(s) = served {
        s.until_shutdown();
    }
    Ok(())
}

/// What the simulator is asked to run.
fn options(a: &SimulateArgs) -> Result<SimulateOptions> {
    Ok(SimulateOptions {
        topology: a.topology.clone(),
        faults: a.faults.clone(),
        epochs: a.epochs,
        seed: a.seed,
        pipeline: a.pipeline.clone(),
        quantile_groups: a.quantile_groups,
        noise: a.noise,
        epoch: Duration::from_millis(a.epoch_ms),
        elephants_per_host: a.elephants_per_host,
        mice_per_host: a.mice_per_host,
        ipv6_share: a.ipv6,
        pathbf: PathBfParams::default(),
        cluster: a.cluster.config()?,
    })
}

/// The run's incidents database: `--incidents`, else beside `--json`; made anew.
fn journal(incidents: Option<&str>, json: Option<&str>) -> Result<Option<Journal>> {
    let path = match (incidents, json) {
        (Some("none"), _) | (None, None) => return Ok(None),
        (Some(p), _) => Path::new(p).to_path_buf(),
        (None, Some(j)) => incidents::default_path(Path::new(j)),
    };
    Ok(Some(Journal::create(&path, TrackConfig::default())?))
}
