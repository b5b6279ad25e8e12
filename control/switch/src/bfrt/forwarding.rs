//! The TNA program's forwarding tables (p4src/tna/forwarding.p4), resolved from `bfrt.json`, and
//! the BF-RT updates that fill them from a switch's [`ForwardingState`].
//!
//! Besides host ports, routes and `ecmp_group`, Tofino needs the controller to fill the tables
//! that stand in for a multiplier and a remainder (no ALU does either at run time): `ecmp_mul0..3`
//! (`ecmp_mul_term`, rewritten when the switch's pathBF mask changes) and `ecmp_mod_hi`/`_lo`
//! (`ecmp_mod_term`, per distinct group size); `ecmp_group` then gets `2s - 1` entries per group
//! of size `s`. Together they pick `canary_core::sketch::ecmp_member`, v1model's member.
//!
//! Every update is INSERT_OR_MODIFY: installing is idempotent, so a controller that restarts, or
//! retries after a failed Write, rewrites the same entries instead of failing on ALREADY_EXISTS,
//! and a mask change rewrites the product tables in place. (Entries the state no longer holds are
//! not deleted.)
//!
//! The JSON helpers are a small copy of `tables.rs`'s (private there), keeping field names so
//! every [`ValueError`] names its field.

use bfrt_proto::bfrt::{
    data_field, entity, key_field, table_entry, update, DataField, Entity, KeyField, TableData,
    TableEntry, TableKey, Update,
};
use canary_core::sketch::{ecmp_mod_term, ecmp_mul_term};

use super::tables::{match_table, InfoJson};
use super::{Field, ResolveError, ValueError};
use crate::forwarding::ForwardingState;

/// At most this many updates per Write when installing forwarding (~2 000 per switch: a few
/// Writes, each a bounded request and a bounded failure report).
pub const FORWARDING_BATCH: usize = 1000;

/// A key field or action parameter: its name (for errors), id and width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedField {
    pub name: String,
    pub field: Field,
}

/// One forwarding table: its keys in Canary's order, the one action Canary installs and that
/// action's parameters in Canary's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForwardingTable {
    pub name: String,
    pub id: u32,
    pub keys: Vec<NamedField>,
    pub action_id: u32,
    pub params: Vec<NamedField>,
}

/// The value of one key field.
#[derive(Clone, Copy, Debug)]
enum Key {
    Exact(u64),
    Lpm(u64, u32),
}

/// The eight forwarding tables of the TNA program, resolved to BF-RT ids.
///
/// `bfrt.json` is the compiler's (`tna/build.sh OUT` writes `OUT/bfrt.json`), the same file
/// bf_switchd loads. Builds messages only; `BfrtClient::install_forwarding` sends them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TnaForwardingTables {
    pub host_port_in: ForwardingTable,
    pub ipv4_route: ForwardingTable,
    /// `ecmp_mul{i}` is keyed on byte `i` (0 = least significant) of the flow's `c32`.
    pub ecmp_mul: [ForwardingTable; 4],
    pub ecmp_mod_hi: ForwardingTable,
    pub ecmp_mod_lo: ForwardingTable,
    pub ecmp_group: ForwardingTable,
    pub host_port_out: ForwardingTable,
}

impl TnaForwardingTables {
    /// Resolves every table, key field, action and parameter; the first one missing or
    /// different is the error.
    pub fn resolve(bfrt_json: &[u8]) -> Result<Self, ResolveError> {
        let info: InfoJson =
            serde_json::from_slice(bfrt_json).map_err(|e| ResolveError::Json(e.to_string()))?;
        let exact = |k| (k, "Exact");
        let host_port_in = resolve(
            &info,
            "host_port.host_port_in",
            &[exact("port")],
            "host_port",
            &[],
        )?;
        let ipv4_route = resolve(
            &info,
            "forwarding.ipv4_route",
            &[("dst_addr", "LPM")],
            "set_group",
            &["group", "group_size"],
        )?;
        let ecmp_mul = (0..4)
            .map(|i| {
                resolve(
                    &info,
                    &format!("forwarding.ecmp_mul{i}"),
                    &[exact("byte")],
                    &format!("mul{i}"),
                    &["term"],
                )
            })
            .collect::<Result<Vec<_>, _>>()?
            .try_into()
            .expect("four tables");
        let remainder = |hi_lo: &str| {
            resolve(
                &info,
                &format!("forwarding.ecmp_mod_{hi_lo}"),
                &[exact("size"), exact("byte")],
                &format!("mod_{hi_lo}"),
                &["r"],
            )
        };
        Ok(TnaForwardingTables {
            host_port_in,
            ipv4_route,
            ecmp_mul,
            ecmp_mod_hi: remainder("hi")?,
            ecmp_mod_lo: remainder("lo")?,
            ecmp_group: resolve(
                &info,
                "forwarding.ecmp_group",
                &[exact("group"), exact("member")],
                "set_port",
                &["port"],
            )?,
            host_port_out: resolve(
                &info,
                "forwarding.host_port_out",
                &[exact("port")],
                "to_host",
                &[],
            )?,
        })
    }

    /// Every entry of `state` with the product tables for pathBF `mask`: host ports, products,
    /// remainders, groups, and routes last, so that no route is usable before its group is.
    pub fn updates(&self, state: &ForwardingState, mask: u32) -> Result<Vec<Update>, ValueError> {
        let mut out = self.host_port_updates(&state.host_ports)?;
        out.extend(self.mul_updates(mask)?);
        out.extend(self.mod_updates(&state.sizes())?);
        out.extend(self.group_updates(&state.groups)?);
        out.extend(self.route_updates(state)?);
        Ok(out)
    }

    /// The 4 x 256 product entries for pathBF `mask`: byte `b` in `ecmp_mul{i}` ->
    /// `ecmp_mul_term(mask, i, b)`. All of them change with the mask.
    pub fn mul_updates(&self, mask: u32) -> Result<Vec<Update>, ValueError> {
        let mut out = Vec::with_capacity(4 * 256);
        for (i, t) in self.ecmp_mul.iter().enumerate() {
            for b in 0..=255u8 {
                let term = ecmp_mul_term(mask, i, b);
                out.push(t.entry(&[Key::Exact(b.into())], &[term.into()])?);
            }
        }
        Ok(out)
    }

    /// `host_port_in` and `host_port_out` for each host port.
    fn host_port_updates(&self, ports: &[u32]) -> Result<Vec<Update>, ValueError> {
        let mut out = Vec::with_capacity(2 * ports.len());
        for &p in ports {
            out.push(self.host_port_in.entry(&[Key::Exact(p.into())], &[])?);
            out.push(self.host_port_out.entry(&[Key::Exact(p.into())], &[])?);
        }
        Ok(out)
    }

    /// 256 entries per size in each remainder table: (s, b) -> 2^8 b mod s, b mod s.
    fn mod_updates(&self, sizes: &[u16]) -> Result<Vec<Update>, ValueError> {
        let mut out = Vec::with_capacity(2 * 256 * sizes.len());
        for &s in sizes.iter().filter(|&&s| s > 0) {
            for (t, hi) in [(&self.ecmp_mod_hi, true), (&self.ecmp_mod_lo, false)] {
                for b in 0..=255u8 {
                    let r = ecmp_mod_term(s, hi, b);
                    out.push(t.entry(&[Key::Exact(s.into()), Key::Exact(b.into())], &[r.into()])?);
                }
            }
        }
        Ok(out)
    }

    /// `2s - 1` entries per group of `s` members: key `j` (a sum of two remainders mod `s`)
    /// -> the port of member `j mod s`. An empty group gets none (its flows are dropped).
    fn group_updates(&self, groups: &[(u16, Vec<u32>)]) -> Result<Vec<Update>, ValueError> {
        let mut out = Vec::new();
        for (g, members) in groups {
            let s = members.len();
            for j in 0..(2 * s).saturating_sub(1) {
                let keys = [Key::Exact((*g).into()), Key::Exact(j as u64)];
                out.push(self.ecmp_group.entry(&keys, &[members[j % s].into()])?);
            }
        }
        Ok(out)
    }

    /// A /32 route per host: `set_group(group, size)`.
    fn route_updates(&self, state: &ForwardingState) -> Result<Vec<Update>, ValueError> {
        state
            .routes
            .iter()
            .map(|r| {
                self.ipv4_route.entry(
                    &[Key::Lpm(r.addr.into(), 32)],
                    &[r.group.into(), r.size.into()],
                )
            })
            .collect()
    }
}

impl ForwardingTable {
    /// An INSERT_OR_MODIFY of the entry `keys` -> this table's action with `params`.
    fn entry(&self, keys: &[Key], params: &[u64]) -> Result<Update, ValueError> {
        assert_eq!(keys.len(), self.keys.len(), "keys of {}", self.name);
        assert_eq!(
            params.len(),
            self.params.len(),
            "parameters of {}",
            self.name
        );
        let fields = self
            .keys
            .iter()
            .zip(keys)
            .map(|(f, k)| self.key_field(f, *k))
            .collect::<Result<_, _>>()?;
        let data = self
            .params
            .iter()
            .zip(params)
            .map(|(f, &v)| {
                let stream = self.encode(f, "action parameter", v)?;
                Ok(DataField {
                    field_id: f.field.id,
                    value: Some(data_field::Value::Stream(stream)),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Update {
            r#type: update::Type::InsertOrModify as i32,
            entity: Some(Entity {
                entity: Some(entity::Entity::TableEntry(TableEntry {
                    table_id: self.id,
                    value: Some(table_entry::Value::Key(TableKey { fields })),
                    data: Some(TableData {
                        action_id: self.action_id,
                        fields: data,
                    }),
                    ..Default::default()
                })),
            }),
        })
    }

    fn key_field(&self, f: &NamedField, k: Key) -> Result<KeyField, ValueError> {
        let match_type = match k {
            Key::Exact(v) => key_field::MatchType::Exact(key_field::Exact {
                value: self.encode(f, "key field", v)?,
            }),
            Key::Lpm(v, prefix_len) => key_field::MatchType::Lpm(key_field::Lpm {
                value: self.encode(f, "key field", v)?,
                prefix_len: prefix_len as i32,
            }),
        };
        Ok(KeyField {
            field_id: f.field.id,
            match_type: Some(match_type),
        })
    }

    /// Big-endian bytes of `value` in the field's width, rounded up to bytes (like tables.rs).
    fn encode(&self, f: &NamedField, what: &str, value: u64) -> Result<Vec<u8>, ValueError> {
        let bits = f.field.bits;
        if bits < 64 && value >> bits != 0 {
            return Err(ValueError {
                table: self.name.clone(),
                field: format!("{what} {}", f.name),
                value,
                bits,
            });
        }
        Ok(value.to_be_bytes()[8 - f.field.bytes()..].to_vec())
    }
}

/// `tables::match_table`'s checks, with the fields named as asked.
fn resolve(
    info: &InfoJson,
    name: &str,
    keys: &[(&str, &'static str)],
    action: &str,
    params: &[&str],
) -> Result<ForwardingTable, ResolveError> {
    let t = match_table(info, name, keys, action, params)?;
    let named = |names: Vec<&str>, fields: Vec<Field>| {
        names
            .into_iter()
            .zip(fields)
            .map(|(name, field)| NamedField {
                name: name.to_string(),
                field,
            })
            .collect()
    };
    Ok(ForwardingTable {
        keys: named(keys.iter().map(|k| k.0).collect(), t.keys),
        params: named(params.to_vec(), t.params),
        name: t.name,
        id: t.id,
        action_id: t.action_id,
    })
}
