//! Canary's writes as P4Runtime messages, with the ids and widths of a program resolved from its
//! P4Info, and the HH digest back from P4Runtime's `P4Data`.

use crate::contract::{Field, Program, ResolvedTable, Table};
use crate::driver::Digests;
use crate::entries::{Change, Entry, Key, McGroup, Write};
use bfrt_proto::p4rt::{
    self, field_match, p4_data, packet_replication_engine_entry, replica, table_action, Entity,
    FieldMatch, MulticastGroupEntry, P4Data, PacketReplicationEngineEntry, Replica, TableAction,
    TableEntry, Update,
};
use canary_core::flow::Addr;
use canary_core::FlowId;

/// A value that does not fit its field: names the table and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("table {table}: {field} = {value:#x} does not fit {bits} bits")]
pub struct ValueError {
    pub table: String,
    pub field: String,
    pub value: u128,
    pub bits: u32,
}

/// `value` as the `ceil(bits/8)` big-endian bytes of its field.
pub fn bytes(value: u128, f: Field) -> Option<Vec<u8>> {
    if f.bits < 128 && value >> f.bits != 0 {
        return None;
    }
    Some(value.to_be_bytes()[16 - f.bytes()..].to_vec())
}

/// The table entry `e` is, in P4Runtime terms.
pub fn table_entry(prog: &Program, e: &Entry) -> Result<TableEntry, ValueError> {
    let t = prog.table(e.table);
    let bad = |field: String, value: u128, bits: u32| ValueError {
        table: t.name.clone(),
        field,
        value,
        bits,
    };
    let mut matches = Vec::with_capacity(e.keys.len());
    for (i, (k, f)) in e.keys.iter().zip(&t.keys).enumerate() {
        let (v, len) = match *k {
            Key::Exact(v) => (v, None),
            Key::Lpm(v, l) => (v, Some(l)),
        };
        let value = bytes(v, *f).ok_or_else(|| bad(format!("key field {i}"), v, f.bits))?;
        matches.push(FieldMatch {
            field_id: f.id,
            field_match_type: Some(match len {
                None => field_match::FieldMatchType::Exact(field_match::Exact { value }),
                Some(prefix_len) => field_match::FieldMatchType::Lpm(field_match::Lpm {
                    value,
                    prefix_len: prefix_len as i32,
                }),
            }),
        });
    }
    let mut params = Vec::with_capacity(e.args.len());
    for (i, (&v, f)) in e.args.iter().zip(&t.params).enumerate() {
        let value = bytes(v, *f).ok_or_else(|| bad(format!("parameter {i}"), v, f.bits))?;
        params.push(p4rt::action::Param {
            param_id: f.id,
            value,
        });
    }
    Ok(TableEntry {
        table_id: t.id,
        r#match: matches,
        action: Some(TableAction {
            r#type: Some(table_action::Type::Action(p4rt::Action {
                action_id: t.action_id,
                params,
            })),
        }),
        is_default_action: e.default,
        ..Default::default()
    })
}

/// A field's big-endian bytes as a value, if they fit its width.
fn value_of(bytes: &[u8], f: Field) -> Option<u128> {
    if bytes.len() > 16 {
        return None;
    }
    let v = bytes.iter().fold(0u128, |v, &b| v << 8 | u128::from(b));
    (f.bits >= 128 || v >> f.bits == 0).then_some(v)
}

/// The entry a switch returned for table `table` (the inverse of [`table_entry`]): keys and
/// parameters in the contract's order, by id. Errors name the table and the field.
pub fn entry_of(prog: &Program, table: Table, te: &TableEntry) -> Result<Entry, String> {
    let t = prog.table(table);
    if te.table_id != t.id {
        return Err(format!(
            "{}: entry of table id {} read back",
            t.name, te.table_id
        ));
    }
    let mut keys = Vec::with_capacity(t.keys.len());
    for (i, f) in t.keys.iter().enumerate() {
        let m = te
            .r#match
            .iter()
            .find(|m| m.field_id == f.id)
            .ok_or_else(|| format!("{}: key field {i} (id {}) missing", t.name, f.id))?;
        let bad = || format!("{}: key field {i} does not fit {} bits", t.name, f.bits);
        keys.push(match &m.field_match_type {
            Some(field_match::FieldMatchType::Exact(x)) => {
                Key::Exact(value_of(&x.value, *f).ok_or_else(bad)?)
            }
            Some(field_match::FieldMatchType::Lpm(x)) => Key::Lpm(
                value_of(&x.value, *f).ok_or_else(bad)?,
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
    let Some(table_action::Type::Action(a)) = te.action.as_ref().and_then(|a| a.r#type.as_ref())
    else {
        return Err(format!("{}: the entry has no direct action", t.name));
    };
    if a.action_id != t.action_id {
        return Err(format!(
            "{}: action id {} is not Canary's",
            t.name, a.action_id
        ));
    }
    let mut args = Vec::with_capacity(t.params.len());
    for (i, f) in t.params.iter().enumerate() {
        let p = a
            .params
            .iter()
            .find(|p| p.param_id == f.id)
            .ok_or_else(|| format!("{}: parameter {i} (id {}) missing", t.name, f.id))?;
        args.push(
            value_of(&p.value, *f)
                .ok_or_else(|| format!("{}: parameter {i} does not fit {} bits", t.name, f.bits))?,
        );
    }
    Ok(Entry {
        table,
        keys,
        args,
        default: te.is_default_action,
    })
}

fn update(kind: p4rt::update::Type, entity: p4rt::entity::Entity) -> Update {
    Update {
        r#type: kind as i32,
        entity: Some(Entity {
            entity: Some(entity),
        }),
    }
}

/// The update for one write. A delete carries only the key (P4Runtime ignores the action).
pub fn write_update(prog: &Program, w: &Write) -> Result<Update, ValueError> {
    let mut entry = table_entry(prog, &w.entry)?;
    let kind = match w.change {
        Change::Insert if w.entry.default => p4rt::update::Type::Modify,
        Change::Insert => p4rt::update::Type::Insert,
        Change::Modify => p4rt::update::Type::Modify,
        Change::Delete => {
            entry.action = None;
            p4rt::update::Type::Delete
        }
    };
    Ok(update(kind, p4rt::entity::Entity::TableEntry(entry)))
}

/// A multicast group as a PRE entry update.
pub fn group_update(g: &McGroup, kind: p4rt::update::Type) -> Update {
    update(
        kind,
        p4rt::entity::Entity::PacketReplicationEngineEntry(PacketReplicationEngineEntry {
            r#type: Some(packet_replication_engine_entry::Type::MulticastGroupEntry(
                MulticastGroupEntry {
                    multicast_group_id: u32::from(g.id),
                    replicas: g
                        .replicas
                        .iter()
                        .map(|&(port, rid)| Replica {
                            port_kind: Some(replica::PortKind::EgressPort(port)),
                            instance: u32::from(rid),
                        })
                        .collect(),
                },
            )),
        }),
    )
}

/// Every member of a digest list the switch sent, decoded into `out` (reports, or why not).
pub fn decode_digest_list(prog: &Program, list: &p4rt::DigestList, out: &mut Digests) {
    for d in &list.data {
        match decode_digest(prog, d) {
            Ok(r) => out.reports.push(r),
            Err(e) => out.bad.push(e),
        }
    }
}

/// The packets of the counter entry a Read of one counter cell answered with, if it holds one.
pub fn counter_packets(answer: &[Entity]) -> Option<u64> {
    match answer.first().and_then(|e| e.entity.as_ref()) {
        Some(p4rt::entity::Entity::CounterEntry(c)) => {
            Some(c.data.as_ref().map_or(0, |d| d.packet_count.max(0) as u64))
        }
        _ => None,
    }
}

/// The action parameters of `t`'s default entry as a Read answered it, in `t`'s parameter
/// order (missing or over-long values as 0); `None` when the answer holds no entry running
/// `t`'s action.
pub fn default_action_args(t: &ResolvedTable, answer: Vec<Entity>) -> Option<Vec<u128>> {
    let Some(p4rt::entity::Entity::TableEntry(te)) =
        answer.into_iter().next().and_then(|e| e.entity)
    else {
        return None;
    };
    let Some(table_action::Type::Action(a)) = te.action.and_then(|a| a.r#type) else {
        return None;
    };
    if a.action_id != t.action_id {
        return None;
    }
    let args = t
        .params
        .iter()
        .map(|p| {
            a.params
                .iter()
                .find(|x| x.param_id == p.id)
                .filter(|x| x.value.len() <= 16)
                .map_or(0, |x| {
                    x.value.iter().fold(0u128, |v, &b| v << 8 | u128::from(b))
                })
        })
        .collect();
    Some(args)
}

/// One member of an HH digest list: (flow, incoming pathBF).
pub fn decode_digest(prog: &Program, data: &P4Data) -> Result<(FlowId, u32), String> {
    let Some(p4_data::Data::Struct(s)) = &data.data else {
        return Err(format!("digest member is not a struct: {data:?}"));
    };
    let fields = &prog.digest.fields;
    if s.members.len() != fields.len() {
        return Err(format!(
            "{} has {} members, the contract {}",
            prog.digest.name,
            s.members.len(),
            fields.len()
        ));
    }
    let mut v = [0u128; 6];
    for (i, (m, f)) in s.members.iter().zip(fields).enumerate() {
        let Some(p4_data::Data::Bitstring(b)) = &m.data else {
            return Err(format!(
                "{} member {i} is not a bitstring",
                prog.digest.name
            ));
        };
        if b.len() > 16 {
            return Err(format!(
                "{} member {i} has {} bytes",
                prog.digest.name,
                b.len()
            ));
        }
        let x = b.iter().fold(0u128, |a, &byte| a << 8 | u128::from(byte));
        if f.bits < 128 && x >> f.bits != 0 {
            return Err(format!(
                "{} member {i} exceeds {} bits",
                prog.digest.name, f.bits
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Table;
    use bfrt_proto::p4info::P4Info;
    use canary_core::fabric::RuleOp;
    use prost::Message;

    fn program() -> Program {
        let bytes = include_bytes!("../../testdata/v1model/canary.p4info.bin");
        Program::from_p4info("p4info", &P4Info::decode(bytes.as_slice()).unwrap()).unwrap()
    }

    #[test]
    fn a_dsm_rule_becomes_an_entry_with_128_bit_addresses() {
        let prog = program();
        let f = FlowId::v4(0x0a00_0001, 0x0a00_0002, 17, 1000, 2000);
        let op = RuleOp::InstallDsm {
            switch: 0,
            flow: f,
            path_bf: 0xabcd,
        };
        let u = write_update(&prog, &crate::entries::rule(&op, 42, false)).unwrap();
        let Some(p4rt::entity::Entity::TableEntry(te)) = u.entity.unwrap().entity else {
            panic!()
        };
        assert_eq!(te.table_id, prog.table(Table::Dsm).id);
        let Some(field_match::FieldMatchType::Exact(src)) = &te.r#match[0].field_match_type else {
            panic!()
        };
        assert_eq!(src.value, f.src.0.to_vec(), "::ffff:10.0.0.1 in 16 bytes");
        let Some(table_action::Type::Action(a)) = te.action.unwrap().r#type else {
            panic!()
        };
        assert_eq!(a.params[0].value, vec![0, 0, 0, 42]);
    }

    #[test]
    fn a_value_too_wide_is_named() {
        let prog = program();
        let mut e = crate::entries::config(canary_core::model::SwitchConfig {
            monitor: true,
            mask: 1,
            epoch: 3,
        });
        e.args[2] = 1 << 15;
        let err = table_entry(&prog, &e).unwrap_err().to_string();
        assert!(
            err.ends_with("switch_config: parameter 2 = 0x8000 does not fit 15 bits"),
            "{err}"
        );
    }

    #[test]
    fn digests_decode_both_families() {
        let prog = program();
        let bits = |v: u128, n: usize| P4Data {
            data: Some(p4_data::Data::Bitstring(v.to_be_bytes()[16 - n..].to_vec())),
        };
        for f in [
            FlowId::v4(0x0a00_0001, 0x0a00_0002, 6, 5, 80),
            FlowId::v6(0xfd00 << 112 | 7, 0xfd00 << 112 | 9, 17, 5, 53),
        ] {
            let d = P4Data {
                data: Some(p4_data::Data::Struct(p4rt::P4StructLike {
                    members: vec![
                        bits(f.src.to_u128(), 16),
                        bits(f.dst.to_u128(), 16),
                        bits(f.proto.into(), 1),
                        bits(f.sport.into(), 2),
                        bits(f.dport.into(), 2),
                        bits(0x1234, 4),
                    ],
                })),
            };
            assert_eq!(decode_digest(&prog, &d).unwrap(), (f, 0x1234));
        }
    }
}
