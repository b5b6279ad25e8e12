//! The lab's one error type: every variant names the option, file, topology or run it is about.
//!
//! A variant either shows its cause in its message or chains it as [`std::error::Error::source`],
//! never both, so the `canary` command's report (its `Caused by:` list) prints every cause once,
//! as it did when the lab used `anyhow` contexts. canary-controller's setup and simulation errors
//! arrive whole, as [`Error::Controller`].

use crate::overhead::traffic::PcapError;
use canary_core::localize::flock_trace::TraceError;
use canary_core::sketch::{DecodeError, SketchConfigError};
use canary_core::topo::yaml::TopologyFileError;
use canary_core::topo::TopologyError;
use std::path::PathBuf;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A command-line value the lab cannot use; `arg` is the option as given (`--seeds 5..2`).
    #[error("{arg}: {message}")]
    Arg { arg: String, message: String },

    /// canary-controller could not load or prepare the topology or the faults, or its packet
    /// simulation failed.
    #[error(transparent)]
    Controller(#[from] canary_controller::Error),
    /// The harness and the Canary run of one seed drew different faults (a bug: both draw from
    /// the seed the same way).
    #[error("internal: seed {seed}: the Canary run drew other faults than the harness")]
    FaultsDiffer { seed: u64 },

    #[error("cannot read {what} {}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {what} {}", path.display())]
    Write {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot encode {}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },

    /// A Flock trace that does not parse.
    #[error("{file}: {error}")]
    Trace { file: String, error: TraceError },
    /// A flow of a Flock trace that does not fit the topology; `line` is its `FPT` record's.
    #[error("{file}: line {line}: {message}")]
    TraceFlow {
        file: String,
        line: usize,
        message: String,
    },
    /// A packet capture that is not a classic pcap file.
    #[error("{}: {error}", path.display())]
    Pcap { path: PathBuf, error: PcapError },
    #[error("{}: no IP packets", path.display())]
    NoPackets { path: PathBuf },

    /// The built-in two-switch topology (`topologies/line2.yaml`).
    #[error(transparent)]
    TopologyFile(#[from] TopologyFileError),
    #[error("topologies/line2.yaml has no {0}")]
    Line2(&'static str),
    #[error("fattree:{k}")]
    FatTree { k: u32, source: TopologyError },
    #[error("{topology}: no segments between monitors")]
    NoSegments { topology: String },
    #[error("{topology}: the synthesized round counted no segment")]
    NothingCounted { topology: String },
    /// Meters that cannot hold a synthesized epoch; `meters` says which.
    #[error("{topology}: {meters}")]
    Meters {
        topology: String,
        meters: &'static str,
        source: SketchConfigError,
    },

    /// Fig. 11's meters at one DSM width.
    #[error("DSM width {width}")]
    DsmWidth {
        width: usize,
        source: SketchConfigError,
    },
    /// Fig. 6's LossRadar meters at the width found could not be subtracted.
    #[error("LossRadar at width {width}")]
    LossRadar { width: usize, source: DecodeError },
    /// Fig. 6's LossRadar meters, encoded packet by packet, differ from the lost-packet shortcut
    /// its search used.
    #[error(
        "LossRadar at width {width}: the two-switch meters disagree with the lost-packet shortcut"
    )]
    LossRadarShortcut { width: usize },

    #[error("cannot draw {}: {message}", path.display())]
    Draw { path: PathBuf, message: String },

    /// `canary traffic`'s sockets; `what` is what it was doing.
    #[error("{what}")]
    Socket {
        what: String,
        source: std::io::Error,
    },
    #[error("cannot watch for SIGTERM and SIGINT")]
    Signals(#[source] std::io::Error),
}

impl Error {
    /// `--arg`'s value cannot be used.
    pub(crate) fn arg(arg: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Arg {
            arg: arg.into(),
            message: message.into(),
        }
    }
}
