//! The generic [`Fabric`] over real switches: everything the controller needs of a fabric that
//! is not target-specific, written once over any [`SwitchDriver`].
//!
//! * Per switch: what it should hold (forwarding, configuration, the Canary rules the controller
//!   asked for, with their rule IDs) and whether it holds it.
//! * Reconnect and re-push: a switch that comes back without Canary's state (restarted, another
//!   pipeline) gets pipeline, forwarding, configuration and rules again before it is used, and
//!   the controller hears that it restarted, so its segments sit the epoch out.
//! * Rule waves: switches are written in parallel, so order across them is kept by waves: USM
//!   removals, then DSM and HH rules, then USM installs (a USM rule counting and marking before
//!   its DSM rule exists downstream would read as loss).
//! * Harvest: every monitor in parallel under a deadline; a late or failed harvest costs that
//!   switch's segments for the epoch and nothing else. Meters are tagged with their epoch, so a
//!   harvest only reads: no clearing races the next epoch, and a late harvest leaves nothing to
//!   repair.
//! * Digests: drained from every driver, dropped ones counted.
//!
//! One switch that does not answer costs its own segments and nothing else.

mod clock;
mod connect;
mod flip;
mod harvest;
mod maintenance;
mod reconcile;
mod remote;
mod slot;
mod waves;

pub use clock::{Clock, WallClock};
pub use connect::ConnectError;
pub use harvest::read_harvest;
use maintenance::Maintenance;
pub use maintenance::OutOfServiceError;
pub use remote::{ReadOrder, ReadOutcome, RemoteReads};
use slot::{Rules, Slot};

use crate::driver::SwitchDriver;
use crate::entries;
use crate::rule_ids::RuleIds;
use canary_core::capacity::Capacity;
use canary_core::fabric::{Fabric, HhReport, Resumed, RuleOp, Sink, SwitchError, SwitchResult};
use canary_core::topo::{FloodTree, ForwardingState, PortMap, Routing, SwitchIx, Topology};
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct FabricOptions {
    /// A switch whose harvest takes longer is left out of that epoch.
    pub harvest_deadline: Duration,
    /// Attach to switches that already run Canary's program and leave the pipeline and
    /// forwarding to the controller that owns them (P4Runtime roles): Canary writes only its
    /// configuration and rules.
    pub attach_only: bool,
    /// At connect, a switch that still holds what an earlier Canary controller configured is
    /// adopted as it is (its rules read back) instead of configured afresh, which would wipe
    /// its meters and monitored flows.
    pub adopt: bool,
}

impl Default for FabricOptions {
    fn default() -> Self {
        Self {
            harvest_deadline: Duration::from_millis(500),
            attach_only: false,
            adopt: true,
        }
    }
}

/// What the fabric has seen, for metrics and reports.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FabricCounters {
    /// Switches found without Canary's state and configured again.
    pub repushes: u64,
    pub harvest_errors: u64,
    pub harvests_late: u64,
    /// Meter cells zeroed because their tag was about to wrap.
    pub stale_cells_cleared: u64,
    pub digests: u64,
    pub digests_dropped: u64,
    pub digest_decode_errors: u64,
    pub write_errors: u64,
}

/// The generic fabric over drivers of type `D`, on clock `C`.
pub struct SwitchFabric<D, C = WallClock> {
    slots: Vec<Slot<D>>,
    opts: FabricOptions,
    clock: C,
    epoch: u64,
    capacity: Capacity,
    events: Vec<(SwitchIx, SwitchError)>,
    /// What connect found left by an earlier controller (taken by the controller).
    resumed: Option<Resumed>,
    /// Another controller became primary for a switch: the first such answer.
    demoted: Option<String>,
    /// The switch standbys ask who is primary ([`SwitchFabric::set_lease`]).
    lease: Option<SwitchIx>,
    /// The switches' ports, as the forwarding Canary installs is laid out on them.
    ports: PortMap,
    /// Links out of service in the forwarding Canary installs, and the switches it moved.
    maintenance: Maintenance,
    /// Who reads the monitors' meters when this process does not ([`RemoteReads`]).
    remote: Option<Box<dyn RemoteReads>>,
    pub counters: FabricCounters,
}

impl<D: SwitchDriver> SwitchFabric<D, WallClock> {
    /// The switches' ports the fabric was built with.
    pub fn ports(&self) -> &PortMap {
        &self.ports
    }

    /// One driver per switch of `topo`, in topology order; `ports` are the switches' ports,
    /// `masks` their pathBF masks. Nothing is contacted until [`SwitchFabric::connect`].
    pub fn new(
        topo: &Topology,
        ports: &PortMap,
        masks: &[u32],
        drivers: Vec<D>,
        capacity: Capacity,
        opts: FabricOptions,
    ) -> Self {
        assert_eq!(drivers.len(), topo.switches.len(), "one driver per switch");
        let routing = Routing::new(topo);
        let tree = FloodTree::new(topo);
        let states = ForwardingState::all(topo, &routing, &tree, ports);
        let slots = drivers
            .into_iter()
            .enumerate()
            .map(|(i, driver)| {
                let s = i as SwitchIx;
                let state = &states[i];
                Slot {
                    driver,
                    ix: s,
                    monitor: topo.switches[i].monitor,
                    mask: masks[i],
                    forwarding: entries::forwarding(state, masks[i]),
                    rules: Rules::default(),
                    ids: RuleIds::default(),
                    configured: false,
                    up: false,
                    tags: Default::default(),
                    dropped_seen: 0,
                    forwarding_unsure: false,
                    rules_unsure: false,
                }
            })
            .collect();
        Self {
            slots,
            opts,
            clock: WallClock::default(),
            epoch: 0,
            capacity,
            events: Vec::new(),
            resumed: None,
            demoted: None,
            lease: None,
            ports: ports.clone(),
            maintenance: Maintenance::new(topo),
            remote: None,
            counters: FabricCounters::default(),
        }
    }

    /// The same fabric on another clock.
    pub fn with_clock<C: Clock>(self, clock: C) -> SwitchFabric<D, C> {
        SwitchFabric {
            slots: self.slots,
            opts: self.opts,
            clock,
            epoch: self.epoch,
            capacity: self.capacity,
            events: self.events,
            resumed: self.resumed,
            demoted: self.demoted,
            lease: self.lease,
            ports: self.ports,
            maintenance: self.maintenance,
            remote: self.remote,
            counters: self.counters,
        }
    }
}

impl<D: SwitchDriver, C: Clock> SwitchFabric<D, C> {
    /// A switch whose harvest takes longer than `d` is left out of that epoch.
    pub fn set_harvest_deadline(&mut self, d: Duration) {
        self.opts.harvest_deadline = d;
    }

    /// The driver of switch `s`.
    pub fn driver(&self, s: SwitchIx) -> &D {
        &self.slots[s as usize].driver
    }

    pub fn driver_mut(&mut self, s: SwitchIx) -> &mut D {
        &mut self.slots[s as usize].driver
    }

    /// The rules the fabric holds for switch `s` (what it should hold), as installs.
    pub fn desired_rules(&self, s: SwitchIx) -> Vec<canary_core::fabric::RuleOp> {
        reconcile::desired(&self.slots[s as usize])
            .into_iter()
            .map(|(op, _)| op)
            .collect()
    }

    /// The rule IDs of switch `s`.
    pub fn rule_ids(&self, s: SwitchIx) -> &RuleIds {
        &self.slots[s as usize].ids
    }

    /// Why this controller is no longer primary, if another one took a switch over: the
    /// daemon stands down rather than fight for the switches.
    pub fn demoted(&self) -> Option<&str> {
        self.demoted.as_deref()
    }

    /// Switch `s` is the one standbys ask who is primary: while this controller cannot reach
    /// it, a standby may be taking over ([`SwitchFabric::lease_lost`]).
    pub fn set_lease(&mut self, s: SwitchIx) {
        self.lease = Some(s);
    }

    /// Why this controller must stand down although no switch refused it: it lost its
    /// connection to the switch standbys ask, so one of them may be taking over, and would
    /// report the epoch this controller is about to report. Standing down, it asks that switch
    /// like any standby, and takes over again if nobody did.
    pub fn lease_lost(&self) -> Option<String> {
        let d = &self.slots[self.lease? as usize].driver;
        (!d.connected()).then(|| {
            format!(
                "lost its connection to {}, the switch standbys ask: one may be taking over",
                d.name()
            )
        })
    }

    fn note(&mut self, ix: SwitchIx, e: &SwitchError) {
        if let (None, SwitchError::NotPrimary(m)) = (&self.demoted, e) {
            self.demoted = Some(format!("{}: {m}", self.slots[ix as usize].driver.name()));
        }
        if !self.events.iter().any(|(s, _)| *s == ix) {
            self.events.push((ix, e.clone()));
        }
    }
}

impl<D: SwitchDriver, C: Clock> Fabric for SwitchFabric<D, C> {
    fn now(&self) -> Duration {
        self.clock.now()
    }

    async fn wait(&mut self, d: Duration) {
        self.clock.wait(d).await;
    }

    fn capacity(&self) -> Capacity {
        self.capacity
    }

    async fn set_epoch(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<()>)> {
        self.flip_to_epoch(epoch).await
    }

    async fn harvest_each(&mut self, epoch: u64, sink: &mut Sink<'_>) {
        self.harvest_monitors(epoch, sink).await
    }

    async fn reread(&mut self, epoch: u64, switches: &[SwitchIx], sink: &mut Sink<'_>) {
        self.reread_monitors(epoch, switches, sink).await
    }

    async fn apply(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)> {
        let wave = |op: &RuleOp| match op {
            RuleOp::RemoveUsm { .. } => 0,
            RuleOp::InstallUsm { .. } => 2,
            _ => 1,
        };
        let mut failed = Vec::new();
        for w in 0..3 {
            let part: Vec<RuleOp> = ops.iter().filter(|o| wave(o) == w).cloned().collect();
            if !part.is_empty() {
                failed.extend(self.apply_wave(&part).await);
            }
        }
        self.counters.write_errors += failed.len() as u64;
        failed
    }

    async fn take_reports(&mut self) -> Vec<HhReport> {
        let mut out = Vec::new();
        for slot in self.slots.iter_mut().filter(|s| s.monitor) {
            let d = slot.driver.take_digests();
            for bad in &d.bad {
                tracing::warn!(switch = slot.driver.name(), "bad HH digest: {bad}");
            }
            self.counters.digest_decode_errors += d.bad.len() as u64;
            self.counters.digests_dropped += d.dropped_total.saturating_sub(slot.dropped_seen);
            slot.dropped_seen = slot.dropped_seen.max(d.dropped_total);
            out.extend(d.reports.into_iter().map(|(flow, path_bf)| HhReport {
                switch: slot.ix,
                flow,
                path_bf,
            }));
        }
        self.counters.digests += out.len() as u64;
        out
    }

    async fn health(&mut self) -> Vec<(SwitchIx, SwitchError)> {
        std::mem::take(&mut self.events)
    }

    async fn take_forwarding_changes(&mut self) -> Vec<SwitchIx> {
        self.maintenance.take_changed()
    }

    fn out_of_service(&self) -> Vec<canary_core::topo::LinkIx> {
        self.maintenance.out.clone()
    }

    fn own_forwarding(&self) -> Option<PortMap> {
        // Attached beside the fabric's own controller, the forwarding is not ours to predict.
        (!self.opts.attach_only).then(|| self.ports.clone())
    }

    fn take_resumed(&mut self) -> Option<Resumed> {
        self.resumed.take()
    }
}
