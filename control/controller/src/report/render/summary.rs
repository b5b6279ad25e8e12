//! The terminal view of a run's summary: accuracy, misses and false positives, and each
//! fault over time.

use crate::report::{OverTimeReport, Summary};
use std::fmt::Write;

/// Each fault episode's time to detect and to clear, and the false positives over time.
fn render_over_time(s: &mut String, o: &OverTimeReport) {
    let _ = writeln!(
        s,
        "over time: link-epochs precision {:.3} recall {:.3} F1 {:.3}; {} false-positive link-epochs",
        o.link_epochs.precision, o.link_epochs.recall, o.link_epochs.f1, o.false_positive_link_epochs
    );
    let epoch = |x: Option<u64>, from: Option<u64>| match (x, from) {
        (Some(x), Some(f)) => format!("{x} (+{})", x - f),
        _ => "never".to_string(),
    };
    for f in &o.faults {
        let dev = f
            .device
            .as_ref()
            .map(|d| format!(" [device {d}]"))
            .unwrap_or_default();
        let repair = match f.repair {
            Some(r) => format!(", repaired {r}, all-clear {}", epoch(f.cleared, Some(r))),
            None => String::new(),
        };
        let bound = match (f.bound, f.ratio_to_bound()) {
            (Some(b), Some(r)) => format!(", bound {b} ({r:.2}×)"),
            (Some(b), None) => format!(", bound {b}"),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "  {}→{}{dev} loss {:.4} from {}: detected {}{bound}{repair}",
            f.link[0],
            f.link[1],
            f.loss,
            f.onset,
            epoch(f.detected, Some(f.onset))
        );
    }
}

pub fn render_summary(sum: &Summary, faults: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "── summary over {} epochs ──", sum.epochs);
    let _ = writeln!(
        s,
        "faulty directed links: {faults}   blamed: {}   TP {}  FP {}  FN {}",
        sum.blamed.len(),
        sum.tp,
        sum.fp,
        sum.fn_
    );
    let _ = writeln!(
        s,
        "precision {:.3}   recall {:.3}   F1 {:.3}   accuracy {:.4}",
        sum.precision, sum.recall, sum.f1, sum.accuracy
    );
    if sum.stages.len() > 1 {
        let f1s: Vec<String> = sum.stages.iter().map(|x| format!("{:.3}", x.f1)).collect();
        let _ = writeln!(s, "F1 after each stage: {}", f1s.join("  "));
    }
    for m in &sum.missed {
        let _ = writeln!(
            s,
            "  missed          {}→{}  (injected loss {:.4})",
            m.link[0], m.link[1], m.loss
        );
    }
    for m in &sum.false_positives {
        let _ = writeln!(
            s,
            "  false positive  {}→{}  (estimated loss {:.4})",
            m.link[0], m.link[1], m.loss
        );
    }
    if !sum.over_time.faults.is_empty() || sum.over_time.false_positive_link_epochs > 0 {
        render_over_time(&mut s, &sum.over_time);
    }
    s
}
