//! Links taken out of service in the forwarding Canary installs (an operator drains a link for
//! maintenance, or puts it back): routes recomputed as routing converges without them, the
//! switches whose forwarding changed rewritten entry by entry, and the controller told which
//! switches moved flows, so that what their old segments miss is not read as loss.

use super::slot::{switch_error, Slot};
use super::{Clock, SwitchFabric};
use crate::driver::SwitchDriver;
use crate::entries::{self, forwarding_rewrite};
use canary_core::fabric::SwitchError;
use canary_core::topo::{FloodTree, ForwardingState, LinkIx, SwitchIx, Topology};
use futures::future::join_all;

/// Why links could not be taken out of service.
#[derive(Debug, thiserror::Error)]
pub enum OutOfServiceError {
    #[error(
        "links out of service need Canary to own the forwarding; attached beside the fabric's \
         own controller (P4Runtime roles), that controller takes links out of service"
    )]
    NotOurForwarding,
    #[error("taking {0} out of service leaves the fabric disconnected")]
    Disconnects(String),
}

/// The fabric as Canary's forwarding is laid on it: every link in service, unless drained.
pub(super) struct Maintenance {
    topo: Topology,
    /// Directed links out of service now (both directions of each drained link), ascending.
    pub(super) out: Vec<LinkIx>,
    /// Switches whose forwarding changed since the controller last asked.
    changed: Vec<SwitchIx>,
}

impl Maintenance {
    pub(super) fn new(topo: &Topology) -> Self {
        Self {
            topo: topo.clone(),
            out: Vec::new(),
            changed: Vec::new(),
        }
    }

    pub(super) fn take_changed(&mut self) -> Vec<SwitchIx> {
        let mut out = std::mem::take(&mut self.changed);
        out.sort_unstable();
        out.dedup();
        out
    }
}

impl<D: SwitchDriver, C: Clock> SwitchFabric<D, C> {
    /// Takes exactly `links` out of service from now on (both directions of each; an empty list
    /// puts every link back): each switch whose routes or ECMP groups change is rewritten in
    /// place. Returns the switches rewritten. A switch whose rewrite fails is reported (its
    /// segments sit the epoch out) and configured afresh before it is used again.
    pub async fn set_out_of_service(
        &mut self,
        links: &[LinkIx],
    ) -> Result<Vec<SwitchIx>, OutOfServiceError> {
        if self.opts.attach_only {
            return Err(OutOfServiceError::NotOurForwarding);
        }
        let topo = &self.maintenance.topo;
        let mut out: Vec<LinkIx> = links.iter().flat_map(|&l| [l, topo.reverse(l)]).collect();
        out.sort_unstable();
        out.dedup();
        if out == self.maintenance.out {
            return Ok(Vec::new());
        }
        let tree = FloodTree::new(topo);
        let states =
            ForwardingState::all_without(topo, &out, &tree, &self.ports).map_err(|_| {
                let names: Vec<String> = links
                    .iter()
                    .map(|&l| topo.link_names(l).join("—"))
                    .collect();
                OutOfServiceError::Disconnects(names.join(", "))
            })?;
        let mut next = Vec::new();
        for (slot, state) in self.slots.iter().zip(states) {
            let wanted = entries::forwarding(&state, slot.mask);
            if wanted != slot.forwarding {
                next.push((slot.ix, wanted));
            }
        }
        self.maintenance.out = out;
        let rewritten: Vec<SwitchIx> = next.iter().map(|(s, _)| *s).collect();
        let mut wanted = next.into_iter().peekable();
        let slots = self.slots.iter_mut().filter_map(|slot| {
            let (_, f) = wanted.next_if(|(s, _)| *s == slot.ix)?;
            Some(rewrite(slot, f))
        });
        for (ix, r) in join_all(slots).await {
            if let Err(e) = r {
                self.note(ix, &e);
            }
        }
        self.maintenance.changed.extend(&rewritten);
        Ok(rewritten)
    }
}

/// Rewrites one switch's forwarding to `wanted`; on a failure the switch is marked to be
/// configured afresh (what it holds is then unknown).
async fn rewrite<D: SwitchDriver>(
    slot: &mut Slot<D>,
    wanted: entries::Forwarding,
) -> (SwitchIx, Result<(), SwitchError>) {
    let batches = forwarding_rewrite(&slot.forwarding, &wanted);
    slot.forwarding = wanted;
    for batch in batches.iter().filter(|b| !b.is_empty()) {
        if let Some((i, e)) = slot.driver.write(batch).await.into_iter().next() {
            slot.forwarding_unsure = true;
            tracing::warn!(
                switch = slot.driver.name(),
                "forwarding rewrite, write {i}: {e}"
            );
            return (slot.ix, Err(switch_error(e)));
        }
    }
    (slot.ix, Ok(()))
}
