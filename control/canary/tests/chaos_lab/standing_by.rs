//! A standby process beside the lab's primary: it asks the switches' arbitration who is primary
//! (`canary_controller::standby`, the daemon's own loop) while the primary runs its epochs, on
//! the data plane's time, and takes over only when arbitration says nobody is.

use super::{Checked, Rig, EPOCH};
use canary_controller::standby;
use canary_core::fabric::Fabric;
use canary_core::topo::SwitchIx;
use canary_switch::drivers::chaos::{ChaosDriver, Lifeline, Plane};
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
        let Rig {
            rt,
            ctl,
            fabric,
            plane,
            topo,
            harvested,
            occupied,
            reports,
            ..
        } = self;
        let mut f = Checked {
            inner: fabric,
            plane,
            topo,
            harvested,
            occupied,
        };
        rt.block_on(async {
            let waiting = standby::wait_until_no_primary(
                probe,
                &mut clock,
                PROBE_EVERY,
                Duration::from_secs(5),
                true,
            );
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
