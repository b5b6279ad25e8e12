//! Harvests read by other processes: a cluster's harvest workers read the switches they own,
//! so that no one machine reads every switch's registers. The fabric still owns the switches:
//! it says which cells each read takes and which rule IDs decode them, and once the reads are
//! in it does what a harvest does to a switch (rule IDs age, stale cells and HashPipe zeroed),
//! which is writing, and writing stays with the primary.

use super::harvest::after_read;
use super::{Clock, SwitchFabric};
use crate::driver::SwitchDriver;
use crate::meters::Cell;
use crate::rule_ids::IdTable;
use canary_core::fabric::{Sink, SwitchError};
use canary_core::topo::SwitchIx;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// What one switch's read elsewhere takes: the IDs that decode its buckets, from which the
/// reader also finds the cells to read (`meters::harvest_cells`, as the harvest here does).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadOrder {
    pub switch: SwitchIx,
    pub ids: IdTable,
}

/// How one switch's read elsewhere went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ReadOutcome {
    /// Read and decoded; these cells are about to wrap and are to be zeroed.
    Read { stale: Vec<Cell> },
    /// Not read (`late`: not within the harvest's deadline).
    Failed { error: SwitchError, late: bool },
    /// Not read on purpose: the switch missed the flip into the epoch after this one, so the
    /// controller leaves its segments out anyway.
    Skipped,
}

/// Whoever reads the switches' meters for this fabric: every order of an epoch handed over at
/// once, an outcome back for each.
pub trait RemoteReads: Send {
    fn read(
        &mut self,
        epoch: u64,
        orders: Vec<ReadOrder>,
    ) -> BoxFuture<'_, Vec<(SwitchIx, ReadOutcome)>>;
}

impl<D: SwitchDriver, C: Clock> SwitchFabric<D, C> {
    /// From now on the monitors' meters are read by `reads`, not by this process: a harvest
    /// hands `sink` only the switches whose read failed (the records go where `reads` sends
    /// them).
    pub fn read_elsewhere(&mut self, reads: Box<dyn RemoteReads>) {
        self.remote = Some(reads);
    }

    /// Whether the meters are read elsewhere ([`SwitchFabric::read_elsewhere`]).
    pub fn reads_elsewhere(&self) -> bool {
        self.remote.is_some()
    }

    /// The harvest of `epoch` with the reads elsewhere: an order for every monitor, then, for
    /// each switch read, what a harvest does to it. A switch this controller lost during the
    /// epoch, or whose pipeline changed, fails as it would if read here.
    pub(super) async fn harvest_elsewhere(&mut self, epoch: u64, sink: &mut Sink<'_>) {
        let orders: Vec<ReadOrder> = self
            .slots
            .iter()
            .filter(|s| s.monitor)
            .map(|slot| ReadOrder {
                switch: slot.ix,
                ids: slot.ids.table(),
            })
            .collect();
        let Some(remote) = self.remote.as_mut() else {
            return;
        };
        let mut outcomes = remote.read(epoch, orders.clone()).await;
        // Every order gets an outcome, so that every monitor's rule IDs age once a harvest.
        for o in &orders {
            if !outcomes.iter().any(|(s, _)| *s == o.switch) {
                let error = SwitchError::Other("its read elsewhere gave no outcome".into());
                outcomes.push((o.switch, ReadOutcome::Failed { error, late: false }));
            }
        }
        let attach_only = self.opts.attach_only;
        let (mut failed, mut stale_n, mut late_n) = (Vec::new(), 0u64, 0u64);
        for (ix, outcome) in outcomes {
            let Some(slot) = self.slots.get_mut(ix as usize).filter(|s| s.monitor) else {
                tracing::error!(
                    switch = ix,
                    "a read elsewhere of a switch that is no monitor"
                );
                continue;
            };
            let r = match outcome {
                ReadOutcome::Read { stale } => {
                    stale_n += stale.len() as u64;
                    after_read(slot, &stale, attach_only).await.map_err(|e| e.0)
                }
                ReadOutcome::Failed { error, late } => {
                    slot.ids.harvested();
                    late_n += u64::from(late);
                    Err(error)
                }
                ReadOutcome::Skipped => {
                    slot.ids.harvested();
                    continue;
                }
            };
            // A stream that broke during the epoch means the switch may have restarted since
            // the flip: what was read of it cannot be trusted.
            let r = r.and_then(|()| {
                if slot.driver.connected() {
                    Ok(())
                } else {
                    Err(SwitchError::Unreachable(
                        "lost the connection during the epoch".into(),
                    ))
                }
            });
            if let Err(e) = r {
                sink(ix, Err(e.clone()));
                failed.push((ix, e));
            }
        }
        self.harvest_done(stale_n, late_n, failed);
    }
}
