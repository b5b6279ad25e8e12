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

use crate::driver::{Attach, DriverError, SwitchDriver};
use crate::entries::{self, Change, Write};
use crate::meters::{self, Decoded};
use crate::rule_ids::{RuleIds, RuleKey};
use canary_core::capacity::Capacity;
use canary_core::fabric::{
    Fabric, HhReport, MeterSnapshot, Parity, Resumed, RuleOp, SwitchError, SwitchResult,
};
use canary_core::model::{epoch_tag, SwitchConfig};
use canary_core::sketch::{Dsm, Usm};
use canary_core::topo::{FloodTree, ForwardingState, PortMap, Routing, SwitchIx, Topology};
use canary_core::FlowId;
use futures::future::join_all;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

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

/// The rules the controller asked for on one switch: what a restarted switch gets back.
#[derive(Clone, Debug, Default)]
struct Rules {
    dsm: BTreeSet<(FlowId, u32)>,
    usm: BTreeSet<FlowId>,
    hh: BTreeMap<u32, u32>,
}

struct Slot<D> {
    driver: D,
    ix: SwitchIx,
    monitor: bool,
    mask: u32,
    forwarding: entries::Forwarding,
    rules: Rules,
    ids: RuleIds,
    /// Configured at least once (a later re-push means it restarted).
    configured: bool,
    /// Connected and holding what it should, as far as we know.
    up: bool,
    dropped_seen: u64,
}

enum Up {
    /// As we left it.
    Same,
    /// Configured again: it lost its state.
    Repushed,
    /// Found as an earlier controller left it: (epoch tag, its monitoring rules).
    Adopted(u16, Vec<RuleOp>),
    /// Configured for the first time.
    Fresh,
    /// Connected for the first time to a switch that holds what an earlier controller
    /// configured: the caller adopts it or configures it afresh.
    Kept,
}

/// Where a fabric's time comes from: the wall clock for real switches; for the chaos driver, the
/// simulated data plane's, which lets traffic flow while the controller waits.
#[allow(async_fn_in_trait)]
pub trait Clock {
    /// Time since the fabric was connected.
    fn now(&self) -> Duration;
    async fn wait(&mut self, d: Duration);
    /// The fabric is connected: time starts.
    fn start(&mut self) {}
}

/// Real time.
#[derive(Clone, Copy, Debug)]
pub struct WallClock(Instant);

impl Default for WallClock {
    fn default() -> Self {
        WallClock(Instant::now())
    }
}

impl Clock for WallClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
    async fn wait(&mut self, d: Duration) {
        tokio::time::sleep(d).await;
    }
    fn start(&mut self) {
        self.0 = Instant::now();
    }
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

fn switch_error(e: DriverError) -> SwitchError {
    match e {
        DriverError::Unreachable(m) => SwitchError::Unreachable(m),
        DriverError::NotPrimary(m) => SwitchError::NotPrimary(m),
        e => SwitchError::Other(e.to_string()),
    }
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

/// Every entry of the switch's forwarding, as inserts.
fn inserts(entries: &[entries::Entry]) -> Vec<Write> {
    entries
        .iter()
        .map(|e| Write {
            change: Change::Insert,
            entry: e.clone(),
        })
        .collect()
}

/// The first failure of a batch of writes, as an error naming how many failed.
fn first_failure(what: &str, failed: Vec<(usize, DriverError)>) -> Result<(), SwitchError> {
    match failed.into_iter().next() {
        None => Ok(()),
        Some((i, e)) => Err(switch_error(match e {
            DriverError::Unreachable(m) => DriverError::Unreachable(m),
            e => DriverError::Refused(format!("{what}, write {i}: {e}")),
        })),
    }
}

/// Makes sure the switch is reachable and holds what it should; configures it when it does not.
/// A switch first met holding an earlier controller's state is left to the caller ([`Up::Kept`]).
async fn ensure_up<D: SwitchDriver>(
    slot: &mut Slot<D>,
    epoch: u64,
    attach_only: bool,
) -> Result<Up, SwitchError> {
    if slot.up && slot.driver.connected() {
        if !attach_only
            || slot
                .driver
                .pipeline_unchanged()
                .await
                .map_err(switch_error)?
        {
            return Ok(Up::Same);
        }
        tracing::warn!(
            switch = slot.driver.name(),
            "the pipeline's owner pushed a new one: configuring Canary's state again"
        );
    }
    slot.up = false;
    let attach = slot.driver.connect().await.map_err(switch_error)?;
    if attach == Attach::Kept {
        if slot.configured {
            slot.up = true;
            return Ok(Up::Same);
        }
        return Ok(Up::Kept);
    }
    configure(slot, epoch, attach_only).await
}

/// Configures a connected switch afresh: pipeline and forwarding (unless another controller
/// owns them), configuration, and the rules the controller asked for.
async fn configure<D: SwitchDriver>(
    slot: &mut Slot<D>,
    epoch: u64,
    attach_only: bool,
) -> Result<Up, SwitchError> {
    if !attach_only {
        slot.driver.load_pipeline().await.map_err(switch_error)?;
        slot.driver
            .write_groups(&slot.forwarding.groups)
            .await
            .map_err(switch_error)?;
        let failed = slot.driver.write(&inserts(&slot.forwarding.entries)).await;
        first_failure("forwarding", failed)?;
    }
    let config = entries::config(SwitchConfig {
        monitor: slot.monitor,
        mask: slot.mask,
        epoch: epoch_tag(epoch),
    });
    let mut writes = vec![Write {
        change: Change::Modify,
        entry: config,
    }];
    let r = &slot.rules;
    let ids = &mut slot.ids;
    let mut ops: Vec<RuleOp> = r
        .dsm
        .iter()
        .map(|&(flow, path_bf)| RuleOp::InstallDsm {
            switch: slot.ix,
            flow,
            path_bf,
        })
        .collect();
    ops.extend(r.usm.iter().map(|&flow| RuleOp::InstallUsm {
        switch: slot.ix,
        flow,
    }));
    ops.extend(r.hh.iter().map(|(&path_bf, &eta)| RuleOp::InstallHh {
        switch: slot.ix,
        path_bf,
        eta,
    }));
    for op in &ops {
        let id = ids
            .for_op(op)
            .map_err(|e| SwitchError::Other(e.to_string()))?
            .unwrap_or(0);
        writes.push(entries::rule(op, id, false));
    }
    let failed = slot.driver.write(&writes).await;
    first_failure("configuration and rules", failed)?;
    let was = slot.configured;
    slot.configured = true;
    slot.up = true;
    Ok(if was { Up::Repushed } else { Up::Fresh })
}

/// Takes a switch over as an earlier controller left it: its rules and their IDs read back,
/// nothing written. A switch whose state cannot be read back is configured afresh.
async fn adopt_state<D: SwitchDriver>(
    slot: &mut Slot<D>,
    attach_only: bool,
) -> Result<Up, SwitchError> {
    let found = match slot.driver.read_installed().await {
        Ok(found) if entries::holds_config(&found.config, slot.monitor, slot.mask) => found,
        Ok(_) => {
            return Err(SwitchError::Other(format!(
                "{}: its configuration changed while it was read back",
                slot.driver.name()
            )))
        }
        Err(e) => {
            tracing::warn!(
                switch = slot.driver.name(),
                "cannot read back what an earlier controller installed ({e}): configuring afresh"
            );
            return configure(slot, 0, attach_only).await;
        }
    };
    let s = slot.ix;
    let mut rules = Rules::default();
    let mut live = Vec::new();
    let mut ops = Vec::new();
    for r in found.rules {
        let (op, id) = r.install(s);
        match op {
            RuleOp::InstallUsm { flow, .. } => {
                rules.usm.insert(flow);
                live.push((RuleKey::Usm(flow), id));
            }
            RuleOp::InstallDsm { flow, path_bf, .. } => {
                rules.dsm.insert((flow, path_bf));
                live.push((RuleKey::Dsm(flow, path_bf), id));
            }
            RuleOp::InstallHh { path_bf, eta, .. } => {
                rules.hh.insert(path_bf, eta);
            }
            _ => continue,
        }
        ops.push(op);
    }
    slot.rules = rules;
    slot.ids = RuleIds::adopted(live);
    slot.configured = true;
    slot.up = true;
    Ok(Up::Adopted(found.config[2] as u16, ops))
}

/// Reads one monitor's meters of `epoch` under `deadline`, decodes them (pipes merged), zeroes
/// cells about to wrap and HashPipe. `Err(true)`: late.
async fn harvest_one<D: SwitchDriver>(
    slot: &mut Slot<D>,
    epoch: u64,
    deadline: Duration,
    attach_only: bool,
) -> Result<(MeterSnapshot, usize), (SwitchError, bool)> {
    let tag = epoch_tag(epoch);
    let read = tokio::time::timeout(deadline, slot.driver.read_meters()).await;
    // IDs age per harvest, read or not: the cells of the epochs before can no longer be read.
    let pipes = match read {
        Err(_) => {
            slot.ids.harvested();
            return Err((
                SwitchError::Other(format!(
                    "harvest slower than its deadline ({deadline:?}): epoch skipped for this switch"
                )),
                true,
            ));
        }
        Ok(Err(e)) => {
            slot.ids.harvested();
            return Err((switch_error(e), false));
        }
        Ok(Ok(p)) => p,
    };
    // A pipeline pushed by its owner during the epoch wiped part of what was counted.
    if attach_only && !slot.driver.pipeline_unchanged().await.unwrap_or(false) {
        slot.ids.harvested();
        slot.up = false;
        return Err((
            SwitchError::Restarted(format!(
                "{}: the pipeline's owner pushed a new one during the epoch",
                slot.driver.name()
            )),
            false,
        ));
    }
    let name = slot.driver.name().to_string();
    let layout = slot
        .driver
        .program()
        .ok_or_else(|| (SwitchError::Other("no program resolved".into()), false))?
        .meters
        .clone();
    let mut decoded = Vec::with_capacity(pipes.len());
    for cells in &pipes {
        let d = meters::decode(&layout, cells, tag, &slot.ids, &name)
            .map_err(|e| (SwitchError::Other(e.to_string()), false))?;
        decoded.push(d);
    }
    slot.ids.harvested();
    let merged = meters::merge_pipes(decoded);
    let Decoded { usm, dsm, stale } = merged;
    let n_stale = stale.len();
    if !stale.is_empty() {
        if let Err(e) = slot.driver.clear_cells(&stale).await {
            tracing::warn!(
                switch = name,
                "zeroing {} stale meter cells: {e}",
                stale.len()
            );
        }
    }
    if let Err(e) = slot.driver.clear_hashpipe().await {
        tracing::warn!(switch = name, "clearing HashPipe: {e}");
    }
    Ok((
        MeterSnapshot {
            switch: slot.ix,
            epoch,
            parity: Parity::of_epoch(epoch),
            usm,
            dsm,
        },
        n_stale,
    ))
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
        let ready = join_all(self.slots.iter_mut().map(|slot| async move {
            match ensure_up(slot, epoch, attach_only).await? {
                Up::Kept => configure(slot, epoch, attach_only).await,
                up => Ok(up),
            }
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

    async fn harvest(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<MeterSnapshot>)> {
        let (deadline, attach_only) = (self.opts.harvest_deadline, self.opts.attach_only);
        let results = join_all(
            self.slots
                .iter_mut()
                .filter(|s| s.monitor)
                .map(|slot| harvest_one(slot, epoch, deadline, attach_only)),
        )
        .await;
        let monitors: Vec<(SwitchIx, bool)> = self
            .slots
            .iter()
            .filter(|s| s.monitor)
            .map(|s| (s.ix, s.driver.connected()))
            .collect();
        let mut out = Vec::new();
        for ((ix, connected), r) in monitors.into_iter().zip(results) {
            let r = match r {
                // A stream that broke during the epoch means the switch may have restarted
                // since the flip: its counts cannot be trusted.
                Ok(_) if !connected => Err(SwitchError::Unreachable(
                    "lost the connection during the epoch".into(),
                )),
                Ok((snap, stale)) => {
                    self.counters.stale_cells_cleared += stale as u64;
                    Ok(snap)
                }
                Err((e, late)) => {
                    self.counters.harvests_late += u64::from(late);
                    Err(e)
                }
            };
            if let Err(e) = &r {
                self.counters.harvest_errors += 1;
                self.note(ix, e);
            }
            out.push((ix, r));
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
        out
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
    /// One wave of rule changes, every switch written in parallel.
    async fn apply_wave(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)> {
        let mut per_switch: BTreeMap<SwitchIx, Vec<(RuleOp, Write)>> = BTreeMap::new();
        let mut failed = Vec::new();
        // HH rules inserted (not modified) by this wave: a refused one is not on the switch.
        let mut new_hh: BTreeSet<(SwitchIx, u32)> = BTreeSet::new();
        for op in ops {
            let Some(slot) = self.slots.get_mut(op.switch() as usize) else {
                failed.push((op.clone(), SwitchError::Other("no such switch".into())));
                continue;
            };
            let r = &mut slot.rules;
            // Only real changes reach the switch; the desired rules change either way.
            let (change, modify) = match *op {
                RuleOp::InstallDsm { flow, path_bf, .. } => (r.dsm.insert((flow, path_bf)), false),
                RuleOp::RemoveDsm { flow, path_bf, .. } => (r.dsm.remove(&(flow, path_bf)), false),
                RuleOp::InstallUsm { flow, .. } => (r.usm.insert(flow), false),
                RuleOp::RemoveUsm { flow, .. } => (r.usm.remove(&flow), false),
                RuleOp::InstallHh { path_bf, eta, .. } => match r.hh.insert(path_bf, eta) {
                    None => (true, false),
                    Some(old) => (old != eta, true),
                },
                RuleOp::RemoveHh { path_bf, .. } => (r.hh.remove(&path_bf).is_some(), false),
            };
            if !change {
                continue;
            }
            if let RuleOp::InstallHh { path_bf, .. } = *op {
                if !modify {
                    new_hh.insert((op.switch(), path_bf));
                }
            }
            // A removal retires its ID even if the switch then refuses the delete: a bucket
            // holding it after two harvests fails the harvest loudly rather than being decoded
            // as another flow.
            let id = match slot.ids.for_op(op) {
                Ok(id) => id.unwrap_or(0),
                Err(e) => {
                    failed.push((op.clone(), SwitchError::Other(e.to_string())));
                    continue;
                }
            };
            per_switch
                .entry(op.switch())
                .or_default()
                .push((op.clone(), entries::rule(op, id, modify)));
        }
        let work: Vec<_> = self
            .slots
            .iter_mut()
            .filter_map(|slot| per_switch.remove(&slot.ix).map(|list| (slot, list)))
            .collect();
        let results = join_all(work.into_iter().map(|(slot, list)| async move {
            if !(slot.up && slot.driver.connected()) {
                // Kept in the desired rules: the switch gets them when it is configured again.
                let e =
                    SwitchError::Unreachable(format!("{} is not connected", slot.driver.name()));
                return list
                    .into_iter()
                    .map(|(op, _)| (op, e.clone()))
                    .collect::<Vec<_>>();
            }
            let writes: Vec<Write> = list.iter().map(|(_, w)| w.clone()).collect();
            slot.driver
                .write(&writes)
                .await
                .into_iter()
                .filter_map(|(i, e)| list.get(i).map(|(op, _)| (op.clone(), switch_error(e))))
                .collect()
        }))
        .await;
        for r in results {
            failed.extend(r);
        }
        // A switch that refused an install does not hold the rule: it is not re-pushed after a
        // restart, and removing it later writes nothing. (An unreachable switch gets it when it
        // is configured again.)
        for (op, e) in &failed {
            if !op.is_install() || matches!(e, SwitchError::Unreachable(_)) {
                continue;
            }
            let Some(slot) = self.slots.get_mut(op.switch() as usize) else {
                continue;
            };
            let r = &mut slot.rules;
            match *op {
                RuleOp::InstallDsm { flow, path_bf, .. } => {
                    r.dsm.remove(&(flow, path_bf));
                    slot.ids.remove(&RuleKey::Dsm(flow, path_bf));
                }
                RuleOp::InstallUsm { flow, .. } => {
                    r.usm.remove(&flow);
                    slot.ids.remove(&RuleKey::Usm(flow));
                }
                RuleOp::InstallHh { path_bf, .. } if new_hh.contains(&(op.switch(), path_bf)) => {
                    r.hh.remove(&path_bf);
                }
                _ => {}
            }
        }
        failed
    }

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
