//! [`Fabric`] over real BMv2 switches: P4Runtime for the pipeline, tables and digests, Thrift
//! for the meter registers (BMv2's P4Runtime server has no register support).
//!
//! Every switch is handled on its own: one that does not answer costs its own segments for that
//! epoch and nothing else. The fabric keeps the rules it was asked to install per switch, so a
//! switch that comes back empty (restarted) gets its pipeline, forwarding and Canary rules again
//! before it is used, and the controller hears that it restarted.

use crate::bmv2_meters::{self, MeterLayout, RegisterAccess};
use crate::bmv2_thrift::{ThriftClient, Timeouts};
use crate::forwarding::forwarding_entries;
use crate::p4info::P4InfoIndex;
use crate::p4rt::{P4RtClient, P4RtConfig, P4RtError};
use crate::program::{table_entity, CanaryProgram};
use crate::switches::BoundSwitch;
use bfrt_proto::p4rt::{update, TableEntry, Update};
use canary_core::fabric::{
    Fabric, HhReport, MeterSnapshot, Parity, RuleOp, SwitchError, SwitchResult,
};
use canary_core::topo::{Routing, SwitchIx, Topology};
use canary_core::FlowId;
use futures::future::join_all;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Bmv2Options {
    pub election_id: u128,
    pub role: String,
    /// Deadline of each gRPC call and of connecting.
    pub timeout: Duration,
    /// A switch whose harvest takes longer is skipped for that epoch.
    pub harvest_deadline: Duration,
    pub digest_queue: usize,
    pub digest_rate: u32,
    /// Updates per Write request.
    pub write_batch: usize,
}

impl Default for Bmv2Options {
    fn default() -> Self {
        Self {
            election_id: 1,
            role: String::new(),
            timeout: Duration::from_secs(2),
            harvest_deadline: Duration::from_millis(500),
            digest_queue: 4096,
            digest_rate: 20_000,
            write_batch: 1000,
        }
    }
}

/// What the fabric has seen, for metrics.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FabricCounters {
    /// Switches found without our pipeline and configured again.
    pub repushes: u64,
    pub harvest_errors: u64,
    pub harvests_late: u64,
    pub digests: u64,
    pub digests_dropped: u64,
    pub digest_decode_errors: u64,
    pub write_errors: u64,
}

/// Rules the controller asked for on one switch: what a restarted switch gets back.
#[derive(Clone, Debug, Default)]
struct Rules {
    dsm: BTreeSet<(FlowId, u32)>,
    usm: BTreeSet<FlowId>,
    hh: BTreeMap<u32, u32>,
}

struct Slot {
    bound: BoundSwitch,
    monitor: bool,
    mask: u32,
    client: Option<P4RtClient>,
    /// Taken while a blocking harvest runs on it.
    thrift: Option<ThriftClient>,
    rules: Rules,
    /// A harvest of this instance was abandoned: clear it before counting in it again.
    reset_before: Option<Parity>,
    /// The abandoned harvest, still reading or clearing: it must end before that instance is
    /// cleared and counts again, or its late reset could wipe a newer epoch.
    late: Option<tokio::task::JoinHandle<Result<(ThriftClient, MeterSnapshot), SwitchError>>>,
    /// Configured at least once (a later re-push means it restarted).
    configured: bool,
    digest_dropped_seen: u64,
}

/// Everything the per-switch tasks read.
struct Shared {
    topo: Topology,
    routing: Routing,
    prog: CanaryProgram,
    p4info: P4InfoIndex,
    device_config: Vec<u8>,
    registers: MeterLayout,
    cookie: u64,
    opts: Bmv2Options,
}

pub struct Bmv2Fabric {
    shared: Arc<Shared>,
    slots: Vec<Slot>,
    start: Instant,
    parity: Parity,
    events: Vec<(SwitchIx, SwitchError)>,
    harvest_deadline: Duration,
    pub counters: FabricCounters,
}

enum Up {
    /// Connected and configured as we left it.
    Same,
    /// Its pipeline and rules were pushed again: it lost its state.
    Repushed,
}

impl Bmv2Fabric {
    /// Binds the program to the switches; nothing is contacted until [`Bmv2Fabric::connect`].
    pub fn new(
        topo: Topology,
        switches: Vec<BoundSwitch>,
        p4info: P4InfoIndex,
        device_config: Vec<u8>,
        masks: Vec<u32>,
        opts: Bmv2Options,
    ) -> anyhow::Result<Self> {
        let prog = CanaryProgram::resolve(&p4info)?;
        let registers = MeterLayout::from_p4info(&p4info.info)?;
        let routing = Routing::new(&topo);
        // The cookie names this run's pipeline: a switch reporting another one lost our state.
        let cookie = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1;
        let slots = switches
            .into_iter()
            .map(|b| Slot {
                monitor: topo.switches[b.ix as usize].monitor,
                mask: masks[b.ix as usize],
                bound: b,
                client: None,
                thrift: None,
                rules: Rules::default(),
                reset_before: None,
                late: None,
                configured: false,
                digest_dropped_seen: 0,
            })
            .collect();
        Ok(Self {
            harvest_deadline: opts.harvest_deadline,
            shared: Arc::new(Shared {
                topo,
                routing,
                prog,
                p4info,
                device_config,
                registers,
                cookie,
                opts,
            }),
            slots,
            start: Instant::now(),
            parity: Parity::Even,
            events: Vec::new(),
            counters: FabricCounters::default(),
        })
    }

    /// Connects to every switch and configures it (pipeline, forwarding, parity even),
    /// retrying switches that are not up yet until `patience` has passed. Fails when any switch
    /// cannot be configured by then: a run starts on a whole fabric.
    pub async fn connect(&mut self, patience: Duration) -> anyhow::Result<()> {
        let parity = self.parity;
        let sh = self.shared.clone();
        let deadline = Instant::now() + patience;
        loop {
            let pending: Vec<&mut Slot> = self.slots.iter_mut().filter(|s| !s.configured).collect();
            let names: Vec<String> = pending.iter().map(|s| s.bound.name.clone()).collect();
            let results = join_all(pending.into_iter().map(|s| ensure_up(&sh, s, parity))).await;
            let errors: Vec<String> = names
                .iter()
                .zip(results)
                .filter_map(|(n, r)| r.err().map(|e| format!("{n}: {e}")))
                .collect();
            if errors.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                anyhow::bail!("cannot configure the fabric:\n  {}", errors.join("\n  "));
            }
            tracing::info!("waiting for {} switches: {}", errors.len(), errors[0]);
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        self.start = Instant::now();
        Ok(())
    }

    fn note(&mut self, ix: SwitchIx, e: &SwitchError) {
        if !self.events.iter().any(|(s, _)| *s == ix) {
            self.events.push((ix, e.clone()));
        }
    }
}

fn p4rt_config(sh: &Shared, b: &BoundSwitch) -> P4RtConfig {
    let mut c = P4RtConfig::new(&b.name, &b.endpoint.grpc, b.endpoint.device_id);
    c.election_id = sh.opts.election_id;
    c.role = sh.opts.role.clone();
    c.tls = b.endpoint.tls.clone();
    c.timeout = sh.opts.timeout;
    c.digest_queue = sh.opts.digest_queue;
    c.digest_rate = sh.opts.digest_rate;
    c
}

/// The slot's Thrift connection, or a new one (blocking: call it inside `spawn_blocking`).
fn thrift_client(
    kept: Option<ThriftClient>,
    name: String,
    addr: &str,
    sh: &Shared,
) -> Result<ThriftClient, SwitchError> {
    match kept {
        Some(t) => Ok(t),
        None => ThriftClient::connect(name, addr, thrift_timeouts(sh))
            .map_err(|e| SwitchError::Unreachable(e.to_string())),
    }
}

fn thrift_timeouts(sh: &Shared) -> Timeouts {
    Timeouts {
        connect: sh.opts.timeout,
        io: sh.opts.timeout,
    }
}

fn to_switch_error(e: &P4RtError) -> SwitchError {
    if e.is_unreachable() {
        SwitchError::Unreachable(e.to_string())
    } else {
        SwitchError::Other(e.to_string())
    }
}

fn inserts(entries: Vec<TableEntry>) -> Vec<Update> {
    entries
        .into_iter()
        .map(|e| Update {
            r#type: update::Type::Insert as i32,
            entity: Some(table_entity(e)),
        })
        .collect()
}

fn modify(e: TableEntry) -> Update {
    Update {
        r#type: update::Type::Modify as i32,
        entity: Some(table_entity(e)),
    }
}

/// Makes sure the switch is reachable, ours, and configured; re-pushes everything when it is not.
async fn ensure_up(sh: &Shared, slot: &mut Slot, parity: Parity) -> Result<Up, SwitchError> {
    if slot.client.as_ref().is_some_and(|c| c.healthy()) {
        return Ok(Up::Same);
    }
    slot.client = None;
    slot.thrift = None;
    slot.digest_dropped_seen = 0;
    let mut c = P4RtClient::connect_primary(p4rt_config(sh, &slot.bound))
        .await
        .map_err(|e| match e {
            P4RtError::NotPrimary { .. } => SwitchError::Other(e.to_string()),
            _ => to_switch_error(&e),
        })?;
    let cookie = c.pipeline_cookie().await.map_err(|e| to_switch_error(&e))?;
    if slot.configured && cookie == Some(sh.cookie) {
        // Only our connection broke; the switch kept its pipeline, tables and registers.
        slot.client = Some(c);
        return Ok(Up::Same);
    }
    let err = |e: P4RtError| to_switch_error(&e);
    c.set_pipeline(&sh.p4info.bytes, &sh.device_config, sh.cookie)
        .await
        .map_err(err)?;
    let mut ups = inserts(forwarding_entries(
        &sh.prog,
        &sh.topo,
        &sh.routing,
        &slot.bound,
    ));
    ups.push(modify(sh.prog.config_entry(
        slot.monitor,
        slot.mask,
        parity,
    )));
    let r = &slot.rules;
    let mut rules: Vec<TableEntry> = r
        .dsm
        .iter()
        .map(|(f, bf)| sh.prog.dsm_entry(f, *bf))
        .collect();
    rules.extend(r.usm.iter().map(|f| sh.prog.usm_entry(f)));
    rules.extend(r.hh.iter().map(|(bf, eta)| sh.prog.hh_entry(*bf, *eta)));
    ups.extend(inserts(rules));
    c.write(ups, sh.opts.write_batch).await.map_err(err)?;
    if slot.monitor {
        c.enable_digest(
            sh.prog.hh_digest,
            Duration::from_millis(10),
            64,
            Duration::from_millis(100),
        )
        .await
        .map_err(err)?;
    }
    slot.client = Some(c);
    slot.reset_before = None;
    let was = slot.configured;
    slot.configured = true;
    Ok(if was { Up::Repushed } else { Up::Same })
}

/// Reads then clears `parity` on one switch over Thrift, off the async runtime.
async fn harvest_one(
    sh: &Arc<Shared>,
    slot: &mut Slot,
    parity: Parity,
    deadline: Duration,
) -> Result<MeterSnapshot, SwitchError> {
    let Some(addr) = slot.bound.endpoint.thrift.clone() else {
        return Err(SwitchError::Other(format!(
            "{} has no `thrift` address in the switches file: BMv2 meters are read over Thrift",
            slot.bound.name
        )));
    };
    let thrift = slot.thrift.take();
    let sh2 = sh.clone();
    let ix = slot.bound.ix;
    let name = slot.bound.name.clone();
    let mut task = tokio::task::spawn_blocking(move || {
        let mut t = thrift_client(thrift, name, &addr, &sh2)?;
        let snap = bmv2_meters::harvest(&mut t, &sh2.registers, ix, parity)
            .map_err(|e| SwitchError::Unreachable(e.to_string()))?;
        Ok::<_, SwitchError>((t, snap))
    });
    match tokio::time::timeout(deadline, &mut task).await {
        Ok(Ok(Ok((t, snap)))) => {
            slot.thrift = Some(t);
            Ok(snap)
        }
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(join)) => Err(SwitchError::Other(format!("harvest task: {join}"))),
        Err(_) => {
            // The blocking read finishes on its own; its connection is dropped with it. The
            // instance may be half cleared: clear it before it counts again.
            slot.reset_before = Some(parity);
            slot.late = Some(task);
            Err(SwitchError::Other(format!(
                "harvest slower than its deadline ({deadline:?}): epoch skipped for this switch"
            )))
        }
    }
}

/// Clears the instance of `parity` when a harvest that overran its deadline left it half read
/// (after waiting for that read to end), so it starts the next epoch empty.
async fn clear_if_half_read(
    sh: &Arc<Shared>,
    slot: &mut Slot,
    parity: Parity,
) -> Result<(), SwitchError> {
    if let Some(late) = slot.late.take() {
        // Bounded by the Thrift I/O timeout inside the task.
        let _ = tokio::time::timeout(sh.opts.timeout * 2, late).await;
    }
    if slot.reset_before != Some(parity) {
        return Ok(());
    }
    let addr = slot.bound.endpoint.thrift.clone().unwrap_or_default();
    let (sh2, name, kept) = (sh.clone(), slot.bound.name.clone(), slot.thrift.take());
    let t = tokio::task::spawn_blocking(move || {
        let mut t = thrift_client(kept, name, &addr, &sh2)?;
        t.zero_arrays(&sh2.registers.arrays_to_clear(parity))
            .map_err(|e| SwitchError::Unreachable(e.to_string()))?;
        Ok::<_, SwitchError>(t)
    })
    .await
    .map_err(|e| SwitchError::Other(e.to_string()))??;
    slot.thrift = Some(t);
    slot.reset_before = None;
    Ok(())
}

impl Bmv2Fabric {
    /// A switch whose harvest takes longer than `d` is skipped for that epoch, and the meter
    /// instance it was reading is cleared before it counts again.
    pub fn set_harvest_deadline(&mut self, d: Duration) {
        self.harvest_deadline = d;
    }

    /// Digest messages dropped so far (queue full or over the rate limit).
    pub fn digests_dropped(&self) -> u64 {
        self.counters.digests_dropped
    }
}

impl Fabric for Bmv2Fabric {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    async fn wait(&mut self, d: Duration) {
        tokio::time::sleep(d).await;
    }

    async fn set_parity(&mut self, parity: Parity) -> Vec<(SwitchIx, SwitchResult<()>)> {
        self.parity = parity;
        let sh = self.shared.clone();
        // Two phases. First every switch is checked and any instance of `parity` left half
        // read by a late harvest is cleared; only then does any monitor flip. A DSM counts by
        // the packet's mark, so once one upstream monitor flips, packets in `parity` arrive
        // everywhere: a clear after that would wipe them (loss no link caused).
        let ready = join_all(self.slots.iter_mut().map(|slot| {
            let sh = sh.clone();
            async move {
                let up = ensure_up(&sh, slot, parity).await?;
                if slot.monitor {
                    clear_if_half_read(&sh, slot, parity).await?;
                }
                Ok::<_, SwitchError>(up)
            }
        }))
        .await;
        let results = join_all(self.slots.iter_mut().zip(ready).map(|(slot, r)| {
            let sh = sh.clone();
            async move {
                let up = r?;
                if !slot.monitor {
                    return Ok(up);
                }
                let c = slot.client.as_mut().expect("ensure_up connected it");
                let entry = sh.prog.config_entry(true, slot.mask, parity);
                c.write(vec![modify(entry)], 1)
                    .await
                    .map_err(|e| to_switch_error(&e))?;
                Ok(up)
            }
        }))
        .await;
        let mut out = Vec::new();
        let mut events = Vec::new();
        for (slot, r) in self.slots.iter().zip(results) {
            let ix = slot.bound.ix;
            let r = match r {
                Ok(Up::Same) => Ok(()),
                Ok(Up::Repushed) => {
                    self.counters.repushes += 1;
                    Err(SwitchError::Restarted(format!(
                        "{} came back without Canary's pipeline: configured again",
                        slot.bound.name
                    )))
                }
                Err(e) => Err(e),
            };
            if let Err(e) = &r {
                events.push((ix, e.clone()));
            }
            if slot.monitor {
                out.push((ix, r));
            }
        }
        for (ix, e) in events {
            self.note(ix, &e);
        }
        out
    }

    async fn harvest(&mut self, parity: Parity) -> Vec<(SwitchIx, SwitchResult<MeterSnapshot>)> {
        let sh = self.shared.clone();
        let deadline = self.harvest_deadline;
        let results = join_all(
            self.slots
                .iter_mut()
                .filter(|s| s.monitor)
                .map(|slot| harvest_one(&sh, slot, parity, deadline)),
        )
        .await;
        let monitors: Vec<(SwitchIx, bool, bool)> = self
            .slots
            .iter()
            .filter(|s| s.monitor)
            .map(|s| {
                let healthy = s.client.as_ref().is_some_and(|c| c.healthy());
                (s.bound.ix, healthy, s.late.is_some())
            })
            .collect();
        let mut out = Vec::new();
        for ((ix, healthy, late), r) in monitors.into_iter().zip(results) {
            // A stream that broke during the epoch means the switch may have restarted
            // since the flip: its counts cannot be trusted.
            let r = match r {
                Ok(_) if !healthy => Err(SwitchError::Unreachable(
                    "lost the P4Runtime stream during the epoch".into(),
                )),
                r => r,
            };
            if let Err(e) = &r {
                self.counters.harvest_errors += 1;
                self.counters.harvests_late += u64::from(late);
                self.note(ix, e);
            }
            out.push((ix, r));
        }
        // Transit switches that went away during the epoch also spoil the segments they carry.
        let lost: Vec<SwitchIx> = self
            .slots
            .iter()
            .filter(|s| !s.monitor && !s.client.as_ref().is_some_and(|c| c.healthy()))
            .map(|s| s.bound.ix)
            .collect();
        for ix in lost {
            self.note(
                ix,
                &SwitchError::Unreachable("lost the P4Runtime stream during the epoch".into()),
            );
        }
        out
    }

    async fn apply(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)> {
        // Switches are written in parallel, so order across switches is kept by waves: a USM
        // rule that started counting (and marking) before its DSM rule existed downstream would
        // read as loss. Removals of USM rules go first, installs of USM rules last.
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
        failed
    }

    async fn take_reports(&mut self) -> Vec<HhReport> {
        self.take_reports_inner()
    }

    async fn health(&mut self) -> Vec<(SwitchIx, SwitchError)> {
        std::mem::take(&mut self.events)
    }
}

impl Bmv2Fabric {
    /// One wave of rule changes, every switch written in parallel.
    async fn apply_wave(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)> {
        let prog = &self.shared.prog;
        let mut per_switch: BTreeMap<SwitchIx, Vec<(RuleOp, Update)>> = BTreeMap::new();
        let mut failed = Vec::new();
        for op in ops {
            let Some(slot) = self.slots.get_mut(op.switch() as usize) else {
                failed.push((op.clone(), SwitchError::Other("no such switch".into())));
                continue;
            };
            let r = &mut slot.rules;
            let (kind, entry) = match *op {
                RuleOp::InstallDsm { flow, path_bf, .. } => (
                    r.dsm
                        .insert((flow, path_bf))
                        .then_some(update::Type::Insert),
                    prog.dsm_entry(&flow, path_bf),
                ),
                RuleOp::RemoveDsm { flow, path_bf, .. } => (
                    r.dsm
                        .remove(&(flow, path_bf))
                        .then_some(update::Type::Delete),
                    prog.dsm_entry(&flow, path_bf),
                ),
                RuleOp::InstallUsm { flow, .. } => (
                    r.usm.insert(flow).then_some(update::Type::Insert),
                    prog.usm_entry(&flow),
                ),
                RuleOp::RemoveUsm { flow, .. } => (
                    r.usm.remove(&flow).then_some(update::Type::Delete),
                    prog.usm_entry(&flow),
                ),
                RuleOp::InstallHh { path_bf, eta, .. } => {
                    let kind = match r.hh.insert(path_bf, eta) {
                        None => Some(update::Type::Insert),
                        Some(old) if old != eta => Some(update::Type::Modify),
                        Some(_) => None,
                    };
                    (kind, prog.hh_entry(path_bf, eta))
                }
                RuleOp::RemoveHh { path_bf, .. } => (
                    r.hh.remove(&path_bf).map(|_| update::Type::Delete),
                    prog.hh_entry(path_bf, 0),
                ),
            };
            if let Some(kind) = kind {
                per_switch.entry(op.switch()).or_default().push((
                    op.clone(),
                    Update {
                        r#type: kind as i32,
                        entity: Some(table_entity(entry)),
                    },
                ));
            }
        }
        let batch = self.shared.opts.write_batch;
        let mut work: Vec<(&mut Slot, Vec<(RuleOp, Update)>)> = Vec::new();
        for slot in self.slots.iter_mut() {
            if let Some(list) = per_switch.remove(&slot.bound.ix) {
                work.push((slot, list));
            }
        }
        let results = join_all(work.into_iter().map(|(slot, list)| async move {
            let mut failed = Vec::new();
            let Some(c) = slot.client.as_mut().filter(|c| c.healthy()) else {
                // Kept in the desired rules: the switch gets them when it is configured again.
                let e = SwitchError::Unreachable(format!("{} is not connected", slot.bound.name));
                return list.into_iter().map(|(op, _)| (op, e.clone())).collect();
            };
            for chunk in list.chunks(batch.max(1)) {
                let ups: Vec<Update> = chunk.iter().map(|(_, u)| u.clone()).collect();
                if let Err(e) = c.write(ups, batch).await {
                    let se = to_switch_error(&e);
                    match &e {
                        P4RtError::Rpc { details, .. } if !details.is_empty() => {
                            for (i, _, msg) in details {
                                if let Some((op, _)) = chunk.get(*i) {
                                    failed.push((op.clone(), SwitchError::Other(msg.clone())));
                                }
                            }
                        }
                        _ => failed.extend(chunk.iter().map(|(op, _)| (op.clone(), se.clone()))),
                    }
                }
            }
            failed
        }))
        .await;
        for r in results {
            failed.extend(r);
        }
        self.counters.write_errors += failed.len() as u64;
        failed
    }

    fn take_reports_inner(&mut self) -> Vec<HhReport> {
        let mut out = Vec::new();
        let mut decode_errors = 0;
        for slot in self.slots.iter_mut().filter(|s| s.monitor) {
            let Some(c) = slot.client.as_mut() else {
                continue;
            };
            for list in c.take_digests() {
                for d in &list.data {
                    match self.shared.prog.decode_hh(slot.bound.ix, d) {
                        Ok(r) => out.push(r),
                        Err(e) => {
                            decode_errors += 1;
                            tracing::warn!(switch = slot.bound.name, "bad HH digest: {e}");
                        }
                    }
                }
            }
            let dropped = c
                .stats
                .digests_dropped
                .load(std::sync::atomic::Ordering::Relaxed);
            self.counters.digests_dropped += dropped - slot.digest_dropped_seen;
            slot.digest_dropped_seen = dropped;
        }
        self.counters.digests += out.len() as u64;
        self.counters.digest_decode_errors += decode_errors;
        out
    }
}
