//! The switch-driver interface: what the generic fabric ([`crate::fabric`]) needs of one switch,
//! whatever its target. A driver carries requests to its switch and answers back; everything
//! that is not target-specific (per-switch state, reconnect and re-push, rule waves, late and
//! torn harvests, rule IDs, decoding) is the fabric's, written once.
//!
//! Implemented by BMv2 (P4Runtime + Thrift, [`crate::drivers::bmv2`]), Tofino (BF Runtime,
//! [`crate::drivers::tofino`]) and the chaos driver (`canary_doubles::chaos`: the reference
//! model of a switch with injected faults).

use crate::contract::Program;
use crate::entries::{McGroup, ReadRule, Write};
use crate::meters::{Cell, MeterCells};
use canary_core::FlowId;

/// What a switch was found holding when the driver connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// Canary's pipeline, as this controller left it: tables and registers kept.
    Kept,
    /// No pipeline, another one, or one that lost its state (a restart): it must be configured.
    Fresh,
}

/// Why a driver could not do what it was asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    /// The switch did not answer, or the connection broke.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The switch answered and refused.
    #[error("refused: {0}")]
    Refused(String),
    /// The switch runs a program Canary's contract does not fit.
    #[error("program: {0}")]
    Program(String),
    /// Another controller is primary for our role.
    #[error("not primary: {0}")]
    NotPrimary(String),
}

/// What a switch holds of Canary's, read back by a controller that attaches to a switch an
/// earlier controller configured (a restart, or a standby taking over).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Installed {
    /// The `usm_table`, `dsm_table` and `hh_table` entries.
    pub rules: Vec<ReadRule>,
    /// `switch_config`'s action arguments, in the order [`crate::entries::config`] writes them.
    pub config: Vec<u128>,
}

/// HH digests received since the last call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Digests {
    /// (flow, incoming pathBF).
    pub reports: Vec<(FlowId, u32)>,
    /// Digests dropped before they were taken (queue full, over the rate limit), so far.
    pub dropped_total: u64,
    /// Digests that did not decode.
    pub bad: Vec<String>,
}

/// One switch, as the generic fabric drives it. Calls are made one at a time per switch.
#[allow(async_fn_in_trait)]
pub trait SwitchDriver {
    /// The switch's name, for errors and logs.
    fn name(&self) -> &str;

    /// Connects (and arbitrates), resolving the contract against the switch's program where
    /// the switch tells it. Says whether the switch kept Canary's state.
    async fn connect(&mut self) -> Result<Attach, DriverError>;

    /// Whether the connection is still up; `false` after a broken stream (the switch may have
    /// restarted: the fabric reconnects and asks again).
    fn connected(&self) -> bool;

    /// Makes the switch run Canary's pipeline (BMv2: push it; Tofino: bind to the program
    /// bf_switchd loaded, which must be Canary's). After it, the switch holds no entries.
    async fn load_pipeline(&mut self) -> Result<(), DriverError>;

    /// The program as resolved for this switch (after `connect` or `load_pipeline`).
    fn program(&self) -> Option<&Program>;

    /// Writes `writes` in order; returns the ones that failed, by index (empty: all done).
    async fn write(&mut self, writes: &[Write]) -> Vec<(usize, DriverError)>;

    /// Creates (or replaces) multicast groups.
    async fn write_groups(&mut self, groups: &[McGroup]) -> Result<(), DriverError>;

    /// Every cell of every meter register, one [`MeterCells`] per pipe.
    async fn read_meters(&mut self) -> Result<Vec<MeterCells>, DriverError>;

    /// The meter cells `cells` (both registers of each, ID register first), one [`MeterCells`]
    /// per pipe shaped as [`SwitchDriver::read_meters`]'s, every cell not asked for zero (an
    /// empty bucket). A driver that cannot read single cells reads them all.
    async fn read_meter_cells(&mut self, cells: &[Cell]) -> Result<Vec<MeterCells>, DriverError> {
        let _ = cells;
        self.read_meters().await
    }

    /// Zeroes these meter cells (both registers of each), in every pipe.
    async fn clear_cells(&mut self, cells: &[Cell]) -> Result<(), DriverError>;

    /// Zeroes HashPipe's registers.
    async fn clear_hashpipe(&mut self) -> Result<(), DriverError>;

    /// HH digests received since the last call.
    fn take_digests(&mut self) -> Digests;

    /// Whether the switch still runs the pipeline it ran at `connect`. Only a driver attached to
    /// a pipeline another controller owns needs to ask (that controller may push a new one,
    /// which wipes Canary's rules and meters without breaking Canary's connection); a driver
    /// that pushes the pipeline itself learns of a restart when its stream breaks.
    async fn pipeline_unchanged(&mut self) -> Result<bool, DriverError> {
        Ok(true)
    }

    /// Reads back Canary's rules and configuration, for a controller that attaches to what an
    /// earlier one left. A driver that cannot read tables back says so; the fabric then
    /// configures the switch afresh.
    async fn read_installed(&mut self) -> Result<Installed, DriverError> {
        Err(DriverError::Refused(format!(
            "{}: this driver cannot read Canary's rules back",
            self.name()
        )))
    }
}

/// A switch with P4Runtime-style arbitration, which a standby can ask who is primary.
#[allow(async_fn_in_trait)]
pub trait Arbitrated {
    /// The live primary's election id, asked without taking the switch from anyone (the
    /// standby's probe); `None`: no controller is primary.
    async fn probe_primary(&self) -> Result<Option<u128>, DriverError>;
}
