//! The BMv2 driver (`simple_switch_grpc`): P4Runtime for the pipeline, tables, multicast groups
//! and digests; BMv2's Thrift runtime for the registers (its P4Runtime server has no register
//! reads). Thrift calls block, so they run off the async runtime; a read still running when the
//! fabric gave up on it is waited for (and discarded) before the next one starts.

use super::p4runtime;
use crate::bmv2_thrift::{ThriftClient, Timeouts};
use crate::contract::{Program, Register, Table};
use crate::driver::{Attach, Digests, DriverError, Installed, SwitchDriver};
use crate::entries::{McGroup, Write};
use crate::meters::{Cell, MeterCells, RowCells};
use crate::p4info::P4InfoIndex;
use crate::p4rt::{P4RtClient, P4RtConfig, P4RtError};
use crate::switches::BoundSwitch;
use bfrt_proto::p4rt::update;
use std::sync::Arc;
use std::time::Duration;

/// The BMv2 context (simple_switch has one pipeline, context 0).
pub const CXT_ID: i32 = 0;

#[derive(Clone, Debug)]
pub struct Bmv2Options {
    pub election_id: u128,
    /// P4Runtime role; empty = the default role (full access).
    pub role: String,
    /// Deadline of each gRPC and Thrift call, and of connecting.
    pub timeout: Duration,
    pub digest_queue: usize,
    /// Digest messages accepted per second; the excess is dropped and counted.
    pub digest_rate: u32,
    /// Updates per Write request.
    pub write_batch: usize,
    /// Attach to a pipeline another controller owns (P4Runtime roles): never push one; with a
    /// role, send Canary's role configuration in arbitration.
    pub attach: bool,
}

impl Default for Bmv2Options {
    fn default() -> Self {
        Self {
            election_id: 1,
            role: String::new(),
            timeout: Duration::from_secs(2),
            digest_queue: 4096,
            digest_rate: 20_000,
            write_batch: 1000,
            attach: false,
        }
    }
}

/// FNV-1a (64 bit) over the P4Info and the device config: stable across runs and builds of
/// Canary, unlike `std`'s hasher. Never 0, which P4Runtime reads as "no cookie".
pub fn program_cookie(p4info: &[u8], device_config: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in p4info.iter().chain(device_config) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h | 1
}

/// The compiled program every BMv2 switch of a run gets: P4Info, BMv2 JSON, the contract
/// resolved against the P4Info, and the cookie that tags this program's pipeline.
pub struct Bmv2Program {
    pub p4info: P4InfoIndex,
    pub device_config: Vec<u8>,
    pub program: Program,
    pub cookie: u64,
}

impl Bmv2Program {
    /// Resolves the contract against `p4info`; fails naming what differs.
    pub fn new(
        p4info: P4InfoIndex,
        device_config: Vec<u8>,
    ) -> Result<Self, crate::contract::ContractError> {
        let program = Program::from_p4info(&p4info.path, &p4info.info)?;
        // The cookie names the program, not the run: a controller started again (or a standby
        // taking over) recognises the pipeline an earlier one pushed and attaches to it.
        let cookie = program_cookie(&p4info.bytes, &device_config);
        Ok(Self {
            p4info,
            device_config,
            program,
            cookie,
        })
    }
}

type ThriftRead =
    tokio::task::JoinHandle<(Option<ThriftClient>, Result<Vec<MeterCells>, DriverError>)>;

pub struct Bmv2Driver {
    bound: BoundSwitch,
    opts: Bmv2Options,
    prog: Arc<Bmv2Program>,
    monitor: bool,
    /// This switch's pathBF mask (what `switch_config` holds while Canary's state is there).
    mask: u32,
    /// Attached: the cookie of the pipeline found at `connect`.
    attached_cookie: Option<u64>,
    client: Option<P4RtClient>,
    thrift: Option<ThriftClient>,
    /// A register read still running (its caller gave up waiting).
    pending: Option<ThriftRead>,
}

fn from_p4rt(e: P4RtError) -> DriverError {
    match e {
        P4RtError::NotPrimary { .. } => DriverError::NotPrimary(e.to_string()),
        e if e.is_unreachable() => DriverError::Unreachable(e.to_string()),
        e => DriverError::Refused(e.to_string()),
    }
}

impl Bmv2Driver {
    pub fn new(
        bound: BoundSwitch,
        monitor: bool,
        prog: Arc<Bmv2Program>,
        opts: Bmv2Options,
    ) -> Self {
        Self {
            bound,
            opts,
            prog,
            monitor,
            mask: 0,
            attached_cookie: None,
            client: None,
            thrift: None,
            pending: None,
        }
    }

    /// The switch's pathBF mask, which tells an attached driver whether the switch still holds
    /// Canary's configuration.
    pub fn with_mask(mut self, mask: u32) -> Self {
        self.mask = mask;
        self
    }

    fn p4rt_config(&self) -> P4RtConfig {
        let b = &self.bound;
        let mut c = P4RtConfig::new(&b.name, &b.endpoint.grpc, b.endpoint.device_id);
        c.election_id = self.opts.election_id;
        c.role = self.opts.role.clone();
        if !c.role.is_empty() {
            c.role_config = Some(crate::roles::pack(&crate::roles::canary_role_config(
                &self.prog.program,
            )));
        }
        c.tls = b.endpoint.tls.clone();
        c.timeout = self.opts.timeout;
        c.digest_queue = self.opts.digest_queue;
        c.digest_rate = self.opts.digest_rate;
        c
    }

    fn client(&mut self) -> Result<&mut P4RtClient, DriverError> {
        self.client
            .as_mut()
            .ok_or_else(|| DriverError::Unreachable("not connected".into()))
    }

    async fn enable_digest(&mut self) -> Result<(), DriverError> {
        if !self.monitor {
            return Ok(());
        }
        let id = self.prog.program.digest.id;
        self.client()?
            .enable_digest(
                id,
                Duration::from_millis(10),
                64,
                Duration::from_millis(100),
            )
            .await
            .map_err(from_p4rt)
    }

    fn thrift_addr(&self) -> Result<String, DriverError> {
        self.bound.endpoint.thrift.clone().ok_or_else(|| {
            DriverError::Refused(format!(
                "{} has no `thrift` address in the switches file: BMv2 registers are read over Thrift",
                self.bound.name
            ))
        })
    }

    /// Runs `f` on the Thrift connection off the async runtime (connecting first if needed).
    async fn with_thrift<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut ThriftClient) -> Result<T, DriverError> + Send + 'static,
    ) -> Result<T, DriverError> {
        self.finish_pending().await;
        let addr = self.thrift_addr()?;
        let (name, timeout, kept) = (
            self.bound.name.clone(),
            self.opts.timeout,
            self.thrift.take(),
        );
        let (t, r) = tokio::task::spawn_blocking(move || {
            let mut t = match kept {
                Some(t) => t,
                None => match ThriftClient::connect(
                    name,
                    addr.as_str(),
                    Timeouts {
                        connect: timeout,
                        io: timeout,
                    },
                ) {
                    Ok(t) => t,
                    Err(e) => return (None, Err(DriverError::Unreachable(e.to_string()))),
                },
            };
            let r = f(&mut t);
            (r.is_ok().then_some(t), r)
        })
        .await
        .map_err(|e| DriverError::Unreachable(format!("Thrift task: {e}")))?;
        self.thrift = t;
        r
    }

    /// Waits for a read the fabric gave up on (bounded by the Thrift I/O timeout inside it).
    async fn finish_pending(&mut self) {
        if let Some(p) = self.pending.take() {
            if let Ok((t, _)) = p.await {
                self.thrift = t;
            }
        }
    }
}

fn rows(meters: &crate::contract::MeterRegisters) -> Vec<(String, String)> {
    meters
        .rows()
        .map(|r| (r.id.name.clone(), r.count.name.clone()))
        .collect()
}

fn read_cells(
    t: &mut ThriftClient,
    names: &[(String, String)],
    usm_rows: usize,
) -> Result<Vec<MeterCells>, DriverError> {
    let flat: Vec<&str> = names
        .iter()
        .flat_map(|(a, b)| [a.as_str(), b.as_str()])
        .collect();
    let arrays = t
        .register_read_all_many(CXT_ID, &flat)
        .map_err(|e| DriverError::Unreachable(e.to_string()))?;
    Ok(vec![meter_cells(&arrays, usm_rows)])
}

/// The meter rows from the register arrays as read, (ID, count) per row, USM rows first. An
/// unpaired last array is left out (the decoder then finds a row missing).
pub fn meter_cells(arrays: &[Vec<i64>], usm_rows: usize) -> MeterCells {
    let as_u64 = |v: &Vec<i64>| v.iter().map(|&x| x as u64).collect::<Vec<u64>>();
    let mut cells = MeterCells::default();
    for (i, pair) in arrays.chunks_exact(2).enumerate() {
        // The ID register first (see `meters`): it is first in each pair of names.
        let row = RowCells::from_bmv2(&as_u64(&pair[0]), &as_u64(&pair[1]));
        if i < usm_rows {
            cells.usm.push(row);
        } else {
            cells.dsm.push(row);
        }
    }
    cells
}

impl Bmv2Driver {
    /// Packets counted in cell `index` of the indirect counter `counter_id` (P4Runtime read).
    pub async fn read_counter(&mut self, counter_id: u32, index: i64) -> Result<u64, DriverError> {
        use bfrt_proto::p4rt::{entity, CounterEntry, Entity, Index};
        let e = Entity {
            entity: Some(entity::Entity::CounterEntry(CounterEntry {
                counter_id,
                index: Some(Index { index }),
                data: None,
            })),
        };
        let got = self.client()?.read(vec![e]).await.map_err(from_p4rt)?;
        p4runtime::counter_packets(&got).ok_or_else(|| {
            DriverError::Refused(format!(
                "counter {counter_id}[{index}]: no counter entry in the answer"
            ))
        })
    }

    /// `switch_config`'s default action arguments in the contract's order; empty when the
    /// table is back at the program's default (a restart or a new pipeline).
    async fn read_config(&mut self) -> Result<Vec<u128>, DriverError> {
        use bfrt_proto::p4rt::{entity, Entity, TableEntry};
        let t = self.prog.program.table(Table::SwitchConfig).clone();
        let e = Entity {
            entity: Some(entity::Entity::TableEntry(TableEntry {
                table_id: t.id,
                is_default_action: true,
                ..Default::default()
            })),
        };
        let got = self.client()?.read(vec![e]).await.map_err(from_p4rt)?;
        // The program's own default (no action of ours) reads as "not configured".
        Ok(p4runtime::default_action_args(&t, got).unwrap_or_default())
    }

    /// Whether `switch_config` holds this switch's configuration: after a restart or a new
    /// pipeline its default action reads back as the program's, not Canary's.
    async fn holds_config(&mut self) -> Result<bool, DriverError> {
        let args = self.read_config().await?;
        Ok(crate::entries::holds_config(&args, self.monitor, self.mask))
    }

    /// Who is primary on this switch, asked without taking it from anyone: arbitration with
    /// this driver's election id, which should be the lowest there is (the standby's probe).
    /// `None`: no controller is primary. The probe's stream ends when it returns.
    pub async fn probe_primary(&self) -> Result<Option<u128>, DriverError> {
        let c = P4RtClient::connect(self.p4rt_config())
            .await
            .map_err(from_p4rt)?;
        Ok(if c.primary {
            None
        } else {
            Some(c.primary_id.unwrap_or(0))
        })
    }

    /// Writes `writes` straight to this switch (tests that program one switch by hand).
    pub async fn write_now(&mut self, writes: &[Write]) -> Vec<(usize, DriverError)> {
        self.write(writes).await
    }
}

impl SwitchDriver for Bmv2Driver {
    fn name(&self) -> &str {
        &self.bound.name
    }

    async fn connect(&mut self) -> Result<Attach, DriverError> {
        self.client = None;
        self.thrift = None;
        let mut c = P4RtClient::connect_primary(self.p4rt_config())
            .await
            .map_err(from_p4rt)?;
        let cookie = c.pipeline_cookie().await.map_err(from_p4rt)?;
        self.client = Some(c);
        if self.opts.attach {
            if cookie.is_none() {
                self.client = None;
                return Err(DriverError::Unreachable(format!(
                    "{}: no pipeline yet (the controller that owns it has not pushed it)",
                    self.bound.name
                )));
            }
            self.attached_cookie = cookie;
            let kept = self.holds_config().await?;
            self.enable_digest().await?;
            return Ok(if kept { Attach::Kept } else { Attach::Fresh });
        }
        // Our program is not enough: pushed again by someone else, or the switch restarted
        // and got it back, it holds none of Canary's state.
        if cookie == Some(self.prog.cookie) && self.holds_config().await? {
            self.enable_digest().await?;
            Ok(Attach::Kept)
        } else {
            Ok(Attach::Fresh)
        }
    }

    fn connected(&self) -> bool {
        self.client.as_ref().is_some_and(|c| c.healthy())
    }

    async fn load_pipeline(&mut self) -> Result<(), DriverError> {
        let prog = self.prog.clone();
        self.client()?
            .set_pipeline(&prog.p4info.bytes, &prog.device_config, prog.cookie)
            .await
            .map_err(from_p4rt)?;
        self.enable_digest().await
    }

    fn program(&self) -> Option<&Program> {
        Some(&self.prog.program)
    }

    async fn write(&mut self, writes: &[Write]) -> Vec<(usize, DriverError)> {
        let prog = self.prog.clone();
        let mut failed = Vec::new();
        let mut ups = Vec::with_capacity(writes.len());
        let mut index = Vec::with_capacity(writes.len());
        for (i, w) in writes.iter().enumerate() {
            match p4runtime::write_update(&prog.program, w) {
                Ok(u) => {
                    ups.push(u);
                    index.push(i);
                }
                Err(e) => failed.push((i, DriverError::Refused(e.to_string()))),
            }
        }
        let batch = self.opts.write_batch.max(1);
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => return (0..writes.len()).map(|i| (i, e.clone())).collect(),
        };
        for (chunk, idx) in ups.chunks(batch).zip(index.chunks(batch)) {
            if let Err(e) = client.write(chunk.to_vec(), batch).await {
                match &e {
                    P4RtError::Rpc { details, .. } if !details.is_empty() => {
                        for (j, _, msg) in details {
                            if let Some(&i) = idx.get(*j) {
                                failed.push((i, DriverError::Refused(msg.clone())));
                            }
                        }
                    }
                    _ => {
                        let de = from_p4rt(e);
                        failed.extend(idx.iter().map(|&i| (i, de.clone())));
                    }
                }
            }
        }
        failed.sort_by_key(|(i, _)| *i);
        failed
    }

    async fn write_groups(&mut self, groups: &[McGroup]) -> Result<(), DriverError> {
        let ups: Vec<_> = groups
            .iter()
            .map(|g| p4runtime::group_update(g, update::Type::Insert))
            .collect();
        let batch = self.opts.write_batch;
        self.client()?.write(ups, batch).await.map_err(from_p4rt)
    }

    async fn read_meters(&mut self) -> Result<Vec<MeterCells>, DriverError> {
        self.finish_pending().await;
        let addr = self.thrift_addr()?;
        let names = rows(&self.prog.program.meters);
        let usm_rows = self.prog.program.meters.usm.len();
        let (name, timeout, kept) = (
            self.bound.name.clone(),
            self.opts.timeout,
            self.thrift.take(),
        );
        let task: ThriftRead = tokio::task::spawn_blocking(move || {
            let mut t = match kept {
                Some(t) => t,
                None => match ThriftClient::connect(
                    name,
                    addr.as_str(),
                    Timeouts {
                        connect: timeout,
                        io: timeout,
                    },
                ) {
                    Ok(t) => t,
                    Err(e) => return (None, Err(DriverError::Unreachable(e.to_string()))),
                },
            };
            let r = read_cells(&mut t, &names, usm_rows);
            (r.is_ok().then_some(t), r)
        });
        // Kept here while awaited: if the caller gives up, the next call finishes it.
        self.pending = Some(task);
        let r = self.pending.as_mut().expect("just set").await;
        self.pending = None;
        let (t, r) = r.map_err(|e| DriverError::Unreachable(format!("Thrift task: {e}")))?;
        self.thrift = t;
        r
    }

    async fn clear_cells(&mut self, cells: &[Cell]) -> Result<(), DriverError> {
        let meters = &self.prog.program.meters;
        let targets: Vec<(String, i32)> = cells
            .iter()
            .flat_map(|c| {
                let row = if c.dsm {
                    &meters.dsm[c.row]
                } else {
                    &meters.usm[c.row]
                };
                [
                    (row.id.name.clone(), c.index as i32),
                    (row.count.name.clone(), c.index as i32),
                ]
            })
            .collect();
        self.with_thrift(move |t| {
            for (name, i) in &targets {
                t.register_write(CXT_ID, name, *i, 0)
                    .map_err(|e| DriverError::Unreachable(e.to_string()))?;
            }
            Ok(())
        })
        .await
    }

    async fn clear_hashpipe(&mut self) -> Result<(), DriverError> {
        let regs: Vec<(String, usize)> = self
            .prog
            .program
            .hashpipe
            .iter()
            .map(|r: &Register| (r.name.clone(), r.size))
            .collect();
        self.with_thrift(move |t| {
            let arrays: Vec<(&str, usize)> = regs.iter().map(|(n, s)| (n.as_str(), *s)).collect();
            t.register_zero_many(CXT_ID, &arrays)
                .map_err(|e| DriverError::Unreachable(e.to_string()))
        })
        .await
    }

    async fn read_installed(&mut self) -> Result<Installed, DriverError> {
        use bfrt_proto::p4rt::{entity, Entity, TableEntry};
        let prog = self.prog.clone();
        let mut out = Installed {
            config: self.read_config().await?,
            ..Default::default()
        };
        for table in [Table::Usm, Table::Dsm, Table::Hh] {
            // A table id alone reads every entry of the table.
            let e = Entity {
                entity: Some(entity::Entity::TableEntry(TableEntry {
                    table_id: prog.program.table(table).id,
                    ..Default::default()
                })),
            };
            for got in self.client()?.read(vec![e]).await.map_err(from_p4rt)? {
                let Some(entity::Entity::TableEntry(te)) = got.entity else {
                    continue;
                };
                let rule = p4runtime::entry_of(&prog.program, table, &te)
                    .and_then(|e| crate::entries::read_rule(&e))
                    .map_err(|e| DriverError::Program(format!("{}: {e}", self.bound.name)))?;
                out.rules.push(rule);
            }
        }
        Ok(out)
    }

    async fn pipeline_unchanged(&mut self) -> Result<bool, DriverError> {
        if !self.opts.attach {
            return Ok(true);
        }
        // A new cookie, or the same program pushed again (its `switch_config` back to the
        // program's default): either way Canary's rules and meters are gone.
        let now = self.client()?.pipeline_cookie().await.map_err(from_p4rt)?;
        Ok(now.is_some() && now == self.attached_cookie && self.holds_config().await?)
    }

    fn take_digests(&mut self) -> Digests {
        let mut out = Digests::default();
        let prog = self.prog.clone();
        let Some(c) = self.client.as_mut() else {
            return out;
        };
        for list in c.take_digests() {
            p4runtime::decode_digest_list(&prog.program, &list, &mut out);
        }
        out.dropped_total = c
            .stats
            .digests_dropped
            .load(std::sync::atomic::Ordering::Relaxed);
        out
    }
}
