//! SVG figures of `canary overhead --svg-dir DIR`: `fig6.svg` (memory and decoding time against
//! the loss rate, log-log), `fig7.svg` (CDFs of the three per-epoch metrics, one line per η),
//! `fig11.svg` (top-k F1 at equal memory, and against memory).

use super::{
    heavy_hitters::HeavyHitters, selection_churn::SelectionChurn, sketch_memory::SketchMemory,
};
use crate::{Error, Result};
use plotters::prelude::*;
use std::path::Path;

type Series = (String, Vec<(f64, f64)>);

/// Plotters' errors differ in type by chart and backend: kept as their message.
fn err(path: &Path) -> impl Fn(&dyn std::fmt::Display) -> Error + '_ {
    move |e| Error::Draw {
        path: path.into(),
        message: e.to_string(),
    }
}

fn bounds(series: &[Series], f: impl Fn(&(f64, f64)) -> f64) -> (f64, f64) {
    let v = series.iter().flat_map(|s| s.1.iter().map(&f));
    v.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)))
}

/// Titles and scales of one panel.
struct Axes<'a> {
    caption: &'a str,
    x_desc: &'a str,
    y_desc: &'a str,
    log_x: bool,
    log_y: bool,
    legend: SeriesLabelPosition,
}

/// One panel of lines with markers.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    axes: Axes,
    series: &[Series],
    e: &dyn Fn(&dyn std::fmt::Display) -> Error,
) -> Result<()> {
    let Axes {
        caption,
        x_desc,
        y_desc,
        log_x,
        log_y,
        legend,
    } = axes;
    let (x0, x1) = bounds(series, |p| p.0);
    let (y0, y1) = bounds(series, |p| p.1);
    if x0 > x1 {
        return Ok(());
    }
    let pad = |lo: f64, hi: f64, log: bool| {
        if log {
            (lo.max(1e-9) / 1.5, hi.max(1e-9) * 1.5)
        } else {
            let d = (hi - lo).max(1e-9) * 0.05;
            (lo - d, hi + d)
        }
    };
    let (x0, x1) = pad(x0, x1, log_x);
    let (y0, y1) = pad(y0, y1, log_y);
    let mut b = ChartBuilder::on(area);
    b.caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(55);
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart.map_err(|x| e(&x))?;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .draw()
                .map_err(|x| e(&x))?;
            for (i, (name, pts)) in series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(|x| e(&x))?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                    });
                if pts.len() <= 20 {
                    chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(|x| e(&x))?;
                }
            }
            chart
                .configure_series_labels()
                .position(legend.clone())
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|x| e(&x))?;
        }};
    }
    match (log_x, log_y) {
        (true, true) => draw!(b.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())),
        (true, false) => draw!(b.build_cartesian_2d((x0..x1).log_scale(), y0..y1)),
        (false, true) => draw!(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale())),
        (false, false) => draw!(b.build_cartesian_2d(x0..x1, y0..y1)),
    }
    Ok(())
}

pub fn fig6(path: &Path, f: &SketchMemory) -> Result<()> {
    let e = err(path);
    let root = SVGBackend::new(path, (1100, 430)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let title = format!(
        "Fig. 6: two switches, {} flows / {} ms, {} trials",
        f.traffic.flows,
        f.traffic.epoch_ns / 1_000_000,
        f.trials
    );
    let root = root.titled(&title, ("sans-serif", 20)).map_err(|x| e(&x))?;
    let panels = root.split_evenly((1, 2));
    type Get = fn(&super::sketch_memory::Row) -> &Option<super::sketch_memory::Point>;
    let systems: [(&str, Get); 4] = [
        ("FlowRadar", |r| &r.flowradar),
        ("LossRadar", |r| &r.lossradar),
        ("FermatSketch", |r| &r.fermat),
        ("Canary", |r| &r.canary),
    ];
    let series = |v: fn(&super::sketch_memory::Point) -> f64| -> Vec<Series> {
        systems
            .iter()
            .map(|(name, get)| {
                let pts = f
                    .rows
                    .iter()
                    .filter_map(|r| get(r).as_ref().map(|p| (r.loss, v(p))))
                    .collect();
                (name.to_string(), pts)
            })
            .collect()
    };
    panel(
        &panels[0],
        Axes {
            caption: "(a) memory per switch",
            x_desc: "link loss rate",
            y_desc: "KB",
            log_x: true,
            log_y: true,
            legend: SeriesLabelPosition::UpperLeft,
        },
        &series(|p| p.memory_bytes / 1024.0),
        &e,
    )?;
    panel(
        &panels[1],
        Axes {
            caption: "(b) decoding time",
            x_desc: "link loss rate",
            y_desc: "µs",
            log_x: true,
            log_y: true,
            legend: SeriesLabelPosition::UpperLeft,
        },
        &series(|p| p.decode_us.max(0.01)),
        &e,
    )?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// Empirical CDF points of `v`.
fn cdf(mut v: Vec<f64>) -> Vec<(f64, f64)> {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect()
}

pub fn fig7(path: &Path, f: &SelectionChurn) -> Result<()> {
    let e = err(path);
    let root = SVGBackend::new(path, (1400, 430)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let title = format!("Fig. 7: flow selection over {} epochs (CDF)", f.epochs);
    let root = root.titled(&title, ("sans-serif", 20)).map_err(|x| e(&x))?;
    let panels = root.split_evenly((1, 3));
    type Get = fn(&super::twoswitch::EpochStat) -> f64;
    let metrics: [(&str, Get); 3] = [
        ("(a) packets counted", |s| s.packets_counted as f64),
        ("(b) active flows monitored", |s| s.active_flows as f64),
        ("(c) rules installed", |s| s.rules_installed as f64),
    ];
    for (panel_area, (name, get)) in panels.iter().zip(metrics) {
        let series: Vec<Series> = f
            .series
            .iter()
            .map(|s| {
                (
                    format!("η = {}", s.eta),
                    cdf(s.epochs.iter().map(get).collect()),
                )
            })
            .collect();
        panel(
            panel_area,
            Axes {
                caption: name,
                x_desc: "per epoch",
                y_desc: "CDF",
                log_x: false,
                log_y: false,
                legend: SeriesLabelPosition::LowerRight,
            },
            &series,
            &e,
        )?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

pub fn fig11(path: &Path, f: &HeavyHitters) -> Result<()> {
    let e = err(path);
    let root = SVGBackend::new(path, (1100, 430)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let root = root
        .titled("Fig. 11: heavy hitters", ("sans-serif", 20))
        .map_err(|x| e(&x))?;
    let panels = root.split_evenly((1, 2));
    if let Some(p) = f.points.first() {
        let series = vec![
            (
                format!("Canary (DSM 3×{})", p.dsm_width),
                p.topk.iter().map(|t| (t.k as f64, t.canary)).collect(),
            ),
            (
                format!("HashPipe 6×{}", p.hashpipe_entries),
                p.topk.iter().map(|t| (t.k as f64, t.hashpipe)).collect(),
            ),
        ];
        panel(
            &panels[0],
            Axes {
                caption: "(a) equal memory",
                x_desc: "top-k",
                y_desc: "F1",
                log_x: false,
                log_y: false,
                legend: SeriesLabelPosition::LowerLeft,
            },
            &series,
            &e,
        )?;
    }
    let mut series: Vec<Series> = Vec::new();
    for k in [25, 50, 75] {
        let pick = |canary: bool| -> Vec<(f64, f64)> {
            f.points
                .iter()
                .filter_map(|p| {
                    let t = p.topk.iter().find(|t| t.k == k)?;
                    Some((
                        p.canary_bytes / 1024.0,
                        if canary { t.canary } else { t.hashpipe },
                    ))
                })
                .collect()
        };
        series.push((format!("Canary top-{k}"), pick(true)));
        series.push((format!("HashPipe top-{k}"), pick(false)));
    }
    series.retain(|s| !s.1.is_empty());
    panel(
        &panels[1],
        Axes {
            caption: "(b) against memory",
            x_desc: "KB",
            y_desc: "F1",
            log_x: false,
            log_y: false,
            legend: SeriesLabelPosition::LowerLeft,
        },
        &series,
        &e,
    )?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
