//! The chaos driver: a switch of the simulated data plane (`canary_sim::SimFabric::driven`,
//! the reference model at every hop, real traffic and loss) behind the driver interface, so
//! the generic fabric and the controller run above it exactly as above BMv2 or Tofino, and
//! faults can be injected that real switches show only now and then:
//!
//! * [`Fault::Disconnect`]: the control channel drops; the switch keeps forwarding and counting.
//! * [`Fault::Restart`]: the switch reboots: it forwards nothing for a while, then answers with
//!   empty tables and registers.
//! * [`Fault::SlowHarvest`]: register reads take longer than the epoch allows.
//! * [`Fault::TornRead`]: a register read returns only part of the cells.
//! * [`Fault::DigestFlood`]: far more HH digests than the digest queue holds.
//! * [`Fault::RefuseWrites`]: rule writes are refused.
//! * [`Fault::OtherPipeline`]: the switch comes back running another program.
//! * [`Fault::CutOff`]: one controller's connection to the switch is cut (a partition).
//!
//! Several controllers' drivers may share a switch ([`ChaosDriver::another_controller`]); the
//! switch arbitrates between them by election id as P4Runtime does (`arbitration`), and a
//! standby asks it who is primary ([`Arbitrated`]).
//!
//! Faults are injected by a test ([`ChaosDriver::inject`]) or drawn from a seeded plan
//! ([`ChaosPlan`]). Tables, registers and answers are [`crate::model_target`]'s: what the
//! program does. The data plane's time is the fabric's ([`PlaneClock`]): it passes, and traffic
//! flows, while the controller waits.
mod arbitration;
mod clock;
mod faults;
mod lifeline;
mod reads_and_writes;

pub use clock::PlaneClock;
pub use faults::{ChaosPlan, Fault};
pub use lifeline::Lifeline;

use crate::model_target::ModelTables;
use canary_core::fabric::Fabric;
use canary_core::topo::SwitchIx;
use canary_core::FlowId;
use canary_sim::SimFabric;
use canary_switch::contract::Program;
use canary_switch::driver::{Arbitrated, Attach, Digests, DriverError, Installed, SwitchDriver};
use canary_switch::entries::{McGroup, Write};
use canary_switch::meters::{Cell, MeterCells};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The simulated data plane every chaos driver of a fabric shares.
pub type Plane = Arc<Mutex<SimFabric>>;

fn lock(plane: &Plane) -> MutexGuard<'_, SimFabric> {
    // A test that panicked while holding the plane has failed already.
    plane.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pipeline {
    None,
    Ours,
    Other { replaceable: bool },
}

#[derive(Clone, Debug)]
pub struct ChaosOptions {
    /// HH digests held between two takes; the excess is dropped and counted.
    pub digest_queue: usize,
}

impl Default for ChaosOptions {
    fn default() -> Self {
        Self { digest_queue: 4096 }
    }
}

/// What the switch itself holds, whichever controller's driver talks to it: its tables, its
/// pipeline, and when it is back from a reboot.
#[derive(Debug)]
struct SwitchSide {
    tables: ModelTables,
    pipeline: Pipeline,
    /// Fabric time the switch is back after a restart.
    down_until: Option<Duration>,
    arbitration: arbitration::Arbitration,
}

/// One switch of the plane as a driver sees it.
pub struct ChaosDriver {
    name: String,
    ix: SwitchIx,
    plane: Plane,
    program: Arc<Program>,
    opts: ChaosOptions,
    switch: Arc<Mutex<SwitchSide>>,
    lifeline: Option<Lifeline>,
    connected: bool,
    election_id: u128,
    /// This driver's stream to the switch, while connected.
    stream: Option<arbitration::Stream>,
    /// Fabric time this driver's connection is cut until ([`Fault::CutOff`]).
    cut_until: Option<Duration>,
    refuse_connects: u32,
    slow: Option<(Duration, u32)>,
    torn: bool,
    refuse_writes: usize,
    flood: Vec<(FlowId, u32)>,
    dropped: u64,
    /// What was injected, in order (for tests and logs).
    pub injected: Vec<Fault>,
}

impl ChaosDriver {
    pub fn new(
        name: impl Into<String>,
        ix: SwitchIx,
        plane: Plane,
        program: Arc<Program>,
        opts: ChaosOptions,
    ) -> Self {
        Self {
            name: name.into(),
            ix,
            plane,
            program,
            opts,
            switch: Arc::new(Mutex::new(SwitchSide {
                tables: ModelTables::default(),
                pipeline: Pipeline::None,
                down_until: None,
                arbitration: Default::default(),
            })),
            lifeline: None,
            connected: false,
            election_id: 2,
            stream: None,
            cut_until: None,
            refuse_connects: 0,
            slow: None,
            torn: false,
            refuse_writes: 0,
            flood: Vec::new(),
            dropped: 0,
            injected: Vec::new(),
        }
    }

    /// A driver of another controller process for the same switch (one started after this
    /// one's died, or a standby): it shares the switch, not this driver's connection or faults.
    pub fn another_controller(&self) -> ChaosDriver {
        ChaosDriver {
            switch: self.switch.clone(),
            ..ChaosDriver::new(
                self.name.clone(),
                self.ix,
                self.plane.clone(),
                self.program.clone(),
                self.opts.clone(),
            )
        }
    }

    /// Arbitrates with `election_id` (2 unless set: above a standby's probe, 1).
    pub fn with_election_id(mut self, election_id: u128) -> Self {
        self.election_id = election_id;
        self
    }

    /// This driver's controller dies when `lifeline` runs out.
    pub fn set_lifeline(&mut self, lifeline: Lifeline) {
        if let Some(s) = &self.stream {
            *s.lock().unwrap_or_else(|e| e.into_inner()) = Some(lifeline.clone());
        }
        self.lifeline = Some(lifeline);
    }

    /// Hangs forever once the controller's lifeline ran out (the call of a dead process).
    async fn alive(&self, calls: usize) -> usize {
        match &self.lifeline {
            None => calls,
            Some(l) => {
                let n = l.take(calls);
                if n == 0 {
                    std::future::pending::<()>().await;
                }
                n
            }
        }
    }

    fn side(&self) -> MutexGuard<'_, SwitchSide> {
        self.switch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A call may reach the switch, and change it: connected, and still primary.
    fn check(&self) -> Result<(), DriverError> {
        if !self.connected {
            return Err(DriverError::Unreachable(format!(
                "{}: not connected",
                self.name
            )));
        }
        match &self.stream {
            Some(s) if self.side().arbitration.holds(s) => Ok(()),
            _ => Err(DriverError::NotPrimary(format!(
                "{}: another controller is primary",
                self.name
            ))),
        }
    }

    /// The connection is cut off ([`Fault::CutOff`]) at fabric time `now`.
    fn cut_off(&self, now: Duration) -> Result<(), DriverError> {
        match self.cut_until {
            Some(until) if now < until => Err(DriverError::Unreachable(format!(
                "{}: no route to the switch",
                self.name
            ))),
            _ => Ok(()),
        }
    }

    /// The connection drops: the switch sees this driver's stream end.
    fn drop_connection(&mut self) {
        self.connected = false;
        self.stream = None;
    }
}

impl Arbitrated for ChaosDriver {
    async fn probe_primary(&self) -> Result<Option<u128>, DriverError> {
        let now = lock(&self.plane).now();
        self.cut_off(now)?;
        let mut side = self.side();
        if side.down_until.is_some_and(|until| now < until) {
            return Err(DriverError::Unreachable(format!(
                "{}: rebooting",
                self.name
            )));
        }
        Ok(side.arbitration.primary())
    }
}

impl SwitchDriver for ChaosDriver {
    fn name(&self) -> &str {
        &self.name
    }

    async fn connect(&mut self) -> Result<Attach, DriverError> {
        self.alive(1).await;
        self.drop_connection();
        self.cut_off(lock(&self.plane).now())?;
        let until = self.side().down_until;
        if let Some(until) = until {
            let mut plane = lock(&self.plane);
            if plane.now() < until {
                return Err(DriverError::Unreachable(format!(
                    "{}: rebooting",
                    self.name
                )));
            }
            plane.set_switch_down(self.ix, false);
            self.side().down_until = None;
        }
        if self.refuse_connects > 0 {
            self.refuse_connects -= 1;
            return Err(DriverError::Unreachable(format!(
                "{}: connection refused",
                self.name
            )));
        }
        let stream = arbitration::Stream::new(Mutex::new(self.lifeline.clone()));
        let won = self.side().arbitration.arbitrate(self.election_id, &stream);
        if let Err(primary) = won {
            return Err(DriverError::NotPrimary(format!(
                "{}: election id {primary:#x} is primary (ours {:#x})",
                self.name, self.election_id
            )));
        }
        self.stream = Some(stream);
        self.connected = true;
        // Ours and configured (a switch restarted into our pipeline holds nothing of ours).
        let kept = self.side().pipeline == Pipeline::Ours
            && lock(&self.plane).switch_mut(self.ix).config().epoch >= 2;
        Ok(if kept { Attach::Kept } else { Attach::Fresh })
    }

    fn connected(&self) -> bool {
        self.connected
    }

    async fn load_pipeline(&mut self) -> Result<(), DriverError> {
        self.alive(1).await;
        self.check()?;
        if self.side().pipeline == (Pipeline::Other { replaceable: false }) {
            return Err(DriverError::Program(format!(
                "{}: the switch runs another program, which cannot be replaced from here",
                self.name
            )));
        }
        // A new pipeline starts empty.
        let mut plane = lock(&self.plane);
        let mut side = self.side();
        side.tables.restart(plane.switch_mut(self.ix));
        side.pipeline = Pipeline::Ours;
        Ok(())
    }

    fn program(&self) -> Option<&Program> {
        Some(&self.program)
    }

    async fn write(&mut self, writes: &[Write]) -> Vec<(usize, DriverError)> {
        // A controller killed mid-batch: the writes before reach the switch, then it hangs.
        let reach = self.alive(writes.len()).await;
        if reach < writes.len() {
            let _ = Box::pin(self.write_now(&writes[..reach])).await;
            std::future::pending::<()>().await;
        }
        self.write_now(writes).await
    }

    async fn write_groups(&mut self, groups: &[McGroup]) -> Result<(), DriverError> {
        self.alive(1).await;
        self.check()?;
        let mut plane = lock(&self.plane);
        self.side()
            .tables
            .write_groups(plane.switch_mut(self.ix), groups);
        Ok(())
    }

    async fn read_meters(&mut self) -> Result<Vec<MeterCells>, DriverError> {
        self.alive(1).await;
        self.read_meters_now().await
    }

    async fn clear_cells(&mut self, cells: &[Cell]) -> Result<(), DriverError> {
        self.alive(1).await;
        self.check()?;
        let mut plane = lock(&self.plane);
        self.side()
            .tables
            .clear_cells(plane.switch_mut(self.ix), cells);
        Ok(())
    }

    async fn clear_hashpipe(&mut self) -> Result<(), DriverError> {
        self.alive(1).await;
        self.check()?;
        lock(&self.plane).switch_mut(self.ix).clear_hashpipe();
        Ok(())
    }

    async fn read_installed(&mut self) -> Result<Installed, DriverError> {
        self.alive(1).await;
        self.check()?;
        let mut plane = lock(&self.plane);
        Ok(self.side().tables.read_installed(plane.switch_mut(self.ix)))
    }

    fn take_digests(&mut self) -> Digests {
        let mut reports: Vec<(FlowId, u32)> = lock(&self.plane)
            .take_reports_of(self.ix)
            .into_iter()
            .map(|r| (r.flow, r.path_bf))
            .collect();
        reports.append(&mut self.flood);
        if reports.len() > self.opts.digest_queue {
            self.dropped += (reports.len() - self.opts.digest_queue) as u64;
            reports.truncate(self.opts.digest_queue);
        }
        if !self.connected {
            // Digests sent while nobody listened are lost.
            self.dropped += reports.len() as u64;
            reports.clear();
        }
        Digests {
            reports,
            dropped_total: self.dropped,
            bad: vec![],
        }
    }
}
