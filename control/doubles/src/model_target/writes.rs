//! One write applied as the program would: configuration, forwarding and ECMP entries kept in
//! the tables, rules installed in the model with the ID they carry; an insert of an entry that
//! is there, or a modify or delete of one that is not, refused.

use super::{ModelTables, ModelWriteError};
use canary_core::fabric::RuleOp;
use canary_core::flow::Addr;
use canary_core::model::{epoch_window, SwitchConfig, SwitchModel};
use canary_core::FlowId;
use canary_switch::contract::Table;
use canary_switch::entries::{Change, Entry, Key, Write};
use canary_switch::rule_ids::RuleKey;
use std::collections::{BTreeMap, BTreeSet};

impl ModelTables {
    /// Applies one write.
    pub(super) fn write_one(
        &mut self,
        model: &mut SwitchModel,
        w: &Write,
    ) -> Result<(), ModelWriteError> {
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

    /// A USM, DSM or HH rule installed, modified or removed in the model.
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
            model.apply(&op.as_removal()).ok();
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
}

/// The port a one-port key names.
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
