//! A switch back from an outage with its state kept did not get the rule changes asked for
//! while it was out of reach: its rules are read back and brought to what the fabric holds for
//! it (stale rules deleted, missing ones installed with their IDs) before it is used again.

use super::slot::{first_failure, switch_error, Slot};
use crate::driver::{DriverError, SwitchDriver};
use crate::entries::{self, Write};
use crate::rule_ids::RuleKey;
use canary_core::fabric::{RuleOp, SwitchError};
use std::collections::HashSet;

/// The rules the fabric holds for the switch, as installs with their IDs (0 for HH rules).
pub(super) fn desired<D>(slot: &Slot<D>) -> HashSet<(RuleOp, u32)> {
    let id = |op: &RuleOp| match *op {
        RuleOp::InstallDsm { flow, path_bf, .. } => slot.ids.id(&RuleKey::Dsm(flow, path_bf)),
        RuleOp::InstallUsm { flow, .. } => slot.ids.id(&RuleKey::Usm(flow)),
        _ => None,
    };
    let ops = slot.rules.installs(slot.ix).into_iter();
    ops.map(|op| {
        let id = id(&op).unwrap_or(0);
        (op, id)
    })
    .collect()
}

/// Reads the switch's rules back and writes the difference to what it should hold: deletes
/// first (a stale rule's ID may have been given to another rule), then installs. `Ok(false)`:
/// the driver cannot read rules back, and the caller configures the switch afresh.
pub(super) async fn reconcile<D: SwitchDriver>(slot: &mut Slot<D>) -> Result<bool, SwitchError> {
    let found = match slot.driver.read_installed().await {
        Ok(found) => found,
        Err(DriverError::Refused(e)) => {
            tracing::warn!(switch = slot.driver.name(), "{e}: configuring it afresh");
            return Ok(false);
        }
        Err(e) => return Err(switch_error(e)),
    };
    let s = slot.ix;
    let held: HashSet<(RuleOp, u32)> = found.rules.into_iter().map(|r| r.install(s)).collect();
    let want = desired(slot);
    let mut writes: Vec<Write> = held
        .difference(&want)
        .filter(|(op, _)| !hh_kept(op, &want))
        .map(|(op, id)| entries::rule(&op.as_removal(), *id, false))
        .collect();
    let deleted = writes.len();
    for (op, id) in want.difference(&held) {
        // An HH rule held with another η is modified in place.
        writes.push(entries::rule(op, *id, hh_kept(op, &held)));
    }
    if writes.is_empty() {
        return Ok(true);
    }
    tracing::info!(
        switch = slot.driver.name(),
        deleted,
        written = writes.len() - deleted,
        "rules brought back to what the controller asked for while it was out of reach"
    );
    first_failure("rules after an outage", slot.driver.write(&writes).await)?;
    Ok(true)
}

/// Whether `op`, an HH install, names a pathBF that `other` also has an HH rule for (with
/// another η): a modify, not a delete and an insert.
fn hh_kept(op: &RuleOp, other: &HashSet<(RuleOp, u32)>) -> bool {
    let RuleOp::InstallHh { path_bf, .. } = *op else {
        return false;
    };
    other
        .iter()
        .any(|(o, _)| matches!(*o, RuleOp::InstallHh { path_bf: p, .. } if p == path_bf))
}
