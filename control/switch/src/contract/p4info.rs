//! Reading a P4Info (BMv2, or any P4Runtime target) into the neutral [`Description`]; the
//! checks are the resolver's.

use super::neutral::{Cells, Description, NAction, NDigest, NKey, NRegister, NTable};
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

fn table(p4info: &P4Info, t: &pi::Table) -> NTable {
    let keys = t
        .match_fields
        .iter()
        .map(|f| NKey {
            name: f.name.clone(),
            id: f.id,
            kind: kind_of(f),
            bits: f.bitwidth as u32,
        })
        .collect();
    // A table names its actions by id.
    let actions = t
        .action_refs
        .iter()
        .filter_map(|r| p4info.actions.iter().find(|a| id_of(&a.preamble) == r.id))
        .map(|a| NAction {
            name: name_of(&a.preamble).to_string(),
            id: id_of(&a.preamble),
            params: a
                .params
                .iter()
                .map(|p| {
                    let bits = p.bitwidth as u32;
                    (p.name.clone(), Field { id: p.id, bits })
                })
                .collect(),
        })
        .collect();
    NTable {
        name: name_of(&t.preamble).to_string(),
        id: id_of(&t.preamble),
        size: t.size.max(0) as usize,
        keys,
        actions,
    }
}

fn register(r: &pi::Register) -> NRegister {
    NRegister {
        name: name_of(&r.preamble).to_string(),
        id: id_of(&r.preamble),
        size: r.size.max(0) as usize,
        cells: Cells::Packed(bits_of(&r.type_spec)),
    }
}

/// A digest with its struct's members; their ids are their positions from 1 (P4Runtime's
/// digest data is a struct decoded by position).
fn digest(p4info: &P4Info, d: &pi::Digest) -> NDigest {
    let fields = match d.type_spec.as_ref().and_then(|t| t.type_spec.as_ref()) {
        Some(p4_data_type_spec::TypeSpec::Struct(n)) => {
            let members = p4info
                .type_info
                .as_ref()
                .and_then(|t| t.structs.get(&n.name))
                .map(|s| s.members.as_slice())
                .unwrap_or_default();
            let fields = members
                .iter()
                .enumerate()
                .map(|(i, m)| (m.name.clone(), bits_of(&m.type_spec), i as u32 + 1));
            Some(fields.collect())
        }
        _ => None,
    };
    NDigest {
        name: name_of(&d.preamble).to_string(),
        id: id_of(&d.preamble),
        fields,
    }
}

/// What the resolver needs of `p4info`.
fn describe(p4info: &P4Info) -> Description {
    Description {
        target: Target::P4Runtime,
        tables: p4info.tables.iter().map(|t| table(p4info, t)).collect(),
        registers: p4info.registers.iter().map(register).collect(),
        digests: p4info.digests.iter().map(|d| digest(p4info, d)).collect(),
        counters: p4info
            .counters
            .iter()
            .map(|c| (name_of(&c.preamble).to_string(), id_of(&c.preamble)))
            .collect(),
    }
}

impl Program {
    /// Resolves the contract against `p4info` (named `file` in errors).
    pub fn from_p4info(file: &str, p4info: &P4Info) -> Result<Program, ContractError> {
        super::resolve::resolve(file, &describe(p4info))
    }
}
