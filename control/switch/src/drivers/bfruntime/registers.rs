//! Register cells as the switch sends them back, and the meters they make: every cell of the
//! registers (a wildcard read), or the cells a harvest asked for by key.

use super::be;
use crate::contract::{MeterRow, Program, Register};
use crate::meters::{Cell, MeterCells, RowCells};
use bfrt_proto::bfrt::{data_field, key_field, table_entry, TableEntry};
use std::collections::{HashMap, HashSet};

/// One entry of register `r`: its `$REGISTER_INDEX` and its values, `[member][pipe]`.
fn entry_cell(r: &Register, te: &TableEntry) -> Result<(usize, Vec<Vec<u32>>), String> {
    let ix = r.index.ok_or("not a BF-RT register")?;
    let index =
        match &te.value {
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
        .ok_or_else(|| format!("{}: an entry without $REGISTER_INDEX", r.name))? as usize;
    if index >= r.size {
        return Err(format!("{}: index {index} out of range", r.name));
    }
    let mut members = Vec::with_capacity(r.members.len());
    for (member, f) in &r.members {
        let values: Vec<u32> = te
            .data
            .iter()
            .flat_map(|d| &d.fields)
            .filter(|d| d.field_id == f.id)
            .map(|d| match &d.value {
                Some(data_field::Value::Stream(b)) if b.len() <= 4 => Ok(be(b).unwrap_or(0) as u32),
                other => Err(format!("{}[{index}].{member}: value {other:?}", r.name)),
            })
            .collect::<Result<_, _>>()?;
        if values.is_empty() {
            return Err(format!("{}[{index}]: no value of {member}", r.name));
        }
        if members
            .first()
            .is_some_and(|v: &Vec<u32>| v.len() != values.len())
        {
            return Err(format!(
                "{}[{index}].{member}: {} values, the other members {} (one per pipe)",
                r.name,
                values.len(),
                members[0].len()
            ));
        }
        members.push(values);
    }
    Ok((index, members))
}

/// One register's cells as read: `[member][pipe][index]`.
pub fn register_cells(r: &Register, entries: &[TableEntry]) -> Result<Vec<Vec<Vec<u32>>>, String> {
    let mut cells: Vec<Vec<Vec<u32>>> = vec![Vec::new(); r.members.len()];
    let mut seen = vec![false; r.size];
    for te in entries {
        let (index, members) = entry_cell(r, te)?;
        if std::mem::replace(&mut seen[index], true) {
            return Err(format!("{}: index {index} repeated", r.name));
        }
        for (pipes, values) in cells.iter_mut().zip(members) {
            if pipes.is_empty() {
                *pipes = vec![vec![0; r.size]; values.len()];
            }
            if values.len() != pipes.len() {
                return Err(format!(
                    "{}[{index}]: {} values, other cells {} (one per pipe)",
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
    let mut rows = |rows: &[MeterRow]| -> Result<Vec<Vec<RowCells>>, String> {
        let mut per_pipe: Vec<Vec<RowCells>> = Vec::new();
        for row in rows {
            let id = register_cells(&row.id, by_table.get(&row.id.id).unwrap_or(&empty))?;
            let count = register_cells(&row.count, by_table.get(&row.count.id).unwrap_or(&empty))?;
            let (tag, ids) = (
                member(&id, &row.id, "tag")?.clone(),
                member(&id, &row.id, "id")?.clone(),
            );
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

/// The position of member `name` among the register's data fields, as the contract has them.
fn position(reg: &Register, name: &str) -> Result<usize, String> {
    reg.members
        .iter()
        .position(|(m, _)| m == name)
        .ok_or_else(|| format!("{}: no data field {name}", reg.name))
}

/// The values of member `name` of a register read.
fn member<'a, T>(values: &'a [T], reg: &Register, name: &str) -> Result<&'a T, String> {
    let i = position(reg, name)?;
    values
        .get(i)
        .ok_or_else(|| format!("{}: no data field {name}", reg.name))
}

/// The meters from a read of `cells` by key: one [`MeterCells`] per pipe, the cells read
/// filled in and every other cell zero (an empty bucket). Every cell asked for must be in the
/// answer, in both its registers and in as many pipes as the others.
pub fn meter_cells_at(
    prog: &Program,
    by_table: &HashMap<u32, Vec<TableEntry>>,
    cells: &[Cell],
) -> Result<Vec<MeterCells>, String> {
    let mut out: Vec<MeterCells> = Vec::new();
    let mut seen: HashSet<(u32, usize)> = HashSet::new();
    for (dsm, rows) in [(false, &prog.meters.usm), (true, &prog.meters.dsm)] {
        for (r, row) in rows.iter().enumerate() {
            for (is_id, reg) in [(true, &row.id), (false, &row.count)] {
                // Member positions once per register: the ID register's tag and ID, the count.
                let (tag, id) = if is_id {
                    (position(reg, "tag")?, position(reg, "id")?)
                } else {
                    (0, 0)
                };
                for te in by_table.get(&reg.id).into_iter().flatten() {
                    let (index, values) = entry_cell(reg, te)?;
                    let pipes = values.first().map_or(0, Vec::len);
                    if out.is_empty() {
                        out = vec![MeterCells::zeroed(&prog.meters); pipes];
                    } else if pipes != out.len() {
                        return Err(format!(
                            "{}[{index}]: {pipes} pipes, other cells {}",
                            reg.name,
                            out.len()
                        ));
                    }
                    seen.insert((reg.id, index));
                    let cell = Cell { dsm, row: r, index };
                    for (p, m) in out.iter_mut().enumerate() {
                        let Some(rc) = m.row_mut(&cell) else { continue };
                        if is_id {
                            rc.id_tag[index] = values[tag][p];
                            rc.id[index] = values[id][p];
                        } else {
                            rc.count[index] = values[0][p];
                        }
                    }
                }
            }
        }
    }
    for c in cells {
        let kind = if c.dsm { "DSM" } else { "USM" };
        let row = prog
            .meters
            .row(c.dsm, c.row)
            .ok_or_else(|| format!("no meter row {} ({kind})", c.row))?;
        for reg in [&row.id, &row.count] {
            if !seen.contains(&(reg.id, c.index)) {
                return Err(format!(
                    "{}[{}]: asked for, not in the answer",
                    reg.name, c.index
                ));
            }
        }
    }
    if out.is_empty() {
        out.push(MeterCells::zeroed(&prog.meters));
    }
    Ok(out)
}
