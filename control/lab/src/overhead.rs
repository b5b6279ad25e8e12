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
pub mod selection_churn;
pub mod sketch_memory;
pub mod traffic;
pub mod twoswitch;

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt::Write as _;
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
        let f = sketch_memory::run(&o)?;
        if want(Part::FabricMemory) {
            report.table2 = Some(fabric_memory::run(&f)?);
        }
        report.fig6 = Some(f);
    }
    if want(Part::SelectionChurn) {
        report.fig7 = Some(selection_churn::run(
            &line,
            &opts.trace,
            &opts.etas,
            opts.epochs,
        )?);
    }
    if want(Part::HeavyHitters) {
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

fn kb(bytes: f64) -> String {
    format!("{:.1}", bytes / 1024.0)
}

fn opt<T>(x: &Option<T>, f: impl Fn(&T) -> String) -> String {
    x.as_ref().map_or_else(|| "—".to_string(), f)
}

/// The report as text tables.
pub fn render(r: &OverheadReport) -> String {
    let mut s = String::new();
    if let Some(f) = &r.fig6 {
        let _ = writeln!(
            s,
            "── Fig. 6: minimum memory for {:.0} % decoding success, two switches ──",
            f.target * 100.0
        );
        let _ = writeln!(
            s,
            "{} flows over {} ms, {:.0} packets per epoch on average, {} trials per point; KB = 1024 B",
            f.traffic.flows,
            f.traffic.epoch_ns / 1_000_000,
            f.mean_packets,
            f.trials
        );
        let _ = writeln!(
            s,
            "{:>8} │ {:>10} {:>10} {:>10} {:>10} │ {:>8} │ {:>9} {:>9} {:>9} {:>9} │ {:>7} {:>7}",
            "loss",
            "FlowRadar",
            "LossRadar",
            "Fermat",
            "Canary",
            "C/Fermat",
            "FR µs",
            "LR µs",
            "FS µs",
            "Can. µs",
            "flows",
            "seen"
        );
        for row in &f.rows {
            let m = |p: &Option<sketch_memory::Point>| opt(p, |p| kb(p.memory_bytes));
            let t = |p: &Option<sketch_memory::Point>| opt(p, |p| format!("{:.0}", p.decode_us));
            let _ = writeln!(
                s,
                "{:>8.0e} │ {:>10} {:>10} {:>10} {:>10} │ {:>8} │ {:>9} {:>9} {:>9} {:>9} │ {:>7} {:>7.2}",
                row.loss,
                m(&row.flowradar),
                m(&row.lossradar),
                m(&row.fermat),
                m(&row.canary),
                opt(&row.canary_over_fermat, |x| format!("{:.1} %", x * 100.0)),
                t(&row.flowradar),
                t(&row.lossradar),
                t(&row.fermat),
                t(&row.canary),
                opt(&row.canary, |c| format!("{:.1}", c.items)),
                row.canary_extra.detection_rate
            );
        }
        let _ = writeln!(
            s,
            "paper at 1e-2: Canary uses 2.3 % of FermatSketch's memory\n"
        );
    }
    if let Some(t) = &r.table2 {
        let _ = writeln!(
            s,
            "── Table II: network-wide memory, k = 8 fat-tree (KB) ──"
        );
        let _ = writeln!(
            s,
            "{:<20} {:>8} │ {:>21} {:>21} {:>21}",
            "", "switches", "1e-3 ours / paper", "1e-2 ours / paper", "1e-1 ours / paper"
        );
        for row in &t.rows {
            let cells: Vec<String> = row
                .kb
                .iter()
                .zip(&row.paper_kb)
                .map(|(k, p)| format!("{:>10} / {:>8.0}", opt(k, |k| format!("{k:.0}")), p))
                .collect();
            let _ = writeln!(
                s,
                "{:<20} {:>8} │ {:>21} {:>21} {:>21}",
                row.system, row.switches, cells[0], cells[1], cells[2]
            );
        }
        s.push('\n');
    }
    if let Some(f) = &r.fig7 {
        let _ = writeln!(
            s,
            "── Fig. 7: flow selection, α = {}, β = {}, δ = {}, {} epochs of 100 ms ──",
            f.alpha, f.beta, f.delta, f.epochs
        );
        let _ = writeln!(
            s,
            "trace: {}; {:.0} packets per epoch",
            f.trace, f.mean_packets_per_epoch
        );
        let _ = writeln!(
            s,
            "{:>4} │ {:>12} {:>12} │ {:>12} │ {:>12} {:>10} {:>8}",
            "η", "epochs < α", "mean pkts", "active flows", "no-rule ep.", "mean rules", "rules"
        );
        for x in &f.series {
            let _ = writeln!(
                s,
                "{:>4} │ {:>11.1}% {:>12.0} │ {:>12.1} │ {:>11.1}% {:>10.2} {:>8}",
                x.eta,
                x.share_below_alpha * 100.0,
                x.mean_packets_counted,
                x.mean_active_flows,
                x.share_no_rules * 100.0,
                x.mean_rules,
                x.total_rules
            );
        }
        let _ = writeln!(
            s,
            "paper (MAWI): ≈10 % of epochs < α; active flows 52.1 (η=0) vs 23.5 (η=32); ≈90 % of epochs install no rule\n"
        );
    }
    if let Some(f) = &r.fig11 {
        let _ = writeln!(
            s,
            "── Fig. 11: heavy hitters, Canary (DSM + 3×32 HashPipe) vs original 6-stage HashPipe, {} epochs ──",
            f.epochs
        );
        let _ = writeln!(s, "trace: {}; {} flows", f.trace, f.flows);
        for p in &f.points {
            let _ = writeln!(
                s,
                "DSM 3×{} + HashPipe ({} KB, {} flows monitored) vs HashPipe 6×{} ({} KB):",
                p.dsm_width,
                kb(p.canary_bytes),
                p.canary_monitored,
                p.hashpipe_entries,
                kb(p.hashpipe_bytes)
            );
            for t in &p.topk {
                let _ = writeln!(
                    s,
                    "    top-{:<4} F1  Canary {:.3}   HashPipe {:.3}",
                    t.k, t.canary, t.hashpipe
                );
            }
        }
        let _ = writeln!(
            s,
            "paper: Canary more accurate at equal (small) memory; HashPipe better with more memory, esp. top-75"
        );
    }
    s
}
