//! The terminal view of an epoch report and of a run's summary.

use super::{EpochReport, EvidenceReport, SegmentReport, TableFull};
use std::collections::BTreeMap;
use std::fmt::Write;

mod summary;
pub use summary::render_summary;

fn short(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=9_999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.2}M", n as f64 / 1e6),
    }
}

/// One line for the evidence map: what the links' evidence could show, at the median and the
/// worst, and the links nothing watches. The JSON report has every link.
fn evidence_line(e: &EvidenceReport) -> String {
    let mut q: Vec<f64> = e.links.iter().map(|l| l.min_loss).collect();
    q.sort_by(f64::total_cmp);
    let mut s = match e.links.len() {
        0 => "  evidence on no link yet".to_string(),
        n => format!("  evidence on {n} links:"),
    };
    if let Some(worst) = e.links.iter().max_by(|a, b| {
        a.min_loss
            .total_cmp(&b.min_loss)
            .then(b.packets.cmp(&a.packets))
    }) {
        let _ = write!(
            s,
            " smallest loss it shows median {}, worst {} ({}, {} pkts",
            pct(q[q.len() / 2]),
            if worst.min_loss >= 1.0 {
                "none".to_string()
            } else {
                pct(worst.min_loss)
            },
            worst.link.join("→"),
            worst.packets
        );
        if worst.age_epochs > 0 {
            let _ = write!(s, ", {} epochs old", worst.age_epochs);
        }
        s.push(')');
        let weak = q.iter().filter(|&&x| x >= WEAK).count();
        let _ = write!(s, "; {weak} cannot show {}", pct(WEAK));
    }
    let oldest = e.links.iter().map(|l| l.age_epochs).max().unwrap_or(0);
    if oldest > 0 {
        let _ = write!(s, "; oldest {oldest} epochs");
    }
    let _ = write!(s, "; {} unwatched", e.unwatched.len());
    s
}

/// The loss below which a link's evidence is called weak on the terminal and the page.
pub const WEAK: f64 = 0.01;

fn pct(x: f64) -> String {
    if x >= 1.0 {
        "100 %".into()
    } else if x >= 0.1 {
        format!("{:.0} %", x * 100.0)
    } else if x >= 0.01 {
        format!("{:.1} %", x * 100.0)
    } else {
        format!("{:.2} %", x * 100.0)
    }
}

/// The terminal view of one epoch: a header line, then lossy segments and blamed links.
pub fn render_epoch(r: &EpochReport, max_rows: usize) -> String {
    let mut s = String::new();
    header(&mut s, r);
    warnings(&mut s, r);
    tables_full(&mut s, r);
    watch(&mut s, r);
    fabric_notes(&mut s, r);
    lossy_segments(&mut s, r, max_rows);
    blamed_links(&mut s, r, max_rows);
    undecided(&mut s, r);
    devices_and_cleared(&mut s, r);
    s
}

/// Losses the counts cannot place on one link yet, with their candidates.
fn undecided(s: &mut String, r: &EpochReport) {
    for c in &r.undecided {
        let names: Vec<String> = c.iter().map(|l| format!("{}→{}", l[0], l[1])).collect();
        let _ = writeln!(
            s,
            "  undecided      {}: a loss the counts cannot place on one of them yet",
            names.join(" or ")
        );
    }
}

/// The first line: what was counted, what is monitored, and how long the epoch took.
fn header(s: &mut String, r: &EpochReport) {
    let _ = writeln!(
        s,
        "epoch {:>3} ({:>4}) │ {} pkts ({} lost), {} flows{} counted on {}/{} segments ({} short) │ {} monitored, +{} −{} │ {:.1} ms",
        r.epoch,
        format!("{:?}", r.parity).to_lowercase(),
        short(r.packets_counted),
        short(r.packets_lost),
        r.flows_counted,
        if r.flows_counted_v6 > 0 {
            format!(" ({} IPv6)", r.flows_counted_v6)
        } else {
            String::new()
        },
        r.segments_observed,
        r.segments_total,
        r.segments_short,
        r.flows_monitored,
        r.selection.flows_added,
        r.selection.flows_retired,
        r.phases_ms.harvest + r.phases_ms.detect + r.phases_ms.localize + r.phases_ms.select,
    );
    if let Some(at) = &r.at {
        // The wall-clock time on the header line, before its newline.
        s.pop();
        let _ = writeln!(s, " │ {at}");
    }
}

/// Why the epoch may be partial: incomplete, unreachable switches, disturbed switches.
fn warnings(s: &mut String, r: &EpochReport) {
    if let Some(why) = &r.incomplete {
        let _ = writeln!(s, "  ! incomplete, nothing blamed from it: {why}");
    }
    if !r.unreachable.is_empty() {
        let _ = writeln!(
            s,
            "  ! unreachable, segments unobserved: {}",
            r.unreachable.join(", ")
        );
    }
    for d in &r.disturbed {
        let _ = writeln!(s, "  ! {}: {}", d.switch, d.detail);
    }
}

/// One line per table: the switches where it was full (the worst first), and the rules it
/// did without. The JSON report keeps every switch.
fn tables_full(s: &mut String, r: &EpochReport) {
    let mut by_table: BTreeMap<&str, Vec<&TableFull>> = BTreeMap::new();
    for f in &r.tables_full {
        by_table.entry(&f.table).or_default().push(f);
    }
    for (table, mut full) in by_table {
        full.sort_by(|a, b| b.refused.cmp(&a.refused).then(a.switch.cmp(&b.switch)));
        let refused: u64 = full.iter().map(|f| u64::from(f.refused)).sum();
        const SHOWN: usize = 4;
        let names: Vec<String> = full
            .iter()
            .take(SHOWN)
            .map(|f| format!("{} ({})", f.switch, f.refused))
            .collect();
        let more = if full.len() > SHOWN {
            format!(" and {} more", full.len() - SHOWN)
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  ! {table} full ({} rules) on {} switch{}: {}{more}; {refused} rules refused, the \
             segments furthest short of α/β kept",
            full[0].size,
            full.len(),
            if full.len() == 1 { "" } else { "es" },
            names.join(", ")
        );
    }
}

/// The watch rounds: which round this is and how old the evidence gets.
fn watch(s: &mut String, r: &EpochReport) {
    let Some(w) = &r.watch else { return };
    let _ = writeln!(
        s,
        "  watching round {}/{} ({} segments, {} epoch{} each): evidence at most {} epochs \
         old (mean {:.1}), {} segments not counted yet",
        w.round + 1,
        w.rounds,
        w.watched,
        w.dwell,
        if w.dwell == 1 { "" } else { "s" },
        w.evidence.oldest,
        w.evidence.mean,
        w.evidence.never_seen
    );
    if let Some(e) = w.first_sweep_until {
        let _ = writeln!(
            s,
            "  ! first sweep over the rounds not complete: nothing blamed before epoch {e}"
        );
    }
}

/// What the fabric did around the measurement: links out of service, vanished flows, the
/// evidence map, segments left out.
fn fabric_notes(s: &mut String, r: &EpochReport) {
    if !r.out_of_service.is_empty() {
        let links: Vec<String> = r
            .out_of_service
            .iter()
            .map(|[a, b]| format!("{a}→{b}"))
            .collect();
        let _ = writeln!(
            s,
            "  out of service (the fabric moved their flows; not a fault): {}",
            links.join(", ")
        );
    }
    if r.flows_vanished > 0 {
        let _ = writeln!(
            s,
            "  {} monitored flows vanished on their way: every packet they sent counted as lost",
            r.flows_vanished
        );
    }
    if !r.evidence_map.is_empty() {
        let _ = writeln!(s, "{}", evidence_line(&r.evidence_map));
    }
    if r.segments_skipped > 0 {
        let _ = writeln!(
            s,
            "  ! {} segments through these switches left out of this epoch",
            r.segments_skipped
        );
    }
}

/// The lossy segments the report marks used, at most `max_rows` of them.
fn lossy_segments(s: &mut String, r: &EpochReport, max_rows: usize) {
    let used: Vec<&SegmentReport> = r.lossy_segments.iter().filter(|x| x.used).collect();
    if used.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "  lossy segments ({} over {} epochs):",
        used.len(),
        r.window_epochs
    );
    for x in used.iter().take(max_rows) {
        let age = match x.age {
            Some(a) if a > 0 => format!("  {a} epochs old"),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "    {:<36} loss {:>7.4}  ({}/{}){age}",
            x.segment.join("→"),
            x.loss,
            x.lost,
            x.sent
        );
        if let Some(top) = x.flows.first() {
            let _ = writeln!(
                s,
                "      this epoch {} flow{} lost packets; the most {} of {}: {}",
                x.flows_lossy,
                if x.flows_lossy == 1 { "" } else { "s" },
                top.lost,
                top.sent,
                top.flow
            );
        }
    }
    if used.len() > max_rows {
        let _ = writeln!(s, "    … {} more", used.len() - max_rows);
    }
}

/// The blamed links, at most `max_rows` of them, each with what is known about it.
fn blamed_links(s: &mut String, r: &EpochReport, max_rows: usize) {
    if r.blamed.is_empty() {
        return;
    }
    let _ = writeln!(s, "  blamed links ({}):", r.blamed.len());
    for b in r.blamed.iter().take(max_rows) {
        let stage = b.stage.map(|x| format!("  stage {x}")).unwrap_or_default();
        let ci = b
            .ci95
            .map(|[lo, hi]| format!("  [{lo:.4}, {hi:.4}]"))
            .unwrap_or_default();
        let since = b
            .since
            .map(|e| format!("  since epoch {e}"))
            .unwrap_or_default();
        let some = b
            .flows
            .map(|f| {
                format!(
                    "  on {} of {} flows only ({:.1} % of theirs)",
                    f.hit,
                    f.flows,
                    100.0 * f.loss_of_hit
                )
            })
            .unwrap_or_default();
        // Held: not named by this epoch's localization, not cleared by any test either.
        let held = if b.held {
            "  held (not named this epoch, not cleared)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "    {:<24} loss {:>7.4}{ci}{stage}{since}{some}{held}",
            format!("{}→{}", b.link[0], b.link[1]),
            b.loss
        );
    }
    if r.blamed.len() > max_rows {
        let _ = writeln!(s, "    … {} more", r.blamed.len() - max_rows);
    }
    cables(s, r, max_rows);
}

/// The cables to look at: both directions of each physical link with a blame, and its ports.
fn cables(s: &mut String, r: &EpochReport, max_rows: usize) {
    if r.cables.is_empty() {
        return;
    }
    let _ = writeln!(s, "  cables to look at ({}):", r.cables.len());
    for c in r.cables.iter().take(max_rows) {
        let dir =
            |i: usize, a: &str, b: &str| c.loss[i].map(|l| format!("  {a}→{b} {:.2} %", 100.0 * l));
        let [a, b] = &c.ends;
        let both: String = [dir(0, a, b), dir(1, b, a)].into_iter().flatten().collect();
        let _ = writeln!(
            s,
            "    {:<32}{both}",
            format!("{a} port {} — {b} port {}", c.ports[0], c.ports[1])
        );
    }
    if r.cables.len() > max_rows {
        let _ = writeln!(s, "    … {} more", r.cables.len() - max_rows);
    }
}

/// Whole devices blamed, and links no longer blamed (cleared, or corrected to another).
fn devices_and_cleared(s: &mut String, r: &EpochReport) {
    for d in &r.devices {
        let _ = writeln!(
            s,
            "  device         {}: all {} links {} blamed: the switch itself, or all of them",
            d.switch,
            d.links,
            if d.both {
                "in and out"
            } else if d.inbound {
                "in"
            } else {
                "out"
            }
        );
    }
    for c in &r.cleared {
        let _ = match &c.corrected_to {
            Some(to) => writeln!(
                s,
                "  corrected      {}→{}  (blamed epochs {}–{}): its segments' loss is on {}→{}",
                c.link[0], c.link[1], c.since, c.last, to[0], to[1]
            ),
            None => writeln!(
                s,
                "  all-clear      {}→{}  (blamed epochs {}–{})",
                c.link[0], c.link[1], c.since, c.last
            ),
        };
    }
}
