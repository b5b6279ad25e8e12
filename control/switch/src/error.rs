//! The crate's one error type: every failure canary-switch reports, each a variant.
//!
//! Functions return the narrow error of their module (a P4Info that does not match is a
//! [`ContractError`], a refused Thrift call a [`ThriftError`]), so a signature says which
//! failures it has; [`Error`] gathers them for callers that handle them together, and `?` lifts
//! any of them into it. Each narrow error already names its switch, table, register, file or
//! field.

use crate::bmv2_thrift::ThriftError;
use crate::contract::ContractError;
use crate::driver::DriverError;
use crate::fabric::ConnectError;
use crate::meters::HarvestError;
use crate::p4info::P4InfoError;
use crate::p4rt::P4RtError;
use crate::switches::SwitchesError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Switches(#[from] SwitchesError),
    #[error(transparent)]
    P4Info(#[from] P4InfoError),
    #[error(transparent)]
    Contract(#[from] ContractError),
    #[error(transparent)]
    Driver(#[from] DriverError),
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error(transparent)]
    Harvest(#[from] HarvestError),
    #[error(transparent)]
    P4Rt(#[from] P4RtError),
    #[error(transparent)]
    Thrift(#[from] ThriftError),
    #[error(transparent)]
    Core(#[from] canary_core::Error),
}

pub type Result<T> = std::result::Result<T, Error>;
