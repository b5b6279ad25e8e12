//! The crate's one error type: every failure canary-core reports, each a variant.
//!
//! Functions return the narrow error of their module (a topology file's parse can only fail as
//! a [`TopologyFileError`]), so a signature says which failures it has; [`Error`] gathers them
//! for callers that handle canary-core's failures together, and `?` lifts any of them into it.
//! Each narrow error already names its file, line, field, switch or parameter.

use crate::capacity::CapacityError;
use crate::fabric::SwitchError;
use crate::fault::FaultFileError;
use crate::localize::flock_trace::TraceError;
use crate::model::RuleError;
use crate::pathbf::PathBfParamsError;
use crate::sketch::error::{DecodeError, SketchConfigError};
use crate::topo::yaml::TopologyFileError;
use crate::topo::TopologyError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    TopologyFile(#[from] TopologyFileError),
    #[error(transparent)]
    FaultFile(#[from] FaultFileError),
    #[error(transparent)]
    PathBfParams(#[from] PathBfParamsError),
    #[error(transparent)]
    SketchConfig(#[from] SketchConfigError),
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error(transparent)]
    Capacity(#[from] CapacityError),
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error(transparent)]
    Switch(#[from] SwitchError),
    #[error(transparent)]
    Trace(#[from] TraceError),
}

pub type Result<T> = std::result::Result<T, Error>;
