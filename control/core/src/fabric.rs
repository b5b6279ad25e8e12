//! The `Fabric` trait: everything the controller asks of a network of monitor switches, whether
//! it is the simulator or real switches behind P4Runtime/Thrift/BFRuntime.
//!
//! The controller's epoch loop (in the `canary` crate) is written once against this trait.

use crate::capacity::Capacity;
use crate::sketch::{Dsm, Usm};
use crate::topo::SwitchIx;
use crate::FlowId;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which of the two meter instances a monitor switch counts in (Sec. III-G-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Parity {
    Even = 0,
    Odd = 1,
}

impl Parity {
    pub fn of_epoch(epoch: u64) -> Self {
        if epoch.is_multiple_of(2) {
            Parity::Even
        } else {
            Parity::Odd
        }
    }
    pub fn flip(self) -> Self {
        match self {
            Parity::Even => Parity::Odd,
            Parity::Odd => Parity::Even,
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One monitor switch's meters of one epoch, as harvested.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeterSnapshot {
    pub switch: SwitchIx,
    /// The epoch counted, and its parity (`Parity::of_epoch(epoch)`).
    pub epoch: u64,
    pub parity: Parity,
    pub usm: Usm,
    pub dsm: Dsm,
}

/// A change to a monitor switch's tables.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RuleOp {
    /// DSM table: count packets of `flow` arriving with `path_bf` (and an upstream mark).
    InstallDsm {
        switch: SwitchIx,
        flow: FlowId,
        path_bf: u32,
    },
    RemoveDsm {
        switch: SwitchIx,
        flow: FlowId,
        path_bf: u32,
    },
    /// USM table: count and mark outgoing packets of `flow`.
    InstallUsm {
        switch: SwitchIx,
        flow: FlowId,
    },
    RemoveUsm {
        switch: SwitchIx,
        flow: FlowId,
    },
    /// HH table: report flows arriving with `path_bf` that the DSM does not count and whose
    /// HashPipe count exceeds `eta`. Installing over an existing rule changes its `eta`.
    InstallHh {
        switch: SwitchIx,
        path_bf: u32,
        eta: u32,
    },
    RemoveHh {
        switch: SwitchIx,
        path_bf: u32,
    },
}

impl RuleOp {
    pub fn switch(&self) -> SwitchIx {
        match *self {
            RuleOp::InstallDsm { switch, .. }
            | RuleOp::RemoveDsm { switch, .. }
            | RuleOp::InstallUsm { switch, .. }
            | RuleOp::RemoveUsm { switch, .. }
            | RuleOp::InstallHh { switch, .. }
            | RuleOp::RemoveHh { switch, .. } => switch,
        }
    }
    /// The same change on switch `s`.
    pub fn on(mut self, s: SwitchIx) -> RuleOp {
        match &mut self {
            RuleOp::InstallDsm { switch, .. }
            | RuleOp::RemoveDsm { switch, .. }
            | RuleOp::InstallUsm { switch, .. }
            | RuleOp::RemoveUsm { switch, .. }
            | RuleOp::InstallHh { switch, .. }
            | RuleOp::RemoveHh { switch, .. } => *switch = s,
        }
        self
    }
    pub fn is_install(&self) -> bool {
        matches!(
            self,
            RuleOp::InstallDsm { .. } | RuleOp::InstallUsm { .. } | RuleOp::InstallHh { .. }
        )
    }
    /// The removal of what this op installs; a removal stays what it is.
    pub fn as_removal(&self) -> RuleOp {
        match *self {
            RuleOp::InstallUsm { switch, flow } => RuleOp::RemoveUsm { switch, flow },
            RuleOp::InstallDsm {
                switch,
                flow,
                path_bf,
            } => RuleOp::RemoveDsm {
                switch,
                flow,
                path_bf,
            },
            RuleOp::InstallHh {
                switch, path_bf, ..
            } => RuleOp::RemoveHh { switch, path_bf },
            ref removal => removal.clone(),
        }
    }
}

/// A packet the HH table reported (a P4Runtime digest on real switches).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HhReport {
    /// The downstream monitor whose HH table matched.
    pub switch: SwitchIx,
    pub flow: FlowId,
    pub path_bf: u32,
}

/// Why a switch gave no answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum SwitchError {
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The switch lost its state (rules and meters) since the last contact.
    #[error("restarted: {0}")]
    Restarted(String),
    /// Another controller is primary for this switch: this one must stand down.
    #[error("not primary: {0}")]
    NotPrimary(String),
    #[error("{0}")]
    Other(String),
}

/// The per-switch outcome of an operation on many switches.
pub type SwitchResult<T> = Result<T, SwitchError>;

/// What takes each switch's harvest as it arrives ([`Fabric::harvest_each`]).
pub type Sink<'a> = dyn FnMut(SwitchIx, SwitchResult<MeterSnapshot>) + Send + 'a;

/// What the controller needs of a fabric of monitor switches.
///
/// Time is the fabric's: the simulator advances simulated time in [`Fabric::wait`], real
/// fabrics sleep. Operations report per-switch failures instead of failing as a whole, so one
/// unreachable switch costs its own segments and nothing else.
#[allow(async_fn_in_trait)]
pub trait Fabric {
    /// Time since the fabric started.
    fn now(&self) -> Duration;
    /// Lets `d` pass (traffic keeps flowing).
    async fn wait(&mut self, d: Duration);
    /// What each switch holds (table sizes, meter shapes), from its program.
    fn capacity(&self) -> Capacity;
    /// Makes every monitor count and mark in `epoch` from now on (in its parity's meters, its
    /// buckets tagged with `model::epoch_tag(epoch)`).
    async fn set_epoch(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<()>)>;
    /// Reads every monitor's USM and DSM counts of `epoch` (finished: the monitors count in the
    /// next one), handing each switch's answer to `sink` as it comes, so a caller can reduce
    /// each to what it needs (`detect::SwitchRecords`) and drop the register image before the
    /// next arrives. Also clears HashPipe, so heavy hitters are those of the last epoch, not of
    /// all time. The meters need no clearing: epoch tags retire old counts. A fabric whose
    /// meters are read by other processes (a cluster's harvest workers, which pass the records
    /// on themselves) hands `sink` only the switches whose read failed.
    async fn harvest_each(&mut self, epoch: u64, sink: &mut Sink<'_>);
    /// [`Fabric::harvest_each`], every answer kept.
    async fn harvest(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<MeterSnapshot>)> {
        let mut out = Vec::new();
        self.harvest_each(epoch, &mut |s, r| out.push((s, r))).await;
        out
    }
    /// Reads the finished `epoch`'s meters of `switches` again, without the harvest's side
    /// effects (HashPipe, stale cells and rule IDs untouched). Packets of `epoch` that reached
    /// their DSM after the harvest are in this read, not in the harvest's. The default reads
    /// nothing: a fabric whose drain already covers every packet in flight.
    async fn reread(&mut self, _epoch: u64, _switches: &[SwitchIx], _sink: &mut Sink<'_>) {}
    /// Applies rule changes in order; returns the ones that failed.
    async fn apply(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)>;
    /// HH reports received since the last call.
    async fn take_reports(&mut self) -> Vec<HhReport>;
    /// Switches, monitors or not, that were unreachable or lost their state since the last
    /// call. Packets crossing them in that time may have been dropped by the outage itself, so
    /// the controller does not read their segments' counts as link loss.
    async fn health(&mut self) -> Vec<(SwitchIx, SwitchError)> {
        Vec::new()
    }
    /// Switches whose forwarding (routes, ECMP groups) the fabric's own control changed since
    /// the last call: flows crossing them may have moved to other segments, so their absence
    /// from a monitor they no longer reach is not loss until they are seen on their way again.
    async fn take_forwarding_changes(&mut self) -> Vec<SwitchIx> {
        Vec::new()
    }
    /// Directed links the fabric's own control has taken out of service (out of every ECMP
    /// group), now: what the report says instead of blaming them.
    fn out_of_service(&self) -> Vec<crate::topo::LinkIx> {
        Vec::new()
    }
    /// The ports of the forwarding Canary installed on the switches (routes and ECMP groups
    /// from the topology, `topo::ForwardingState`), when Canary owns the forwarding: the
    /// controller then predicts where a flow goes (`select::predict`). `None` when another
    /// controller owns it.
    fn own_forwarding(&self) -> Option<crate::topo::PortMap> {
        None
    }
    /// What an earlier controller left on the switches, found when this fabric connected: the
    /// controller resumes from it instead of starting from nothing. Taken once.
    fn take_resumed(&mut self) -> Option<Resumed> {
        None
    }
}

/// Switches an earlier controller configured, found as it left them (a controller restarted,
/// or a standby taking over).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resumed {
    /// The epoch tag (`model::epoch_tag`) each adopted monitor counts in.
    pub tags: Vec<(SwitchIx, u16)>,
    /// Every monitoring rule found on the adopted switches, as the install that made it.
    pub rules: Vec<RuleOp>,
    /// Switches found without Canary's state and configured afresh.
    pub fresh: Vec<SwitchIx>,
}
