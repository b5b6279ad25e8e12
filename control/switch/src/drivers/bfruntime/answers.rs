//! What the switch sends back: table entries read back as Canary's entries, register cells
//! and the meters they make, default entries' parameters, and HH digests of learn lists.

use super::be;
use crate::contract::{Program, Register, ResolvedTable, Table};
use crate::driver::Digests;
use crate::entries::{Entry, Key};
use crate::meters::{MeterCells, RowCells};
use bfrt_proto::bfrt::{self, data_field, entity, key_field, table_entry, TableData, TableEntry};
use canary_core::flow::Addr;
use canary_core::FlowId;
use std::collections::HashMap;

/// The entry a switch returned for table `table` (the inverse of
/// [`table_entry`](super::table_entry)): keys and parameters in the contract's order, by field
/// id. Errors name the table and the field.
pub fn entry_of(prog: &Program, table: Table, te: &TableEntry) -> Result<Entry, String> {
    let t = prog.table(table);
    if te.table_id != t.id {
        return Err(format!(
            "{}: entry of table id {} read back",
            t.name, te.table_id
        ));
    }
    let fits = |b: &[u8], bits: u32| be(b).filter(|v| bits >= 128 || v >> bits == 0);
    let mut keys = Vec::with_capacity(t.keys.len());
    if !te.is_default_entry {
        let Some(table_entry::Value::Key(k)) = &te.value else {
            return Err(format!("{}: an entry without a key", t.name));
        };
        for (i, f) in t.keys.iter().enumerate() {
            let kf = k
                .fields
                .iter()
                .find(|x| x.field_id == f.id)
                .ok_or_else(|| format!("{}: key field {i} (id {}) missing", t.name, f.id))?;
            let bad = || format!("{}: key field {i} does not fit {} bits", t.name, f.bits);
            keys.push(match &kf.match_type {
                Some(key_field::MatchType::Exact(x)) => {
                    Key::Exact(fits(&x.value, f.bits).ok_or_else(bad)?)
                }
                Some(key_field::MatchType::Lpm(x)) => Key::Lpm(
                    fits(&x.value, f.bits).ok_or_else(bad)?,
                    u32::try_from(x.prefix_len).map_err(|_| bad())?,
                ),
                _ => {
                    return Err(format!(
                        "{}: key field {i} is neither exact nor LPM",
                        t.name
                    ))
                }
            });
        }
    }
    let data = te
        .data
        .as_ref()
        .ok_or_else(|| format!("{}: the entry has no data", t.name))?;
    if data.action_id != t.action_id {
        return Err(format!(
            "{}: action id {} is not Canary's",
            t.name, data.action_id
        ));
    }
    let mut args = Vec::with_capacity(t.params.len());
    for (i, f) in t.params.iter().enumerate() {
        let v = data
            .fields
            .iter()
            .find(|x| x.field_id == f.id)
            .and_then(|x| match &x.value {
                Some(data_field::Value::Stream(b)) => fits(b, f.bits),
                _ => None,
            })
            .ok_or_else(|| {
                format!(
                    "{}: parameter {i} (id {}) missing or too wide",
                    t.name, f.id
                )
            })?;
        args.push(v);
    }
    Ok(Entry {
        table,
        keys,
        args,
        default: te.is_default_entry,
    })
}

/// One register's cells as read: `[member][pipe][index]`.
pub fn register_cells(r: &Register, entries: &[TableEntry]) -> Result<Vec<Vec<Vec<u32>>>, String> {
    let ix = r.index.ok_or("not a BF-RT register")?;
    let mut cells: Vec<Vec<Vec<u32>>> = vec![Vec::new(); r.members.len()];
    let mut seen = vec![false; r.size];
    for te in entries {
        let index = match &te.value {
            Some(table_entry::Value::Key(k)) => k
                .fields
                .iter()
                .find(|f| f.field_id == ix.id)
                .and_then(|f| match &f.match_type {
                    Some(key_field::MatchType::Exact(e)) => be(&e.value),
                    _ => None,
                }),
            _ => None,
        }
        .ok_or_else(|| format!("{}: an entry without $REGISTER_INDEX", r.name))?
            as usize;
        if index >= r.size || std::mem::replace(&mut seen[index], true) {
            return Err(format!(
                "{}: index {index} out of range or repeated",
                r.name
            ));
        }
        for ((member, f), pipes) in r.members.iter().zip(&mut cells) {
            let values: Vec<u32> = te
                .data
                .iter()
                .flat_map(|d| &d.fields)
                .filter(|d| d.field_id == f.id)
                .map(|d| match &d.value {
                    Some(data_field::Value::Stream(b)) if b.len() <= 4 => {
                        Ok(be(b).unwrap_or(0) as u32)
                    }
                    other => Err(format!("{}[{index}].{member}: value {other:?}", r.name)),
                })
                .collect::<Result<_, _>>()?;
            if pipes.is_empty() {
                if values.is_empty() {
                    return Err(format!("{}[{index}]: no value of {member}", r.name));
                }
                *pipes = vec![vec![0; r.size]; values.len()];
            }
            if values.len() != pipes.len() {
                return Err(format!(
                    "{}[{index}].{member}: {} values, other cells {} (one per pipe)",
                    r.name,
                    values.len(),
                    pipes.len()
                ));
            }
            for (p, v) in values.into_iter().enumerate() {
                pipes[p][index] = v;
            }
        }
    }
    // A read that stopped early is not a register of the program: the decoder says so.
    let read = seen.iter().filter(|s| **s).count();
    if read < r.size {
        for pipes in &mut cells {
            for p in pipes.iter_mut() {
                p.truncate(read);
            }
        }
    }
    Ok(cells)
}

/// The meters as read, one [`MeterCells`] per pipe, from the entries of each register table.
pub fn meter_cells(
    prog: &Program,
    by_table: &HashMap<u32, Vec<TableEntry>>,
) -> Result<Vec<MeterCells>, String> {
    let empty = Vec::new();
    let mut pipes: Option<usize> = None;
    let mut rows = |rows: &[crate::contract::MeterRow]| -> Result<Vec<Vec<RowCells>>, String> {
        let mut per_pipe: Vec<Vec<RowCells>> = Vec::new();
        for row in rows {
            let id = register_cells(&row.id, by_table.get(&row.id.id).unwrap_or(&empty))?;
            let count = register_cells(&row.count, by_table.get(&row.count.id).unwrap_or(&empty))?;
            let member = |cells: &Vec<Vec<Vec<u32>>>, reg: &Register, name: &str| {
                reg.members
                    .iter()
                    .position(|(m, _)| m == name)
                    .map(|i| cells[i].clone())
                    .ok_or_else(|| format!("{}: no data field {name}", reg.name))
            };
            let (tag, ids) = (member(&id, &row.id, "tag")?, member(&id, &row.id, "id")?);
            let counts = count
                .first()
                .cloned()
                .ok_or_else(|| format!("{}: no data field", row.count.name))?;
            let n = *pipes.get_or_insert(tag.len());
            if tag.len() != n || ids.len() != n || counts.len() != n {
                return Err(format!(
                    "{}: {} pipes, other registers {n}",
                    row.id.name,
                    tag.len()
                ));
            }
            per_pipe.resize_with(n, Vec::new);
            for p in 0..n {
                per_pipe[p].push(RowCells {
                    id_tag: tag[p].clone(),
                    id: ids[p].clone(),
                    count: counts[p].clone(),
                });
            }
        }
        Ok(per_pipe)
    };
    let usm = rows(&prog.meters.usm)?;
    let dsm = rows(&prog.meters.dsm)?;
    Ok(usm
        .into_iter()
        .zip(dsm)
        .map(|(usm, dsm)| MeterCells { usm, dsm })
        .collect())
}

/// Every digest of a learn list the switch sent, decoded into `out` (reports, or why not); a list
/// of another digest is one bad entry.
pub fn decode_digest_list(prog: &Program, list: &bfrt::DigestList, out: &mut Digests) {
    if list.digest_id != prog.digest.id {
        out.bad
            .push(format!("digest id {} is not the HH digest", list.digest_id));
        return;
    }
    for d in &list.data {
        match decode_digest(prog, d) {
            Ok(r) => out.reports.push(r),
            Err(e) => out.bad.push(e),
        }
    }
}

/// The table entries of one Read answer, added to `out` by table id.
pub fn entries_by_table(answer: bfrt::ReadResponse, out: &mut HashMap<u32, Vec<TableEntry>>) {
    for e in answer.entities {
        if let Some(entity::Entity::TableEntry(te)) = e.entity {
            out.entry(te.table_id).or_default().push(te);
        }
    }
}

/// The action parameters in the data of a Read answer's entries (the last entry with data wins),
/// in `t`'s parameter order; a missing or over-long value reads as 0. `None` without data.
pub fn default_entry_args(t: &ResolvedTable, answer: bfrt::ReadResponse) -> Option<Vec<u128>> {
    let mut args = None;
    for e in answer.entities {
        if let Some(entity::Entity::TableEntry(TableEntry { data: Some(d), .. })) = e.entity {
            args = Some(
                t.params
                    .iter()
                    .map(|p| {
                        d.fields
                            .iter()
                            .find(|f| f.field_id == p.id)
                            .and_then(|f| match &f.value {
                                Some(data_field::Value::Stream(b)) => be(b),
                                _ => None,
                            })
                            .unwrap_or(0)
                    })
                    .collect(),
            );
        }
    }
    args
}

/// One HH digest of a learn list: (flow, incoming pathBF).
pub fn decode_digest(prog: &Program, data: &TableData) -> Result<(FlowId, u32), String> {
    let mut v = [0u128; 6];
    for (i, f) in prog.digest.fields.iter().enumerate() {
        let d = data
            .fields
            .iter()
            .find(|d| d.field_id == f.id)
            .ok_or_else(|| format!("{}: field {} missing", prog.digest.name, f.id))?;
        let Some(data_field::Value::Stream(b)) = &d.value else {
            return Err(format!("{}: field {} is not bytes", prog.digest.name, f.id));
        };
        let x = be(b).ok_or_else(|| format!("{}: field {} too long", prog.digest.name, f.id))?;
        if f.bits < 128 && x >> f.bits != 0 {
            return Err(format!(
                "{}: field {} exceeds {} bits",
                prog.digest.name, f.id, f.bits
            ));
        }
        v[i] = x;
    }
    Ok((
        FlowId {
            src: Addr::v6(v[0]),
            dst: Addr::v6(v[1]),
            proto: v[2] as u8,
            sport: v[3] as u16,
            dport: v[4] as u16,
        },
        v[5] as u32,
    ))
}
