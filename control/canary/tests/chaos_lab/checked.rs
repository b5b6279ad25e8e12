//! The fabric the controller uses in the lab: the chaos fabric, with every harvest checked
//! against the data plane's meters of exactly that epoch.

use super::ChaosFabric;
use canary_core::capacity::Capacity;
use canary_core::fabric::{
    Fabric, HhReport, MeterSnapshot, Resumed, RuleOp, Sink, SwitchError, SwitchResult,
};
use canary_core::model::epoch_tag;
use canary_core::sketch::{DsmBucket, UsmBucket};
use canary_core::topo::{SwitchIx, Topology};
use canary_doubles::chaos::Plane;
use canary_switch::rule_ids::RuleKey;
use std::time::Duration;

/// The fabric the controller uses, checking every harvest against the data plane.
pub struct Checked<'a> {
    pub inner: &'a mut ChaosFabric,
    pub plane: &'a Plane,
    pub topo: &'a Topology,
    pub harvested: &'a mut u64,
    /// Buckets the harvests found occupied.
    pub occupied: &'a mut u64,
}

/// Buckets for which `known` fails, emptied (what a harvest decodes for unknown rule IDs).
fn blank_unknown<B: canary_core::sketch::Bucket>(
    m: &canary_core::sketch::Meter<B>,
    known: impl Fn(&B) -> bool,
) -> canary_core::sketch::Meter<B> {
    let buckets = m
        .buckets()
        .iter()
        .map(|b| {
            if b.flow().is_none() || known(b) {
                b.clone()
            } else {
                B::default()
            }
        })
        .collect();
    canary_core::sketch::Meter::from_buckets(m.config(), buckets).unwrap()
}

impl Fabric for Checked<'_> {
    fn now(&self) -> Duration {
        self.inner.now()
    }
    async fn wait(&mut self, d: Duration) {
        self.inner.wait(d).await
    }
    fn capacity(&self) -> Capacity {
        self.inner.capacity()
    }
    async fn set_epoch(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<()>)> {
        self.inner.set_epoch(epoch).await
    }
    async fn harvest_each(&mut self, epoch: u64, sink: &mut Sink<'_>) {
        for (s, r) in self.checked_harvest(epoch).await {
            sink(s, r);
        }
    }
    async fn apply(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)> {
        self.inner.apply(ops).await
    }
    fn take_resumed(&mut self) -> Option<Resumed> {
        self.inner.take_resumed()
    }
    async fn take_reports(&mut self) -> Vec<HhReport> {
        self.inner.take_reports().await
    }
    async fn health(&mut self) -> Vec<(SwitchIx, SwitchError)> {
        self.inner.health().await
    }
    async fn take_forwarding_changes(&mut self) -> Vec<SwitchIx> {
        self.inner.take_forwarding_changes().await
    }
    fn out_of_service(&self) -> Vec<canary_core::topo::LinkIx> {
        self.inner.out_of_service()
    }
    /// Forwarded, as the daemon's fabric gives it: the controller predicts flows (sentinels).
    fn own_forwarding(&self) -> Option<canary_core::topo::PortMap> {
        self.inner.own_forwarding()
    }
}

impl Checked<'_> {
    async fn checked_harvest(
        &mut self,
        epoch: u64,
    ) -> Vec<(SwitchIx, SwitchResult<MeterSnapshot>)> {
        // Switches whose buckets may hold rules of a controller before this one (just adopted).
        let adopted: Vec<bool> = (0..self.topo.switches.len())
            .map(|s| self.inner.rule_ids(s as SwitchIx).unknown_ok())
            .collect();
        let out = self.inner.harvest(epoch).await;
        let mut plane = self.plane.lock().unwrap();
        for (s, r) in &out {
            if let Ok(snap) = r {
                let (mut usm, mut dsm) = plane.switch_mut(*s).meters_of(epoch_tag(epoch));
                if adopted[*s as usize] {
                    // Rules the dead controller removed are on no switch to read back: their
                    // buckets read as empty, and every other bucket must still be exact.
                    let ids = self.inner.rule_ids(*s);
                    usm = blank_unknown(&usm, |b: &UsmBucket| {
                        ids.id_of(&RuleKey::Usm(b.flow.unwrap())).is_some()
                    });
                    dsm = blank_unknown(&dsm, |b: &DsmBucket| {
                        ids.id_of(&RuleKey::Dsm(b.flow.unwrap(), b.path_bf))
                            .is_some()
                    });
                }
                *self.occupied += (snap.usm.occupied() + snap.dsm.occupied()) as u64;
                let name = self.topo.name_of(*s);
                assert_eq!(snap.epoch, epoch);
                assert!(
                    snap.usm == usm && snap.dsm == dsm,
                    "{name}: the harvest of epoch {epoch} is not that epoch's meters \
                     (harvested USM/DSM buckets {}/{}, the switch's {}/{})",
                    snap.usm.occupied(),
                    snap.dsm.occupied(),
                    usm.occupied(),
                    dsm.occupied()
                );
                *self.harvested += 1;
            }
        }
        out
    }
}
