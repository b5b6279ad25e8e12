//! Applying a write's updates to the model, once the schema has held them: table entries become
//! the contract's writes, the packet replication engine's nodes and groups become multicast
//! groups, and register clears clear the model's meters.

use super::{be, lock, BfrtModelSwitch, Inner};
use bfrt_proto::bfrt::{data_field, entity, key_field, table_entry, update, TableEntry, Update};
use canary_switch::entries::{Change, Entry, Key, McGroup, Write};

impl BfrtModelSwitch {
    /// Applies one update; `Err((true, why))` when it breaks the schema.
    pub(super) fn apply(&self, u: &Update) -> Result<(), (bool, String)> {
        let schema = |e: String| (true, e);
        let kind = update::Type::try_from(u.r#type).unwrap_or(update::Type::Unspecified);
        let e = u
            .entity
            .as_ref()
            .and_then(|e| e.entity.as_ref())
            .ok_or_else(|| schema("an update without entity".into()))?;
        match e {
            entity::Entity::TableOperation(op) => {
                let t = self
                    .schema
                    .tables
                    .get(&op.table_id)
                    .ok_or_else(|| schema(format!("no table with id {}", op.table_id)))?;
                if !t.operations.contains(&op.table_operations_type) {
                    return Err(schema(format!(
                        "{}: operation {:?} not supported (it has {:?})",
                        t.name, op.table_operations_type, t.operations
                    )));
                }
                Ok(())
            }
            entity::Entity::TableEntry(te) => {
                let t = self.schema.check(te, kind).map_err(schema)?;
                let mut inner = lock(&self.inner);
                let mut plane = lock(&self.plane);
                let model = plane.switch_mut(self.ix);
                let clear =
                    kind == update::Type::Delete && te.value.is_none() && !te.is_default_entry;
                if t.kind == "Register" {
                    if clear {
                        if self.program.meters.rows().any(|r| r.id.id == te.table_id) {
                            model.clear_meters();
                        } else if self.program.hashpipe.iter().any(|r| r.id == te.table_id) {
                            model.clear_hashpipe();
                        }
                    }
                    // A cell written to zero: the model's cells are zero unless an epoch holds them.
                    return Ok(());
                }
                if t.kind.starts_with("Pre") {
                    return self
                        .apply_pre(&mut inner, model, te, kind, clear)
                        .map_err(|e| (false, e));
                }
                let table = self
                    .program
                    .tables()
                    .iter()
                    .find(|r| r.id == te.table_id)
                    .ok_or_else(|| (false, format!("{}: not a table Canary writes", t.name)))?;
                if clear {
                    inner.tables.clear(model, table.table);
                    return Ok(());
                }
                let w = to_write(table, te, kind).map_err(schema)?;
                let failed = inner.tables.write(model, &[w]);
                match failed.into_iter().next() {
                    None => Ok(()),
                    Some((_, e)) => Err((false, e.to_string())),
                }
            }
            _ => Err(schema("unsupported entity".into())),
        }
    }

    fn apply_pre(
        &self,
        inner: &mut Inner,
        model: &mut canary_core::model::SwitchModel,
        te: &TableEntry,
        kind: update::Type,
        clear: bool,
    ) -> Result<(), String> {
        let node_table = te.table_id == 503316481;
        if clear {
            if node_table {
                inner.nodes.clear();
            } else {
                inner.groups.clear();
                inner.tables.clear_groups(model);
            }
            return Ok(());
        }
        let key = key_values(te).into_iter().next().unwrap_or(0) as u32;
        let fields = te
            .data
            .as_ref()
            .map(|d| d.fields.clone())
            .unwrap_or_default();
        let ints = |id: u32| -> Vec<u32> {
            fields
                .iter()
                .find(|f| f.field_id == id)
                .and_then(|f| match &f.value {
                    Some(data_field::Value::IntArrVal(a)) => Some(a.val.clone()),
                    _ => None,
                })
                .unwrap_or_default()
        };
        if node_table {
            if kind == update::Type::Delete {
                inner.nodes.remove(&key);
                return Ok(());
            }
            let rid = fields
                .iter()
                .find(|f| f.field_id == 1)
                .and_then(|f| match &f.value {
                    Some(data_field::Value::Stream(b)) => {
                        Some(b.iter().fold(0u16, |a, &x| a << 8 | u16::from(x)))
                    }
                    _ => None,
                })
                .unwrap_or(0);
            inner.nodes.insert(key, (rid, ints(3)));
            return Ok(());
        }
        let mgid = key as u16;
        if kind == update::Type::Delete {
            inner.groups.remove(&mgid);
        } else {
            let mut replicas = Vec::new();
            for n in ints(1) {
                let (rid, ports) = inner
                    .nodes
                    .get(&n)
                    .cloned()
                    .ok_or_else(|| format!("$pre.mgid {mgid}: no node {n}"))?;
                replicas.extend(ports.into_iter().map(|p| (p, rid)));
            }
            inner.groups.insert(mgid, replicas.clone());
            inner
                .tables
                .write_groups(model, &[McGroup { id: mgid, replicas }]);
        }
        Ok(())
    }
}

fn key_values(te: &TableEntry) -> Vec<u128> {
    match &te.value {
        Some(table_entry::Value::Key(k)) => k
            .fields
            .iter()
            .map(|f| match &f.match_type {
                Some(key_field::MatchType::Exact(e)) => be(&e.value),
                Some(key_field::MatchType::Lpm(l)) => be(&l.value),
                _ => 0,
            })
            .collect(),
        _ => vec![],
    }
}

/// The contract's write an entry is (checked against the schema already).
fn to_write(
    table: &canary_switch::contract::ResolvedTable,
    te: &TableEntry,
    kind: update::Type,
) -> Result<Write, String> {
    let mut keys = Vec::new();
    if let Some(table_entry::Value::Key(k)) = &te.value {
        for f in &table.keys {
            let kf = k
                .fields
                .iter()
                .find(|x| x.field_id == f.id)
                .ok_or_else(|| format!("{}: key field {} missing", table.name, f.id))?;
            keys.push(match &kf.match_type {
                Some(key_field::MatchType::Exact(e)) => Key::Exact(be(&e.value)),
                Some(key_field::MatchType::Lpm(l)) => Key::Lpm(be(&l.value), l.prefix_len as u32),
                _ => return Err(format!("{}: key field {}", table.name, f.id)),
            });
        }
    }
    let mut args = Vec::new();
    if let Some(d) = &te.data {
        for f in &table.params {
            let v = d
                .fields
                .iter()
                .find(|x| x.field_id == f.id)
                .and_then(|x| match &x.value {
                    Some(data_field::Value::Stream(b)) => Some(be(b)),
                    _ => None,
                })
                .unwrap_or(0);
            args.push(v);
        }
    }
    let change = match kind {
        update::Type::Insert => Change::Insert,
        update::Type::Delete => Change::Delete,
        _ if te.is_default_entry => Change::Modify,
        update::Type::Modify | update::Type::InsertOrModify => Change::Modify,
        other => return Err(format!("{}: update type {other:?}", table.name)),
    };
    Ok(Write {
        change,
        entry: Entry {
            table: table.table,
            keys,
            args,
            default: te.is_default_entry,
        },
    })
}
