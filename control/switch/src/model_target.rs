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

use crate::contract::Table;
use crate::entries::{Change, Entry, Key, McGroup, Write, RID_TO_HOST};
use crate::meters::{self, Cell, MeterCells};
use crate::rule_ids::RuleKey;
use canary_core::fabric::RuleOp;
use canary_core::flow::Addr;
use canary_core::model::{epoch_window, SwitchConfig, SwitchModel};
use canary_core::sketch::{Dsm, Usm};
use canary_core::topo::{Flood, ForwardingState, Prefix, Replica, Route};
use canary_core::FlowId;
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
    pub fn read_installed(&self, model: &SwitchModel) -> crate::driver::Installed {
        use crate::entries::ReadRule;
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
            crate::entries::config(c).args
        } else {
            vec![]
        };
        crate::driver::Installed { rules, config }
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

    fn write_one(&mut self, model: &mut SwitchModel, w: &Write) -> Result<(), ModelWriteError> {
        let e = &w.entry;
        let t = e.table;
        let bad = |what: &str| ModelWriteError::Malformed(t, what.to_string());
        match t {
            Table::SwitchConfig => {
                if w.change == Change::Delete || e.args.len() != 5 {
                    return Err(bad(
                        "set_config takes (monitor, mask, epoch, epoch_prev, epoch_next)",
                    ));
                }
                let [prev, _, next] = epoch_window(e.args[2] as u16);
                if e.args[3] != u128::from(prev) || e.args[4] != u128::from(next) {
                    return Err(bad(
                        "epoch_prev and epoch_next are not the epoch's neighbours",
                    ));
                }
                model.set_config(SwitchConfig {
                    monitor: e.args[0] != 0,
                    mask: e.args[1] as u32,
                    epoch: e.args[2] as u16,
                });
                Ok(())
            }
            Table::HostPortIn => set_member(&mut self.host_in, t, w.change, port_key(e)?),
            Table::HostPortOut => set_member(&mut self.host_out, t, w.change, port_key(e)?),
            Table::FloodGroup => {
                let group = arg(e, 0)? as u16;
                put(&mut self.flood_of_port, t, w.change, port_key(e)?, group)
            }
            Table::EcmpGroup => {
                let [Key::Exact(g), Key::Exact(j)] = e.keys[..] else {
                    return Err(bad("keys are (group, member)"));
                };
                let port = arg(e, 0)? as u32;
                put(&mut self.ecmp, t, w.change, (g as u16, j as u16), port)
            }
            Table::IpRoute => {
                let [Key::Lpm(v, len)] = e.keys[..] else {
                    return Err(bad("the key is one LPM field"));
                };
                let group = (arg(e, 0)? as u16, arg(e, 1)? as u16);
                put(&mut self.routes, t, w.change, (v, len), group)
            }
            Table::EcmpMul0
            | Table::EcmpMul1
            | Table::EcmpMul2
            | Table::EcmpMul3
            | Table::EcmpModHi
            | Table::EcmpModLo => {
                let term = arg(e, 0)?;
                put(&mut self.ecmp_terms, t, w.change, (t, e.keys.clone()), term)
            }
            Table::Usm | Table::Dsm | Table::Hh => self.rule(model, w),
        }
    }

    fn rule(&mut self, model: &mut SwitchModel, w: &Write) -> Result<(), ModelWriteError> {
        let e = &w.entry;
        let t = e.table;
        let exact = |i: usize| match e.keys.get(i) {
            Some(Key::Exact(v)) => Ok(*v),
            _ => Err(ModelWriteError::Malformed(t, format!("key {i} missing"))),
        };
        let flow = || -> Result<FlowId, ModelWriteError> {
            Ok(FlowId {
                src: Addr(exact(0)?.to_be_bytes()),
                dst: Addr(exact(1)?.to_be_bytes()),
                proto: exact(2)? as u8,
                sport: exact(3)? as u16,
                dport: exact(4)? as u16,
            })
        };
        let install = w.change != Change::Delete;
        let (op, key, present) = match t {
            Table::Usm => {
                let f = flow()?;
                let op = if install {
                    RuleOp::InstallUsm { switch: 0, flow: f }
                } else {
                    RuleOp::RemoveUsm { switch: 0, flow: f }
                };
                (op, Some(RuleKey::Usm(f)), model.has_usm(&f))
            }
            Table::Dsm => {
                let (f, bf) = (flow()?, exact(5)? as u32);
                let op = if install {
                    RuleOp::InstallDsm {
                        switch: 0,
                        flow: f,
                        path_bf: bf,
                    }
                } else {
                    RuleOp::RemoveDsm {
                        switch: 0,
                        flow: f,
                        path_bf: bf,
                    }
                };
                (op, Some(RuleKey::Dsm(f, bf)), model.has_dsm(&f, bf))
            }
            _ => {
                let bf = exact(0)? as u32;
                let op = if install {
                    RuleOp::InstallHh {
                        switch: 0,
                        path_bf: bf,
                        eta: arg(e, 0)? as u32,
                    }
                } else {
                    RuleOp::RemoveHh {
                        switch: 0,
                        path_bf: bf,
                    }
                };
                (op, None, model.hh_eta(bf).is_some())
            }
        };
        match (w.change, present) {
            (Change::Insert, true) => return Err(ModelWriteError::Exists(t)),
            (Change::Modify | Change::Delete, false) => return Err(ModelWriteError::NotFound(t)),
            _ => {}
        }
        if w.change == Change::Modify && t != Table::Hh {
            // A USM/DSM modify changes the ID the buckets will take.
            model.apply(&remove_of(&op)).ok();
        }
        model
            .apply(&op)
            .map_err(|e| ModelWriteError::Full(e.to_string()))?;
        if let (true, Some(key)) = (install, key) {
            // The ID stays with the rule's buckets after a delete, as it does in registers.
            self.ids.insert(key, arg(e, 0)? as u32);
        }
        Ok(())
    }

    /// The forwarding the entries written so far make.
    fn forwarding_state(&self) -> ForwardingState {
        let mut sizes: BTreeMap<u16, u16> = BTreeMap::new();
        for &(g, j) in self.ecmp.keys() {
            let s = sizes.entry(g).or_default();
            *s = (*s).max(j + 1);
        }
        let groups = sizes
            .iter()
            .map(|(&g, &n)| {
                // 2s - 1 entries per group: member j is entry j, for j < s.
                let s = n.div_ceil(2);
                let members = (0..s)
                    .map(|j| self.ecmp.get(&(g, j)).copied().unwrap_or(0))
                    .collect();
                (g, members)
            })
            .collect();
        let routes = self
            .routes
            .iter()
            .map(|(&(v, len), &(group, size))| {
                let addr = Addr(v.to_be_bytes());
                let len = if addr.is_v4() {
                    len.saturating_sub(96)
                } else {
                    len
                };
                Route {
                    prefix: Prefix::new(addr, len as u8),
                    group,
                    size,
                }
            })
            .collect();
        let floods = self
            .flood_of_port
            .iter()
            .map(|(&in_port, &group)| Flood {
                in_port,
                group,
                replicas: self
                    .groups
                    .get(&group)
                    .map(|r| {
                        r.iter()
                            .map(|&(port, rid)| Replica {
                                port,
                                to_host: rid == RID_TO_HOST,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        ForwardingState {
            host_ports: self.host_in.iter().copied().collect(),
            groups,
            routes,
            floods,
        }
    }
}

fn remove_of(op: &RuleOp) -> RuleOp {
    match *op {
        RuleOp::InstallUsm { switch, flow } => RuleOp::RemoveUsm { switch, flow },
        RuleOp::InstallDsm {
            switch,
            flow,
            path_bf,
        } => RuleOp::RemoveDsm {
            switch,
            flow,
            path_bf,
        },
        RuleOp::InstallHh {
            switch, path_bf, ..
        } => RuleOp::RemoveHh { switch, path_bf },
        ref other => other.clone(),
    }
}

fn port_key(e: &Entry) -> Result<u32, ModelWriteError> {
    match e.keys[..] {
        [Key::Exact(p)] => Ok(p as u32),
        _ => Err(ModelWriteError::Malformed(
            e.table,
            "the key is one port".into(),
        )),
    }
}

fn arg(e: &Entry, i: usize) -> Result<u128, ModelWriteError> {
    e.args
        .get(i)
        .copied()
        .ok_or_else(|| ModelWriteError::Malformed(e.table, format!("action argument {i} missing")))
}

fn set_member(
    set: &mut BTreeSet<u32>,
    t: Table,
    change: Change,
    k: u32,
) -> Result<(), ModelWriteError> {
    match change {
        Change::Insert if !set.insert(k) => Err(ModelWriteError::Exists(t)),
        Change::Modify if !set.contains(&k) => Err(ModelWriteError::NotFound(t)),
        Change::Delete if !set.remove(&k) => Err(ModelWriteError::NotFound(t)),
        _ => Ok(()),
    }
}

fn put<K: Ord, V>(
    map: &mut BTreeMap<K, V>,
    t: Table,
    change: Change,
    k: K,
    v: V,
) -> Result<(), ModelWriteError> {
    match change {
        Change::Insert if map.contains_key(&k) => Err(ModelWriteError::Exists(t)),
        Change::Insert => {
            map.insert(k, v);
            Ok(())
        }
        Change::Modify => match map.get_mut(&k) {
            Some(old) => {
                *old = v;
                Ok(())
            }
            None => Err(ModelWriteError::NotFound(t)),
        },
        Change::Delete => map.remove(&k).map(drop).ok_or(ModelWriteError::NotFound(t)),
    }
}

#[cfg(test)]
mod tests;
