//! The reference model as a switch target: what Canary's P4 program does with the table writes,
//! multicast groups and register accesses a driver sends, applied to a
//! [`canary_core::model::SwitchModel`]. The chaos driver (in process) and the model-backed BF
//! Runtime server (over gRPC) are both this, so they answer the way the program would: an insert
//! of an entry that is there fails, a full table refuses, a removed rule's ID stays in the
//! buckets it took.
//!
//! The ECMP product and remainder tables are accepted and kept but not consulted: the model
//! computes the member they encode (`canary_core::sketch::ecmp_member`) from the configured
//! mask; `entries::tests` holds the tables to that member.
mod forwarding;
mod writes;

use canary_core::fabric::RuleOp;
use canary_core::model::{SwitchConfig, SwitchModel};
use canary_core::sketch::{Dsm, Usm};
use canary_switch::contract::Table;
use canary_switch::entries::{Key, McGroup, Write};
use canary_switch::meters::{self, Cell, MeterCells};
use canary_switch::rule_ids::RuleKey;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A write the program refuses, as a switch would say it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelWriteError {
    #[error("{0:?}: entry already exists")]
    Exists(Table),
    #[error("{0:?}: no such entry")]
    NotFound(Table),
    #[error("{0}")]
    Full(String),
    #[error("{0:?}: {1}")]
    Malformed(Table, String),
}

/// The tables of one switch beyond what [`SwitchModel`] keeps: the forwarding entries as
/// written (turned into the model's [`ForwardingState`]), the multicast groups, the ECMP
/// tables, and the ID each rule carried (what the meter cells hold).
#[derive(Clone, Debug, Default)]
pub struct ModelTables {
    ids: HashMap<RuleKey, u32>,
    host_in: BTreeSet<u32>,
    host_out: BTreeSet<u32>,
    flood_of_port: BTreeMap<u32, u16>,
    groups: BTreeMap<u16, Vec<(u32, u16)>>,
    ecmp: BTreeMap<(u16, u16), u32>,
    routes: BTreeMap<(u128, u32), (u16, u16)>,
    ecmp_terms: BTreeMap<(Table, Vec<Key>), u128>,
}

impl ModelTables {
    /// Applies `writes` in order to `model`; returns the failed ones by index, as a switch
    /// answers a batch.
    pub fn write(
        &mut self,
        model: &mut SwitchModel,
        writes: &[Write],
    ) -> Vec<(usize, ModelWriteError)> {
        let mut failed = Vec::new();
        let mut forwarding = false;
        for (i, w) in writes.iter().enumerate() {
            forwarding |= !matches!(
                w.entry.table,
                Table::Usm | Table::Dsm | Table::Hh | Table::SwitchConfig
            );
            if let Err(e) = self.write_one(model, w) {
                failed.push((i, e));
            }
        }
        if forwarding {
            model.set_forwarding(self.forwarding_state());
        }
        failed
    }

    /// Creates or replaces multicast groups.
    pub fn write_groups(&mut self, model: &mut SwitchModel, groups: &[McGroup]) {
        for g in groups {
            self.groups.insert(g.id, g.replicas.clone());
        }
        model.set_forwarding(self.forwarding_state());
    }

    /// The meter registers as the switch holds them: both parities' instances, each with the
    /// tag of the epoch that wrote it, rule IDs as the writes gave them.
    pub fn meter_cells(&self, model: &SwitchModel) -> MeterCells {
        let cap = model.capacity().meter;
        let no_usm = Usm::new(cap).expect("the program's meter shape");
        let no_dsm = Dsm::new(cap).expect("the program's meter shape");
        let mut parts = Vec::new();
        for p in 0..2 {
            // Each meter with its own tag: they differ while the switch is not flipped.
            let ((usm, usm_tag), (dsm, dsm_tag)) = model.meters_raw(p);
            parts.extend(usm_tag.map(|t| (t, usm, &no_dsm)));
            parts.extend(dsm_tag.map(|t| (t, &no_usm, dsm)));
        }
        meters::encode_or_zero(cap, &parts, |k| self.ids.get(&k).copied())
    }

    /// Canary's rules and configuration as a switch answers a read of its tables.
    pub fn read_installed(&self, model: &SwitchModel) -> canary_switch::driver::Installed {
        use canary_switch::entries::ReadRule;
        let id = |k: &RuleKey| self.ids.get(k).copied().unwrap_or(0);
        let rules = model
            .installed()
            .into_iter()
            .filter_map(|op| match op {
                RuleOp::InstallUsm { flow, .. } => Some(ReadRule::Usm {
                    flow,
                    id: id(&RuleKey::Usm(flow)),
                }),
                RuleOp::InstallDsm { flow, path_bf, .. } => Some(ReadRule::Dsm {
                    flow,
                    path_bf,
                    id: id(&RuleKey::Dsm(flow, path_bf)),
                }),
                RuleOp::InstallHh { path_bf, eta, .. } => Some(ReadRule::Hh { path_bf, eta }),
                _ => None,
            })
            .collect();
        let c = model.config();
        // A switch never configured reads back the program's default: no arguments of ours.
        let config = if c.epoch >= 2 {
            canary_switch::entries::config(c).args
        } else {
            vec![]
        };
        canary_switch::driver::Installed { rules, config }
    }

    /// Zeroes meter cells. The model tags a whole parity instance, not each cell, so only the
    /// cells of an instance no epoch holds any more can be asked for (the harvest clears cells
    /// whose tag is half a wrap old); they are zero in [`ModelTables::meter_cells`] already.
    pub fn clear_cells(&mut self, _model: &mut SwitchModel, _cells: &[Cell]) {}

    /// Every entry of table `t` deleted (a controller clearing it).
    pub fn clear(&mut self, model: &mut SwitchModel, t: Table) {
        match t {
            Table::HostPortIn => self.host_in.clear(),
            Table::HostPortOut => self.host_out.clear(),
            Table::FloodGroup => self.flood_of_port.clear(),
            Table::EcmpGroup => self.ecmp.clear(),
            Table::IpRoute => self.routes.clear(),
            Table::Usm => model.clear_rules(true, false, false),
            Table::Dsm => model.clear_rules(false, true, false),
            Table::Hh => model.clear_rules(false, false, true),
            Table::SwitchConfig => model.set_config(SwitchConfig::default()),
            other => self.ecmp_terms.retain(|(table, _), _| *table != other),
        }
        model.set_forwarding(self.forwarding_state());
    }

    /// Every multicast group deleted.
    pub fn clear_groups(&mut self, model: &mut SwitchModel) {
        self.groups.clear();
        model.set_forwarding(self.forwarding_state());
    }

    /// The switch lost everything (a restart): tables, groups, registers.
    pub fn restart(&mut self, model: &mut SwitchModel) {
        *self = ModelTables::default();
        model.restart();
    }
}

#[cfg(test)]
mod tests;
