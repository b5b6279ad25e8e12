//! Golden tests of what an operator reads: the epoch report as `canary run` and `canary simulate`
//! print it, and the JSON line `--report` appends for it.
//!
//! Each file in `testdata/report/` holds an epoch report (JSON; `#` lines are comments), a
//! `----` line, the rendered table, another `----` line, and the JSON line. A change to either
//! format fails here with the lines that differ. After an intended change, rewrite the expected
//! parts with `CANARY_REWRITE_GOLDEN=1 cargo test -p canary --test report_golden` and review the
//! diff of `testdata/`.

use canary_controller::report::{render_epoch, EpochReport};
use std::path::{Path, PathBuf};

const SEPARATOR: &str = "----\n";

fn files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/report");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    v.sort();
    v
}

/// The lines of `want` and `got` that differ, marked `-` and `+`, with their line numbers.
fn diff(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let mut out = String::new();
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i), g.get(i));
        if a != b {
            if let Some(a) = a {
                out.push_str(&format!("{:4} - {a}\n", i + 1));
            }
            if let Some(b) = b {
                out.push_str(&format!("{:4} + {b}\n", i + 1));
            }
        }
    }
    out
}

#[test]
fn epoch_reports_render_as_the_golden_files_say() {
    let rewrite = std::env::var_os("CANARY_REWRITE_GOLDEN").is_some();
    let files = files();
    assert!(!files.is_empty(), "no golden files");
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let (input, expected) = text
            .split_once(&format!("\n{SEPARATOR}"))
            .unwrap_or_else(|| panic!("{}: no `----` line after the input", path.display()));
        let json: String = input
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        let report: EpochReport = serde_json::from_str(&json).unwrap_or_else(|e| {
            panic!("{}: the input is not an epoch report: {e}", path.display())
        });
        let got = format!(
            "{}{SEPARATOR}{}\n",
            render_epoch(&report, 8),
            serde_json::to_string(&report).unwrap()
        );
        if rewrite {
            std::fs::write(path, format!("{input}\n{SEPARATOR}{got}")).unwrap();
        } else if got != expected {
            failures.push(format!(
                "{} (expected -, got +):\n{}",
                path.display(),
                diff(expected, &got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "the report format changed; if intended, run with CANARY_REWRITE_GOLDEN=1 and review \
         testdata/:\n{}",
        failures.join("\n")
    );
}
