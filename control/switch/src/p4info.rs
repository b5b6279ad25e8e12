//! Names in the compiled program, resolved once to P4Runtime ids.
//!
//! The controller speaks names (`dsm_table`, `path_bf`); the wire speaks ids. Resolving every name
//! Canary uses when it starts turns a program/controller mismatch into one clear error at start
//! instead of a failed write in the middle of a run.

use bfrt_proto::p4info::{self, match_field::MatchType, P4Info};
use prost::Message;
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum P4InfoError {
    #[error("cannot read P4Info {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a binary P4Info (p4c --p4runtime-files X.bin): {source}")]
    Decode {
        path: String,
        source: prost::DecodeError,
    },
    #[error("P4Info {path}: {what} `{name}` not found (the program has: {have})")]
    Missing {
        path: String,
        what: &'static str,
        name: String,
        have: String,
    },
    #[error("P4Info {path}: {what} `{name}` matches several entities: {hits}")]
    Ambiguous {
        path: String,
        what: &'static str,
        name: String,
        hits: String,
    },
    #[error("P4Info {path}: {what} is {got}, the controller expects {want}")]
    Mismatch {
        path: String,
        what: String,
        got: String,
        want: String,
    },
}

/// A match field of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    pub id: u32,
    pub bitwidth: u32,
    pub kind: MatchType,
}

#[derive(Clone, Debug)]
pub struct TableInfo {
    pub id: u32,
    pub name: String,
    pub fields: Vec<(String, FieldInfo)>,
    pub actions: Vec<u32>,
}

#[derive(Clone, Debug)]
pub struct ActionInfo {
    pub id: u32,
    pub name: String,
    /// (name, id, bitwidth) in declaration order.
    pub params: Vec<(String, u32, u32)>,
}

/// The decoded P4Info with name lookups. Names match either the fully qualified name
/// (`CanaryIngress.forwarding.ipv4_route`), its alias, or a unique dotted suffix.
#[derive(Clone, Debug)]
pub struct P4InfoIndex {
    /// Where it came from, for error messages.
    pub path: String,
    /// The encoded P4Info, sent to the switch as is.
    pub bytes: Vec<u8>,
    pub info: P4Info,
}

fn matches(full: &str, alias: &str, name: &str) -> bool {
    full == name || alias == name || full.ends_with(&format!(".{name}"))
}

impl P4InfoIndex {
    pub fn load(path: &Path) -> Result<Self, P4InfoError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| P4InfoError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::decode(&shown, bytes)
    }

    pub fn decode(path: &str, bytes: Vec<u8>) -> Result<Self, P4InfoError> {
        let info = P4Info::decode(bytes.as_slice()).map_err(|source| P4InfoError::Decode {
            path: path.to_string(),
            source,
        })?;
        Ok(Self {
            path: path.to_string(),
            bytes,
            info,
        })
    }

    fn find<'a, T>(
        &self,
        what: &'static str,
        name: &str,
        items: &'a [T],
        pre: impl Fn(&T) -> Option<&p4info::Preamble>,
    ) -> Result<&'a T, P4InfoError> {
        let hits: Vec<&T> = items
            .iter()
            .filter(|t| pre(t).is_some_and(|p| matches(&p.name, &p.alias, name)))
            .collect();
        match hits.as_slice() {
            [one] => Ok(one),
            [] => Err(P4InfoError::Missing {
                path: self.path.clone(),
                what,
                name: name.to_string(),
                have: items
                    .iter()
                    .filter_map(|t| pre(t).map(|p| p.name.clone()))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
            many => Err(P4InfoError::Ambiguous {
                path: self.path.clone(),
                what,
                name: name.to_string(),
                hits: many
                    .iter()
                    .filter_map(|t| pre(t).map(|p| p.name.clone()))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    pub fn table(&self, name: &str) -> Result<TableInfo, P4InfoError> {
        let t = self.find("table", name, &self.info.tables, |t| t.preamble.as_ref())?;
        let pre = t.preamble.as_ref().expect("found by preamble");
        Ok(TableInfo {
            id: pre.id,
            name: pre.name.clone(),
            fields: t
                .match_fields
                .iter()
                .map(|f| {
                    let kind = match f.r#match {
                        Some(p4info::match_field::Match::MatchType(k)) => {
                            MatchType::try_from(k).unwrap_or(MatchType::Unspecified)
                        }
                        _ => MatchType::Unspecified,
                    };
                    (
                        f.name.clone(),
                        FieldInfo {
                            id: f.id,
                            bitwidth: f.bitwidth as u32,
                            kind,
                        },
                    )
                })
                .collect(),
            actions: t.action_refs.iter().map(|a| a.id).collect(),
        })
    }

    pub fn action(&self, name: &str) -> Result<ActionInfo, P4InfoError> {
        let a = self.find("action", name, &self.info.actions, |a| a.preamble.as_ref())?;
        let pre = a.preamble.as_ref().expect("found by preamble");
        Ok(ActionInfo {
            id: pre.id,
            name: pre.name.clone(),
            params: a
                .params
                .iter()
                .map(|p| (p.name.clone(), p.id, p.bitwidth as u32))
                .collect(),
        })
    }

    pub fn digest_id(&self, name: &str) -> Result<u32, P4InfoError> {
        let d = self.find("digest", name, &self.info.digests, |d| d.preamble.as_ref())?;
        Ok(d.preamble.as_ref().expect("found by preamble").id)
    }

    /// Every register's fully qualified name and size.
    pub fn registers(&self) -> HashMap<String, i32> {
        self.info
            .registers
            .iter()
            .filter_map(|r| r.preamble.as_ref().map(|p| (p.name.clone(), r.size)))
            .collect()
    }

    pub fn mismatch(&self, what: String, got: String, want: String) -> P4InfoError {
        P4InfoError::Mismatch {
            path: self.path.clone(),
            what,
            got,
            want,
        }
    }
}

/// A table with the match fields the controller expects, checked by name, kind and width.
#[derive(Clone, Debug)]
pub struct ResolvedTable {
    pub id: u32,
    pub name: String,
    /// Field ids and widths in the order the controller passes values.
    pub fields: Vec<(u32, u32)>,
}

/// An action with its parameters in the order the controller passes values.
#[derive(Clone, Debug)]
pub struct ResolvedAction {
    pub id: u32,
    pub name: String,
    pub params: Vec<(u32, u32)>,
}

impl P4InfoIndex {
    /// Resolves `table` and checks that its keys are exactly `fields` (name, kind, width).
    pub fn resolve_table(
        &self,
        table: &str,
        fields: &[(&str, MatchType, u32)],
    ) -> Result<ResolvedTable, P4InfoError> {
        let t = self.table(table)?;
        let got: Vec<String> = t
            .fields
            .iter()
            .map(|(n, f)| format!("{n}:{}/{}", f.kind.as_str_name(), f.bitwidth))
            .collect();
        let want: Vec<String> = fields
            .iter()
            .map(|(n, k, w)| format!("{n}:{}/{w}", k.as_str_name()))
            .collect();
        if got != want {
            return Err(self.mismatch(
                format!("the key of table `{}`", t.name),
                format!("[{}]", got.join(", ")),
                format!("[{}]", want.join(", ")),
            ));
        }
        Ok(ResolvedTable {
            id: t.id,
            name: t.name,
            fields: t.fields.iter().map(|(_, f)| (f.id, f.bitwidth)).collect(),
        })
    }

    /// Resolves `action`, checks its parameters (name, width) and that `table` may use it.
    pub fn resolve_action(
        &self,
        table: Option<&ResolvedTable>,
        action: &str,
        params: &[(&str, u32)],
    ) -> Result<ResolvedAction, P4InfoError> {
        let a = self.action(action)?;
        let got: Vec<String> = a
            .params
            .iter()
            .map(|(n, _, w)| format!("{n}/{w}"))
            .collect();
        let want: Vec<String> = params.iter().map(|(n, w)| format!("{n}/{w}")).collect();
        if got != want {
            return Err(self.mismatch(
                format!("the parameters of action `{}`", a.name),
                format!("[{}]", got.join(", ")),
                format!("[{}]", want.join(", ")),
            ));
        }
        if let Some(t) = table {
            let info = self.table(&t.name)?;
            if !info.actions.contains(&a.id) {
                return Err(self.mismatch(
                    format!("the actions of table `{}`", t.name),
                    "a list without it".into(),
                    format!("`{}`", a.name),
                ));
            }
        }
        Ok(ResolvedAction {
            id: a.id,
            name: a.name,
            params: a.params.iter().map(|(_, id, w)| (*id, *w)).collect(),
        })
    }
}

/// `value` as the `ceil(width/8)` big-endian bytes P4Runtime expects; panics when it does not
/// fit, which is a controller bug (values come from typed fields of the right width).
pub fn bytes_of(value: u64, width: u32) -> Vec<u8> {
    assert!(
        width >= 64 || value >> width == 0,
        "value {value:#x} does not fit in {width} bits"
    );
    let n = width.div_ceil(8) as usize;
    value.to_be_bytes()[8 - n..].to_vec()
}
