//! The controller's one error type: each error names what it is about, the flag, the file or
//! the switches, so an operator can act on the message alone.

use crate::cluster::ClusterError;
use canary_core::fault::FaultFileError;
use canary_core::pathbf::PathBfParamsError;
use canary_core::topo::yaml::TopologyFileError;
use std::fmt::Display;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag's value or a file's content that cannot be used, and what is wrong with it.
    #[error("{what}: {why}")]
    Given { what: String, why: String },
    /// A file, directory or socket that cannot be read, written or bound.
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    #[error(transparent)]
    TopologyFile(#[from] TopologyFileError),
    #[error(transparent)]
    FaultFile(#[from] FaultFileError),
    #[error("--pathbf: {0}")]
    PathBf(#[from] PathBfParamsError),
    /// What the switches refused: their file, program, connection or tables (boxed: the
    /// switch errors are large and every `Result` here would carry their size).
    #[error(transparent)]
    Switch(Box<canary_switch::Error>),
    /// The program the first Tofino switch runs could not be read before patience ran out.
    #[error("cannot read the program from {switch}: {error}")]
    ProgramUnreadable {
        switch: String,
        error: Box<canary_switch::Error>,
    },
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Incidents(#[from] crate::incidents::IncidentsError),
    /// Another controller became primary for the switches.
    #[error("{0}")]
    Demoted(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// `what` (a flag with its value, a file, a field) cannot be used because of `why`.
    pub fn given(what: impl Display, why: impl Display) -> Self {
        Error::Given {
            what: what.to_string(),
            why: why.to_string(),
        }
    }

    /// `what` failed on the operating system's side.
    pub fn io(what: impl Display, error: std::io::Error) -> Self {
        Error::Io {
            what: what.to_string(),
            error,
        }
    }

    /// A switch-side failure of any of canary-switch's narrow error types.
    pub fn switches(e: impl Into<canary_switch::Error>) -> Self {
        Error::Switch(Box::new(e.into()))
    }
}
