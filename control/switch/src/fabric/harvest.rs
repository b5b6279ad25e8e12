//! The harvest: every monitor at once, and one monitor's: the cells its rules map to read under
//! a deadline (`meters::harvest_cells`), decoded with the switch's rule IDs, pipes merged, stale
//! cells and HashPipe zeroed. Also a read of
//! switches' meters without those side effects: the second read of the downstream switches of
//! segments that lost packets, and tests.

use super::slot::{switch_error, Slot};
use super::{Clock, SwitchFabric};
use crate::driver::SwitchDriver;
use crate::meters::{self, Decoded};
use crate::rule_ids::RuleIds;
use canary_core::fabric::{MeterSnapshot, Parity, Sink, SwitchError};
use canary_core::model::epoch_tag;
use canary_core::sketch::{Dsm, Usm};
use canary_core::topo::SwitchIx;
use futures::stream::{FuturesUnordered, StreamExt};
use std::time::Duration;
use tracing::Instrument;

/// Reads one switch's meters of `epoch` (`cells`, or all of them) under `deadline` and decodes
/// them with `ids` (pipes merged): the snapshot and the cells about to wrap, to be zeroed.
/// Nothing on the switch or in `ids` changes, so a process that does not own the switch (a
/// cluster's harvest worker) reads with it as the controller does. `Err(true)`: late.
pub async fn read_harvest<D: SwitchDriver>(
    driver: &mut D,
    switch: SwitchIx,
    epoch: u64,
    cells: Option<&[meters::Cell]>,
    ids: &RuleIds,
    deadline: Duration,
) -> Result<(MeterSnapshot, Vec<meters::Cell>), (SwitchError, bool)> {
    let tag = epoch_tag(epoch);
    let started = std::time::Instant::now();
    let read = tokio::time::timeout(deadline, read_cells(driver, cells)).await;
    // The timer fires on millisecond ticks, so a read can finish after a shorter deadline and
    // still beat the timer: it is late all the same.
    let late = read.is_err() || started.elapsed() > deadline;
    let pipes = match read {
        Ok(Ok(p)) if !late => p,
        Ok(Err(e)) if !late => return Err((switch_error(e), false)),
        _ => {
            return Err((
                SwitchError::Other(format!(
                    "harvest slower than its deadline ({deadline:?}): epoch skipped for this switch"
                )),
                true,
            ))
        }
    };
    let layout = &driver
        .program()
        .ok_or_else(|| (SwitchError::Other("no program resolved".into()), false))?
        .meters;
    let mut decoded = Vec::with_capacity(pipes.len());
    for cells in &pipes {
        let d = meters::decode(layout, cells, tag, ids, driver.name())
            .map_err(|e| (SwitchError::Other(e.to_string()), false))?;
        decoded.push(d);
    }
    let Decoded { usm, dsm, stale } = meters::merge_pipes(decoded);
    Ok((
        MeterSnapshot {
            switch,
            epoch,
            parity: Parity::of_epoch(epoch),
            usm,
            dsm,
        },
        stale,
    ))
}

/// Reads one monitor's meters of `epoch` under `deadline` ([`read_harvest`]), then does what
/// a harvest does to the switch. `Err(true)`: late.
pub(super) async fn harvest_one<D: SwitchDriver>(
    slot: &mut Slot<D>,
    epoch: u64,
    deadline: Duration,
    attach_only: bool,
) -> Result<(MeterSnapshot, usize), (SwitchError, bool)> {
    let cells = wanted_cells(slot, epoch);
    let read = read_harvest(
        &mut slot.driver,
        slot.ix,
        epoch,
        cells.as_deref(),
        &slot.ids,
        deadline,
    )
    .await;
    let (snap, stale) = match read {
        Ok(r) => r,
        Err(e) => {
            // IDs age per harvest, read or not: the cells of the epochs before can no longer
            // be read.
            slot.ids.harvested();
            return Err(e);
        }
    };
    let n_stale = stale.len();
    after_read(slot, &stale, attach_only).await?;
    Ok((snap, n_stale))
}

/// What a harvest does to a switch once its meters were read (here or elsewhere): its rule IDs
/// age, cells about to wrap and HashPipe are zeroed. A pipeline its owner pushed during the
/// epoch wiped part of what was counted: the read stands for nothing.
pub(super) async fn after_read<D: SwitchDriver>(
    slot: &mut Slot<D>,
    stale: &[meters::Cell],
    attach_only: bool,
) -> Result<(), (SwitchError, bool)> {
    slot.ids.harvested();
    if attach_only && !slot.driver.pipeline_unchanged().await.unwrap_or(false) {
        slot.up = false;
        return Err((
            SwitchError::Restarted(format!(
                "{}: the pipeline's owner pushed a new one during the epoch",
                slot.driver.name()
            )),
            false,
        ));
    }
    let name = slot.driver.name().to_string();
    if !stale.is_empty() {
        if let Err(e) = slot.driver.clear_cells(stale).await {
            tracing::warn!(
                switch = name,
                "zeroing {} stale meter cells: {e}",
                stale.len()
            );
        }
    }
    if let Err(e) = slot.driver.clear_hashpipe().await {
        tracing::warn!(switch = name, "clearing HashPipe: {e}");
    }
    Ok(())
}

impl<D: SwitchDriver, C: Clock> SwitchFabric<D, C> {
    /// Every monitor's harvest of `epoch` at once (the fabric's `harvest_each`), each answer
    /// given to `sink` as soon as it is in; failures counted and noted against their switch.
    pub(super) async fn harvest_monitors(&mut self, epoch: u64, sink: &mut Sink<'_>) {
        if self.reads_elsewhere() {
            return self.harvest_elsewhere(epoch, sink).await;
        }
        let (deadline, attach_only) = (self.opts.harvest_deadline, self.opts.attach_only);
        let mut failed = Vec::new();
        let (mut stale, mut late) = (0u64, 0u64);
        // Every monitor at once; each answer goes on as soon as it is in.
        let mut harvests: FuturesUnordered<_> = self
            .slots
            .iter_mut()
            .filter(|s| s.monitor)
            .map(|slot| {
                // Each switch's reads log under its own name.
                let span = tracing::info_span!("switch", name = %slot.driver.name());
                async move {
                    let r = harvest_one(slot, epoch, deadline, attach_only).await;
                    (slot.ix, slot.driver.connected(), r)
                }
                .instrument(span)
            })
            .collect();
        while let Some((ix, connected, r)) = harvests.next().await {
            let r = match r {
                // A stream that broke during the epoch means the switch may have restarted
                // since the flip: its counts cannot be trusted.
                Ok(_) if !connected => Err(SwitchError::Unreachable(
                    "lost the connection during the epoch".into(),
                )),
                Ok((snap, n)) => {
                    stale += n as u64;
                    Ok(snap)
                }
                Err((e, was_late)) => {
                    late += u64::from(was_late);
                    Err(e)
                }
            };
            if let Err(e) = &r {
                failed.push((ix, e.clone()));
            }
            sink(ix, r);
        }
        drop(harvests);
        self.harvest_done(stale, late, failed);
    }

    /// A harvest's tally, wherever its reads were made: cells zeroed, late and failed reads
    /// counted, each failure noted against its switch, and transit switches lost meanwhile.
    pub(super) fn harvest_done(
        &mut self,
        stale: u64,
        late: u64,
        failed: Vec<(SwitchIx, SwitchError)>,
    ) {
        self.counters.stale_cells_cleared += stale;
        self.counters.harvests_late += late;
        for (ix, e) in failed {
            self.counters.harvest_errors += 1;
            self.note(ix, &e);
        }
        self.note_lost_transit();
    }

    /// Transit switches that went away during the epoch also spoil the segments they carry.
    fn note_lost_transit(&mut self) {
        let lost: Vec<SwitchIx> = self
            .slots
            .iter()
            .filter(|s| !s.monitor && !s.driver.connected())
            .map(|s| s.ix)
            .collect();
        for ix in lost {
            self.note(
                ix,
                &SwitchError::Unreachable("lost the connection during the epoch".into()),
            );
        }
    }

    /// The fabric's `reread`: the meters of `epoch` on `switches` (monitors that are up) read
    /// again at once under the harvest's deadline and decoded as the harvest decodes them, with
    /// nothing cleared and no rule ID aged. A switch that does not answer in time is left out.
    pub(super) async fn reread_monitors(
        &mut self,
        epoch: u64,
        switches: &[SwitchIx],
        sink: &mut Sink<'_>,
    ) {
        if self.reads_elsewhere() {
            // This process reads no switch's meters; what was late is left out.
            return;
        }
        let deadline = self.opts.harvest_deadline;
        let tag = epoch_tag(epoch);
        let mut reads: FuturesUnordered<_> = self
            .slots
            .iter_mut()
            .filter(|s| s.monitor && s.up && switches.contains(&s.ix))
            .map(|slot| async move {
                let cells = wanted_cells(slot, epoch);
                let read = tokio::time::timeout(deadline, read_decoded(slot, tag, cells)).await;
                (slot.ix, slot.driver.connected(), read)
            })
            .collect();
        while let Some((ix, connected, read)) = reads.next().await {
            match read {
                Ok(Ok((usm, dsm))) if connected => sink(
                    ix,
                    Ok(MeterSnapshot {
                        switch: ix,
                        epoch,
                        parity: Parity::of_epoch(epoch),
                        usm,
                        dsm,
                    }),
                ),
                Ok(Err(e)) => tracing::warn!(switch = ix, "second read of the meters: {e}"),
                _ => tracing::warn!(switch = ix, "second read of the meters: no answer in time"),
            }
        }
    }

    /// The meters switch `s` holds for the epoch with tag `tag`, read without the harvest's
    /// side effects: for tests.
    pub async fn peek_meters(&mut self, s: SwitchIx, tag: u16) -> Result<(Usm, Dsm), SwitchError> {
        read_decoded(&mut self.slots[s as usize], tag, None).await
    }
}

/// The cells the harvest of `epoch` reads on this switch (`meters::harvest_cells`); `None`:
/// every cell.
fn wanted_cells<D: SwitchDriver>(slot: &Slot<D>, epoch: u64) -> Option<Vec<meters::Cell>> {
    let layout = &slot.driver.program()?.meters;
    meters::harvest_cells(layout, slot.ids.keys(), epoch)
}

/// The meter cells `cells` of a switch, or all of them.
async fn read_cells<D: SwitchDriver>(
    driver: &mut D,
    cells: Option<&[meters::Cell]>,
) -> Result<Vec<meters::MeterCells>, crate::driver::DriverError> {
    match cells {
        Some(c) => driver.read_meter_cells(c).await,
        None => driver.read_meters().await,
    }
}

/// One switch's meters with tag `tag`, read (`cells`, or all) and decoded (pipes merged), with
/// no side effect.
async fn read_decoded<D: SwitchDriver>(
    slot: &mut Slot<D>,
    tag: u16,
    cells: Option<Vec<meters::Cell>>,
) -> Result<(Usm, Dsm), SwitchError> {
    let pipes = read_cells(&mut slot.driver, cells.as_deref())
        .await
        .map_err(switch_error)?;
    let layout = slot
        .driver
        .program()
        .ok_or_else(|| SwitchError::Other("no program resolved".into()))?
        .meters
        .clone();
    let decoded = pipes
        .iter()
        .map(|c| meters::decode(&layout, c, tag, &slot.ids, slot.driver.name()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| SwitchError::Other(e.to_string()))?;
    let d = meters::merge_pipes(decoded);
    Ok((d.usm, d.dsm))
}
