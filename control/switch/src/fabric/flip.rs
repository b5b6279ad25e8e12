//! The epoch flip: every switch checked, and configured again if it lost its state, before any
//! monitor flips to the new epoch.

use super::slot::{configure, ensure_up, first_failure, Up};
use super::{Clock, SwitchFabric};
use crate::driver::SwitchDriver;
use crate::entries;
use canary_core::fabric::{SwitchError, SwitchResult};
use canary_core::model::epoch_tag;
use canary_core::topo::SwitchIx;
use futures::future::join_all;
use tracing::Instrument;

impl<D: SwitchDriver, C: Clock> SwitchFabric<D, C> {
    /// Moves every switch to `epoch` (the fabric's `set_epoch`): a switch found without
    /// Canary's state is configured again and answers `Restarted`, so its segments sit the
    /// epoch out.
    pub(super) async fn flip_to_epoch(&mut self, epoch: u64) -> Vec<(SwitchIx, SwitchResult<()>)> {
        self.epoch = epoch;
        let attach_only = self.opts.attach_only;
        // Every switch is checked (and configured again if it lost its state) before any
        // monitor flips, so a re-push never lands among flipped switches.
        let ready = join_all(self.slots.iter_mut().map(|slot| {
            let span = tracing::info_span!("switch", name = %slot.driver.name());
            async move {
                match ensure_up(slot, epoch, attach_only).await? {
                    Up::Kept => configure(slot, epoch, attach_only).await,
                    up => Ok(up),
                }
            }
            .instrument(span)
        }))
        .await;
        let results = join_all(
            self.slots
                .iter_mut()
                .zip(ready)
                .map(|(slot, r)| async move {
                    let up = r?;
                    if !slot.monitor {
                        return Ok(up);
                    }
                    let tag = epoch_tag(epoch);
                    let w = entries::epoch_flip(slot.mask, tag);
                    slot.tags.writing(tag);
                    let failed = slot.driver.write(std::slice::from_ref(&w)).await;
                    first_failure("epoch flip", failed)?;
                    slot.tags.written(tag);
                    Ok(up)
                }),
        )
        .await;
        let mut out = Vec::new();
        let mut events = Vec::new();
        for (slot, r) in self.slots.iter().zip(results) {
            let r = match r {
                Ok(Up::Same | Up::Fresh | Up::Kept | Up::Adopted(..)) => Ok(()),
                Ok(Up::Repushed) => {
                    self.counters.repushes += 1;
                    Err(SwitchError::Restarted(format!(
                        "{} came back without Canary's state: configured again",
                        slot.driver.name()
                    )))
                }
                Err(e) => Err(e),
            };
            if let Err(e) = &r {
                events.push((slot.ix, e.clone()));
            }
            if slot.monitor {
                out.push((slot.ix, r));
            }
        }
        for (ix, e) in events {
            self.note(ix, &e);
        }
        out
    }
}
