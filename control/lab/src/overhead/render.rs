//! `canary overhead`'s text: one table per part run, in the paper's order.

use super::{fabric_memory, heavy_hitters, selection_churn, sketch_memory, OverheadReport};
use std::fmt::Write as _;

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
        fig6(&mut s, f);
    }
    if let Some(t) = &r.table2 {
        table2(&mut s, t);
    }
    if let Some(f) = &r.fig7 {
        fig7(&mut s, f);
    }
    if let Some(f) = &r.fig11 {
        fig11(&mut s, f);
    }
    s
}

/// Fig. 6: memory and decode time of each sketch against the loss rate.
fn fig6(s: &mut String, f: &sketch_memory::SketchMemory) {
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

/// Table II: network-wide memory, ours beside the paper's.
fn table2(s: &mut String, t: &fabric_memory::FabricMemory) {
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

/// Fig. 7: flow selection per η.
fn fig7(s: &mut String, f: &selection_churn::SelectionChurn) {
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

/// Fig. 11: heavy-hitter F1 of Canary and of the original HashPipe.
fn fig11(s: &mut String, f: &heavy_hitters::HeavyHitters) {
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
