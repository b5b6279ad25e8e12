//! One switch as the fabric keeps it: what it should hold, and bringing it there: reconnecting,
//! configuring it afresh, or adopting what an earlier controller left on it.

use crate::driver::{Attach, DriverError, SwitchDriver};
use crate::entries::{self, Change, Write};
use crate::rule_ids::{RuleIds, RuleKey};
use canary_core::fabric::{RuleOp, SwitchError};
use canary_core::model::{epoch_tag, SwitchConfig};
use canary_core::topo::SwitchIx;
use canary_core::FlowId;
use std::collections::{BTreeMap, BTreeSet};

/// The rules the controller asked for on one switch: what a restarted switch gets back.
#[derive(Clone, Debug, Default)]
pub(super) struct Rules {
    pub(super) dsm: BTreeSet<(FlowId, u32)>,
    pub(super) usm: BTreeSet<FlowId>,
    pub(super) hh: BTreeMap<u32, u32>,
}

impl Rules {
    /// Every rule, as its install on switch `s`: DSM rules, then USM, then HH.
    pub(super) fn installs(&self, s: SwitchIx) -> Vec<RuleOp> {
        let dsm = self.dsm.iter().map(|&(flow, path_bf)| RuleOp::InstallDsm {
            switch: s,
            flow,
            path_bf,
        });
        let usm = (self.usm.iter()).map(|&flow| RuleOp::InstallUsm { switch: s, flow });
        let hh = self.hh.iter().map(|(&path_bf, &eta)| RuleOp::InstallHh {
            switch: s,
            path_bf,
            eta,
        });
        dsm.chain(usm).chain(hh).collect()
    }
}

pub(super) struct Slot<D> {
    pub(super) driver: D,
    pub(super) ix: SwitchIx,
    pub(super) monitor: bool,
    pub(super) mask: u32,
    pub(super) forwarding: entries::Forwarding,
    pub(super) rules: Rules,
    pub(super) ids: RuleIds,
    /// Configured at least once (a later re-push means it restarted).
    pub(super) configured: bool,
    /// Connected and holding what it should, as far as we know.
    pub(super) up: bool,
    pub(super) tags: Tags,
    pub(super) dropped_seen: u64,
    /// A rewrite of its forwarding failed part way: what it holds is not known, so it is
    /// configured afresh before it is used again.
    pub(super) forwarding_unsure: bool,
    /// Rule changes did not reach it (out of reach): what it holds is read back and brought to
    /// `rules` when it is back ([`super::reconcile`]).
    pub(super) rules_unsure: bool,
}

/// The epoch tags this controller gave the switch's `switch_config`. Tags only move forward,
/// whoever is primary, so they order controllers on the switch itself: a switch found holding a
/// tag this controller never set was run by another controller while this one could not reach
/// it, even if that controller is gone and the switch looks free.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tags {
    /// The last tag written and acknowledged.
    pub(super) confirmed: Option<u16>,
    /// The last tag written: if its write broke with the connection, it may have landed.
    pub(super) attempted: Option<u16>,
}

impl Tags {
    pub(super) fn writing(&mut self, tag: u16) {
        self.attempted = Some(tag);
    }
    pub(super) fn written(&mut self, tag: u16) {
        self.confirmed = Some(tag);
    }
    fn ours(&self, tag: u16) -> bool {
        self.confirmed.is_none() || self.confirmed == Some(tag) || self.attempted == Some(tag)
    }
}

pub(super) enum Up {
    /// As we left it.
    Same,
    /// Configured again: it lost its state.
    Repushed,
    /// Found as an earlier controller left it: (epoch tag, its monitoring rules).
    Adopted(u16, Vec<RuleOp>),
    /// Configured for the first time.
    Fresh,
    /// Connected for the first time to a switch that holds what an earlier controller
    /// configured: the caller adopts it or configures it afresh.
    Kept,
}

pub(super) fn switch_error(e: DriverError) -> SwitchError {
    match e {
        DriverError::Unreachable(m) => SwitchError::Unreachable(m),
        DriverError::NotPrimary(m) => SwitchError::NotPrimary(m),
        e => SwitchError::Other(e.to_string()),
    }
}

/// Every entry of the switch's forwarding, as inserts.
pub(super) fn inserts(entries: &[entries::Entry]) -> Vec<Write> {
    entries
        .iter()
        .map(|e| Write {
            change: Change::Insert,
            entry: e.clone(),
        })
        .collect()
}

/// The first failure of a batch of writes, as an error naming how many failed.
pub(super) fn first_failure(
    what: &str,
    failed: Vec<(usize, DriverError)>,
) -> Result<(), SwitchError> {
    match failed.into_iter().next() {
        None => Ok(()),
        Some((i, e)) => Err(switch_error(match e {
            DriverError::Unreachable(m) => DriverError::Unreachable(m),
            e => DriverError::Refused(format!("{what}, write {i}: {e}")),
        })),
    }
}

/// Makes sure the switch is reachable and holds what it should; configures it when it does not.
/// A switch first met holding an earlier controller's state is left to the caller ([`Up::Kept`]).
pub(super) async fn ensure_up<D: SwitchDriver>(
    slot: &mut Slot<D>,
    epoch: u64,
    attach_only: bool,
) -> Result<Up, SwitchError> {
    if slot.forwarding_unsure && slot.driver.connected() {
        tracing::warn!(
            switch = slot.driver.name(),
            "its forwarding's rewrite failed part way: configuring it afresh"
        );
        return configure(slot, epoch, attach_only).await;
    }
    if slot.up && slot.driver.connected() {
        if !attach_only
            || slot
                .driver
                .pipeline_unchanged()
                .await
                .map_err(switch_error)?
        {
            return Ok(Up::Same);
        }
        tracing::warn!(
            switch = slot.driver.name(),
            "the pipeline's owner pushed a new one: configuring Canary's state again"
        );
    }
    slot.up = false;
    let attach = slot.driver.connect().await.map_err(switch_error)?;
    if attach == Attach::Kept {
        if slot.configured {
            not_taken_over(slot).await?;
            if slot.rules_unsure {
                if !super::reconcile::reconcile(slot).await? {
                    return configure(slot, epoch, attach_only).await;
                }
                slot.rules_unsure = false;
            }
            slot.up = true;
            return Ok(Up::Same);
        }
        return Ok(Up::Kept);
    }
    configure(slot, epoch, attach_only).await
}

/// A switch this controller configured, connected again holding Canary's state: fails with
/// `NotPrimary` if another controller ran it meanwhile (its epoch tag is not one this controller
/// set), so that this one stands down instead of going on with rules it no longer knows.
async fn not_taken_over<D: SwitchDriver>(slot: &mut Slot<D>) -> Result<(), SwitchError> {
    let found = match slot.driver.read_installed().await {
        Ok(found) => found,
        Err(DriverError::Refused(e)) => {
            tracing::debug!(switch = slot.driver.name(), "no epoch tag to check: {e}");
            return Ok(());
        }
        Err(e) => return Err(switch_error(e)),
    };
    match found.config.get(2).map(|&t| t as u16) {
        Some(tag) if !slot.tags.ours(tag) => Err(SwitchError::NotPrimary(format!(
            "{}: holds epoch tag {tag}, which this controller never set (its last: {}): another \
             controller ran it while this one could not reach it",
            slot.driver.name(),
            slot.tags.confirmed.unwrap_or(0)
        ))),
        _ => Ok(()),
    }
}

/// Configures a connected switch afresh: pipeline and forwarding (unless another controller
/// owns them), configuration, and the rules the controller asked for.
pub(super) async fn configure<D: SwitchDriver>(
    slot: &mut Slot<D>,
    epoch: u64,
    attach_only: bool,
) -> Result<Up, SwitchError> {
    if !attach_only {
        slot.driver.load_pipeline().await.map_err(switch_error)?;
        slot.driver
            .write_groups(&slot.forwarding.groups)
            .await
            .map_err(switch_error)?;
        let failed = slot.driver.write(&inserts(&slot.forwarding.entries)).await;
        first_failure("forwarding", failed)?;
    }
    let tag = epoch_tag(epoch);
    let config = entries::config(SwitchConfig {
        monitor: slot.monitor,
        mask: slot.mask,
        epoch: tag,
    });
    let mut writes = vec![Write {
        change: Change::Modify,
        entry: config,
    }];
    let ops = slot.rules.installs(slot.ix);
    let ids = &mut slot.ids;
    for op in &ops {
        let id = ids
            .for_op(op)
            .map_err(|e| SwitchError::Other(e.to_string()))?
            .unwrap_or(0);
        writes.push(entries::rule(op, id, false));
    }
    slot.tags.writing(tag);
    let failed = slot.driver.write(&writes).await;
    first_failure("configuration and rules", failed)?;
    slot.tags.written(tag);
    let was = slot.configured;
    slot.configured = true;
    slot.up = true;
    slot.forwarding_unsure = false;
    slot.rules_unsure = false;
    Ok(if was { Up::Repushed } else { Up::Fresh })
}

/// Takes a switch over as an earlier controller left it: its rules and their IDs read back,
/// nothing written. A switch whose state cannot be read back is configured afresh.
pub(super) async fn adopt_state<D: SwitchDriver>(
    slot: &mut Slot<D>,
    attach_only: bool,
) -> Result<Up, SwitchError> {
    let found = match slot.driver.read_installed().await {
        Ok(found) if entries::holds_config(&found.config, slot.monitor, slot.mask) => found,
        Ok(_) => {
            return Err(SwitchError::Other(format!(
                "{}: its configuration changed while it was read back",
                slot.driver.name()
            )))
        }
        Err(e) => {
            tracing::warn!(
                switch = slot.driver.name(),
                "cannot read back what an earlier controller installed ({e}): configuring afresh"
            );
            return configure(slot, 0, attach_only).await;
        }
    };
    let s = slot.ix;
    let mut rules = Rules::default();
    let mut live = Vec::new();
    let mut ops = Vec::new();
    for r in found.rules {
        let (op, id) = r.install(s);
        match op {
            RuleOp::InstallUsm { flow, .. } => {
                rules.usm.insert(flow);
                live.push((RuleKey::Usm(flow), id));
            }
            RuleOp::InstallDsm { flow, path_bf, .. } => {
                rules.dsm.insert((flow, path_bf));
                live.push((RuleKey::Dsm(flow, path_bf), id));
            }
            RuleOp::InstallHh { path_bf, eta, .. } => {
                rules.hh.insert(path_bf, eta);
            }
            _ => continue,
        }
        ops.push(op);
    }
    slot.rules = rules;
    slot.ids = RuleIds::adopted(live);
    let tag = found.config[2] as u16;
    slot.tags.writing(tag);
    slot.tags.written(tag);
    slot.configured = true;
    slot.up = true;
    Ok(Up::Adopted(found.config[2] as u16, ops))
}
