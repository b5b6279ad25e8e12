//! Resolving the contract against a P4Info (BMv2, or any P4Runtime target).

use super::*;
use bfrt_proto::p4info::{
    self as pi, match_field, p4_bitstring_like_type_spec, p4_data_type_spec, P4Info,
};

fn name_of(p: &Option<pi::Preamble>) -> &str {
    p.as_ref().map_or("", |p| p.name.as_str())
}

fn id_of(p: &Option<pi::Preamble>) -> u32 {
    p.as_ref().map_or(0, |p| p.id)
}

fn bits_of(t: &Option<pi::P4DataTypeSpec>) -> Option<u32> {
    match t.as_ref()?.type_spec.as_ref()? {
        p4_data_type_spec::TypeSpec::Bitstring(b) => match b.type_spec.as_ref()? {
            p4_bitstring_like_type_spec::TypeSpec::Bit(b) => Some(b.bitwidth as u32),
        },
        p4_data_type_spec::TypeSpec::Struct(_) => None,
    }
}

fn kind_of(f: &pi::MatchField) -> String {
    match f.r#match {
        Some(match_field::Match::MatchType(k)) => match match_field::MatchType::try_from(k) {
            Ok(match_field::MatchType::Exact) => "exact".into(),
            Ok(match_field::MatchType::Lpm) => "lpm".into(),
            Ok(other) => other.as_str_name().to_lowercase(),
            Err(_) => format!("match type {k}"),
        },
        Some(match_field::Match::OtherMatchType(ref s)) => s.clone(),
        None => "unspecified".into(),
    }
}

impl Program {
    /// Resolves the contract against `p4info` (named `file` in errors).
    pub fn from_p4info(file: &str, p4info: &P4Info) -> Result<Program, ContractError> {
        let differs = |entity: String, detail: String| ContractError::Differs {
            file: file.into(),
            entity,
            detail,
        };
        let mut tables = Vec::new();
        for spec in TABLES {
            let t = by_suffix(
                &p4info.tables,
                |t| name_of(&t.preamble),
                spec.name,
                file,
                "table",
            )?;
            let tname = name_of(&t.preamble).to_string();
            let mut keys = Vec::new();
            for k in spec.keys {
                let f = t
                    .match_fields
                    .iter()
                    .find(|f| f.name == k.name)
                    .ok_or_else(|| ContractError::Missing {
                        file: file.into(),
                        what: "key field",
                        name: format!("{tname}.{}", k.name),
                        closest: closest(k.name, t.match_fields.iter().map(|f| f.name.as_str())),
                    })?;
                let (kind, bits) = (kind_of(f), f.bitwidth as u32);
                if kind != k.kind.as_str() || bits != k.bits {
                    return Err(differs(
                        format!("table `{tname}`, key field `{}`", k.name),
                        format!(
                            "is {kind}/{bits}, Canary needs {}/{}",
                            k.kind.as_str(),
                            k.bits
                        ),
                    ));
                }
                keys.push(Field { id: f.id, bits });
            }
            if let Some(extra) = t
                .match_fields
                .iter()
                .find(|f| !spec.keys.iter().any(|k| k.name == f.name))
            {
                return Err(differs(
                    format!("table `{tname}`"),
                    format!("has key field `{}`, which Canary does not fill", extra.name),
                ));
            }
            let actions: Vec<&pi::Action> = t
                .action_refs
                .iter()
                .filter_map(|r| p4info.actions.iter().find(|a| id_of(&a.preamble) == r.id))
                .collect();
            let a = by_suffix(
                &actions,
                |a| name_of(&a.preamble),
                spec.action,
                file,
                "action",
            )
            .map_err(|e| match e {
                ContractError::Missing { closest, .. } => ContractError::Missing {
                    file: file.into(),
                    what: "action",
                    name: format!("{} (in table `{tname}`)", spec.action),
                    closest,
                },
                e => e,
            })?;
            let aname = name_of(&a.preamble);
            let got: Vec<(&str, u32)> = a
                .params
                .iter()
                .map(|p| (p.name.as_str(), p.bitwidth as u32))
                .collect();
            if got != spec.params {
                let show = |v: &[(&str, u32)]| {
                    v.iter()
                        .map(|(n, w)| format!("{n}/{w}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(differs(
                    format!("action `{aname}`"),
                    format!(
                        "has parameters [{}], Canary passes [{}]",
                        show(&got),
                        show(spec.params)
                    ),
                ));
            }
            tables.push(ResolvedTable {
                table: spec.table,
                name: tname,
                id: id_of(&t.preamble),
                keys,
                action_id: id_of(&a.preamble),
                params: a
                    .params
                    .iter()
                    .map(|p| Field {
                        id: p.id,
                        bits: p.bitwidth as u32,
                    })
                    .collect(),
                size: t.size.max(0) as usize,
            });
        }

        let register = |r: &pi::Register| Register {
            name: name_of(&r.preamble).to_string(),
            id: id_of(&r.preamble),
            size: r.size.max(0) as usize,
            index: None,
            members: Vec::new(),
        };
        let meters = meter_registers(file, |meter, row, reg| {
            let suffix = format!("{meter}.buckets.row{row}.{reg}");
            let Some(r) = p4info
                .registers
                .iter()
                .find(|r| name_of(&r.preamble).ends_with(&suffix))
            else {
                return Ok(None);
            };
            // The ID pair is one bit<64> (two 32-bit members), the count a bit<32>.
            let want = if reg == ID_REGISTER.0 {
                ID_REGISTER.2
            } else {
                COUNT_REGISTER.1
            };
            if bits_of(&r.type_spec) != Some(want) {
                return Err(differs(
                    format!("register `{}`", name_of(&r.preamble)),
                    format!(
                        "is {} bits wide, Canary reads bit<{want}>",
                        bits_of(&r.type_spec).map_or("?".into(), |b| b.to_string())
                    ),
                ));
            }
            Ok(Some(register(r)))
        })?;
        let hashpipe: Vec<Register> = p4info
            .registers
            .iter()
            .filter(|r| name_of(&r.preamble).contains(&format!(".{HASHPIPE_CONTROL}.")))
            .map(register)
            .collect();
        if hashpipe.is_empty() {
            return Err(ContractError::Missing {
                file: file.into(),
                what: "register",
                name: format!("{HASHPIPE_CONTROL}.stage0.count_reg"),
                closest: None,
            });
        }

        let d = by_suffix(
            &p4info.digests,
            |d| name_of(&d.preamble),
            DIGEST_P4INFO,
            file,
            "digest",
        )?;
        let dname = name_of(&d.preamble).to_string();
        let struct_name = match d.type_spec.as_ref().and_then(|t| t.type_spec.as_ref()) {
            Some(p4_data_type_spec::TypeSpec::Struct(n)) => n.name.clone(),
            _ => {
                return Err(differs(
                    format!("digest `{dname}`"),
                    "is not a struct".into(),
                ))
            }
        };
        let members = p4info
            .type_info
            .as_ref()
            .and_then(|t| t.structs.get(&struct_name))
            .map(|s| s.members.as_slice())
            .unwrap_or_default();
        let got: Vec<(&str, Option<u32>)> = members
            .iter()
            .map(|m| (m.name.as_str(), bits_of(&m.type_spec)))
            .collect();
        let want: Vec<(&str, Option<u32>)> =
            DIGEST_FIELDS.iter().map(|&(n, w)| (n, Some(w))).collect();
        if got != want {
            return Err(differs(
                format!("digest `{dname}`"),
                format!("has members {got:?}, Canary decodes {want:?}"),
            ));
        }
        let digest = Digest {
            name: dname,
            id: id_of(&d.preamble),
            fields: DIGEST_FIELDS
                .iter()
                .enumerate()
                .map(|(i, &(_, bits))| Field {
                    id: i as u32 + 1,
                    bits,
                })
                .collect(),
        };
        let hh_counter = p4info
            .counters
            .iter()
            .find(|c| name_of(&c.preamble).ends_with(HH_COUNTER))
            .map(|c| id_of(&c.preamble));
        Ok(Program {
            target: Target::P4Runtime,
            tables,
            meters,
            hashpipe,
            digest,
            hh_counter,
        })
    }
}
