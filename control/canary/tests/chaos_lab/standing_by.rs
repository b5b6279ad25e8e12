//! A standby process beside the lab's primary: it asks the switches' arbitration who is primary
//! (`canary_controller::standby`, the daemon's own loop) while the primary runs its epochs, on
//! the data plane's time, and takes over only when arbitration says nobody is.

use super::{ChaosFabric, Rig, EPOCH};
use canary_controller::controller::Controller;
use canary_controller::report::EpochReport;
use canary_controller::standby;
use canary_core::fabric::Fabric;
use canary_core::topo::SwitchIx;
use canary_doubles::chaos::{ChaosDriver, Lifeline, Plane};
use canary_switch::fabric::Clock;
use std::time::Duration;

/// How often the standby asks, as the daemon does for this epoch (a quarter of it).
pub const PROBE_EVERY: Duration = Duration::from_millis(25);

/// The standby's clock. While the primary lives, its epochs move the data plane's time and the
/// standby only waits for it; once the primary is dead nobody else does, and the standby's own
/// waiting lets time pass.
pub struct FollowingClock {
    pub plane: Plane,
    pub lead: Lifeline,
}

impl Clock for FollowingClock {
    fn now(&self) -> Duration {
        self.plane.lock().unwrap().now()
    }

    async fn wait(&mut self, d: Duration) {
        let until = self.now() + d;
        loop {
            let now = self.now();
            if now >= until {
                return;
            }
            if self.lead.dead() {
                self.plane.lock().unwrap().advance(until - now);
            }
            tokio::task::yield_now().await;
        }
    }
}

/// What the standby saw.
pub struct Takeover {
    /// The generation it takes over in.
    pub generation: u64,
    /// Data-plane time of the primary's death and of the standby's decision.
    pub killed_at: Duration,
    pub decided_at: Duration,
    /// Epochs the primary finished while the standby stood by.
    pub finished: usize,
}

impl Rig {
    /// The standby's probe: its own connection to the first switch, with the lowest election id.
    pub fn standby_probe(&self) -> ChaosDriver {
        self.fabric
            .driver(0 as SwitchIx)
            .another_controller()
            .with_election_id(standby::PROBE_ELECTION_ID)
    }

    /// The primary runs epochs until it dies after `calls` switch calls (as
    /// [`Rig::run_until_killed`]) while a standby asks `probe`'s switch who is primary. Fails if
    /// the standby takes over while the primary lives, or has not within ten epochs of its
    /// death.
    pub fn run_until_killed_beside(&mut self, calls: u64, probe: &ChaosDriver) -> Takeover {
        let life = Lifeline::dies_after(calls);
        for s in 0..self.topo.switches.len() {
            self.fabric
                .driver_mut(s as SwitchIx)
                .set_lifeline(life.clone());
        }
        let mut clock = FollowingClock {
            plane: self.plane.clone(),
            lead: life.clone(),
        };
        let mut finished = 0;
        let plane = self.plane.clone();
        let (rt, ctl, mut f, reports) = self.parts();
        rt.block_on(async {
            let waiting = asking(probe, &mut clock);
            tokio::pin!(waiting);
            loop {
                let l = life.clone();
                tokio::select! {
                    biased;
                    r = ctl.run_epoch(&mut f) => {
                        reports.push(r);
                        finished += 1;
                    }
                    // The epoch's future is dropped where it hung: the process is gone.
                    _ = async { while !l.dead() { tokio::task::yield_now().await } } => break,
                    g = &mut waiting => panic!(
                        "the standby took over (generation {g}) while the primary was alive"
                    ),
                }
            }
            let killed_at = plane.lock().unwrap().now();
            let limit = killed_at + 10 * EPOCH;
            let generation = tokio::select! {
                g = &mut waiting => g,
                _ = async {
                    while plane.lock().unwrap().now() < limit {
                        tokio::task::yield_now().await
                    }
                } => panic!("the standby has not taken over 10 epochs after the primary died"),
            };
            Takeover {
                generation,
                killed_at,
                decided_at: plane.lock().unwrap().now(),
                finished,
            }
        })
    }
}

/// The standby's loop, the daemon's own, asking `probe`'s switch every [`PROBE_EVERY`].
fn asking<'a>(
    probe: &'a ChaosDriver,
    clock: &'a mut FollowingClock,
) -> impl std::future::Future<Output = u64> + 'a {
    standby::wait_until_no_primary(probe, clock, PROBE_EVERY, Duration::from_secs(5), true)
}

/// A standby that took over from a primary that still lived.
pub struct Handover {
    /// The generation it took over in, and the data-plane time it decided.
    pub generation: u64,
    pub decided_at: Duration,
    /// The standby's process, connected to the switches the moment it decided.
    pub process: (ChaosFabric, Controller),
    /// The old primary's epoch that was running then: it went on after the standby connected.
    pub old_epoch: EpochReport,
}

impl Rig {
    /// The primary runs up to `epochs` epochs while a standby asks `probe`'s switch who is
    /// primary; `before(i, fabric)` runs before the primary's i-th. If the standby decides to
    /// take over, it connects to the switches at once, while the primary's epoch is still
    /// running, which then goes on to its end; the rig's process stays the old primary.
    pub fn run_epochs_beside(
        &mut self,
        epochs: usize,
        probe: &ChaosDriver,
        mut before: impl FnMut(usize, &mut ChaosFabric),
    ) -> Option<Handover> {
        let spare: Vec<ChaosDriver> = (0..self.topo.switches.len())
            .map(|s| self.fabric.driver(s as SwitchIx).another_controller())
            .collect();
        let mut clock = FollowingClock {
            plane: self.plane.clone(),
            lead: Lifeline::dies_after(u64::MAX),
        };
        // What the standby's process is built from, should it take over.
        let (prep, ports, plane, drain) = (
            self.prep.clone(),
            self.ports.clone(),
            self.plane.clone(),
            self.drain,
        );
        let (rt, ctl, mut f, reports) = self.parts();
        rt.block_on(async {
            let waiting = asking(probe, &mut clock);
            tokio::pin!(waiting);
            for i in 0..epochs {
                before(i, f.inner);
                let epoch = ctl.run_epoch(&mut f);
                tokio::pin!(epoch);
                tokio::select! {
                    biased;
                    r = &mut epoch => reports.push(r),
                    generation = &mut waiting => {
                        let decided_at = plane.lock().unwrap().now();
                        let drivers = spare
                            .into_iter()
                            .map(|d| d.with_election_id(standby::election_id(generation, 2)))
                            .collect();
                        let mut process = (
                            super::fabric_over(&prep, &ports, &plane, drivers),
                            super::controller(&prep, drain),
                        );
                        process.0.connect(Duration::from_secs(5)).await.unwrap();
                        let old_epoch = epoch.await;
                        return Some(Handover { generation, decided_at, process, old_epoch });
                    }
                }
            }
            None
        })
    }
}
