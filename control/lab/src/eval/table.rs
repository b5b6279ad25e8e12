//! The table for people that `canary eval` prints without `--json`.

use super::EvalReport;
use std::fmt::Write as _;

/// The table for people: one row per localizer.
pub fn render_table(r: &EvalReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} seed {}: {} faulty directed links",
        r.topology,
        r.seed,
        r.faults.len()
    );
    let _ = writeln!(
        s,
        "{:<17} {:>4} {:>4} {:>4} {:>9} {:>7} {:>6} {:>13}",
        "localizer", "TP", "FP", "FN", "precision", "recall", "F1", "inference ms"
    );
    for (name, x) in &r.localizers.0 {
        let _ = writeln!(
            s,
            "{:<17} {:>4} {:>4} {:>4} {:>9.3} {:>7.3} {:>6.3} {:>13.2}",
            name, x.tp, x.fp, x.fn_, x.precision, x.recall, x.f1, x.inference_ms
        );
    }
    if r.localizers.0.iter().any(|(_, x)| x.over_time.is_some()) {
        let _ = writeln!(
            s,
            "over time, each epoch on its own telemetry (episodes: fault onsets; repairs):\n\
             {:<17} {:>9} {:>12} {:>9} {:>11} {:>13}  × information limit (mean, worst)",
            "localizer", "detected", "mean detect", "cleared", "mean clear", "FP link-ep."
        );
        let mean = |m: Option<f64>| m.map_or("—".to_string(), |m| format!("{m:.1}"));
        for (name, x) in &r.localizers.0 {
            match &x.over_time {
                Some(t) => {
                    let ratio = match (t.mean_ratio_to_bound, t.worst_ratio_to_bound) {
                        (Some(m), Some(w)) => format!("{m:.2}×, {w:.2}×"),
                        _ => "—".to_string(),
                    };
                    let _ = writeln!(
                        s,
                        "{:<17} {:>9} {:>12} {:>9} {:>11} {:>13}  {ratio}",
                        name,
                        format!("{}/{}", t.detected, t.episodes),
                        mean(t.mean_detect),
                        format!("{}/{}", t.cleared, t.repairs),
                        mean(t.mean_clear),
                        t.false_positive_link_epochs
                    );
                }
                None => {
                    let _ = writeln!(s, "{name:<17} (runs on Canary's whole-run observations)");
                }
            }
        }
    }
    s
}
