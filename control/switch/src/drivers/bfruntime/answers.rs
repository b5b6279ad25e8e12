//! What the switch sends back: table entries read back as Canary's entries, register cells
//! and the meters they make, default entries' parameters, and HH digests of learn lists.

use super::be;
use crate::contract::{Program, ResolvedTable, Table};
use crate::driver::Digests;
use crate::entries::{Entry, Key};
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
