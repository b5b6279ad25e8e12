//! `canary run`: the controller of real switches, from flags or a configuration file.
//!
//! Exit status: 0 when the run ended after at least one epoch (its `--epochs`, or Ctrl-C /
//! SIGTERM); 1 on an error (a bad setting, a switch never reached, a file not written); 2 on a
//! malformed command line; 3 when stopped before its first epoch (nothing was measured).

use anyhow::Result;
use canary_controller::config::{self, RunConfig};
use canary_controller::daemon::{self, RunOptions};
use canary_controller::report::render_summary;
use canary_controller::run_document::RunDocument;
use std::fmt::Write;

/// A run stopped before it reported an epoch: exit status 3.
#[derive(Debug)]
pub struct NoEpoch;

impl std::fmt::Display for NoEpoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped before the first epoch: nothing was measured")
    }
}

impl std::error::Error for NoEpoch {}

/// The configuration of a run: `--config`'s file with the flags `given` (their keys) over it,
/// checked. `--print-config` prints it.
pub fn load(flags: RunConfig, given: &[String]) -> Result<config::Loaded> {
    Ok(config::load(flags, given)?)
}

pub fn command(loaded: config::Loaded) -> Result<()> {
    let c = &loaded.config;
    if c.print_config {
        print!("{}", c.to_yaml());
        return Ok(());
    }
    let opts = RunOptions::of(c)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let scored = opts.faults.is_some();
    let result = rt.block_on(daemon::run(opts, daemon::shutdown_signal(), |_| {}))?;
    if result.epochs.is_empty() {
        return Err(NoEpoch.into());
    }
    if scored {
        print!("{}", render_summary(&result.summary, result.faults.len()));
    } else {
        print!("{}", unscored_summary(&result));
    }
    Ok(())
}

/// The summary of a run without a truth to score it against: what was blamed, no score.
fn unscored_summary(r: &RunDocument) -> String {
    let sum = &r.summary;
    let mut s = String::new();
    let _ = writeln!(s, "── summary over {} epochs ──", sum.epochs);
    let _ = writeln!(
        s,
        "blamed: {}   (no --faults file: the run is not scored)",
        sum.blamed.len()
    );
    for b in &sum.blamed {
        let _ = writeln!(
            s,
            "  blamed  {}→{}  (estimated loss {:.4})",
            b.link[0], b.link[1], b.loss
        );
    }
    s
}
