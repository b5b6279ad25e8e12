//! P4Runtime and BF Runtime messages (digests, register cells, default entries) and BMv2
//! register cells, as the switches send them.

use bfrt_proto::{bfrt, p4rt};
use canary_core::model::{epoch_tag, EPOCH_TAGS};
use canary_core::FlowId;
use canary_fuzzing::{rule_ids, tna, v1model};
use canary_switch::contract::Table;
use canary_switch::rule_ids::RuleKey;

/// An HH digest member as BMv2's P4Runtime server sends it.
pub(crate) fn p4rt_digest(f: &FlowId, path_bf: u32, canonical: bool) -> p4rt::P4Data {
    let bits = |v: u128, n: usize| {
        let mut b = v.to_be_bytes()[16 - n..].to_vec();
        if canonical {
            let zeros = b.iter().take_while(|&&x| x == 0).count().min(b.len() - 1);
            b.drain(..zeros);
        }
        p4rt::P4Data {
            data: Some(p4rt::p4_data::Data::Bitstring(b)),
        }
    };
    p4rt::P4Data {
        data: Some(p4rt::p4_data::Data::Struct(p4rt::P4StructLike {
            members: vec![
                bits(f.src.to_u128(), 16),
                bits(f.dst.to_u128(), 16),
                bits(f.proto.into(), 1),
                bits(f.sport.into(), 2),
                bits(f.dport.into(), 2),
                bits(path_bf.into(), 4),
            ],
        })),
    }
}

/// An HH digest as bf_switchd sends it in a learn list.
pub(crate) fn bfrt_digest(f: &FlowId, path_bf: u32) -> bfrt::TableData {
    let vals = [
        f.src.to_u128(),
        f.dst.to_u128(),
        f.proto.into(),
        f.sport.into(),
        f.dport.into(),
        path_bf.into(),
    ];
    bfrt::TableData {
        action_id: 0,
        fields: tna()
            .digest
            .fields
            .iter()
            .zip(vals)
            .map(|(fd, v)| bfrt::DataField {
                field_id: fd.id,
                value: Some(bfrt::data_field::Value::Stream(
                    v.to_be_bytes()[16 - fd.bytes()..].to_vec(),
                )),
            })
            .collect(),
    }
}

/// One cell of a BF-RT register table: its index key and each member's value per pipe.
pub(crate) fn register_entry<const M: usize>(
    reg: &canary_switch::contract::Register,
    index: usize,
    per_pipe: &[[u32; M]],
) -> bfrt::Entity {
    let ix = reg.index.expect("a BF-RT register");
    let fields = reg
        .members
        .iter()
        .enumerate()
        .flat_map(|(m, (_, f))| {
            per_pipe.iter().map(move |vals| bfrt::DataField {
                field_id: f.id,
                value: Some(bfrt::data_field::Value::Stream(
                    vals[m.min(M - 1)].to_be_bytes().to_vec(),
                )),
            })
        })
        .collect();
    bfrt::Entity {
        entity: Some(bfrt::entity::Entity::TableEntry(bfrt::TableEntry {
            table_id: reg.id,
            value: Some(bfrt::table_entry::Value::Key(bfrt::TableKey {
                fields: vec![bfrt::KeyField {
                    field_id: ix.id,
                    match_type: Some(bfrt::key_field::MatchType::Exact(bfrt::key_field::Exact {
                        value: (index as u32).to_be_bytes().to_vec(),
                    })),
                }],
            })),
            data: Some(bfrt::TableData {
                action_id: 0,
                fields,
            }),
            ..Default::default()
        })),
    }
}

/// `switch_config`'s default entry holding {monitor 1, mask 1, epoch 5}.
pub(crate) fn p4rt_config() -> p4rt::Entity {
    let t = v1model().table(Table::SwitchConfig);
    let params = t
        .params
        .iter()
        .zip([1u128, 1, 5])
        .map(|(p, v)| p4rt::action::Param {
            param_id: p.id,
            value: v.to_be_bytes()[16 - p.bytes()..].to_vec(),
        })
        .collect();
    p4rt::Entity {
        entity: Some(p4rt::entity::Entity::TableEntry(p4rt::TableEntry {
            table_id: t.id,
            is_default_action: true,
            action: Some(p4rt::TableAction {
                r#type: Some(p4rt::table_action::Type::Action(p4rt::Action {
                    action_id: t.action_id,
                    params,
                })),
            }),
            ..Default::default()
        })),
    }
}

pub(crate) fn bfrt_config() -> bfrt::Entity {
    let t = tna().table(Table::SwitchConfig);
    let fields = t
        .params
        .iter()
        .zip([1u128, 1, 5])
        .map(|(p, v)| bfrt::DataField {
            field_id: p.id,
            value: Some(bfrt::data_field::Value::Stream(
                v.to_be_bytes()[16 - p.bytes()..].to_vec(),
            )),
        })
        .collect();
    bfrt::Entity {
        entity: Some(bfrt::entity::Entity::TableEntry(bfrt::TableEntry {
            table_id: t.id,
            is_default_entry: true,
            data: Some(bfrt::TableData {
                action_id: t.action_id,
                fields,
            }),
            ..Default::default()
        })),
    }
}

/// The read_responses target's BMv2 input: `head` (epoch, top bit: short arrays), then cell
/// writes holding buckets of that epoch for rule IDs the fixture assigned.
pub(crate) fn bmv2_cells(head: u8) -> Vec<u8> {
    let tag = u64::from(epoch_tag(u64::from(head & 0x7f)));
    let width = v1model().meters.width;
    let base = (tag & 1) as usize * width;
    let rows = v1model().meters.usm.len();
    let ids = rule_ids();
    let usm = |i: u32| FlowId::v4(0x0a00_0002 + i, 0x0a01_0002, 6, 1000 + i as u16, 80);
    let mut b = vec![head];
    let mut write = |array: usize, cell: usize, value: u64| {
        b.push(array as u8);
        b.extend((cell as u16).to_le_bytes());
        b.extend(value.to_le_bytes());
    };
    for i in 0..3u32 {
        let uid = ids.id(&RuleKey::Usm(usm(i))).expect("installed");
        let did = ids
            .id(&RuleKey::Dsm(usm(i), 0x1234_5678 ^ i))
            .expect("installed");
        let cell = base + 17 * i as usize;
        // USM row i: arrays 2i (IDs) and 2i + 1 (counts); DSM rows follow.
        write(2 * i as usize, cell, tag << 32 | u64::from(uid));
        write(2 * i as usize + 1, cell, 10 + u64::from(i));
        write(
            2 * (rows + i as usize),
            cell,
            tag << 32 | u64::from(did) | 1 << 31,
        );
        write(2 * (rows + i as usize) + 1, cell, 9);
    }
    // A bucket of an epoch half a wrap old: stale, to be zeroed.
    let epoch = u64::from(head & 0x7f);
    let old = u64::from(epoch_tag(epoch + EPOCH_TAGS / 2 - 1));
    write(0, base + 5, (old << 32) | 1);
    b
}
