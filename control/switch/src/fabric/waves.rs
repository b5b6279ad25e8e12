//! Rule changes in waves: every switch written in parallel within a wave, the desired rules
//! kept whatever the switches answer.

use super::slot::switch_error;
use super::{Clock, SwitchFabric};
use crate::driver::SwitchDriver;
use crate::entries::{self, Write};
use crate::rule_ids::RuleKey;
use canary_core::fabric::{RuleOp, SwitchError};
use canary_core::topo::SwitchIx;
use futures::future::join_all;
use std::collections::{BTreeMap, BTreeSet};

/// A wave planned: the writes per switch, the operations already failed, and the HH rules it
/// inserts (not modifies).
#[derive(Default)]
struct Plan {
    per_switch: BTreeMap<SwitchIx, Vec<(RuleOp, Write)>>,
    failed: Vec<(RuleOp, SwitchError)>,
    new_hh: BTreeSet<(SwitchIx, u32)>,
}

impl<D: SwitchDriver, C: Clock> SwitchFabric<D, C> {
    /// One wave of rule changes, every switch written in parallel.
    pub(super) async fn apply_wave(&mut self, ops: &[RuleOp]) -> Vec<(RuleOp, SwitchError)> {
        let Plan {
            per_switch,
            mut failed,
            new_hh,
        } = self.plan_wave(ops);
        failed.extend(self.write_wave(per_switch).await);
        self.forget_refused(&failed, &new_hh);
        failed
    }

    /// Updates the desired rules and assigns IDs; the writes are the real changes.
    fn plan_wave(&mut self, ops: &[RuleOp]) -> Plan {
        let mut plan = Plan::default();
        for op in ops {
            let Some(slot) = self.slots.get_mut(op.switch() as usize) else {
                plan.failed
                    .push((op.clone(), SwitchError::Other("no such switch".into())));
                continue;
            };
            let r = &mut slot.rules;
            // Only real changes reach the switch; the desired rules change either way.
            let (change, modify) = match *op {
                RuleOp::InstallDsm { flow, path_bf, .. } => (r.dsm.insert((flow, path_bf)), false),
                RuleOp::RemoveDsm { flow, path_bf, .. } => (r.dsm.remove(&(flow, path_bf)), false),
                RuleOp::InstallUsm { flow, .. } => (r.usm.insert(flow), false),
                RuleOp::RemoveUsm { flow, .. } => (r.usm.remove(&flow), false),
                RuleOp::InstallHh { path_bf, eta, .. } => match r.hh.insert(path_bf, eta) {
                    None => (true, false),
                    Some(old) => (old != eta, true),
                },
                RuleOp::RemoveHh { path_bf, .. } => (r.hh.remove(&path_bf).is_some(), false),
            };
            if !change {
                continue;
            }
            if let RuleOp::InstallHh { path_bf, .. } = *op {
                if !modify {
                    plan.new_hh.insert((op.switch(), path_bf));
                }
            }
            // A removal retires its ID even if the switch then refuses the delete: a bucket
            // holding it after two harvests fails the harvest loudly rather than being decoded
            // as another flow.
            let id = match slot.ids.for_op(op) {
                Ok(id) => id.unwrap_or(0),
                Err(e) => {
                    plan.failed
                        .push((op.clone(), SwitchError::Other(e.to_string())));
                    continue;
                }
            };
            plan.per_switch
                .entry(op.switch())
                .or_default()
                .push((op.clone(), entries::rule(op, id, modify)));
        }
        plan
    }

    /// Writes every switch's list in parallel; returns the operations refused or not written.
    async fn write_wave(
        &mut self,
        mut per_switch: BTreeMap<SwitchIx, Vec<(RuleOp, Write)>>,
    ) -> Vec<(RuleOp, SwitchError)> {
        let work: Vec<_> = self
            .slots
            .iter_mut()
            .filter_map(|slot| per_switch.remove(&slot.ix).map(|list| (slot, list)))
            .collect();
        let results = join_all(work.into_iter().map(|(slot, list)| async move {
            if !(slot.up && slot.driver.connected()) {
                // Kept in the desired rules: the switch gets them when it is back (reconcile).
                slot.rules_unsure = true;
                let e =
                    SwitchError::Unreachable(format!("{} is not connected", slot.driver.name()));
                return list
                    .into_iter()
                    .map(|(op, _)| (op, e.clone()))
                    .collect::<Vec<_>>();
            }
            let writes: Vec<Write> = list.iter().map(|(_, w)| w.clone()).collect();
            let failed: Vec<(RuleOp, SwitchError)> = slot
                .driver
                .write(&writes)
                .await
                .into_iter()
                .filter_map(|(i, e)| list.get(i).map(|(op, _)| (op.clone(), switch_error(e))))
                .collect();
            if failed
                .iter()
                .any(|(_, e)| matches!(e, SwitchError::Unreachable(_)))
            {
                slot.rules_unsure = true;
            }
            failed
        }))
        .await;
        results.into_iter().flatten().collect()
    }

    /// A switch that refused an install does not hold the rule: it is not re-pushed after a
    /// restart, and removing it later writes nothing. (An unreachable switch gets it when it
    /// is configured again.)
    fn forget_refused(
        &mut self,
        failed: &[(RuleOp, SwitchError)],
        new_hh: &BTreeSet<(SwitchIx, u32)>,
    ) {
        for (op, e) in failed {
            if !op.is_install() || matches!(e, SwitchError::Unreachable(_)) {
                continue;
            }
            let Some(slot) = self.slots.get_mut(op.switch() as usize) else {
                continue;
            };
            let r = &mut slot.rules;
            match *op {
                RuleOp::InstallDsm { flow, path_bf, .. } => {
                    r.dsm.remove(&(flow, path_bf));
                    slot.ids.remove(&RuleKey::Dsm(flow, path_bf));
                }
                RuleOp::InstallUsm { flow, .. } => {
                    r.usm.remove(&flow);
                    slot.ids.remove(&RuleKey::Usm(flow));
                }
                RuleOp::InstallHh { path_bf, .. } if new_hh.contains(&(op.switch(), path_bf)) => {
                    r.hh.remove(&path_bf);
                }
                _ => {}
            }
        }
    }
}
