//! The faults a chaos switch can be given, injecting one, and a seeded plan of them.

use super::{lock, ChaosDriver, Pipeline};
use canary_core::fabric::Fabric;
use canary_core::topo::SwitchIx;
use canary_core::FlowId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// A fault of one switch.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// The control channel drops; the next `attempts` connects fail. Forwarding and counting go
    /// on; the switch comes back with its state.
    Disconnect { attempts: u32 },
    /// The switch reboots: it forwards nothing for `down` of fabric time, then answers with
    /// empty tables and registers, and no pipeline.
    Restart { down: Duration },
    /// The next `reads` register reads take `delay` of real time.
    SlowHarvest { delay: Duration, reads: u32 },
    /// The next register read stops after part of the cells.
    TornRead,
    /// `n` HH digests arrive at once (flows nobody monitors on the pathBF of a watched segment).
    DigestFlood { n: usize, path_bf: u32 },
    /// The next `n` rule writes (USM, DSM and HH entries) are refused.
    RefuseWrites { n: usize },
    /// The switch restarts running another program. `replaceable`: loading ours replaces it
    /// (BMv2); otherwise it is refused (a Tofino whose `bf_switchd` loaded another program).
    OtherPipeline { replaceable: bool },
    /// This controller's connection to the switch is cut for `lasts` of fabric time (a
    /// partition: the switch, its traffic and other controllers' connections are untouched).
    /// The switch sees the stream end; the driver's calls and connects fail until it heals.
    CutOff { lasts: Duration },
}

impl ChaosDriver {
    /// Injects `fault` now.
    pub fn inject(&mut self, fault: Fault) {
        tracing::info!(switch = self.name, ?fault, "chaos");
        match &fault {
            Fault::Disconnect { attempts } => {
                self.drop_connection();
                self.refuse_connects = *attempts;
            }
            Fault::CutOff { lasts } => {
                self.drop_connection();
                self.cut_until = Some(lock(&self.plane).now() + *lasts);
            }
            Fault::Restart { down } => self.restart(*down, Pipeline::None),
            Fault::SlowHarvest { delay, reads } => self.slow = Some((*delay, *reads)),
            Fault::TornRead => self.torn = true,
            Fault::DigestFlood { n, path_bf } => {
                self.flood.extend((0..*n).map(|i| {
                    let i = i as u32;
                    (
                        FlowId::v4(0x0afe_0000 | (i >> 16), 0x0afd_0001, 17, i as u16, 9),
                        *path_bf,
                    )
                }));
            }
            Fault::RefuseWrites { n } => self.refuse_writes = *n,
            Fault::OtherPipeline { replaceable } => self.restart(
                Duration::ZERO,
                Pipeline::Other {
                    replaceable: *replaceable,
                },
            ),
        }
        self.injected.push(fault);
    }

    fn restart(&mut self, down: Duration, comes_back_with: Pipeline) {
        let mut plane = lock(&self.plane);
        plane.set_switch_down(self.ix, true);
        let mut side = self.side();
        side.tables.restart(plane.switch_mut(self.ix));
        side.down_until = Some(plane.now() + down);
        side.pipeline = comes_back_with;
        side.arbitration.reset();
        drop((side, plane));
        self.drop_connection();
    }
}

/// A seeded plan of faults: which switch gets which fault before which epoch.
#[derive(Clone, Debug, Default)]
pub struct ChaosPlan {
    pub faults: Vec<(u64, SwitchIx, Fault)>,
}

impl ChaosPlan {
    /// `n` faults drawn with seed `seed` over epochs `2..epochs` and switches `switches`,
    /// at most one per epoch.
    pub fn random(
        seed: u64,
        epochs: u64,
        switches: &[SwitchIx],
        n: usize,
        epoch: Duration,
    ) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut slots: Vec<u64> = (2..epochs.saturating_sub(1)).collect();
        let mut faults = Vec::new();
        for _ in 0..n.min(slots.len()) {
            let e = slots.swap_remove(rng.random_range(0..slots.len()));
            let s = switches[rng.random_range(0..switches.len())];
            let f = match rng.random_range(0..6) {
                0 => Fault::Disconnect {
                    attempts: rng.random_range(1..3),
                },
                1 => Fault::Restart { down: epoch / 2 },
                2 => Fault::SlowHarvest {
                    delay: Duration::from_millis(300),
                    reads: 1,
                },
                3 => Fault::TornRead,
                4 => Fault::RefuseWrites {
                    n: rng.random_range(1..50),
                },
                _ => Fault::OtherPipeline { replaceable: true },
            };
            faults.push((e, s, f));
        }
        faults.sort_by_key(|f| f.0);
        ChaosPlan { faults }
    }

    /// The faults due before epoch `epoch`.
    pub fn due(&self, epoch: u64) -> impl Iterator<Item = &(u64, SwitchIx, Fault)> {
        self.faults.iter().filter(move |f| f.0 == epoch)
    }
}
