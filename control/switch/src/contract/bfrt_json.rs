//! Resolving the contract against the `bfrt.json` bf-p4c writes for the TNA program (what
//! bf_switchd loads and its BF Runtime server speaks).

use super::*;

#[derive(serde::Deserialize)]
struct InfoJson {
    tables: Vec<TableJson>,
    #[serde(default)]
    learn_filters: Vec<LearnJson>,
}

#[derive(serde::Deserialize)]
struct TableJson {
    name: String,
    id: u32,
    #[serde(default)]
    table_type: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    key: Vec<FieldJson>,
    #[serde(default)]
    action_specs: Vec<ActionJson>,
    #[serde(default)]
    data: Vec<DataJson>,
}

#[derive(serde::Deserialize)]
struct FieldJson {
    id: u32,
    name: String,
    #[serde(default)]
    match_type: Option<String>,
    #[serde(rename = "type", default)]
    ty: Option<TypeJson>,
}

#[derive(serde::Deserialize)]
struct TypeJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    width: Option<u32>,
}

#[derive(serde::Deserialize)]
struct ActionJson {
    id: u32,
    name: String,
    #[serde(default)]
    data: Vec<FieldJson>,
}

#[derive(serde::Deserialize)]
struct DataJson {
    #[serde(default)]
    singleton: Option<FieldJson>,
}

#[derive(serde::Deserialize)]
struct LearnJson {
    name: String,
    id: u32,
    #[serde(default)]
    fields: Vec<FieldJson>,
}

impl FieldJson {
    fn bits(&self) -> u32 {
        match &self.ty {
            Some(TypeJson { width: Some(w), .. }) => *w,
            Some(TypeJson { kind, .. }) => match kind.as_str() {
                "bool" => 1,
                "uint8" => 8,
                "uint16" => 16,
                "uint64" => 64,
                _ => 32,
            },
            None => 32,
        }
    }
    fn field(&self) -> Field {
        Field {
            id: self.id,
            bits: self.bits(),
        }
    }
}

/// BF-RT's key field of every register table.
pub const REGISTER_INDEX: &str = "$REGISTER_INDEX";

impl Program {
    /// Resolves the contract against the text of a `bfrt.json` (named `file` in errors).
    pub fn from_bfrt_json(file: &str, json: &[u8]) -> Result<Program, ContractError> {
        let info: InfoJson = serde_json::from_slice(json).map_err(|e| ContractError::Format {
            file: file.into(),
            detail: format!("not a bfrt.json: {e}"),
        })?;
        let differs = |entity: String, detail: String| ContractError::Differs {
            file: file.into(),
            entity,
            detail,
        };
        let match_tables: Vec<&TableJson> = info
            .tables
            .iter()
            .filter(|t| t.table_type.starts_with("MatchAction"))
            .collect();
        let mut tables = Vec::new();
        for spec in TABLES {
            let t = *by_suffix(&match_tables, |t| &t.name, spec.name, file, "table")?;
            let mut keys = Vec::new();
            for k in spec.keys {
                let f = t.key.iter().find(|f| f.name == k.name).ok_or_else(|| {
                    ContractError::Missing {
                        file: file.into(),
                        what: "key field",
                        name: format!("{}.{}", t.name, k.name),
                        closest: closest(k.name, t.key.iter().map(|f| f.name.as_str())),
                    }
                })?;
                let kind = f.match_type.clone().unwrap_or_default().to_lowercase();
                if kind != k.kind.as_str() || f.bits() != k.bits {
                    return Err(differs(
                        format!("table `{}`, key field `{}`", t.name, k.name),
                        format!(
                            "is {kind}/{}, Canary needs {}/{}",
                            f.bits(),
                            k.kind.as_str(),
                            k.bits
                        ),
                    ));
                }
                keys.push(f.field());
            }
            if let Some(extra) = t
                .key
                .iter()
                .find(|f| !f.name.starts_with('$') && !spec.keys.iter().any(|k| k.name == f.name))
            {
                return Err(differs(
                    format!("table `{}`", t.name),
                    format!("has key field `{}`, which Canary does not fill", extra.name),
                ));
            }
            let a = by_suffix(&t.action_specs, |a| &a.name, spec.action, file, "action")?;
            let got: Vec<(&str, u32)> =
                a.data.iter().map(|p| (p.name.as_str(), p.bits())).collect();
            if got != spec.params {
                return Err(differs(
                    format!("action `{}`", a.name),
                    format!("has parameters {got:?}, Canary passes {:?}", spec.params),
                ));
            }
            tables.push(ResolvedTable {
                table: spec.table,
                name: t.name.clone(),
                id: t.id,
                keys,
                action_id: a.id,
                params: a.data.iter().map(FieldJson::field).collect(),
                size: t.size as usize,
            });
        }

        let registers: Vec<&TableJson> = info
            .tables
            .iter()
            .filter(|t| t.table_type == "Register")
            .collect();
        let register = |t: &TableJson, want: &[&str]| -> Result<Register, ContractError> {
            let index = t
                .key
                .iter()
                .find(|f| f.name == REGISTER_INDEX)
                .ok_or_else(|| {
                    differs(
                        format!("register `{}`", t.name),
                        format!("has no key field {REGISTER_INDEX}"),
                    )
                })?
                .field();
            let members: Vec<(String, Field)> = t
                .data
                .iter()
                .filter_map(|d| d.singleton.as_ref())
                .map(|f| {
                    let m = f.name.rsplit('.').next().unwrap_or(&f.name);
                    (m.to_string(), f.field())
                })
                .collect();
            let names: Vec<&str> = members.iter().map(|(m, _)| m.as_str()).collect();
            if !want.is_empty() && names != want {
                return Err(differs(
                    format!("register `{}`", t.name),
                    format!("has members {names:?}, Canary reads {want:?}"),
                ));
            }
            Ok(Register {
                name: t.name.clone(),
                id: t.id,
                size: t.size as usize,
                index: Some(index),
                members,
            })
        };
        let meters = meter_registers(file, |meter, row, reg| {
            let suffix = format!("{meter}.buckets.row{row}.{reg}");
            let want: &[&str] = if reg == ID_REGISTER.0 {
                &ID_REGISTER.1
            } else {
                &[]
            };
            registers
                .iter()
                .find(|t| t.name.ends_with(&suffix))
                .map(|t| register(t, want))
                .transpose()
        })?;
        let hashpipe = registers
            .iter()
            .filter(|t| t.name.contains(&format!(".{HASHPIPE_CONTROL}.")))
            .map(|t| register(t, &[]))
            .collect::<Result<Vec<_>, _>>()?;
        if hashpipe.is_empty() {
            return Err(ContractError::Missing {
                file: file.into(),
                what: "register",
                name: format!("{HASHPIPE_CONTROL}.stage0.count_reg"),
                closest: None,
            });
        }

        let l = by_suffix(
            &info.learn_filters,
            |l| &l.name,
            DIGEST_BFRT,
            file,
            "learn filter",
        )?;
        let mut fields = Vec::new();
        for (name, bits) in DIGEST_FIELDS {
            let f =
                l.fields
                    .iter()
                    .find(|f| f.name == name)
                    .ok_or_else(|| ContractError::Missing {
                        file: file.into(),
                        what: "learn filter field",
                        name: format!("{}.{name}", l.name),
                        closest: closest(name, l.fields.iter().map(|f| f.name.as_str())),
                    })?;
            if f.bits() != bits {
                return Err(differs(
                    format!("learn filter `{}`, field `{name}`", l.name),
                    format!("is {} bits, Canary decodes {bits}", f.bits()),
                ));
            }
            fields.push(f.field());
        }
        let hh_counter = info
            .tables
            .iter()
            .find(|t| t.table_type == "Counter" && t.name.ends_with(HH_COUNTER))
            .map(|t| t.id);
        Ok(Program {
            target: Target::BfRuntime,
            tables,
            meters,
            hashpipe,
            digest: Digest {
                name: l.name.clone(),
                id: l.id,
                fields,
            },
            hh_counter,
        })
    }
}
