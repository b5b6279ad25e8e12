//! `canary draw`: an SVG picture of a fabric with a run's verdict on its links.
//!
//! Switches are drawn in rows by layer (top layer at the top, hosts under the bottom layer),
//! monitors filled. Each direction of a physical link is its own line, offset to one side, so a
//! fault on `[agg0_0, core0]` and one on `[core0, agg0_0]` are told apart; an arrowhead shows the
//! direction. Marked links, from the run's JSON (`canary run --json` or `canary simulate --json`):
//!
//! * red: injected and blamed (true positive), labelled with both loss rates;
//! * orange, dashed: injected but not blamed (missed);
//! * purple: blamed but not injected (false positive).
//!
//! Plain hand-written SVG: the picture is a graph, not a chart, so `plotters` would add nothing.

use crate::error::{Error, Result};
use crate::run_document::RunDocument;
use canary_core::topo::{SwitchIx, Topology};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct DrawArgs {
    /// `fattree:K` or a YAML topology file. With `--json`, the run's own fabric is drawn and
    /// this is only needed for a document from before version 1 on a topology file; without a
    /// run, default `fattree:4`.
    #[arg(long)]
    pub topology: Option<String>,
    /// A run's JSON document (`canary run --json`, `canary simulate --json`, with or without
    /// `--synth-meters`): its faults and `summary.blamed`.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Where to write the SVG.
    #[arg(long)]
    pub out: PathBuf,
    /// Title (default: the topology and the run's score).
    #[arg(long)]
    pub title: Option<String>,
}

/// What happened on one directed link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mark {
    /// Injected and blamed: (injected loss, estimated loss).
    Found(f64, f64),
    /// Injected, not blamed.
    Missed(f64),
    /// Blamed, not injected: estimated loss.
    FalsePositive(f64),
}

/// Directed link `[from, to]` by names → its mark.
pub type Marks = BTreeMap<(String, String), Mark>;

/// The marks of a run: its faults against its summary's blamed links; and its score.
pub fn marks_of(doc: &RunDocument) -> (Marks, String) {
    let mut marks = Marks::new();
    for f in &doc.faults {
        marks.insert((f.link[0].clone(), f.link[1].clone()), Mark::Missed(f.loss));
    }
    for b in &doc.summary.blamed {
        let key = (b.link[0].clone(), b.link[1].clone());
        let m = match marks.get(&key) {
            Some(Mark::Missed(inj)) => Mark::Found(*inj, b.loss),
            _ => Mark::FalsePositive(b.loss),
        };
        marks.insert(key, m);
    }
    let s = &doc.summary;
    let score = if doc.faults.is_empty() && s.blamed.is_empty() {
        format!("{} epochs", doc.epochs.len())
    } else {
        format!(
            "{} epochs: precision {:.2}, recall {:.2}, F1 {:.2}",
            doc.epochs.len(),
            s.precision,
            s.recall,
            s.f1
        )
    };
    (marks, score)
}

const W_SLOT: f64 = 110.0;
const ROW: f64 = 150.0;
const TOP: f64 = 70.0;
const SIDE: f64 = 40.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn pct(x: f64) -> String {
    if x >= 0.1 {
        format!("{:.0}%", x * 100.0)
    } else if x >= 0.01 {
        format!("{:.1}%", x * 100.0)
    } else {
        format!("{:.2}%", x * 100.0)
    }
}

/// Where each switch goes: rows by layer, the top layer at the top, room for hosts below.
#[derive(Clone, Debug)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    /// Per switch, its centre.
    pub pos: Vec<(f64, f64)>,
    /// Switches by layer, bottom first.
    pub rows: Vec<Vec<SwitchIx>>,
}

pub fn layout(topo: &Topology) -> Layout {
    layout_with(topo, true)
}

/// The layout, with room under the bottom row for the hosts' names (`canary draw`) or not
/// (the live page, which draws no hosts).
pub fn layout_with(topo: &Topology, host_room: bool) -> Layout {
    let top = topo.top_layer();
    let mut rows: Vec<Vec<SwitchIx>> = vec![Vec::new(); top as usize + 1];
    for (i, s) in topo.switches.iter().enumerate() {
        rows[s.layer as usize].push(i as SwitchIx);
    }
    let hosts_per_edge = if host_room {
        topo.hosts.len().max(1) as f64 / rows[0].len().max(1) as f64
    } else {
        0.0
    };
    let widest = rows.iter().map(|r| r.len()).max().unwrap_or(1) as f64;
    let width = (widest * W_SLOT).max(rows[0].len() as f64 * hosts_per_edge * 28.0) + 2.0 * SIDE;
    let height = TOP + (top as f64 + 1.0) * ROW + if host_room { 90.0 } else { 0.0 };
    let mut pos = vec![(0.0, 0.0); topo.switches.len()];
    for (layer, row) in rows.iter().enumerate() {
        let y = TOP + (top as usize - layer) as f64 * ROW + 30.0;
        let slot = (width - 2.0 * SIDE) / row.len().max(1) as f64;
        for (j, &s) in row.iter().enumerate() {
            pos[s as usize] = (SIDE + slot * (j as f64 + 0.5), y);
        }
    }
    Layout {
        width,
        height,
        pos,
        rows,
    }
}

/// The SVG text. Names in `marks` that the topology does not have are an error.
pub fn render(topo: &Topology, marks: &Marks, title: &str) -> Result<String> {
    check_marks(topo, marks)?;
    let Layout {
        width, height, pos, ..
    } = layout(topo);
    let mut svg = String::new();
    head(&mut svg, width, height, title);
    // Links: every direction its own line, offset 5 px to its right; marked ones on top.
    let mut lines = LinkLines::default();
    for l in &topo.links {
        lines.add(topo, &pos, marks, l.from as usize, l.to as usize);
    }
    svg += &lines.plain;
    svg += &lines.marked;
    hosts(&mut svg, topo, &pos);
    switches(&mut svg, topo, &pos);
    svg += &lines.labels;
    legend(&mut svg, height);
    Ok(svg)
}

fn check_marks(topo: &Topology, marks: &Marks) -> Result<()> {
    for (a, b) in marks.keys() {
        if topo.link_by_names(a, b).is_none() {
            return Err(Error::given(
                format!("link [{a}, {b}]"),
                format!("not in topology {}", topo.name),
            ));
        }
    }
    Ok(())
}

/// The SVG element, the arrowheads' markers, the background and the title.
fn head(svg: &mut String, width: f64, height: f64, title: &str) {
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif">
<defs>
<marker id="a-gray" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="5" markerHeight="5" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#bbb"/></marker>
<marker id="a-red" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="4" markerHeight="4" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#d62728"/></marker>
<marker id="a-orange" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="4" markerHeight="4" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#ff7f0e"/></marker>
<marker id="a-purple" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="4" markerHeight="4" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#9467bd"/></marker>
</defs>
<rect width="100%" height="100%" fill="white"/>
<text x="{:.0}" y="28" text-anchor="middle" font-size="17">{}</text>
"##,
        width / 2.0,
        esc(title)
    );
}

/// The links' lines: unmarked, marked (drawn over the unmarked), and the marked ones' labels
/// (drawn over the switches).
#[derive(Default)]
struct LinkLines {
    plain: String,
    marked: String,
    labels: String,
}

impl LinkLines {
    /// The directed link `a → b`.
    fn add(&mut self, topo: &Topology, pos: &[(f64, f64)], marks: &Marks, a: usize, b: usize) {
        let ((x1, y1), (x2, y2)) = (pos[a], pos[b]);
        let (dx, dy) = (x2 - x1, y2 - y1);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let (nx, ny) = (-dy / len * 5.0, dx / len * 5.0);
        let (sx, sy, ex, ey) = (x1 + nx, y1 + ny, x2 + nx, y2 + ny);
        // Arrowhead at 62 % of the way, on a mid vertex.
        let (mx, my) = (sx + (ex - sx) * 0.62, sy + (ey - sy) * 0.62);
        let key = (topo.switches[a].name.clone(), topo.switches[b].name.clone());
        let path = format!("M{sx:.1},{sy:.1} L{mx:.1},{my:.1} L{ex:.1},{ey:.1}");
        let Some(m) = marks.get(&key) else {
            let _ = writeln!(
                self.plain,
                r##"<path d="{path}" stroke="#ccc" stroke-width="1.2" fill="none" marker-mid="url(#a-gray)"/>"##
            );
            return;
        };
        let (color, dash, text) = match *m {
            Mark::Found(inj, est) => (
                "red",
                "",
                format!("injected {} · blamed {}", pct(inj), pct(est)),
            ),
            Mark::Missed(inj) => (
                "orange",
                r#" stroke-dasharray="7,4""#,
                format!("injected {} · missed", pct(inj)),
            ),
            Mark::FalsePositive(est) => ("purple", "", format!("false positive {}", pct(est))),
        };
        let hex = match color {
            "red" => "#d62728",
            "orange" => "#ff7f0e",
            _ => "#9467bd",
        };
        let _ = writeln!(
            self.marked,
            r#"<path d="{path}" stroke="{hex}" stroke-width="4" fill="none"{dash} marker-mid="url(#a-{color})"><title>{} → {}: {}</title></path>"#,
            esc(&key.0),
            esc(&key.1),
            esc(&text)
        );
        let (lx, ly) = (
            sx + (ex - sx) * 0.45 + nx * 2.0,
            sy + (ey - sy) * 0.45 + ny * 2.0,
        );
        let anchor = if nx >= 0.0 { "start" } else { "end" };
        let _ = writeln!(
            self.labels,
            r#"<text x="{lx:.0}" y="{ly:.0}" font-size="12" fill="{hex}" text-anchor="{anchor}" stroke="white" stroke-width="3" paint-order="stroke">{} → {}: {}</text>"#,
            esc(&key.0),
            esc(&key.1),
            esc(&text)
        );
    }
}

/// Hosts under their switch.
fn hosts(svg: &mut String, topo: &Topology, pos: &[(f64, f64)]) {
    for (s, &(x, y)) in pos.iter().enumerate() {
        let hs = topo.hosts_of(s as SwitchIx);
        let n = hs.len() as f64;
        for (j, &h) in hs.iter().enumerate() {
            let hx = x + (j as f64 - (n - 1.0) / 2.0) * 26.0;
            let hy = y + 70.0;
            let name = esc(&topo.hosts[h as usize].name);
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{hx:.1}" y2="{:.1}" stroke="#ddd"/><rect x="{:.1}" y="{:.1}" width="14" height="14" fill="#eee" stroke="#999"><title>{name}</title></rect>"##,
                y + 16.0,
                hy - 7.0,
                hx - 7.0,
                hy - 7.0
            );
        }
    }
}

/// The switches, monitors filled.
fn switches(svg: &mut String, topo: &Topology, pos: &[(f64, f64)]) {
    for (s, &(x, y)) in pos.iter().enumerate() {
        let sw = &topo.switches[s];
        let (fill, stroke) = if sw.monitor {
            ("#1f77b4", "#1f77b4")
        } else {
            ("white", "#1f77b4")
        };
        let text_fill = if sw.monitor { "white" } else { "#1f77b4" };
        let _ = writeln!(
            svg,
            r#"<rect x="{:.1}" y="{:.1}" width="76" height="26" rx="5" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/><text x="{x:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="{text_fill}">{}</text>"#,
            x - 38.0,
            y - 13.0,
            y + 4.0,
            esc(&sw.name)
        );
    }
}

/// The legend: what the colours and the filled boxes mean.
fn legend(svg: &mut String, height: f64) {
    let ly = height - 40.0;
    let _ = write!(
        svg,
        r##"<g font-size="12">
<line x1="{SIDE}" y1="{ly}" x2="{:.0}" y2="{ly}" stroke="#d62728" stroke-width="4"/><text x="{:.0}" y="{:.0}">injected and blamed</text>
<line x1="{:.0}" y1="{ly}" x2="{:.0}" y2="{ly}" stroke="#ff7f0e" stroke-width="4" stroke-dasharray="7,4"/><text x="{:.0}" y="{:.0}">injected, missed</text>
<line x1="{:.0}" y1="{ly}" x2="{:.0}" y2="{ly}" stroke="#9467bd" stroke-width="4"/><text x="{:.0}" y="{:.0}">blamed, not injected</text>
<rect x="{:.0}" y="{:.0}" width="22" height="12" rx="3" fill="#1f77b4"/><text x="{:.0}" y="{:.0}">monitor switch</text>
<text x="{SIDE}" y="{:.0}" fill="#666">each direction of a link is drawn on its own side; the arrow gives the direction</text>
</g>
</svg>
"##,
        SIDE + 30.0,
        SIDE + 36.0,
        ly + 4.0,
        SIDE + 180.0,
        SIDE + 210.0,
        SIDE + 216.0,
        ly + 4.0,
        SIDE + 340.0,
        SIDE + 370.0,
        SIDE + 376.0,
        ly + 4.0,
        SIDE + 530.0,
        ly - 6.0,
        SIDE + 558.0,
        ly + 4.0,
        ly + 24.0,
    );
}

/// `canary draw`.
pub fn main(a: &DrawArgs) -> Result<()> {
    let (topo, marks, score) = match &a.json {
        Some(p) => {
            let doc = RunDocument::load(p)?;
            let topo = doc.topology_for(&p.display().to_string(), a.topology.as_deref())?;
            let (marks, score) = marks_of(&doc);
            (topo, marks, score)
        }
        None => {
            let spec = a
                .topology
                .as_deref()
                .unwrap_or(crate::setup::DEFAULT_TOPOLOGY);
            let topo = crate::setup::load_topology(spec, None)?;
            (topo, Marks::new(), String::new())
        }
    };
    let title = a.title.clone().unwrap_or_else(|| {
        if score.is_empty() {
            topo.name.clone()
        } else {
            format!("{}: {score}", topo.name)
        }
    });
    let svg = render(&topo, &marks, &title).map_err(|e| match &a.json {
        Some(p) => Error::given(p.display(), e),
        None => e,
    })?;
    std::fs::write(&a.out, svg)
        .map_err(|e| Error::io(format!("cannot write {}", a.out.display()), e))
}

#[cfg(test)]
mod tests;
