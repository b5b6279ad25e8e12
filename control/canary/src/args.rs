//! Arguments `simulate` and `run` share: how a segment is judged lossy, and shares.

use anyhow::Result;
use canary_core::decide::DecisionParams;
use clap::Args;

/// How a segment is judged lossy, for `simulate` and `run`.
#[derive(Args, Clone, Debug)]
pub struct DecisionArgs {
    /// `sequential`: a test of each segment against the background loss, accumulating evidence
    /// over epochs, with the false-alarm rate below; `floor`: the paper's rule (loss above
    /// --floor in --min-lossy-epochs of --window epochs).
    #[arg(long, default_value = "sequential", value_parser = ["sequential", "floor"])]
    decision: String,
    /// Sequential: the most a healthy link loses, per packet.
    #[arg(long, default_value_t = DecisionParams::default().background)]
    background: f64,
    /// Sequential: expected false alarms per epoch over the whole fabric.
    #[arg(long, default_value_t = DecisionParams::default().false_alarms)]
    false_alarms: f64,
}

impl DecisionArgs {
    pub fn params(&self) -> Result<Option<DecisionParams>> {
        if self.decision == "floor" {
            return Ok(None);
        }
        let p = DecisionParams {
            background: self.background,
            false_alarms: self.false_alarms,
        };
        p.validate()
            .map_err(|e| anyhow::anyhow!("--{}", e.replacen('_', "-", 1)))?;
        Ok(Some(p))
    }
}

/// A share between 0 and 1 (`--ipv6`).
pub fn share(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("`{s}` is not between 0 and 1"))
    }
}
