//! `canary overhead`: the paper's cost claims next to the baselines it beat (Sec. IV-B, IV-C,
//! IV-F): Fig. 6 (minimum memory for 99 % decoding success and decoding time against the loss
//! rate, two switches), Table II (network-wide memory, k = 8 fat-tree), Fig. 7 (flow selection
//! under traffic dynamics) and Fig. 11 (heavy hitters against the original HashPipe).
//!
//! The sketches are the core's ([`canary_core::sketch::flowradar`], `lossradar`, `fermat`,
//! `hashpipe_orig`); Canary's meters, HashPipe, minus meter and flow selection are the very code
//! the controller runs. `docs/overhead.md` has the results beside the paper's and the formulas.

pub mod fabric_memory;
pub mod heavy_hitters;
pub mod link;
pub mod plot;
mod render;
pub mod selection_churn;
pub mod sketch_memory;
pub mod traffic;
pub mod twoswitch;

pub use render::render;

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use traffic::{ChurnConfig, ChurnTrace, PcapStats, TracePacket};

/// The parts `--only` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    SketchMemory,
    FabricMemory,
    SelectionChurn,
    HeavyHitters,
}

impl Part {
    pub const ALL: [Part; 4] = [
        Part::SketchMemory,
        Part::FabricMemory,
        Part::SelectionChurn,
        Part::HeavyHitters,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Part::SketchMemory => "fig6",
            Part::FabricMemory => "table2",
            Part::SelectionChurn => "fig7",
            Part::HeavyHitters => "fig11",
        }
    }
}

/// `fig6,table2` → the parts.
pub fn parse_parts(s: &str) -> Result<BTreeSet<Part>> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| {
            Part::ALL
                .into_iter()
                .find(|p| p.name() == x)
                .ok_or_else(|| {
                    let message = format!("unknown part `{x}` (fig6, table2, fig7, fig11)");
                    Error::arg("--only", message)
                })
        })
        .collect()
}

/// Where Fig. 7 and Fig. 11 get their packets.
#[derive(Clone)]
pub enum TraceSpec {
    Synthetic {
        cfg: ChurnConfig,
        seed: u64,
    },
    Pcap {
        path: PathBuf,
        packets: Arc<Vec<TracePacket>>,
        stats: PcapStats,
    },
}

impl TraceSpec {
    /// The trace's packets, in time order, from time 0.
    pub fn packets(&self) -> Box<dyn Iterator<Item = TracePacket> + Send + '_> {
        match self {
            TraceSpec::Synthetic { cfg, seed } => Box::new(ChurnTrace::new(*cfg, *seed)),
            TraceSpec::Pcap { packets, .. } => Box::new(packets.iter().copied()),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            TraceSpec::Synthetic { cfg, seed } => format!(
                "synthetic: Poisson arrivals {}/s, Pareto sizes (shape {}, {}..{} packets), \
                 log-uniform durations {}..{} s, seed {seed}",
                cfg.arrivals_per_s,
                cfg.size_shape,
                cfg.size_min,
                cfg.size_max,
                cfg.duration_min_s,
                cfg.duration_max_s
            ),
            TraceSpec::Pcap { path, stats, .. } => format!(
                "pcap {}: {} packets ({} not IP, skipped)",
                path.display(),
                stats.packets,
                stats.skipped
            ),
        }
    }

    /// Reads a pcap file (sorted by time: captures may be slightly out of order).
    pub fn pcap(path: PathBuf) -> Result<Self> {
        let bytes = std::fs::read(&path).map_err(|source| Error::Read {
            what: "pcap",
            path: path.clone(),
            source,
        })?;
        let (mut packets, stats) = traffic::read_pcap(&bytes).map_err(|error| Error::Pcap {
            path: path.clone(),
            error,
        })?;
        if packets.is_empty() {
            return Err(Error::NoPackets { path });
        }
        packets.sort_by_key(|p| p.t_ns);
        Ok(TraceSpec::Pcap {
            path,
            packets: Arc::new(packets),
            stats,
        })
    }
}

#[derive(Clone)]
pub struct OverheadOptions {
    pub parts: BTreeSet<Part>,
    pub seed: u64,
    pub fig6: sketch_memory::SketchMemoryOptions,
    /// Fig. 7 and 11: epochs of 100 ms.
    pub epochs: u32,
    pub etas: Vec<u32>,
    pub dsm_widths: Vec<usize>,
    pub ks: Vec<usize>,
    pub trace: TraceSpec,
}

impl Default for OverheadOptions {
    fn default() -> Self {
        OverheadOptions {
            parts: Part::ALL.into(),
            seed: 1,
            fig6: sketch_memory::SketchMemoryOptions::default(),
            epochs: 300,
            etas: vec![0, 8, 16, 32],
            dsm_widths: vec![64, 128, 256],
            ks: vec![10, 25, 50, 75, 100],
            trace: TraceSpec::Synthetic {
                cfg: ChurnConfig::default(),
                seed: 1,
            },
        }
    }
}

/// Everything `canary overhead --json` writes; parts not run are absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OverheadReport {
    pub seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fig6: Option<sketch_memory::SketchMemory>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table2: Option<fabric_memory::FabricMemory>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fig7: Option<selection_churn::SelectionChurn>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fig11: Option<heavy_hitters::HeavyHitters>,
}

pub fn run(opts: &OverheadOptions) -> Result<OverheadReport> {
    run_with(opts, |_| {})
}

/// [`run`], saying which part (and which step of it) it is on: the parts take from seconds to
/// minutes each, and a command silent for 85 s looks hung (issue 37).
pub fn run_with(opts: &OverheadOptions, mut progress: impl FnMut(&str)) -> Result<OverheadReport> {
    let mut report = OverheadReport {
        seed: opts.seed,
        ..Default::default()
    };
    let line = link::Line2::new()?;
    let want = |p| opts.parts.contains(&p);
    if want(Part::SketchMemory) || want(Part::FabricMemory) {
        let mut o = opts.fig6.clone();
        o.seed = opts.seed;
        if want(Part::FabricMemory) {
            for p in fabric_memory::LOSSES {
                if !o.losses.iter().any(|&x| (x - p).abs() < p * 1e-9) {
                    o.losses.push(p);
                }
            }
            o.losses.sort_by(|a, b| a.total_cmp(b));
        }
        let f = sketch_memory::run_with(&o, |step| progress(&format!("Fig. 6: {step}")))?;
        if want(Part::FabricMemory) {
            progress("Table II");
            report.table2 = Some(fabric_memory::run(&f)?);
        }
        report.fig6 = Some(f);
    }
    if want(Part::SelectionChurn) {
        progress("Fig. 7: flow selection under churn");
        report.fig7 = Some(selection_churn::run(
            &line,
            &opts.trace,
            &opts.etas,
            opts.epochs,
        )?);
    }
    if want(Part::HeavyHitters) {
        progress("Fig. 11: heavy hitters");
        report.fig11 = Some(heavy_hitters::run(
            &line,
            &opts.trace,
            &opts.dsm_widths,
            &opts.ks,
            opts.epochs,
            opts.seed,
        )?);
    }
    Ok(report)
}
