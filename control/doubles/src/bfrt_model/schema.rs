//! A `bfrt.json` held generically: the tables, their key and data fields with widths and match
//! types, their actions, and the operations each supports; and the check of one table entry of
//! a request against it, naming the table and field that break it.

use super::be;
use bfrt_proto::bfrt::{
    data_field, key_field, table_entry, update, KeyField, TableData, TableEntry, TableKey,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// A field as the schema declares it.
#[derive(Clone, Debug)]
pub(super) struct SField {
    pub(super) name: String,
    pub(super) bits: u32,
    pub(super) match_type: String,
    pub(super) repeated: bool,
    /// `type` is `bytes` (else a fixed-width integer, `bool`, ...).
    pub(super) bytes: bool,
}

#[derive(Clone, Debug, Default)]
pub(super) struct STable {
    pub(super) name: String,
    pub(super) kind: String,
    pub(super) size: usize,
    pub(super) keys: BTreeMap<u32, SField>,
    pub(super) actions: BTreeMap<u32, (String, BTreeMap<u32, SField>)>,
    pub(super) data: BTreeMap<u32, SField>,
    pub(super) operations: Vec<String>,
}

/// A `bfrt.json`, generically: what every request is held to.
#[derive(Clone, Debug, Default)]
pub(super) struct Schema {
    pub(super) tables: HashMap<u32, STable>,
}

fn sfield(v: &Value) -> Option<(u32, SField)> {
    let id = v.get("id")?.as_u64()? as u32;
    let ty = v.get("type");
    let kind = ty
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let bits = match kind {
        "bytes" => ty
            .and_then(|t| t.get("width"))
            .and_then(Value::as_u64)
            .unwrap_or(0) as u32,
        "uint8" => 8,
        "uint16" => 16,
        "uint32" => 32,
        "uint64" => 64,
        "bool" => 1,
        _ => 0,
    };
    Some((
        id,
        SField {
            name: v.get("name")?.as_str()?.to_string(),
            bits,
            match_type: v
                .get("match_type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            repeated: v.get("repeated").and_then(Value::as_bool).unwrap_or(false),
            bytes: kind == "bytes",
        },
    ))
}

impl Schema {
    pub(super) fn add(&mut self, json: &[u8]) -> Result<(), String> {
        let v: Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
        for t in v["tables"].as_array().ok_or("no tables")? {
            let id = t["id"].as_u64().ok_or("a table without id")? as u32;
            let mut st = STable {
                name: t["name"].as_str().unwrap_or("").to_string(),
                kind: t["table_type"].as_str().unwrap_or("").to_string(),
                size: t["size"].as_u64().unwrap_or(0) as usize,
                ..Default::default()
            };
            for k in t["key"].as_array().into_iter().flatten() {
                st.keys.extend(sfield(k));
            }
            for a in t["action_specs"].as_array().into_iter().flatten() {
                let params = a["data"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(sfield)
                    .collect();
                st.actions.insert(
                    a["id"].as_u64().unwrap_or(0) as u32,
                    (a["name"].as_str().unwrap_or("").to_string(), params),
                );
            }
            for d in t["data"].as_array().into_iter().flatten() {
                st.data.extend(d.get("singleton").and_then(sfield));
            }
            st.operations = t["supported_operations"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o.as_str().map(String::from))
                .collect();
            self.tables.insert(id, st);
        }
        Ok(())
    }

    fn check_value(t: &STable, f: &SField, what: &str, b: &[u8]) -> Result<(), String> {
        let want = f.bits.div_ceil(8) as usize;
        if f.bytes && b.len() != want {
            return Err(format!(
                "{}: {what} {}: {} bytes, its width {} needs {want}",
                t.name,
                f.name,
                b.len(),
                f.bits
            ));
        }
        if !f.bytes && (b.is_empty() || b.len() > 8) {
            return Err(format!("{}: {what} {}: {} bytes", t.name, f.name, b.len()));
        }
        let fits = b.len() <= 16 && (f.bits >= 128 || be(b) >> f.bits == 0);
        if !fits {
            return Err(format!(
                "{}: {what} {}: value does not fit {} bits",
                t.name, f.name, f.bits
            ));
        }
        Ok(())
    }

    /// Holds one entry of one update to the schema: its key, then (but for a delete) its data
    /// and a register's index.
    pub(super) fn check(&self, te: &TableEntry, kind: update::Type) -> Result<&STable, String> {
        let t = self
            .tables
            .get(&te.table_id)
            .ok_or_else(|| format!("no table with id {}", te.table_id))?;
        let key = match &te.value {
            Some(table_entry::Value::Key(k)) => Some(k),
            Some(table_entry::Value::HandleId(_)) => {
                return Err(format!("{}: entries by handle are not supported", t.name))
            }
            None => None,
        };
        // A delete without key clears the table.
        let clear = kind == update::Type::Delete && key.is_none() && !te.is_default_entry;
        if clear {
            return Ok(t);
        }
        if te.is_default_entry {
            if key.is_some_and(|k| !k.fields.is_empty()) {
                return Err(format!("{}: a default entry has no key", t.name));
            }
        } else {
            let k = key.ok_or_else(|| format!("{}: an entry without key", t.name))?;
            Self::check_key(t, k)?;
        }
        if kind == update::Type::Delete {
            return Ok(t);
        }
        let d = te
            .data
            .as_ref()
            .ok_or_else(|| format!("{}: an entry without data", t.name))?;
        Self::check_data(t, d)?;
        if t.kind == "Register" {
            Self::check_register_index(t, key)?;
        }
        Ok(t)
    }

    /// Every key field of the table, once, with its match type and a value that fits.
    fn check_key(t: &STable, k: &TableKey) -> Result<(), String> {
        let mut seen = Vec::new();
        for kf in &k.fields {
            let f = t
                .keys
                .get(&kf.field_id)
                .ok_or_else(|| format!("{}: no key field with id {}", t.name, kf.field_id))?;
            if seen.contains(&kf.field_id) {
                return Err(format!("{}: key field {} given twice", t.name, f.name));
            }
            seen.push(kf.field_id);
            Self::check_key_field(t, f, kf)?;
        }
        if seen.len() != t.keys.len() {
            let missing: Vec<&str> = t
                .keys
                .iter()
                .filter(|(id, _)| !seen.contains(id))
                .map(|(_, f)| f.name.as_str())
                .collect();
            return Err(format!("{}: key fields {missing:?} missing", t.name));
        }
        Ok(())
    }

    fn check_key_field(t: &STable, f: &SField, kf: &KeyField) -> Result<(), String> {
        match &kf.match_type {
            Some(key_field::MatchType::Exact(e)) if f.match_type == "Exact" => {
                Self::check_value(t, f, "key field", &e.value)
            }
            Some(key_field::MatchType::Lpm(l)) if f.match_type == "LPM" => {
                Self::check_value(t, f, "key field", &l.value)?;
                if l.prefix_len < 0 || l.prefix_len as u32 > f.bits {
                    return Err(format!(
                        "{}: key field {}: prefix length {} of {} bits",
                        t.name, f.name, l.prefix_len, f.bits
                    ));
                }
                Ok(())
            }
            other => Err(format!(
                "{}: key field {} is {}, got {other:?}",
                t.name, f.name, f.match_type
            )),
        }
    }

    /// The data fields of the entry's action (or of the table when it has no actions), each of
    /// its type.
    fn check_data(t: &STable, d: &TableData) -> Result<(), String> {
        let fields = if t.actions.is_empty() {
            &t.data
        } else {
            let (_, params) = t
                .actions
                .get(&d.action_id)
                .ok_or_else(|| format!("{}: no action with id {}", t.name, d.action_id))?;
            params
        };
        let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
        for df in &d.fields {
            let f = fields
                .get(&df.field_id)
                .ok_or_else(|| format!("{}: no data field with id {}", t.name, df.field_id))?;
            *seen.entry(df.field_id).or_default() += 1;
            match &df.value {
                Some(data_field::Value::Stream(b)) if !f.repeated => {
                    Self::check_value(t, f, "data field", b)?
                }
                Some(data_field::Value::IntArrVal(_)) | Some(data_field::Value::BoolArrVal(_))
                    if f.repeated => {}
                other => {
                    return Err(format!(
                        "{}: data field {}: value {other:?} for its type",
                        t.name, f.name
                    ))
                }
            }
        }
        // A register entry carries each data field once; a match entry each parameter once.
        if !t.actions.is_empty() || t.kind == "Register" {
            if let Some((id, n)) = seen.iter().find(|(_, n)| **n != 1) {
                return Err(format!(
                    "{}: data field {} given {n} times",
                    t.name, fields[id].name
                ));
            }
            if seen.len() != fields.len() {
                return Err(format!(
                    "{}: {} of {} data fields given",
                    t.name,
                    seen.len(),
                    fields.len()
                ));
            }
        }
        Ok(())
    }

    /// A register entry's index (its one exact key field) is within the register.
    fn check_register_index(t: &STable, key: Option<&TableKey>) -> Result<(), String> {
        let ix = key
            .and_then(|k| k.fields.first())
            .and_then(|f| match &f.match_type {
                Some(key_field::MatchType::Exact(e)) => Some(e.value.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let i = ix.iter().fold(0u64, |a, &x| a << 8 | u64::from(x)) as usize;
        if i >= t.size {
            return Err(format!("{}: index {i} of {} cells", t.name, t.size));
        }
        Ok(())
    }
}
