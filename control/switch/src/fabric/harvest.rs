//! One monitor's harvest: read under a deadline, decoded with the switch's rule IDs, pipes
//! merged, stale cells and HashPipe zeroed.

use super::slot::{switch_error, Slot};
use crate::driver::SwitchDriver;
use crate::meters::{self, Decoded};
use canary_core::fabric::{MeterSnapshot, Parity, SwitchError};
use canary_core::model::epoch_tag;
use std::time::Duration;

/// Reads one monitor's meters of `epoch` under `deadline`, decodes them (pipes merged), zeroes
/// cells about to wrap and HashPipe. `Err(true)`: late.
pub(super) async fn harvest_one<D: SwitchDriver>(
    slot: &mut Slot<D>,
    epoch: u64,
    deadline: Duration,
    attach_only: bool,
) -> Result<(MeterSnapshot, usize), (SwitchError, bool)> {
    let tag = epoch_tag(epoch);
    let started = std::time::Instant::now();
    let read = tokio::time::timeout(deadline, slot.driver.read_meters()).await;
    // The timer fires on millisecond ticks, so a read can finish after a shorter deadline and
    // still beat the timer: it is late all the same.
    let late = read.is_err() || started.elapsed() > deadline;
    // IDs age per harvest, read or not: the cells of the epochs before can no longer be read.
    let pipes = match read {
        Ok(Ok(p)) if !late => p,
        Ok(Err(e)) if !late => {
            slot.ids.harvested();
            return Err((switch_error(e), false));
        }
        _ => {
            slot.ids.harvested();
            return Err((
                SwitchError::Other(format!(
                    "harvest slower than its deadline ({deadline:?}): epoch skipped for this switch"
                )),
                true,
            ));
        }
    };
    // A pipeline pushed by its owner during the epoch wiped part of what was counted.
    if attach_only && !slot.driver.pipeline_unchanged().await.unwrap_or(false) {
        slot.ids.harvested();
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
    let layout = slot
        .driver
        .program()
        .ok_or_else(|| (SwitchError::Other("no program resolved".into()), false))?
        .meters
        .clone();
    let mut decoded = Vec::with_capacity(pipes.len());
    for cells in &pipes {
        let d = meters::decode(&layout, cells, tag, &slot.ids, &name)
            .map_err(|e| (SwitchError::Other(e.to_string()), false))?;
        decoded.push(d);
    }
    slot.ids.harvested();
    let merged = meters::merge_pipes(decoded);
    let Decoded { usm, dsm, stale } = merged;
    let n_stale = stale.len();
    if !stale.is_empty() {
        if let Err(e) = slot.driver.clear_cells(&stale).await {
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
    Ok((
        MeterSnapshot {
            switch: slot.ix,
            epoch,
            parity: Parity::of_epoch(epoch),
            usm,
            dsm,
        },
        n_stale,
    ))
}
