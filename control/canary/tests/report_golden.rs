//! Golden tests of what an operator reads: the epoch report as `canary run` and `canary simulate`
//! print it, and the JSON line `--report` appends for it.
//!
//! Each file in `testdata/report/` holds an epoch report (JSON; `#` lines are comments), a
//! `----` line, the rendered table, another `----` line, and the JSON line. A change to either
//! format fails here with the lines that differ. After an intended change, rewrite the expected
//! parts with `CANARY_REWRITE_GOLDEN=1 cargo test -p canary --test report_golden` and review the
//! diff of `testdata/`.

use canary_controller::report::{cables, render_epoch, EpochReport};
use canary_core::topo::fattree::fattree;
use canary_core::topo::{MonitorPlacement, PortMap};
use canary_testkit::golden;
use std::path::Path;

#[test]
fn epoch_reports_render_as_the_golden_files_say() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/report");
    golden(&dir, 1, |path, input| {
        let json: String = input
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        let mut report: EpochReport = serde_json::from_str(&json).unwrap_or_else(|e| {
            panic!("{}: the input is not an epoch report: {e}", path.display())
        });
        // The cables to look at, as the controller makes them from the blamed links: on the k=4
        // fat-tree with the simulator's ports.
        if report.cables.is_empty() {
            let k4 = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
            report.cables = cables(&k4, &PortMap::canonical(&k4), &report.blamed);
        }
        format!(
            "{}----\n{}\n",
            render_epoch(&report, 8),
            serde_json::to_string(&report).unwrap()
        )
    });
}
