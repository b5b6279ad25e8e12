//! The controller's view: the [`Fabric`] implementation.

use super::{switch_down, SimFabric};
use canary_core::capacity::Capacity;
use canary_core::fabric::{
    Fabric, HhReport, MeterSnapshot, Parity, RuleOp, Sink, SwitchError, SwitchResult,
};
use canary_core::model::epoch_tag;
use canary_core::topo::SwitchIx;
use rand::Rng;
use std::time::Duration;

impl Fabric for SimFabric {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.now)
    }

    async fn wait(&mut self, d: Duration) {
        self.advance_to(self.now + d.as_nanos() as u64);
    }

    fn capacity(&self) -> Capacity {
        self.cfg.capacity
    }

    async fn take_forwarding_changes(&mut self) -> Vec<SwitchIx> {
        let mut out = std::mem::take(&mut self.forwarding_changed);
        out.sort_unstable();
        out.dedup();
        out
    }

    fn own_forwarding(&self) -> Option<canary_core::topo::PortMap> {
        Some(self.ports.clone())
    }

    fn out_of_service(&self) -> Vec<canary_core::topo::LinkIx> {
        self.out_of_service.clone()
    }

    async fn set_epoch(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<()>)> {
        let mut out = Vec::new();
        for s in 0..self.net.switches.len() {
            let skew = self.hosts.rng.random_range(0..=self.cfg.max_flip_skew_ns);
            let sw = &mut self.net.switches[s];
            if !sw.model.config().monitor {
                continue;
            }
            if sw.down {
                out.push((s as SwitchIx, Err(switch_down())));
                continue;
            }
            sw.prev_epoch = sw.epoch_at(self.now);
            sw.epoch = epoch;
            sw.flip_at = self.now + skew;
            out.push((s as SwitchIx, Ok(())));
        }
        out
    }

    async fn harvest_each(&mut self, epoch: u64, sink: &mut Sink<'_>) {
        for s in 0..self.net.switches.len() {
            if !self.net.switches[s].model.config().monitor {
                continue;
            }
            let snap = self.snapshot(s as SwitchIx, epoch);
            if snap.is_ok() {
                self.net.switches[s].model.clear_hashpipe();
            }
            sink(s as SwitchIx, snap);
        }
    }

    async fn reread(&mut self, epoch: u64, switches: &[SwitchIx], sink: &mut Sink<'_>) {
        for &s in switches {
            let monitor = self.net.switches.get(s as usize);
            if monitor.is_some_and(|sw| sw.model.config().monitor) {
                sink(s, self.snapshot(s, epoch));
            }
        }
    }

    async fn apply(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)> {
        let mut failed = Vec::new();
        for op in ops {
            let sw = &mut self.net.switches[op.switch() as usize];
            if sw.down {
                failed.push((op.clone(), switch_down()));
                continue;
            }
            sw.gen = self.gens.next();
            if let Err(e) = sw.model.apply(op) {
                failed.push((op.clone(), SwitchError::Other(e.to_string())));
            }
        }
        failed
    }

    async fn take_reports(&mut self) -> Vec<HhReport> {
        self.net.reported.clear();
        std::mem::take(&mut self.net.reports)
    }
}

impl SimFabric {
    /// Switch `s`'s meters of `epoch` as they are now.
    fn snapshot(&self, s: SwitchIx, epoch: u64) -> SwitchResult<MeterSnapshot> {
        let sw = &self.net.switches[s as usize];
        if sw.down {
            return Err(switch_down());
        }
        let (usm, dsm) = sw.model.meters_of(epoch_tag(epoch));
        Ok(MeterSnapshot {
            switch: s,
            parity: Parity::of_epoch(epoch),
            epoch,
            usm,
            dsm,
        })
    }
}
