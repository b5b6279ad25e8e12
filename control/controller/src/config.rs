//! The one configuration of a run, built from flags or from a YAML file.
//!
//! * [`Pipeline`]: flow selection, detection and localization, the same for the simulator
//!   (`canary simulate`) and real switches (`canary run`). Both take it whole.
//! * [`RunConfig`]: everything `canary run` takes, `--config FILE` or flags (which override the
//!   file); [`load`] reads and checks it before anything connects.
//!
//! Every default is defined here once ([`Pipeline::default`], [`RunConfig::default`]; the paper's
//! α, β, δ, η and the decision's background come from canary-core's parameter types, which these
//! read). The flags' defaults, the file's and the library's are those same values.

mod check;
mod load;
mod serde_str;

pub use check::{Invalid, Names};
pub use load::{load, pipeline_yaml, Loaded};

use crate::cluster::wire::Parts;
use crate::cluster::ClusterConfig;
use crate::controller::{localizer_params, ControllerConfig};
use crate::daemon::Target;
use canary_core::decide::DecisionParams;
use canary_core::localize::CanaryParams;
use canary_core::select::SelectionParams;
use canary_core::topo::MonitorPlacement;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Defaults that are not the paper's (those live in canary-core's parameter types).
pub mod defaults {
    /// Loss-rate groups (stages) of the multi-stage localization.
    pub const GROUPS: usize = 5;
    /// n: epochs aggregated per localization.
    pub const WINDOW: usize = 5;
    /// n′: epochs of the window a segment must lose packets in.
    pub const MIN_LOSSY_EPOCHS: u32 = 1;
    /// `--decision floor`: segments losing less are loss-free.
    pub const FLOOR: f64 = 0.001;
    /// `canary run`: epoch length, milliseconds.
    pub const RUN_EPOCH_MS: u64 = 1000;
    /// `canary run`: wait after a parity flip, milliseconds.
    pub const RUN_DRAIN_MS: u64 = 200;
    /// `canary run`: seconds to wait at start for switches that are not up yet.
    pub const CONNECT_TIMEOUT_S: u64 = 30;
    /// `canary run`: the harvest deadline as a share of the epoch.
    pub const HARVEST_DEADLINE_SHARE: f64 = 0.8;
}

/// How a segment is judged lossy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// A test of each segment against the background loss, accumulating evidence over epochs.
    #[default]
    Sequential,
    /// The paper's rule: loss above the floor in n′ of n epochs.
    Floor,
}

/// The pipeline's settings, the same for a simulated fabric and real switches.
#[derive(clap::Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Pipeline {
    /// α: packets to count per segment and epoch.
    #[arg(long, default_value_t = Pipeline::default().alpha)]
    pub alpha: u64,
    /// β: flows to count per segment and epoch.
    #[arg(long, default_value_t = Pipeline::default().beta)]
    pub beta: u32,
    /// δ: flows selected per HH rule.
    #[arg(long, default_value_t = Pipeline::default().delta)]
    pub delta: u32,
    /// η: HashPipe count a flow must exceed to be reported.
    #[arg(long, default_value_t = Pipeline::default().eta)]
    pub eta: u32,
    /// Loss-rate groups (stages) of the multi-stage localization.
    #[arg(long, default_value_t = defaults::GROUPS)]
    pub groups: usize,
    /// Meter placement: `bottom` or `top+bottom` (default for fat-trees; a file may set its own).
    #[arg(long)]
    #[serde(with = "serde_str::opt")]
    pub monitors: Option<MonitorPlacement>,
    /// n: epochs aggregated per localization.
    #[arg(long, default_value_t = defaults::WINDOW)]
    pub window: usize,
    /// n′: epochs of the window a segment must lose packets in to count as lossy.
    #[arg(long, default_value_t = defaults::MIN_LOSSY_EPOCHS)]
    pub min_lossy_epochs: u32,
    /// When the switches' meters cannot count β flows of every segment at once, watch the
    /// segments in rounds of this many epochs each (3 or more lets flow selection fill a round:
    /// an epoch for HH reports, then counting), localizing from each segment's latest watch.
    /// Unset: every segment every epoch.
    #[arg(long, alias = "watch-rounds", value_name = "EPOCHS")]
    pub watch_round_epochs: Option<u32>,
    /// Put every segment the localizer weighed into each epoch's JSON report (counts, and
    /// whether each was a loss, background or set aside): enough to replay the epoch's
    /// localization. About 100 bytes per observed segment and epoch.
    #[arg(long)]
    pub report_observations: bool,
    /// `sequential`: a test of each segment against the background loss, accumulating evidence
    /// over epochs, with the false-alarm rate below; `floor`: the paper's rule (loss above
    /// --floor in --min-lossy-epochs of --window epochs).
    #[arg(long, value_enum, default_value_t = Decision::default())]
    pub decision: Decision,
    /// With `--decision floor`: segments losing less than this are taken as loss-free
    /// (default 0.001).
    #[arg(long)]
    pub floor: Option<f64>,
    /// With `--decision sequential`: the most a healthy link loses, per packet (default 1e-4).
    #[arg(long)]
    pub background: Option<f64>,
    /// With `--decision sequential`: expected false alarms per epoch over the whole fabric
    /// (default 1e-6).
    #[arg(long)]
    pub false_alarms: Option<f64>,
}

impl Default for Pipeline {
    fn default() -> Self {
        let s = SelectionParams::default();
        Self {
            alpha: s.alpha,
            beta: s.beta,
            delta: s.delta,
            eta: s.eta,
            groups: defaults::GROUPS,
            monitors: None,
            window: defaults::WINDOW,
            min_lossy_epochs: defaults::MIN_LOSSY_EPOCHS,
            watch_round_epochs: None,
            report_observations: false,
            decision: Decision::default(),
            floor: None,
            background: None,
            false_alarms: None,
        }
    }
}

impl Pipeline {
    pub fn selection(&self) -> SelectionParams {
        SelectionParams {
            alpha: self.alpha,
            beta: self.beta,
            delta: self.delta,
            eta: self.eta,
            ..Default::default()
        }
    }

    /// The loss floor of `--decision floor`.
    pub fn floor(&self) -> f64 {
        self.floor.unwrap_or(defaults::FLOOR)
    }

    /// The sequential decision's parameters; `None` under `--decision floor`.
    pub fn decision_params(&self) -> Option<DecisionParams> {
        let d = DecisionParams::default();
        (self.decision == Decision::Sequential).then(|| DecisionParams {
            background: self.background.unwrap_or(d.background),
            false_alarms: self.false_alarms.unwrap_or(d.false_alarms),
        })
    }

    /// Canary's localizer parameters (`quantile`: equal-count groups instead of loss ranges).
    pub fn localizer(&self, quantile: bool) -> CanaryParams {
        localizer_params(self.groups, quantile, self.floor(), self.decision_params())
    }

    /// The controller's settings for epochs of `epoch`, harvested `drain` after each flip.
    pub fn controller_config(&self, epoch: Duration, drain: Duration) -> ControllerConfig {
        ControllerConfig {
            epoch,
            drain,
            window: self.window,
            min_lossy_epochs: self.min_lossy_epochs,
            decision: self.decision_params(),
            selection: self.selection(),
            canary: self.localizer(false),
            watch_round_epochs: self.watch_round_epochs,
            report_observations: self.report_observations,
            recheck_late: false,
        }
    }
}

/// Where the epoch's work runs when it is not all in this process.
#[derive(clap::Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Cluster {
    /// Run decoding, joins and localization on `canary worker`s through these NATS servers
    /// (with JetStream): one URL, e.g. nats://127.0.0.1:4222, or a cluster's, comma separated.
    /// Without it, everything runs here.
    #[arg(long = "cluster", id = "url", value_name = "URL[,URL...]")]
    pub url: Option<String>,
    /// The run's name on the cluster (its stream and subjects); its workers give the same.
    #[arg(long, default_value_t = Cluster::default().run, requires = "url")]
    pub run: String,
    /// Partitions of the harvest, join and localizer stages: `H,J,L`. Each partition needs one
    /// worker (`canary worker --stages ... --partition N`).
    #[arg(long, default_value = "3,2,2", value_parser = serde_str::partitions, requires = "url")]
    #[serde(with = "serde_str::parts")]
    pub partitions: Parts,
    /// NATS servers keeping a copy of the run's stream and its consumers, 1 to 5: 3 on a
    /// cluster of three servers goes on through the death of any one of them.
    #[arg(long, default_value_t = 1, requires = "url")]
    pub stream_replicas: usize,
}

impl Default for Cluster {
    fn default() -> Self {
        Self {
            url: None,
            run: "canary".into(),
            partitions: Parts {
                harvest: 3,
                join: 2,
                localize: 2,
            },
            stream_replicas: 1,
        }
    }
}

impl Cluster {
    pub fn config(&self) -> crate::Result<Option<(ClusterConfig, Parts)>> {
        match &self.url {
            None => Ok(None),
            Some(url) => Ok(Some((
                ClusterConfig::new(url, &self.run)?.with_replicas(self.stream_replicas),
                self.partitions,
            ))),
        }
    }
}

/// How the daemon writes its log lines (stderr).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One line per event, coloured only when stderr is a terminal.
    #[default]
    Text,
    /// One JSON object per line (for journald, Loki, Elasticsearch).
    Json,
}

/// Everything `canary run` takes: flags, or a YAML file (`--config`) with the same names, the
/// pipeline's under `pipeline:` and the cluster's under `cluster:` (docs/run.md).
#[derive(clap::Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    /// A YAML file with any of these settings (docs/run.md); flags given as well override it.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Print the configuration this run would use (file, flags and defaults) as YAML, and exit.
    #[arg(long)]
    #[serde(skip)]
    pub print_config: bool,
    /// `fattree:K` or a YAML topology file.
    #[arg(long)]
    pub topology: Option<String>,
    #[arg(long, value_enum, default_value_t = RunConfig::default().target)]
    pub target: Target,
    /// Where each switch answers and which port faces which neighbor (YAML).
    #[arg(long)]
    pub switches: Option<PathBuf>,
    /// BMv2: the compiled program's directory, with canary.json and canary.p4info.bin
    /// (`bmv2/build.sh DIR` writes them). Tofino: none (bf_switchd loads the program).
    #[arg(long)]
    pub p4: Option<PathBuf>,
    /// Epoch length in milliseconds.
    #[arg(long, default_value_t = defaults::RUN_EPOCH_MS)]
    pub epoch_ms: u64,
    /// Epochs to run; 0 runs until Ctrl-C or SIGTERM.
    #[arg(long, default_value_t = 0)]
    pub epochs: u32,
    /// Wait after a parity flip for packets still in flight, milliseconds. BMv2 queues
    /// packets for tens of milliseconds per hop under load; Tofino needs microseconds.
    #[arg(long, default_value_t = defaults::RUN_DRAIN_MS)]
    pub drain_ms: u64,
    /// Append one JSON line per epoch to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// At exit, write the run (as `canary simulate --json` does).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// The incidents' SQLite file (default: beside --report, `RUN.incidents.sqlite`), or
    /// `none`. A controller restarted or taking over continues its incidents.
    #[arg(long, value_name = "FILE|none")]
    pub incidents: Option<String>,
    /// Injected faults (YAML) to score the run against, e.g. on a testbed. Without it the run
    /// is not scored.
    #[arg(long)]
    pub faults: Option<String>,
    /// Links out of service in the forwarding Canary owns (YAML: the fault file's
    /// `out_of_service: true` entries), read again when it changes. Not with --role.
    #[arg(long, value_name = "FILE")]
    pub out_of_service: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Serve the live fabric page at http://ADDR/, e.g. 127.0.0.1:8080 (as `simulate --serve`;
    /// `--http` and the config key `http` are its old names, kept).
    #[arg(long, alias = "http", value_name = "ADDR")]
    #[serde(alias = "http")]
    pub serve: Option<String>,
    #[command(flatten)]
    pub pipeline: Pipeline,
    #[command(flatten)]
    pub cluster: Cluster,
    /// P4Runtime election id; the highest one connected is the primary and the only writer.
    #[arg(long, default_value_t = 1)]
    pub election_id: u64,
    /// P4Runtime role (empty: the default role). With a role, Canary attaches to switches whose
    /// pipeline and forwarding another controller owns, and writes only its own tables.
    #[arg(long, default_value = "")]
    pub role: String,
    /// A switch whose harvest takes longer is skipped for the epoch (default: 80% of the epoch).
    #[arg(long)]
    pub harvest_deadline_ms: Option<u64>,
    /// Seconds to wait at start for switches that are not up yet.
    #[arg(long, default_value_t = defaults::CONNECT_TIMEOUT_S)]
    pub connect_timeout_s: u64,
    /// Configure every switch afresh, wiping what an earlier controller left (by default a
    /// switch still holding it is adopted: meters, rules and monitored flows kept).
    #[arg(long)]
    pub fresh: bool,
    /// Tofino: the program's name as bf_switchd loaded it.
    #[arg(long, default_value_t = RunConfig::default().p4_name)]
    pub p4_name: String,
    /// Tofino: this controller's BF Runtime client id.
    #[arg(long, default_value_t = 1)]
    pub client_id: u32,
    /// Log lines on stderr: `text` or `json` (the level: RUST_LOG, default info).
    #[arg(long, value_enum, default_value_t = LogFormat::default())]
    pub log_format: LogFormat,
    /// Print only the summary.
    #[arg(long, short)]
    pub quiet: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            config: None,
            print_config: false,
            topology: None,
            target: Target::Bmv2,
            switches: None,
            p4: None,
            epoch_ms: defaults::RUN_EPOCH_MS,
            epochs: 0,
            drain_ms: defaults::RUN_DRAIN_MS,
            report: None,
            json: None,
            incidents: None,
            faults: None,
            out_of_service: None,
            metrics: None,
            serve: None,
            pipeline: Pipeline::default(),
            cluster: Cluster::default(),
            election_id: 1,
            role: String::new(),
            harvest_deadline_ms: None,
            connect_timeout_s: defaults::CONNECT_TIMEOUT_S,
            fresh: false,
            p4_name: "canary".into(),
            client_id: 1,
            log_format: LogFormat::default(),
            quiet: false,
        }
    }
}

impl RunConfig {
    pub fn epoch(&self) -> Duration {
        Duration::from_millis(self.epoch_ms)
    }

    /// The harvest deadline: the one given, or a share of the epoch.
    pub fn harvest_deadline(&self) -> Duration {
        self.harvest_deadline_ms
            .map(Duration::from_millis)
            .unwrap_or(self.epoch().mul_f64(defaults::HARVEST_DEADLINE_SHARE))
    }

    /// The configuration as YAML (`canary run --print-config`).
    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(self).expect("a configuration serializes")
    }
}
