//! The BMv2 driver (`simple_switch_grpc`): P4Runtime for the pipeline, tables, multicast groups
//! and digests; BMv2's Thrift runtime for the registers (its P4Runtime server has no register
//! reads). Thrift calls block, so they run off the async runtime; a read still running when the
//! fabric gave up on it is waited for (and discarded) before the next one starts.

mod read_plan;
mod reads;
mod registers;

pub use registers::meter_cells;

use super::p4runtime;
use crate::bmv2_thrift::ThriftClient;
use crate::contract::Program;
use crate::driver::{Arbitrated, Attach, Digests, DriverError, Installed, SwitchDriver};
use crate::entries::{McGroup, Write};
use crate::meters::{Cell, MeterCells};
use crate::p4info::P4InfoFile;
use crate::p4rt::{P4RtClient, P4RtConfig, P4RtError};
use crate::switches::BoundSwitch;
use bfrt_proto::p4rt::update;
use registers::ThriftRead;
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
    pub p4info: P4InfoFile,
    pub device_config: Vec<u8>,
    pub program: Program,
    pub cookie: u64,
}

impl Bmv2Program {
    /// Resolves the contract against `p4info`; fails naming what differs.
    pub fn new(
        p4info: P4InfoFile,
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
    /// Bytes over every Thrift connection the driver made.
    thrift_wire: Arc<std::sync::Mutex<crate::bmv2_thrift::WireBytes>>,
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
            thrift_wire: Arc::default(),
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

    /// Writes `writes` straight to this switch (tests that program one switch by hand).
    pub async fn write_now(&mut self, writes: &[Write]) -> Vec<(usize, DriverError)> {
        self.write(writes).await
    }
}

impl Arbitrated for Bmv2Driver {
    /// Arbitration with this driver's election id, which should be the lowest there is (the
    /// standby's probe). The probe's stream ends when it returns.
    async fn probe_primary(&self) -> Result<Option<u128>, DriverError> {
        let c = P4RtClient::connect(self.p4rt_config())
            .await
            .map_err(from_p4rt)?;
        Ok(if c.primary {
            None
        } else {
            Some(c.primary_id.unwrap_or(0))
        })
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
        self.read_meter_registers().await
    }

    async fn read_meter_cells(&mut self, cells: &[Cell]) -> Result<Vec<MeterCells>, DriverError> {
        self.read_some_meter_cells(cells).await
    }

    async fn clear_cells(&mut self, cells: &[Cell]) -> Result<(), DriverError> {
        self.zero_meter_cells(cells).await
    }

    async fn clear_hashpipe(&mut self) -> Result<(), DriverError> {
        self.zero_hashpipe().await
    }

    async fn read_installed(&mut self) -> Result<Installed, DriverError> {
        self.read_installed_entries().await
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
