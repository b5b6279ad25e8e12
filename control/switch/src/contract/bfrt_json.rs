//! Reading the `bfrt.json` bf-p4c writes for the TNA program (what bf_switchd loads and its BF
//! Runtime server speaks) into the neutral [`Description`]; the checks are the resolver's.

use super::neutral::{
    Cells, Description, NAction, NDigest, NKey, NRegister, NTable, REGISTER_INDEX,
};
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

impl TableJson {
    fn table(&self) -> NTable {
        let keys = self
            .key
            .iter()
            .map(|f| NKey {
                name: f.name.clone(),
                id: f.id,
                kind: f.match_type.clone().unwrap_or_default().to_lowercase(),
                bits: f.bits(),
            })
            .collect();
        let actions = self
            .action_specs
            .iter()
            .map(|a| NAction {
                name: a.name.clone(),
                id: a.id,
                params: a.data.iter().map(|p| (p.name.clone(), p.field())).collect(),
            })
            .collect();
        NTable {
            name: self.name.clone(),
            id: self.id,
            size: self.size as usize,
            keys,
            actions,
        }
    }

    /// A register table: its index key field and one data field per member.
    fn register(&self) -> NRegister {
        let index = self
            .key
            .iter()
            .find(|f| f.name == REGISTER_INDEX)
            .map(FieldJson::field);
        let members = self
            .data
            .iter()
            .filter_map(|d| d.singleton.as_ref())
            .map(|f| {
                let m = f.name.rsplit('.').next().unwrap_or(&f.name);
                (m.to_string(), f.field())
            })
            .collect();
        NRegister {
            name: self.name.clone(),
            id: self.id,
            size: self.size as usize,
            cells: Cells::Split { index, members },
        }
    }
}

impl LearnJson {
    fn digest(&self) -> NDigest {
        let fields = self
            .fields
            .iter()
            .map(|f| (f.name.clone(), Some(f.bits()), f.id))
            .collect();
        NDigest {
            name: self.name.clone(),
            id: self.id,
            fields: Some(fields),
        }
    }
}

/// What the resolver needs of a `bfrt.json`, its tables sorted by type.
fn describe(info: &InfoJson) -> Description {
    let of_type = |pred: fn(&str) -> bool| info.tables.iter().filter(move |t| pred(&t.table_type));
    Description {
        target: Target::BfRuntime,
        tables: of_type(|k| k.starts_with("MatchAction"))
            .map(TableJson::table)
            .collect(),
        registers: of_type(|k| k == "Register")
            .map(TableJson::register)
            .collect(),
        digests: info.learn_filters.iter().map(LearnJson::digest).collect(),
        counters: of_type(|k| k == "Counter")
            .map(|t| (t.name.clone(), t.id))
            .collect(),
    }
}

impl Program {
    /// Resolves the contract against the text of a `bfrt.json` (named `file` in errors).
    pub fn from_bfrt_json(file: &str, json: &[u8]) -> Result<Program, ContractError> {
        let info: InfoJson = serde_json::from_slice(json).map_err(|e| ContractError::Format {
            file: file.into(),
            detail: format!("not a bfrt.json: {e}"),
        })?;
        super::resolve::resolve(file, &describe(&info))
    }
}
