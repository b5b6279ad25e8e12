//! Switch memory: the rules each table holds, counted as asked for, and what a full table refused.

use super::FlowSelector;
use crate::fabric::RuleOp;
use crate::topo::SwitchIx;
use serde::{Deserialize, Serialize};

/// Rules one switch's tables hold (`usm_table`, `dsm_table`, `hh_table`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleCapacity {
    pub usm: usize,
    pub dsm: usize,
    pub hh: usize,
}

impl RuleCapacity {
    /// No limit.
    pub const UNLIMITED: RuleCapacity = RuleCapacity {
        usm: usize::MAX,
        dsm: usize::MAX,
        hh: usize::MAX,
    };

    pub fn of(c: &crate::capacity::Capacity) -> Self {
        RuleCapacity {
            usm: c.usm_rules,
            dsm: c.dsm_rules,
            hh: c.hh_rules,
        }
    }
}

/// A table that was full when selection wanted a rule in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FullTable {
    pub switch: SwitchIx,
    /// `usm_table`, `dsm_table` or `hh_table`.
    pub table: &'static str,
    pub size: usize,
}

pub(super) const USM: usize = 0;
pub(super) const DSM: usize = 1;
pub(super) const HH: usize = 2;
pub(super) const TABLES: [&str; 3] = ["usm_table", "dsm_table", "hh_table"];

impl FlowSelector {
    /// From now on, never asks a switch for more rules than `capacity`.
    pub fn set_capacity(&mut self, capacity: RuleCapacity) {
        self.capacity = capacity;
    }

    pub(super) fn cap(&self, table: usize) -> usize {
        [self.capacity.usm, self.capacity.dsm, self.capacity.hh][table]
    }

    /// Whether `switch`'s `table` has room for one more rule; notes it full otherwise.
    pub(super) fn room(&mut self, switch: SwitchIx, table: usize) -> bool {
        let used = self.usage.get(&switch).map_or(0, |u| u[table]);
        let size = self.cap(table);
        if used < size {
            return true;
        }
        *self
            .full
            .entry(FullTable {
                switch,
                table: TABLES[table],
                size,
            })
            .or_default() += 1;
        false
    }

    pub(super) fn used(&mut self, switch: SwitchIx, table: usize, delta: isize) {
        let u = &mut self.usage.entry(switch).or_default()[table];
        *u = u.checked_add_signed(delta).expect("rule counts stay >= 0");
    }

    /// Rules per switch and table, as asked for.
    pub fn usage(&self, switch: SwitchIx) -> [usize; 3] {
        self.usage.get(&switch).copied().unwrap_or_default()
    }

    /// Tables that were full since the last call, with how many rules they refused.
    pub fn take_full(&mut self) -> Vec<(FullTable, u32)> {
        std::mem::take(&mut self.full).into_iter().collect()
    }

    /// The rule changes `ops` were applied or given up: keep the per-switch counts (DSM removals
    /// the controller takes from [`FlowSelector::take_deferred`] count when taken).
    pub(super) fn count_ops(&mut self, ops: &[RuleOp]) {
        for op in ops {
            let (table, delta) = match op {
                RuleOp::InstallUsm { .. } => (USM, 1),
                RuleOp::RemoveUsm { .. } => (USM, -1),
                RuleOp::InstallDsm { .. } => (DSM, 1),
                RuleOp::RemoveDsm { .. } => (DSM, -1),
                RuleOp::InstallHh { .. } => (HH, 0),
                RuleOp::RemoveHh { .. } => (HH, -1),
            };
            if delta != 0 {
                self.used(op.switch(), table, delta);
            }
        }
    }
}
