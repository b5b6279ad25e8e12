//! The targets' drivers: the one part of the daemon that tells BMv2 from Tofino. Each target
//! hands the daemon one driver per switch for every term this controller is primary, and says
//! what a controller another one took over from does next. Apart from [`super::run`], whose
//! loop over the terms is the same for every target.

use super::{load_p4, RunOptions};
use crate::cluster::wire::{program_fingerprint, ReadSwitch, SwitchReads};
use crate::error::{Error, Result};
use crate::setup::Prepared;
use crate::standby;
use canary_core::capacity::Capacity;
use canary_core::topo::SwitchIx;
use canary_switch::contract::Program;
use canary_switch::driver::SwitchDriver;
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Program};
use canary_switch::drivers::tofino::{self, TofinoDriver};
use canary_switch::fabric::WallClock;
use canary_switch::switches::BoundSwitch;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// One term as primary: a driver per switch, in topology order, and what each switch holds.
pub(super) struct Term<D> {
    pub(super) drivers: Vec<D>,
    pub(super) capacity: Capacity,
    /// The switch standbys ask who is primary, if any may: losing it ends the term.
    pub(super) lease: Option<SwitchIx>,
    /// How a cluster's harvest workers read the monitors themselves, where they can (with
    /// `--cluster`, on Tofino); `None`: the controller reads them.
    pub(super) reads: Option<SwitchReads>,
}

/// A target's drivers, as the daemon's terms on the switches need them.
#[allow(async_fn_in_trait)]
pub(super) trait Drivers {
    type Driver: SwitchDriver;

    /// The drivers of this controller's next term, once it may be primary; `None` if shut
    /// down first.
    async fn next_term(
        &mut self,
        shutdown: &mut Pin<&mut impl Future<Output = ()>>,
    ) -> Result<Option<Term<Self::Driver>>>;

    /// After another controller took the switches over: stand by for the next term (`Ok`), or
    /// stop with the error.
    fn demoted(&self, why: String) -> Result<()>;
}

/// BMv2 over P4Runtime: the daemon pushes the compiled program, and arbitration lets a
/// standby take over from a primary that stops.
pub(super) struct Bmv2Drivers<'a> {
    opts: &'a RunOptions,
    bound: &'a [BoundSwitch],
    prep: &'a Prepared,
    program: Arc<Bmv2Program>,
    /// Asks who is primary without taking anything.
    probe: Bmv2Driver,
    /// How often a standby asks again.
    every: Duration,
}

impl<'a> Bmv2Drivers<'a> {
    /// Reads the compiled program (`--p4`); nothing is contacted yet.
    pub(super) fn new(
        opts: &'a RunOptions,
        bound: &'a [BoundSwitch],
        prep: &'a Prepared,
    ) -> Result<Self> {
        let dir = opts.p4.as_deref().ok_or_else(|| {
            Error::given(
                "--p4",
                "required with --target bmv2: the compiled program's directory",
            )
        })?;
        let p4 = load_p4(dir)?;
        let program = Arc::new(
            Bmv2Program::new(p4.p4info.clone(), p4.device_config.clone())
                .map_err(Error::switches)?,
        );
        let probe = drivers(opts, bound, prep, &program, standby::PROBE_ELECTION_ID).swap_remove(0);
        Ok(Self {
            opts,
            bound,
            prep,
            program,
            probe,
            every: (opts.epoch / 4).clamp(Duration::from_millis(50), Duration::from_millis(500)),
        })
    }
}

/// A BMv2 driver per switch, arbitrating with `election_id`.
fn drivers(
    opts: &RunOptions,
    bound: &[BoundSwitch],
    prep: &Prepared,
    program: &Arc<Bmv2Program>,
    election_id: u128,
) -> Vec<Bmv2Driver> {
    let mut bopts = opts.bmv2.clone();
    bopts.election_id = election_id;
    bound
        .iter()
        .map(|b| {
            let s = b.ix as usize;
            let monitor = prep.topo.switches[s].monitor;
            Bmv2Driver::new(b.clone(), monitor, program.clone(), bopts.clone())
                .with_mask(prep.codec.masks[s])
        })
        .collect()
}

impl Drivers for Bmv2Drivers<'_> {
    type Driver = Bmv2Driver;

    /// Primary while no other controller is; standby, taking over when it stops, while one is
    /// (P4Runtime arbitration, `standby`).
    async fn next_term(
        &mut self,
        shutdown: &mut Pin<&mut impl Future<Output = ()>>,
    ) -> Result<Option<Term<Bmv2Driver>>> {
        let opts = self.opts;
        let mut clock = WallClock::default();
        let generation = tokio::select! {
            g = standby::wait_until_no_primary(
                &self.probe,
                &mut clock,
                self.every,
                opts.connect_patience,
                opts.quiet,
            ) => g,
            _ = shutdown.as_mut() => return Ok(None),
        };
        let election_id = standby::election_id(generation, opts.bmv2.election_id);
        Ok(Some(Term {
            drivers: drivers(opts, self.bound, self.prep, &self.program, election_id),
            capacity: self.program.program.capacity(),
            lease: Some(self.bound[0].ix),
            // BMv2's registers are read over Thrift by the controller (not done elsewhere yet).
            reads: None,
        }))
    }

    fn demoted(&self, why: String) -> Result<()> {
        tracing::warn!("standing down ({why}): standing by");
        if !self.opts.quiet {
            eprintln!("standing down ({why}): standing by");
        }
        Ok(())
    }
}

/// Tofino over BF Runtime: the program is bf_switchd's, and there is no arbitration to stand
/// by on.
pub(super) struct TofinoDrivers<'a> {
    opts: &'a RunOptions,
    bound: &'a [BoundSwitch],
    prep: &'a Prepared,
}

impl<'a> TofinoDrivers<'a> {
    pub(super) fn new(opts: &'a RunOptions, bound: &'a [BoundSwitch], prep: &'a Prepared) -> Self {
        Self { opts, bound, prep }
    }

    /// The program bf_switchd runs: its contract comes from the first switch that answers
    /// (waited for up to `connect_patience`), and every switch must run the same build.
    /// `None` if shut down first.
    async fn program(
        &self,
        shutdown: &mut Pin<&mut impl Future<Output = ()>>,
    ) -> Result<Option<Arc<Program>>> {
        let first = &self.bound[0];
        let deadline = tokio::time::Instant::now() + self.opts.connect_patience;
        loop {
            let attempt = tokio::select! {
                r = tofino::fetch_program(first, &self.opts.tofino) => r,
                _ = shutdown.as_mut() => return Ok(None),
            };
            match attempt {
                Ok(p) => return Ok(Some(Arc::new(p))),
                Err(e) if tokio::time::Instant::now() < deadline => {
                    tracing::info!(switch = %first.name, "waiting for switch: {e}");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => {
                    return Err(Error::ProgramUnreadable {
                        switch: first.name.clone(),
                        error: Box::new(e.into()),
                    })
                }
            }
        }
    }
}

impl TofinoDrivers<'_> {
    /// Where the harvest workers read the monitors: BF Runtime needs no mastership to read.
    fn reads(&self, program: &Program) -> SwitchReads {
        let switches = self
            .bound
            .iter()
            .filter(|b| self.prep.topo.switches[b.ix as usize].monitor)
            .map(|b| ReadSwitch {
                switch: b.ix,
                name: b.name.clone(),
                grpc: b.endpoint.grpc.clone(),
                device_id: b.endpoint.device_id,
            })
            .collect();
        SwitchReads {
            switches,
            p4_name: self.opts.tofino.p4_name.clone(),
            timeout_ms: self.opts.tofino.timeout.as_millis() as u64,
            deadline_ms: self.opts.harvest_deadline.as_millis() as u64,
            program: program_fingerprint(program),
        }
    }
}

impl Drivers for TofinoDrivers<'_> {
    type Driver = TofinoDriver;

    async fn next_term(
        &mut self,
        shutdown: &mut Pin<&mut impl Future<Output = ()>>,
    ) -> Result<Option<Term<TofinoDriver>>> {
        let Some(program) = self.program(shutdown).await? else {
            return Ok(None);
        };
        let drivers = self
            .bound
            .iter()
            .map(|b| {
                let s = b.ix as usize;
                let monitor = self.prep.topo.switches[s].monitor;
                let mask = self.prep.codec.masks[s];
                TofinoDriver::new(
                    b.clone(),
                    monitor,
                    mask,
                    program.clone(),
                    self.opts.tofino.clone(),
                )
            })
            .collect();
        Ok(Some(Term {
            drivers,
            capacity: program.capacity(),
            lease: None,
            reads: self.opts.cluster.as_ref().map(|_| self.reads(&program)),
        }))
    }

    /// On Tofino a controller another one took over from stops with the error; it does not
    /// stand by.
    fn demoted(&self, why: String) -> Result<()> {
        Err(Error::Demoted(why))
    }
}
