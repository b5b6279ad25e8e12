//! The rule tables the controller writes (USM, DSM, HH), with their capacity, and what they
//! hold. Apart from the packet path, which only looks rules up ([`super::MonitorRules`]).

use super::SwitchModel;
use crate::fabric::RuleOp;
use crate::flow::FlowId;
use rustc_hash::{FxHashMap, FxHashSet};

/// A rule the switch could not take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("{table} is full ({size} entries)")]
    Full { table: &'static str, size: usize },
}

/// The rules the controller installed.
#[derive(Clone, Debug, Default)]
pub(super) struct Rules {
    pub(super) usm: FxHashSet<FlowId>,
    pub(super) dsm: FxHashSet<(FlowId, u32)>,
    pub(super) hh: FxHashMap<u32, u32>,
}

impl SwitchModel {
    /// Installs or removes one rule (`op`'s switch is the caller's business). Installing a rule
    /// that is there is a no-op (an HH rule takes the new η); removing one that is not, too.
    pub fn apply(&mut self, op: &RuleOp) -> Result<(), RuleError> {
        let full = |table, size| Err(RuleError::Full { table, size });
        let r = &mut self.rules;
        match *op {
            RuleOp::InstallUsm { flow, .. } => {
                if !r.usm.contains(&flow) && r.usm.len() >= self.capacity.usm_rules {
                    return full("usm_table", self.capacity.usm_rules);
                }
                r.usm.insert(flow);
            }
            RuleOp::RemoveUsm { flow, .. } => {
                r.usm.remove(&flow);
            }
            RuleOp::InstallDsm { flow, path_bf, .. } => {
                if !r.dsm.contains(&(flow, path_bf)) && r.dsm.len() >= self.capacity.dsm_rules {
                    return full("dsm_table", self.capacity.dsm_rules);
                }
                r.dsm.insert((flow, path_bf));
            }
            RuleOp::RemoveDsm { flow, path_bf, .. } => {
                r.dsm.remove(&(flow, path_bf));
            }
            RuleOp::InstallHh { path_bf, eta, .. } => {
                if !r.hh.contains_key(&path_bf) && r.hh.len() >= self.capacity.hh_rules {
                    return full("hh_table", self.capacity.hh_rules);
                }
                r.hh.insert(path_bf, eta);
            }
            RuleOp::RemoveHh { path_bf, .. } => {
                r.hh.remove(&path_bf);
            }
        }
        Ok(())
    }

    /// Rules installed: (USM, DSM, HH).
    pub fn rule_counts(&self) -> (usize, usize, usize) {
        (
            self.rules.usm.len(),
            self.rules.dsm.len(),
            self.rules.hh.len(),
        )
    }

    pub fn has_usm(&self, flow: &FlowId) -> bool {
        self.rules.usm.contains(flow)
    }

    pub fn has_dsm(&self, flow: &FlowId, path_bf: u32) -> bool {
        self.rules.dsm.contains(&(*flow, path_bf))
    }

    /// Every rule installed, as the installs that made it (`switch` 0: the caller's business),
    /// in a stable order.
    pub fn installed(&self) -> Vec<RuleOp> {
        let r = &self.rules;
        let mut usm: Vec<_> = r.usm.iter().copied().collect();
        let mut dsm: Vec<_> = r.dsm.iter().copied().collect();
        let mut hh: Vec<_> = r.hh.iter().map(|(&b, &e)| (b, e)).collect();
        usm.sort_unstable();
        dsm.sort_unstable();
        hh.sort_unstable();
        let mut ops: Vec<RuleOp> = usm
            .into_iter()
            .map(|flow| RuleOp::InstallUsm { switch: 0, flow })
            .collect();
        ops.extend(dsm.into_iter().map(|(flow, path_bf)| RuleOp::InstallDsm {
            switch: 0,
            flow,
            path_bf,
        }));
        ops.extend(hh.into_iter().map(|(path_bf, eta)| RuleOp::InstallHh {
            switch: 0,
            path_bf,
            eta,
        }));
        ops
    }

    /// η of the HH rule on `path_bf`, if there is one.
    pub fn hh_eta(&self, path_bf: u32) -> Option<u32> {
        self.rules.hh.get(&path_bf).copied()
    }

    /// Empties the rule tables asked for (a controller clearing them).
    pub fn clear_rules(&mut self, usm: bool, dsm: bool, hh: bool) {
        if usm {
            self.rules.usm.clear();
        }
        if dsm {
            self.rules.dsm.clear();
        }
        if hh {
            self.rules.hh.clear();
        }
    }
}
