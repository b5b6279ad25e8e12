//! `canary overhead`: memory, decoding and selection cost against the papers' baselines.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct OverheadArgs {
    /// Comma-separated parts: fig6, table2, fig7, fig11.
    #[arg(long, default_value = "fig6,table2,fig7,fig11")]
    only: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Fig. 6: trials per memory point (99 % success needs at most 1 failure in 100).
    #[arg(long, default_value_t = 100)]
    trials: usize,
    /// Fig. 6: comma-separated link loss rates.
    #[arg(long, default_value = "1e-4,1e-3,1e-2,1e-1")]
    losses: String,
    /// Fig. 6: flows through the link per 100 ms epoch.
    #[arg(long, default_value_t = 10_000)]
    flows: usize,
    /// Fig. 6: Pareto shape of the flow sizes (the minimum is set to keep the mean at ≈ 80 packets).
    #[arg(long, default_value_t = 1.2)]
    size_shape: f64,
    /// Fig. 7 and 11: epochs of 100 ms.
    #[arg(long, default_value_t = 300)]
    epochs: u32,
    /// Fig. 7 and 11: flow arrivals per second of the synthetic trace.
    #[arg(long, default_value_t = 30_000.0)]
    arrivals: f64,
    /// Fig. 7 and 11: read this pcap (classic libpcap) instead of the synthetic trace.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Write the figures as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw fig6.svg, fig7.svg and fig11.svg into this directory.
    #[arg(long)]
    svg_dir: Option<PathBuf>,
}

pub fn command(a: OverheadArgs) -> Result<()> {
    use canary_lab::overhead::{self, plot, sketch_memory::SketchMemoryOptions, TraceSpec};
    let mut opts = overhead::OverheadOptions {
        parts: overhead::parse_parts(&a.only)?,
        seed: a.seed,
        epochs: a.epochs,
        ..Default::default()
    };
    opts.fig6 = SketchMemoryOptions {
        losses: a
            .losses
            .split(',')
            .map(|x| x.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .with_context(|| format!("--losses {}: not a list of numbers", a.losses))?,
        trials: a.trials,
        seed: a.seed,
        ..Default::default()
    };
    opts.fig6.traffic.flows = a.flows;
    opts.fig6.traffic.size_shape = a.size_shape;
    opts.fig6.traffic.size_min = 14.0 * (a.size_shape - 1.0) / a.size_shape * 6.0;
    opts.trace = match a.pcap {
        Some(p) => TraceSpec::pcap(p)?,
        None => TraceSpec::Synthetic {
            cfg: canary_lab::overhead::traffic::ChurnConfig {
                duration_s: a.epochs as f64 * 0.1,
                arrivals_per_s: a.arrivals,
                ..Default::default()
            },
            seed: a.seed,
        },
    };
    let bar = crate::progress::spinner();
    let r = overhead::run_with(&opts, |step| bar.set_message(step.to_string()));
    bar.finish_and_clear();
    let r = r?;
    print!("{}", overhead::render(&r));
    if let Some(path) = &a.json {
        std::fs::write(path, serde_json::to_string_pretty(&r)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(dir) = &a.svg_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        if let Some(f) = &r.fig6 {
            plot::fig6(&dir.join("fig6.svg"), f)?;
        }
        if let Some(f) = &r.fig7 {
            plot::fig7(&dir.join("fig7.svg"), f)?;
        }
        if let Some(f) = &r.fig11 {
            plot::fig11(&dir.join("fig11.svg"), f)?;
        }
    }
    Ok(())
}
