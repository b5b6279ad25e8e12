//! `canary eval --svg FILE`: the paper's Fig. 8 style figure. Three panels (precision, recall,
//! F1) against the stage; multi-stage localizers (Canary's groups, NetBouncer-stage's rounds)
//! draw one marked point per stage, single-stage ones a flat line across all stages.

use super::StageScore;
use crate::{Error, Result};
use plotters::prelude::*;
use std::path::Path;

type Metric = (&'static str, fn(&StageScore) -> f64);

const METRICS: [Metric; 3] = [
    ("precision", |s| s.precision),
    ("recall", |s| s.recall),
    ("F1", |s| s.f1),
];

/// Draws `series` (localizer name, its per-stage scores) to an SVG file.
pub fn render_svg(path: &Path, title: &str, series: &[(String, Vec<StageScore>)]) -> Result<()> {
    let err = |e: &dyn std::fmt::Display| draw_error(path, e);
    let stages = series
        .iter()
        .map(|(_, s)| s.len())
        .max()
        .unwrap_or(1)
        .max(2);
    let root = SVGBackend::new(path, (1260, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled(title, ("sans-serif", 20))
        .map_err(|e| err(&e))?;
    let panels = root.split_evenly((1, 3));
    for (panel, (metric, get)) in panels.iter().zip(METRICS) {
        let mut chart = ChartBuilder::on(panel)
            .caption(metric, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(40)
            .build_cartesian_2d(0.8f64..stages as f64 + 0.2, 0.0f64..1.05)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("stage")
            .x_labels(stages)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .map_err(|e| err(&e))?;
        for (i, (name, scores)) in series.iter().enumerate() {
            if scores.is_empty() {
                continue;
            }
            let color = Palette99::pick(i).to_rgba();
            let pts: Vec<(f64, f64)> = if scores.len() == 1 {
                let y = get(&scores[0]);
                vec![(1.0, y), (stages as f64, y)]
            } else {
                scores
                    .iter()
                    .enumerate()
                    .map(|(s, x)| ((s + 1) as f64, get(x)))
                    .collect()
            };
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
            if scores.len() > 1 {
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(|e| err(&e))?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Draws a sweep: three panels (precision, recall, F1) against the swept value, one line with
/// marked points per localizer; `log_x` draws the x axis on a log scale.
pub fn render_sweep_svg(
    path: &Path,
    title: &str,
    x_label: &str,
    log_x: bool,
    series: &[(String, Vec<(f64, StageScore)>)],
) -> Result<()> {
    let err = |e: &dyn std::fmt::Display| draw_error(path, e);
    let xs = || series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let (lo, hi) = xs().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if !lo.is_finite() {
        return Err(draw_error(path, &"no points"));
    }
    let root = SVGBackend::new(path, (1260, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled(title, ("sans-serif", 20))
        .map_err(|e| err(&e))?;
    let panels = root.split_evenly((1, 3));
    for (panel, (metric, get)) in panels.iter().zip(METRICS) {
        if log_x && lo > 0.0 {
            let range = (lo / 1.5..hi * 1.5).log_scale();
            let mut chart = panel_builder(panel, metric)
                .build_cartesian_2d(range, 0.0f64..1.05)
                .map_err(|e| err(&e))?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .x_label_formatter(&|x| format!("{x}"))
                .draw()
                .map_err(|e| err(&e))?;
            draw_lines(&mut chart, series, get).map_err(|e| err(&e))?;
        } else {
            let pad = ((hi - lo) * 0.05).max(0.5);
            let mut chart = panel_builder(panel, metric)
                .build_cartesian_2d(lo - pad..hi + pad, 0.0f64..1.05)
                .map_err(|e| err(&e))?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .x_label_formatter(&|x| format!("{x}"))
                .draw()
                .map_err(|e| err(&e))?;
            draw_lines(&mut chart, series, get).map_err(|e| err(&e))?;
        }
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Plotters' errors differ in type by chart and backend: kept as their message.
fn draw_error(path: &Path, e: &dyn std::fmt::Display) -> Error {
    Error::Draw {
        path: path.into(),
        message: e.to_string(),
    }
}

fn panel_builder<'a, 'b>(
    panel: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(panel);
    b.caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(40);
    b
}

type Chart<'a, X> =
    ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>;

fn draw_lines<'a, X>(
    chart: &mut Chart<'a, X>,
    series: &[(String, Vec<(f64, StageScore)>)],
    get: fn(&StageScore) -> f64,
) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>
where
    X: Ranged<ValueType = f64>,
{
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = pts.iter().map(|(x, s)| (*x, get(s))).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_an_svg_with_every_series() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.svg");
        let s = |f1| StageScore {
            precision: 1.0,
            recall: f1,
            f1,
        };
        let series = vec![
            ("canary".to_string(), vec![s(0.3), s(0.6), s(1.0)]),
            ("flock".to_string(), vec![s(0.8)]),
        ];
        render_svg(&path, "test", &series).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("canary") && svg.contains("flock"));
    }

    #[test]
    fn writes_a_sweep_svg_on_log_and_linear_axes() {
        let dir = tempfile::tempdir().unwrap();
        let s = |f1| StageScore {
            precision: 1.0,
            recall: f1,
            f1,
        };
        let series = vec![
            (
                "netbouncer".to_string(),
                vec![(10.0, s(0.5)), (100.0, s(0.9))],
            ),
            ("flock".to_string(), vec![(10.0, s(0.6)), (100.0, s(1.0))]),
        ];
        for log in [true, false] {
            let path = dir.path().join(format!("s{log}.svg"));
            render_sweep_svg(&path, "sweep", "probes per path", log, &series).unwrap();
            let svg = std::fs::read_to_string(&path).unwrap();
            assert!(svg.starts_with("<svg") && svg.contains("netbouncer"));
        }
    }
}
