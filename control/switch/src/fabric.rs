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
mod harvest;
mod slot;
mod waves;

pub use clock::{Clock, WallClock};
use harvest::harvest_one;
use slot::{adopt_state, configure, ensure_up, first_failure, switch_error, Rules, Slot, Up};

use crate::driver::SwitchDriver;
use crate::entries::{self, Change, Write};
use crate::meters;
use crate::rule_ids::RuleIds;
use canary_core::capacity::Capacity;
use canary_core::fabric::{Fabric, HhReport, Resumed, RuleOp, Sink, SwitchError, SwitchResult};
use canary_core::model::{epoch_tag, SwitchConfig};
use canary_core::sketch::{Dsm, Usm};
use canary_core::topo::{FloodTree, ForwardingState, PortMap, Routing, SwitchIx, Topology};
use futures::future::join_all;
use futures::stream::{FuturesUnordered, StreamExt};
use std::time::{Duration, Instant};
use tracing::Instrument;

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
    pub counters: FabricCounters,
}

impl<D: SwitchDriver> SwitchFabric<D, WallClock> {
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
        let slots = drivers
            .into_iter()
            .enumerate()
            .map(|(i, driver)| {
                let s = i as SwitchIx;
                let state = ForwardingState::of(topo, &routing, &tree, s, ports.of(s));
                Slot {
                    driver,
                    ix: s,
                    monitor: topo.switches[i].monitor,
                    mask: masks[i],
                    forwarding: entries::forwarding(&state, masks[i]),
                    rules: Rules::default(),
                    ids: RuleIds::default(),
                    configured: false,
                    up: false,
                    dropped_seen: 0,
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
            counters: self.counters,
        }
    }
}

impl<D: SwitchDriver, C: Clock> SwitchFabric<D, C> {
    /// Connects to every switch and configures it, retrying switches that are not up yet until
    /// `patience` has passed. Fails when any switch cannot be configured by then: a run starts
    /// on a whole fabric.
    pub async fn connect(&mut self, patience: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + patience;
        let (epoch, attach_only, adopt) = (self.epoch, self.opts.attach_only, self.opts.adopt);
        let mut resumed = Resumed::default();
        loop {
            let pending: Vec<&mut Slot<D>> = self.slots.iter_mut().filter(|s| !s.up).collect();
            let results = join_all(pending.into_iter().map(|s| async move {
                let r = match ensure_up(s, epoch, attach_only).await {
                    Ok(Up::Kept) if adopt => adopt_state(s, attach_only).await,
                    Ok(Up::Kept) => configure(s, epoch, attach_only).await,
                    r => r,
                };
                (s.ix, s.monitor, s.driver.name().to_string(), r)
            }))
            .await;
            let mut errors = Vec::new();
            for (ix, monitor, name, r) in results {
                match r {
                    Ok(Up::Adopted(tag, rules)) => {
                        if monitor {
                            resumed.tags.push((ix, tag));
                        }
                        resumed.rules.extend(rules);
                    }
                    Ok(_) => resumed.fresh.push(ix),
                    Err(SwitchError::NotPrimary(m)) => {
                        // Another controller holds the switch: waiting would be fighting.
                        self.demoted = Some(format!("{name}: {m}"));
                        anyhow::bail!("{name}: another controller is primary: {m}");
                    }
                    Err(e) => errors.push(format!("{name}: {e}")),
                }
            }
            if errors.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                anyhow::bail!("cannot configure the fabric:\n  {}", errors.join("\n  "));
            }
            tracing::info!("waiting for {} switches: {}", errors.len(), errors[0]);
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        if !resumed.tags.is_empty() {
            tracing::info!(
                adopted = resumed.tags.len(),
                rules = resumed.rules.len(),
                fresh = resumed.fresh.len(),
                "switches found as an earlier controller left them: resuming"
            );
            self.resumed = Some(resumed);
        }
        self.clock.start();
        Ok(())
    }

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

    /// The rule IDs of switch `s`.
    pub fn rule_ids(&self, s: SwitchIx) -> &RuleIds {
        &self.slots[s as usize].ids
    }

    /// Why this controller is no longer primary, if another one took a switch over: the
    /// daemon stands down rather than fight for the switches.
    pub fn demoted(&self) -> Option<&str> {
        self.demoted.as_deref()
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
        self.epoch = epoch;
        let attach_only = self.opts.attach_only;
        // Every switch is checked (and configured again if it lost its state) before any
        // monitor flips, so a re-push never lands among flipped switches.
        let ready = join_all(self.slots.iter_mut().map(|slot| {
            let span = tracing::info_span!("switch", name = %slot.driver.name());
            async move {
                match ensure_up(slot, epoch, attach_only).await? {
                    Up::Kept => configure(slot, epoch, attach_only).await,
                    up => Ok(up),
                }
            }
            .instrument(span)
        }))
        .await;
        let results = join_all(
            self.slots
                .iter_mut()
                .zip(ready)
                .map(|(slot, r)| async move {
                    let up = r?;
                    if !slot.monitor {
                        return Ok(up);
                    }
                    let w = Write {
                        change: Change::Modify,
                        entry: entries::config(SwitchConfig {
                            monitor: true,
                            mask: slot.mask,
                            epoch: epoch_tag(epoch),
                        }),
                    };
                    let failed = slot.driver.write(std::slice::from_ref(&w)).await;
                    first_failure("epoch flip", failed)?;
                    Ok(up)
                }),
        )
        .await;
        let mut out = Vec::new();
        let mut events = Vec::new();
        for (slot, r) in self.slots.iter().zip(results) {
            let r = match r {
                Ok(Up::Same | Up::Fresh | Up::Kept | Up::Adopted(..)) => Ok(()),
                Ok(Up::Repushed) => {
                    self.counters.repushes += 1;
                    Err(SwitchError::Restarted(format!(
                        "{} came back without Canary's state: configured again",
                        slot.driver.name()
                    )))
                }
                Err(e) => Err(e),
            };
            if let Err(e) = &r {
                events.push((slot.ix, e.clone()));
            }
            if slot.monitor {
                out.push((slot.ix, r));
            }
        }
        for (ix, e) in events {
            self.note(ix, &e);
        }
        out
    }

    async fn harvest_each(&mut self, epoch: u64, sink: &mut Sink<'_>) {
        let (deadline, attach_only) = (self.opts.harvest_deadline, self.opts.attach_only);
        let mut failed = Vec::new();
        let (mut stale, mut late) = (0u64, 0u64);
        // Every monitor at once; each answer goes on as soon as it is in.
        let mut harvests: FuturesUnordered<_> = self
            .slots
            .iter_mut()
            .filter(|s| s.monitor)
            .map(|slot| {
                // Each switch's reads log under its own name.
                let span = tracing::info_span!("switch", name = %slot.driver.name());
                async move {
                    let r = harvest_one(slot, epoch, deadline, attach_only).await;
                    (slot.ix, slot.driver.connected(), r)
                }
                .instrument(span)
            })
            .collect();
        while let Some((ix, connected, r)) = harvests.next().await {
            let r = match r {
                // A stream that broke during the epoch means the switch may have restarted
                // since the flip: its counts cannot be trusted.
                Ok(_) if !connected => Err(SwitchError::Unreachable(
                    "lost the connection during the epoch".into(),
                )),
                Ok((snap, n)) => {
                    stale += n as u64;
                    Ok(snap)
                }
                Err((e, was_late)) => {
                    late += u64::from(was_late);
                    Err(e)
                }
            };
            if let Err(e) = &r {
                failed.push((ix, e.clone()));
            }
            sink(ix, r);
        }
        drop(harvests);
        self.counters.stale_cells_cleared += stale;
        self.counters.harvests_late += late;
        for (ix, e) in failed {
            self.counters.harvest_errors += 1;
            self.note(ix, &e);
        }
        // Transit switches that went away during the epoch also spoil the segments they carry.
        let lost: Vec<SwitchIx> = self
            .slots
            .iter()
            .filter(|s| !s.monitor && !s.driver.connected())
            .map(|s| s.ix)
            .collect();
        for ix in lost {
            self.note(
                ix,
                &SwitchError::Unreachable("lost the connection during the epoch".into()),
            );
        }
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

    fn take_resumed(&mut self) -> Option<Resumed> {
        self.resumed.take()
    }
}

impl<D: SwitchDriver, C: Clock> SwitchFabric<D, C> {
    /// The meters switch `s` holds for the epoch with tag `tag`, read without the harvest's
    /// side effects: for tests.
    pub async fn peek_meters(&mut self, s: SwitchIx, tag: u16) -> Result<(Usm, Dsm), SwitchError> {
        let slot = &mut self.slots[s as usize];
        let pipes = slot.driver.read_meters().await.map_err(switch_error)?;
        let layout = slot
            .driver
            .program()
            .ok_or_else(|| SwitchError::Other("no program resolved".into()))?
            .meters
            .clone();
        let decoded = pipes
            .iter()
            .map(|c| meters::decode(&layout, c, tag, &slot.ids, slot.driver.name()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SwitchError::Other(e.to_string()))?;
        let d = meters::merge_pipes(decoded);
        Ok((d.usm, d.dsm))
    }
}
