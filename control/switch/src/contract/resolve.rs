//! The one resolver: the contract checked against a program's [`Description`], whichever file
//! it was read from. Tables (keys, action, parameters), then registers (meters, HashPipe), then
//! the digest and the HH counter.

use super::errors::{by_suffix, closest};
use super::neutral::{Cells, Description, NAction, NDigest, NRegister, NTable, REGISTER_INDEX};
use super::*;

fn differs(file: &str, entity: String, detail: String) -> ContractError {
    ContractError::Differs {
        file: file.into(),
        entity,
        detail,
    }
}

/// Resolves every name of the contract in `d` (read from `file`, named in errors).
pub(super) fn resolve(file: &str, d: &Description) -> Result<Program, ContractError> {
    let tables = TABLES
        .iter()
        .map(|spec| table(file, &d.tables, spec))
        .collect::<Result<Vec<_>, _>>()?;
    let meters = meter_registers(file, |meter, row, reg| {
        let suffix = format!("{meter}.buckets.row{row}.{reg}");
        d.registers
            .iter()
            .find(|r| r.name.ends_with(&suffix))
            .map(|r| meter_register(file, r, reg))
            .transpose()
    })?;
    let hashpipe = hashpipe(file, &d.registers)?;
    let digest = digest(file, d)?;
    let hh_counter = d
        .counters
        .iter()
        .find(|(name, _)| name.ends_with(HH_COUNTER))
        .map(|&(_, id)| id);
    Ok(Program {
        target: d.target,
        tables,
        meters,
        hashpipe,
        digest,
        hh_counter,
    })
}

fn table(file: &str, tables: &[NTable], spec: &TableSpec) -> Result<ResolvedTable, ContractError> {
    let t = by_suffix(tables, |t| &t.name, spec.name, file, "table")?;
    let keys = keys(file, t, spec)?;
    let a = action(file, t, spec)?;
    Ok(ResolvedTable {
        table: spec.table,
        name: t.name.clone(),
        id: t.id,
        keys,
        action_id: a.id,
        params: a.params.iter().map(|(_, f)| *f).collect(),
        size: t.size,
    })
}

/// The table's key fields in the spec's order, each of the spec's kind and width; a field
/// Canary does not fill is an error too (its entries would not match).
fn keys(file: &str, t: &NTable, spec: &TableSpec) -> Result<Vec<Field>, ContractError> {
    let mut keys = Vec::new();
    for k in spec.keys {
        let f = t
            .keys
            .iter()
            .find(|f| f.name == k.name)
            .ok_or_else(|| ContractError::Missing {
                file: file.into(),
                what: "key field",
                name: format!("{}.{}", t.name, k.name),
                closest: closest(k.name, t.keys.iter().map(|f| f.name.as_str())),
            })?;
        if f.kind != k.kind.as_str() || f.bits != k.bits {
            return Err(differs(
                file,
                format!("table `{}`, key field `{}`", t.name, k.name),
                format!(
                    "is {}/{}, Canary needs {}/{}",
                    f.kind,
                    f.bits,
                    k.kind.as_str(),
                    k.bits
                ),
            ));
        }
        keys.push(Field {
            id: f.id,
            bits: f.bits,
        });
    }
    // `$`-names are BF-RT's own fields (`$MATCH_PRIORITY`), never a P4 name.
    let extra = t
        .keys
        .iter()
        .find(|f| !f.name.starts_with('$') && !spec.keys.iter().any(|k| k.name == f.name));
    if let Some(extra) = extra {
        return Err(differs(
            file,
            format!("table `{}`", t.name),
            format!("has key field `{}`, which Canary does not fill", extra.name),
        ));
    }
    Ok(keys)
}

/// The spec's action among the table's, with the spec's parameters in order.
fn action<'a>(file: &str, t: &'a NTable, spec: &TableSpec) -> Result<&'a NAction, ContractError> {
    let a =
        by_suffix(&t.actions, |a| &a.name, spec.action, file, "action").map_err(|e| match e {
            ContractError::Missing { closest, .. } => ContractError::Missing {
                file: file.into(),
                what: "action",
                name: format!("{} (in table `{}`)", spec.action, t.name),
                closest,
            },
            e => e,
        })?;
    let got: Vec<(&str, u32)> = a.params.iter().map(|(n, f)| (n.as_str(), f.bits)).collect();
    if got != spec.params {
        let show = |v: &[(&str, u32)]| {
            v.iter()
                .map(|(n, w)| format!("{n}/{w}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(differs(
            file,
            format!("action `{}`", a.name),
            format!(
                "has parameters [{}], Canary passes [{}]",
                show(&got),
                show(spec.params)
            ),
        ));
    }
    Ok(a)
}

/// A register as the drivers address it. A split register needs its index key field, and its
/// members named `want` (when `want` is not empty).
fn register(file: &str, r: &NRegister, want: &[&str]) -> Result<Register, ContractError> {
    let (index, members) = match &r.cells {
        Cells::Packed(_) => (None, Vec::new()),
        Cells::Split { index, members } => {
            let index = index.ok_or_else(|| {
                differs(
                    file,
                    format!("register `{}`", r.name),
                    format!("has no key field {REGISTER_INDEX}"),
                )
            })?;
            let names: Vec<&str> = members.iter().map(|(m, _)| m.as_str()).collect();
            if !want.is_empty() && names != want {
                return Err(differs(
                    file,
                    format!("register `{}`", r.name),
                    format!("has members {names:?}, Canary reads {want:?}"),
                ));
            }
            (Some(index), members.clone())
        }
    };
    Ok(Register {
        name: r.name.clone(),
        id: r.id,
        size: r.size,
        index,
        members,
    })
}

/// A meter row's register `reg` (the ID pair or the count), shaped as the harvest reads it.
fn meter_register(file: &str, r: &NRegister, reg: &str) -> Result<Register, ContractError> {
    if let Cells::Packed(bits) = r.cells {
        // The ID pair is one bit<64> (two 32-bit members), the count a bit<32>.
        let want = if reg == ID_REGISTER.0 {
            ID_REGISTER.2
        } else {
            COUNT_REGISTER.1
        };
        if bits != Some(want) {
            return Err(differs(
                file,
                format!("register `{}`", r.name),
                format!(
                    "is {} bits wide, Canary reads bit<{want}>",
                    bits.map_or("?".into(), |b| b.to_string())
                ),
            ));
        }
    }
    let want: &[&str] = if reg == ID_REGISTER.0 {
        &ID_REGISTER.1
    } else {
        &[]
    };
    register(file, r, want)
}

/// Every register under the HashPipe control; at least one.
fn hashpipe(file: &str, registers: &[NRegister]) -> Result<Vec<Register>, ContractError> {
    let hashpipe = registers
        .iter()
        .filter(|r| r.name.contains(&format!(".{HASHPIPE_CONTROL}.")))
        .map(|r| register(file, r, &[]))
        .collect::<Result<Vec<_>, _>>()?;
    if hashpipe.is_empty() {
        return Err(ContractError::Missing {
            file: file.into(),
            what: "register",
            name: format!("{HASHPIPE_CONTROL}.stage0.count_reg"),
            closest: None,
        });
    }
    Ok(hashpipe)
}

/// The HH digest: P4Info's digest of struct `hh_digest_t`, BF-RT's learn filter `hh_digest`.
fn digest(file: &str, d: &Description) -> Result<Digest, ContractError> {
    let (name, what) = match d.target {
        Target::P4Runtime => (DIGEST_P4INFO, "digest"),
        Target::BfRuntime => (DIGEST_BFRT, "learn filter"),
    };
    let g = by_suffix(&d.digests, |g| &g.name, name, file, what)?;
    let fields = match d.target {
        Target::P4Runtime => positional_fields(file, g)?,
        Target::BfRuntime => named_fields(file, g)?,
    };
    Ok(Digest {
        name: g.name.clone(),
        id: g.id,
        fields,
    })
}

/// P4Info: a digest's members are decoded by position, so they must be exactly
/// [`DIGEST_FIELDS`], in order.
fn positional_fields(file: &str, g: &NDigest) -> Result<Vec<Field>, ContractError> {
    let Some(members) = &g.fields else {
        return Err(differs(
            file,
            format!("digest `{}`", g.name),
            "is not a struct".into(),
        ));
    };
    let got: Vec<(&str, Option<u32>)> = members.iter().map(|(n, b, _)| (n.as_str(), *b)).collect();
    let want: Vec<(&str, Option<u32>)> = DIGEST_FIELDS.iter().map(|&(n, w)| (n, Some(w))).collect();
    if got != want {
        return Err(differs(
            file,
            format!("digest `{}`", g.name),
            format!("has members {got:?}, Canary decodes {want:?}"),
        ));
    }
    Ok(members
        .iter()
        .zip(DIGEST_FIELDS)
        .map(|(&(_, _, id), (_, bits))| Field { id, bits })
        .collect())
}

/// BF-RT: a learn filter's fields carry ids, so each is found by name and checked for width.
fn named_fields(file: &str, g: &NDigest) -> Result<Vec<Field>, ContractError> {
    let have = g.fields.as_deref().unwrap_or_default();
    let mut fields = Vec::new();
    for (name, bits) in DIGEST_FIELDS {
        let &(_, got, id) =
            have.iter()
                .find(|(n, _, _)| n == name)
                .ok_or_else(|| ContractError::Missing {
                    file: file.into(),
                    what: "learn filter field",
                    name: format!("{}.{name}", g.name),
                    closest: closest(name, have.iter().map(|(n, _, _)| n.as_str())),
                })?;
        if got != Some(bits) {
            return Err(differs(
                file,
                format!("learn filter `{}`, field `{name}`", g.name),
                format!(
                    "is {} bits, Canary decodes {bits}",
                    got.map_or("?".into(), |b| b.to_string())
                ),
            ));
        }
        fields.push(Field { id, bits });
    }
    Ok(fields)
}

/// Sorts resolved meter rows into USM and DSM, checks shapes, and finds the width.
/// `row(meter, r, register)` is the register of row `r`, if the program has it.
fn meter_registers(
    file: &str,
    mut row: impl FnMut(&str, usize, &str) -> Result<Option<Register>, ContractError>,
) -> Result<MeterRegisters, ContractError> {
    let mut width = None;
    let usm = meter_rows(file, METERS[0], &mut row, &mut width)?;
    let dsm = meter_rows(file, METERS[1], &mut row, &mut width)?;
    if usm.len() != dsm.len() {
        return Err(ContractError::Differs {
            file: file.into(),
            entity: "meters".into(),
            detail: format!("USM has {} rows, DSM {}", usm.len(), dsm.len()),
        });
    }
    let width = width.unwrap_or(0) / 2;
    let meters = MeterRegisters { usm, dsm, width };
    meters
        .config()
        .validate()
        .map_err(|e| ContractError::Differs {
            file: file.into(),
            entity: "meter registers".into(),
            detail: e.to_string(),
        })?;
    Ok(meters)
}

/// One meter's rows, from row 0 up to the first without an ID register; every register of the
/// same even size (`width`, set by the first): two parities of buckets.
fn meter_rows(
    file: &str,
    meter: &str,
    row: &mut impl FnMut(&str, usize, &str) -> Result<Option<Register>, ContractError>,
    width: &mut Option<usize>,
) -> Result<Vec<MeterRow>, ContractError> {
    let mut rows = Vec::new();
    for r in 0.. {
        let Some(id) = row(meter, r, ID_REGISTER.0)? else {
            break;
        };
        let count = row(meter, r, COUNT_REGISTER.0)?.ok_or_else(|| ContractError::Missing {
            file: file.into(),
            what: "register",
            name: format!("{meter}.buckets.row{r}.{}", COUNT_REGISTER.0),
            closest: None,
        })?;
        for reg in [&id, &count] {
            let w = *width.get_or_insert(reg.size);
            if reg.size != w || reg.size % 2 != 0 {
                return Err(ContractError::Differs {
                    file: file.into(),
                    entity: format!("register `{}`", reg.name),
                    detail: format!(
                        "{} cells; every meter register needs the same even size ({w}: two parities)",
                        reg.size
                    ),
                });
            }
        }
        rows.push(MeterRow { id, count });
    }
    if rows.is_empty() {
        return Err(ContractError::Missing {
            file: file.into(),
            what: "register",
            name: format!("{meter}.buckets.row0.id_reg"),
            closest: None,
        });
    }
    Ok(rows)
}
