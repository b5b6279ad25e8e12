//! The Tofino driver: BF Runtime over gRPC, the interface of `bf_switchd` (the SDE's switch
//! daemon, which loads the compiled program at start).
//!
//! * connect: the stream channel (subscribe as master of the device, learn notifications on),
//!   then the device's programs (`GetForwardingPipelineConfig`): Canary's contract is resolved
//!   from the program's `bfrt.json` and the packet replication engine from the non-P4 one. A
//!   switch whose program does not fit the contract is refused, naming what differs.
//! * load_pipeline: BIND this client to the loaded program (a program cannot be pushed over
//!   BF-RT the way P4Runtime pushes one) and clear Canary's tables, registers and multicast
//!   groups, so the switch holds nothing before it is configured.
//! * write: table entries in Writes of [`TofinoOptions::write_batch`]; per-update failures are
//!   read from the status details.
//! * read_meters: the registers' `Sync` operation, then one Read of every meter register; each
//!   value comes once per pipe, and the fabric merges pipes.
//! * digests: a task reads the stream, acknowledges every learn list and queues its digests
//!   (bounded; the excess is dropped and counted).
//!
//! A switch is taken as having kept Canary's state when its `switch_config` still holds this
//! switch's configuration (monitor flag and mask): after `bf_switchd` restarts every table is
//! empty, and the default entry reads back as zeros.

mod reads;
mod session;
mod writes;

use super::bfruntime::{self, PreTables};
use crate::contract::{Program, Table};
use crate::driver::{Attach, Digests, DriverError, Installed, SwitchDriver};
use crate::entries::{McGroup, Write};
use crate::meters::{Cell, MeterCells};
use crate::switches::BoundSwitch;
use bfrt_proto::bfrt::{
    set_forwarding_pipeline_config_request as fpc, update, ForwardingPipelineConfig,
    SetForwardingPipelineConfigRequest, TargetDevice, Update,
};
use session::{open, Session};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// All pipes (`BF_DEV_PIPE_ALL`).
pub const ALL_PIPES: u32 = 0xffff;
/// Both directions, all parsers.
pub const ALL: u32 = 0xff;

#[derive(Clone, Debug)]
pub struct TofinoOptions {
    /// The program's name as `bf_switchd` loaded it.
    pub p4_name: String,
    pub client_id: u32,
    /// Deadline of connecting and of every call.
    pub timeout: Duration,
    /// HH digests queued between two takes; the excess is dropped and counted.
    pub digest_queue: usize,
    /// Updates per Write.
    pub write_batch: usize,
    /// A reader only (a cluster's harvest worker): it subscribes without mastership and
    /// without learn notifications, and refuses to bind or write; it syncs and reads the
    /// meter registers as the controller would.
    pub reader: bool,
}

impl Default for TofinoOptions {
    fn default() -> Self {
        Self {
            p4_name: "canary".into(),
            client_id: 1,
            timeout: Duration::from_secs(2),
            digest_queue: 4096,
            write_batch: 1000,
            reader: false,
        }
    }
}

pub struct TofinoDriver {
    bound: BoundSwitch,
    monitor: bool,
    mask: u32,
    opts: TofinoOptions,
    /// The contract as the run resolved it (from the first switch or the given bfrt.json):
    /// every switch must run the same program.
    expected: Arc<Program>,
    program: Option<Program>,
    pre: Option<PreTables>,
    session: Option<Session>,
}

fn unreachable(e: impl std::fmt::Display) -> DriverError {
    DriverError::Unreachable(e.to_string())
}

fn from_status(name: &str, what: &str, s: tonic::Status) -> DriverError {
    let m = format!("{name}: {what}: {:?}: {}", s.code(), s.message());
    match s.code() {
        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled => {
            DriverError::Unreachable(m)
        }
        _ => DriverError::Refused(m),
    }
}

/// Resolves Canary's contract from the program switch `bound` runs (to size the fabric before
/// any switch is configured).
pub async fn fetch_program(
    bound: &BoundSwitch,
    opts: &TofinoOptions,
) -> Result<Program, DriverError> {
    let (_, json, _) = open(bound, opts).await?;
    Program::from_bfrt_json(&format!("{}: bfrt.json", bound.name), &json)
        .map_err(|e| DriverError::Program(e.to_string()))
}

impl TofinoDriver {
    pub fn new(
        bound: BoundSwitch,
        monitor: bool,
        mask: u32,
        expected: Arc<Program>,
        opts: TofinoOptions,
    ) -> Self {
        Self {
            bound,
            monitor,
            mask,
            opts,
            expected,
            program: None,
            pre: None,
            session: None,
        }
    }

    fn target(&self) -> TargetDevice {
        TargetDevice {
            device_id: self.bound.endpoint.device_id as u32,
            pipe_id: ALL_PIPES,
            direction: ALL,
            prsr_id: ALL,
        }
    }

    fn session(&mut self) -> Result<&mut Session, DriverError> {
        match &mut self.session {
            Some(s) if !s.shared.closed.load(Ordering::Relaxed) => Ok(s),
            _ => Err(DriverError::Unreachable(format!(
                "{}: not connected",
                self.bound.name
            ))),
        }
    }

    /// Refuses anything but reads on a reader ([`TofinoOptions::reader`]).
    fn writable(&self, what: &str) -> Result<(), DriverError> {
        if self.opts.reader {
            return Err(DriverError::Refused(format!(
                "{}: {what}: this client only reads the meters",
                self.bound.name
            )));
        }
        Ok(())
    }

    fn prog(&self) -> Result<&Program, DriverError> {
        self.program
            .as_ref()
            .ok_or_else(|| DriverError::Program(format!("{}: no program", self.bound.name)))
    }
}

impl SwitchDriver for TofinoDriver {
    fn name(&self) -> &str {
        &self.bound.name
    }

    async fn connect(&mut self) -> Result<Attach, DriverError> {
        self.session = None;
        let (session, json, non_p4) = open(&self.bound, &self.opts).await?;
        let name = &self.bound.name;
        let prog = Program::from_bfrt_json(&format!("{name}: bfrt.json"), &json)
            .map_err(|e| DriverError::Program(e.to_string()))?;
        if prog != *self.expected {
            return Err(DriverError::Program(format!(
                "{name}: runs another build of the program than the other switches \
                 (table or register ids or sizes differ)"
            )));
        }
        let pre = PreTables::from_json(&format!("{name}: non-P4 bfrt.json"), &non_p4)
            .map_err(|e| DriverError::Program(e.to_string()))?;
        self.program = Some(prog);
        self.pre = Some(pre);
        self.session = Some(session);
        if self.opts.reader {
            // A reader keeps nothing of its own on the switch.
            return Ok(Attach::Kept);
        }
        Ok(if self.holds_config().await? {
            Attach::Kept
        } else {
            Attach::Fresh
        })
    }

    fn connected(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(|s| !s.shared.closed.load(Ordering::Relaxed))
    }

    async fn load_pipeline(&mut self) -> Result<(), DriverError> {
        self.writable("BIND")?;
        let req = SetForwardingPipelineConfigRequest {
            device_id: self.bound.endpoint.device_id as u32,
            client_id: self.opts.client_id,
            action: fpc::Action::Bind as i32,
            config: vec![ForwardingPipelineConfig {
                p4_name: self.opts.p4_name.clone(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let (name, timeout) = (self.bound.name.clone(), self.opts.timeout);
        let rpc = &mut self.session()?.rpc;
        tokio::time::timeout(timeout, rpc.set_forwarding_pipeline_config(req))
            .await
            .map_err(|_| unreachable(format!("{name}: no answer to BIND")))?
            .map_err(|s| from_status(&name, "SetForwardingPipelineConfig(BIND)", s))?;
        // Nothing of an earlier run stays: every Canary table, register and group is cleared.
        let prog = self.prog()?.clone();
        let pre = self
            .pre
            .clone()
            .ok_or_else(|| DriverError::Program("no PRE".into()))?;
        let mut clears: Vec<Update> = prog
            .tables()
            .iter()
            .filter(|t| t.table != Table::SwitchConfig)
            .map(|t| bfruntime::clear_table(t.id))
            .collect();
        for r in prog.meters.rows() {
            clears.push(bfruntime::clear_table(r.id.id));
            clears.push(bfruntime::clear_table(r.count.id));
        }
        clears.extend(prog.hashpipe.iter().map(|r| bfruntime::clear_table(r.id)));
        clears.push(bfruntime::clear_table(pre.mgid));
        clears.push(bfruntime::clear_table(pre.node));
        if let Some((_, e)) = self.write_updates(clears).await.into_iter().next() {
            return Err(e);
        }
        Ok(())
    }

    fn program(&self) -> Option<&Program> {
        self.program.as_ref()
    }

    async fn read_installed(&mut self) -> Result<Installed, DriverError> {
        let prog = self.prog()?.clone();
        let config = self.read_config().await?;
        let tables = [Table::Usm, Table::Dsm, Table::Hh];
        let ids: Vec<u32> = tables.iter().map(|&t| prog.table(t).id).collect();
        let mut read = self.read_tables(&ids).await?;
        let mut rules = Vec::new();
        for (t, id) in tables.into_iter().zip(ids) {
            for te in read.remove(&id).unwrap_or_default() {
                let rule = bfruntime::entry_of(&prog, t, &te)
                    .and_then(|e| crate::entries::read_rule(&e))
                    .map_err(|e| DriverError::Program(format!("{}: {e}", self.bound.name)))?;
                rules.push(rule);
            }
        }
        Ok(Installed { rules, config })
    }

    async fn write(&mut self, writes: &[Write]) -> Vec<(usize, DriverError)> {
        let prog = match self.writable("Write").and_then(|()| self.prog()) {
            Ok(p) => p.clone(),
            Err(e) => return (0..writes.len()).map(|i| (i, e.clone())).collect(),
        };
        let mut failed = Vec::new();
        let mut ups = Vec::with_capacity(writes.len());
        let mut index = Vec::with_capacity(writes.len());
        for (i, w) in writes.iter().enumerate() {
            match bfruntime::write_update(&prog, w) {
                Ok(u) => {
                    ups.push(u);
                    index.push(i);
                }
                Err(e) => failed.push((i, DriverError::Refused(e.to_string()))),
            }
        }
        let batch = self.opts.write_batch.max(1);
        let mut start = 0;
        while start < ups.len() {
            let end = (start + batch).min(ups.len());
            let chunk = ups[start..end].to_vec();
            for (j, e) in self.write_updates(chunk).await {
                failed.push((index[start + j], e));
            }
            start = end;
        }
        failed.sort_by_key(|f| f.0);
        failed
    }

    async fn write_groups(&mut self, groups: &[McGroup]) -> Result<(), DriverError> {
        self.writable("multicast groups")?;
        let pre = self
            .pre
            .clone()
            .ok_or_else(|| DriverError::Program("no PRE tables".into()))?;
        let ups: Vec<Update> = groups
            .iter()
            .flat_map(|g| bfruntime::group_updates(&pre, g, update::Type::InsertOrModify))
            .collect();
        match self.write_updates(ups).await.into_iter().next() {
            None => Ok(()),
            Some((_, e)) => Err(e),
        }
    }

    async fn read_meters(&mut self) -> Result<Vec<MeterCells>, DriverError> {
        let prog = self.prog()?.clone();
        let regs: Vec<&crate::contract::Register> =
            prog.meters.rows().flat_map(|r| [&r.id, &r.count]).collect();
        let syncs: Vec<Update> = regs.iter().map(|r| bfruntime::sync_update(r)).collect();
        if let Some((_, e)) = self.write_updates(syncs).await.into_iter().next() {
            return Err(e);
        }
        let ids: Vec<u32> = regs.iter().map(|r| r.id).collect();
        let by_table = self.read_tables(&ids).await?;
        bfruntime::meter_cells(&prog, &by_table)
            .map_err(|e| DriverError::Refused(format!("{}: {e}", self.bound.name)))
    }

    async fn read_meter_cells(&mut self, cells: &[Cell]) -> Result<Vec<MeterCells>, DriverError> {
        let prog = self.prog()?.clone();
        // Every meter register synced, as for a whole read; ID cells are read before counts.
        let (mut ids, mut counts) = (Vec::new(), Vec::new());
        for c in cells {
            let row = prog.meters.row(c.dsm, c.row).ok_or_else(|| {
                DriverError::Program(format!(
                    "{}: no meter row {} to read",
                    self.bound.name, c.row
                ))
            })?;
            for (reg, out) in [(&row.id, &mut ids), (&row.count, &mut counts)] {
                out.push(bfruntime::read_cell(reg, c.index).ok_or_else(|| {
                    DriverError::Program(format!(
                        "{}: cell {} of {}",
                        self.bound.name, c.index, reg.name
                    ))
                })?);
            }
        }
        let syncs: Vec<Update> = prog
            .meters
            .rows()
            .flat_map(|r| {
                [
                    bfruntime::sync_update(&r.id),
                    bfruntime::sync_update(&r.count),
                ]
            })
            .collect();
        if let Some((_, e)) = self.write_updates(syncs).await.into_iter().next() {
            return Err(e);
        }
        ids.extend(counts);
        let by_table = self.read_entities(ids).await?;
        bfruntime::meter_cells_at(&prog, &by_table, cells)
            .map_err(|e| DriverError::Refused(format!("{}: {e}", self.bound.name)))
    }

    async fn clear_cells(&mut self, cells: &[Cell]) -> Result<(), DriverError> {
        self.writable("zeroing meter cells")?;
        let ups = bfruntime::zero_cells(self.prog()?, cells);
        match self.write_updates(ups).await.into_iter().next() {
            None => Ok(()),
            Some((_, e)) => Err(e),
        }
    }

    async fn clear_hashpipe(&mut self) -> Result<(), DriverError> {
        self.writable("clearing HashPipe")?;
        let ups: Vec<Update> = self
            .prog()?
            .hashpipe
            .iter()
            .map(|r| bfruntime::clear_table(r.id))
            .collect();
        match self.write_updates(ups).await.into_iter().next() {
            None => Ok(()),
            Some((_, e)) => Err(e),
        }
    }

    fn take_digests(&mut self) -> Digests {
        let mut out = Digests::default();
        let (Some(s), Some(prog)) = (&self.session, &self.program) else {
            return out;
        };
        let lists =
            std::mem::take(&mut *s.shared.digests.lock().unwrap_or_else(|e| e.into_inner()));
        for list in lists {
            bfruntime::decode_digest_list(prog, &list, &mut out);
        }
        out.dropped_total = s.shared.dropped.load(Ordering::Relaxed);
        out
    }
}
