//! Arguments `simulate` and `run` share: flow selection, detection and localization.

use anyhow::Result;
use canary_controller::cluster::wire::Parts;
use canary_controller::cluster::ClusterConfig;
use canary_core::decide::DecisionParams;
use canary_core::select::SelectionParams;
use canary_core::topo::MonitorPlacement;
use clap::Args;

/// The pipeline's settings, the same for a simulated fabric and real switches.
#[derive(Args, Clone, Debug)]
pub struct PipelineArgs {
    /// α: packets to count per segment and epoch.
    #[arg(long, default_value_t = 1000)]
    pub alpha: u64,
    /// β: flows to count per segment and epoch.
    #[arg(long, default_value_t = 20)]
    pub beta: u32,
    /// δ: flows selected per HH rule.
    #[arg(long, default_value_t = 20)]
    pub delta: u32,
    /// η: HashPipe count a flow must exceed to be reported.
    #[arg(long, default_value_t = 16)]
    pub eta: u32,
    /// Loss-rate groups (stages) of the multi-stage localization.
    #[arg(long, default_value_t = 5)]
    pub groups: usize,
    /// With `--decision floor`: segments losing less than this are taken as loss-free.
    #[arg(long, default_value_t = 0.001)]
    pub floor: f64,
    /// Meter placement: `bottom` or `top+bottom` (default for fat-trees; a file may set its own).
    #[arg(long)]
    pub monitors: Option<MonitorPlacement>,
    /// n: epochs aggregated per localization.
    #[arg(long, default_value_t = 5)]
    pub window: usize,
    /// n′: epochs of the window a segment must lose packets in to count as lossy.
    #[arg(long, default_value_t = 1)]
    pub min_lossy_epochs: u32,
    /// When the switches' meters cannot count β flows of every segment at once, watch the
    /// segments in rounds of this many epochs (3 or more lets flow selection fill a round:
    /// an epoch for HH reports, then counting), localizing from each segment's latest watch.
    /// Unset: every segment every epoch.
    #[arg(long, value_name = "EPOCHS", value_parser = clap::value_parser!(u32).range(1..))]
    pub watch_rounds: Option<u32>,
    /// Put every segment the localizer weighed into each epoch's JSON report (counts, and
    /// whether each was a loss, background or set aside): enough to replay the epoch's
    /// localization. About 100 bytes per observed segment and epoch.
    #[arg(long)]
    pub report_observations: bool,
    #[command(flatten)]
    pub decision: DecisionArgs,
}

impl PipelineArgs {
    pub fn selection(&self) -> SelectionParams {
        SelectionParams {
            alpha: self.alpha,
            beta: self.beta,
            delta: self.delta,
            eta: self.eta,
            ..Default::default()
        }
    }
}

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

/// Where the epoch's work runs when it is not all in this process.
#[derive(Args, Clone, Debug)]
pub struct ClusterArgs {
    /// Run decoding, joins and localization on `canary worker`s through this NATS server
    /// (with JetStream), e.g. nats://127.0.0.1:4222. Without it, everything runs here.
    #[arg(long)]
    pub cluster: Option<String>,
    /// The run's name on the cluster (its stream and subjects); its workers give the same.
    #[arg(long, default_value = "canary", requires = "cluster")]
    pub run: String,
    /// Partitions of the harvest, join and localizer stages: `H,J,L`. Each partition needs one
    /// worker (`canary worker --role ... --partition N`).
    #[arg(long, default_value = "3,2,2", value_parser = partitions, requires = "cluster")]
    pub partitions: Parts,
}

impl ClusterArgs {
    pub fn config(&self) -> Result<Option<(ClusterConfig, Parts)>> {
        match &self.cluster {
            None => Ok(None),
            Some(url) => Ok(Some((ClusterConfig::new(url, &self.run)?, self.partitions))),
        }
    }
}

fn partitions(s: &str) -> std::result::Result<Parts, String> {
    let n: Vec<u32> = s
        .split(',')
        .map(|x| x.trim().parse::<u32>().map_err(|e| format!("{x:?}: {e}")))
        .collect::<std::result::Result<_, _>>()?;
    match n[..] {
        [harvest, join, localize] if harvest > 0 && join > 0 && localize > 0 => Ok(Parts {
            harvest,
            join,
            localize,
        }),
        _ => Err(format!(
            "{s:?}: three partition counts H,J,L, each at least 1"
        )),
    }
}
