//! Canary's P4 program as the controller sees it: every table, action and digest it uses,
//! resolved once from the P4Info, and the table entries built from them.
//!
//! The names here are the contract with `p4src/` (docs/dataplane.md). The same names exist on the
//! TNA program, so the BFRuntime driver resolves the same list.

use crate::p4info::{bytes_of, P4InfoError, P4InfoIndex, ResolvedAction, ResolvedTable};
use bfrt_proto::p4info::match_field::MatchType;
use bfrt_proto::p4rt::{
    self, field_match, p4_data, table_action, Entity, FieldMatch, P4Data, TableAction, TableEntry,
};
use canary_core::fabric::{HhReport, Parity};
use canary_core::topo::SwitchIx;
use canary_core::FlowId;

/// Ids of everything Canary touches in the program.
#[derive(Clone, Debug)]
pub struct CanaryProgram {
    pub host_port_in: ResolvedTable,
    pub host_port: ResolvedAction,
    pub host_port_out: ResolvedTable,
    pub to_host: ResolvedAction,
    pub switch_config: ResolvedTable,
    pub set_config: ResolvedAction,
    pub ipv4_route: ResolvedTable,
    pub set_group: ResolvedAction,
    pub ecmp_group: ResolvedTable,
    pub set_port: ResolvedAction,
    pub dsm_table: ResolvedTable,
    pub dsm_hit: ResolvedAction,
    pub usm_table: ResolvedTable,
    pub usm_count: ResolvedAction,
    pub hh_table: ResolvedTable,
    pub hh_watch: ResolvedAction,
    pub hh_digest: u32,
}

const PORT_BITS: u32 = 9;

fn flow_key(extra: &[(&'static str, MatchType, u32)]) -> Vec<(&'static str, MatchType, u32)> {
    let mut k = vec![
        ("src_addr", MatchType::Exact, 32),
        ("dst_addr", MatchType::Exact, 32),
        ("protocol", MatchType::Exact, 8),
        ("src_port", MatchType::Exact, 16),
        ("dst_port", MatchType::Exact, 16),
    ];
    k.extend_from_slice(extra);
    k
}

impl CanaryProgram {
    pub fn resolve(p: &P4InfoIndex) -> Result<Self, P4InfoError> {
        use MatchType::{Exact, Lpm};
        let host_port_in = p.resolve_table("host_port_in", &[("port", Exact, PORT_BITS)])?;
        let host_port_out = p.resolve_table("host_port_out", &[("port", Exact, PORT_BITS)])?;
        let switch_config = p.resolve_table("switch_config", &[])?;
        let ipv4_route = p.resolve_table("ipv4_route", &[("dst_addr", Lpm, 32)])?;
        let ecmp_group =
            p.resolve_table("ecmp_group", &[("group", Exact, 16), ("member", Exact, 16)])?;
        let dsm_table = p.resolve_table("dsm_table", &flow_key(&[("path_bf", Exact, 32)]))?;
        let usm_table = p.resolve_table("usm_table", &flow_key(&[]))?;
        let hh_table = p.resolve_table("hh_table", &[("path_bf", Exact, 32)])?;
        Ok(Self {
            host_port: p.resolve_action(Some(&host_port_in), "host_port", &[])?,
            to_host: p.resolve_action(Some(&host_port_out), "to_host", &[])?,
            set_config: p.resolve_action(
                Some(&switch_config),
                "set_config",
                &[("monitor", 1), ("mask", 32), ("parity", 1)],
            )?,
            set_group: p.resolve_action(
                Some(&ipv4_route),
                "set_group",
                &[("group", 16), ("group_size", 16)],
            )?,
            set_port: p.resolve_action(Some(&ecmp_group), "set_port", &[("port", PORT_BITS)])?,
            dsm_hit: p.resolve_action(Some(&dsm_table), "dsm_hit", &[])?,
            usm_count: p.resolve_action(Some(&usm_table), "usm_count", &[])?,
            hh_watch: p.resolve_action(Some(&hh_table), "hh_watch", &[("eta", 32)])?,
            hh_digest: p.digest_id("hh_digest_t")?,
            host_port_in,
            host_port_out,
            switch_config,
            ipv4_route,
            ecmp_group,
            dsm_table,
            usm_table,
            hh_table,
        })
    }

    /// The keyless `switch_config` default action: monitor flag, pathBF mask, counting parity.
    pub fn config_entry(&self, monitor: bool, mask: u32, parity: Parity) -> TableEntry {
        TableEntry {
            table_id: self.switch_config.id,
            is_default_action: true,
            action: Some(action(
                &self.set_config,
                &[u64::from(monitor), u64::from(mask), parity.index() as u64],
            )),
            ..Default::default()
        }
    }

    pub fn host_port_in_entry(&self, port: u32) -> TableEntry {
        entry(
            &self.host_port_in,
            &[Key::Exact(port.into())],
            &self.host_port,
            &[],
        )
    }

    pub fn host_port_out_entry(&self, port: u32) -> TableEntry {
        entry(
            &self.host_port_out,
            &[Key::Exact(port.into())],
            &self.to_host,
            &[],
        )
    }

    pub fn route_entry(&self, dst: u32, prefix_len: u32, group: u16, size: u16) -> TableEntry {
        entry(
            &self.ipv4_route,
            &[Key::Lpm(dst.into(), prefix_len)],
            &self.set_group,
            &[group.into(), size.into()],
        )
    }

    pub fn ecmp_entry(&self, group: u16, member: u16, port: u32) -> TableEntry {
        entry(
            &self.ecmp_group,
            &[Key::Exact(group.into()), Key::Exact(member.into())],
            &self.set_port,
            &[port.into()],
        )
    }

    pub fn dsm_entry(&self, flow: &FlowId, path_bf: u32) -> TableEntry {
        let mut k = flow_values(flow);
        k.push(Key::Exact(path_bf.into()));
        entry(&self.dsm_table, &k, &self.dsm_hit, &[])
    }

    pub fn usm_entry(&self, flow: &FlowId) -> TableEntry {
        entry(&self.usm_table, &flow_values(flow), &self.usm_count, &[])
    }

    pub fn hh_entry(&self, path_bf: u32, eta: u32) -> TableEntry {
        entry(
            &self.hh_table,
            &[Key::Exact(path_bf.into())],
            &self.hh_watch,
            &[eta.into()],
        )
    }

    /// One digest member (`hh_digest_t`: src, dst, protocol, sport, dport, pathBF) as a report.
    pub fn decode_hh(&self, switch: SwitchIx, data: &P4Data) -> Result<HhReport, String> {
        let Some(p4_data::Data::Struct(s)) = &data.data else {
            return Err(format!("digest member is not a struct: {data:?}"));
        };
        let widths = [32u32, 32, 8, 16, 16, 32];
        if s.members.len() != widths.len() {
            return Err(format!(
                "hh_digest_t has {} members, the controller expects {}",
                s.members.len(),
                widths.len()
            ));
        }
        let mut v = [0u64; 6];
        for (i, (m, w)) in s.members.iter().zip(widths).enumerate() {
            let Some(p4_data::Data::Bitstring(b)) = &m.data else {
                return Err(format!("hh_digest_t member {i} is not a bitstring"));
            };
            if b.len() > 8 {
                return Err(format!("hh_digest_t member {i} has {} bytes", b.len()));
            }
            let x = b.iter().fold(0u64, |a, &byte| a << 8 | u64::from(byte));
            if w < 64 && x >> w != 0 {
                return Err(format!("hh_digest_t member {i} exceeds {w} bits"));
            }
            v[i] = x;
        }
        Ok(HhReport {
            switch,
            flow: FlowId {
                src: v[0] as u32,
                dst: v[1] as u32,
                proto: v[2] as u8,
                sport: v[3] as u16,
                dport: v[4] as u16,
            },
            path_bf: v[5] as u32,
        })
    }
}

enum Key {
    Exact(u64),
    Lpm(u64, u32),
}

fn flow_values(f: &FlowId) -> Vec<Key> {
    vec![
        Key::Exact(f.src.into()),
        Key::Exact(f.dst.into()),
        Key::Exact(f.proto.into()),
        Key::Exact(f.sport.into()),
        Key::Exact(f.dport.into()),
    ]
}

fn action(a: &ResolvedAction, values: &[u64]) -> TableAction {
    assert_eq!(a.params.len(), values.len(), "arguments of {}", a.name);
    TableAction {
        r#type: Some(table_action::Type::Action(p4rt::Action {
            action_id: a.id,
            params: a
                .params
                .iter()
                .zip(values)
                .map(|(&(id, w), &v)| p4rt::action::Param {
                    param_id: id,
                    value: bytes_of(v, w),
                })
                .collect(),
        })),
    }
}

fn entry(t: &ResolvedTable, keys: &[Key], a: &ResolvedAction, values: &[u64]) -> TableEntry {
    assert_eq!(t.fields.len(), keys.len(), "key of {}", t.name);
    TableEntry {
        table_id: t.id,
        r#match: t
            .fields
            .iter()
            .zip(keys)
            .map(|(&(id, w), k)| FieldMatch {
                field_id: id,
                field_match_type: Some(match *k {
                    Key::Exact(v) => field_match::FieldMatchType::Exact(field_match::Exact {
                        value: bytes_of(v, w),
                    }),
                    Key::Lpm(v, len) => field_match::FieldMatchType::Lpm(field_match::Lpm {
                        value: bytes_of(v, w),
                        prefix_len: len as i32,
                    }),
                }),
            })
            .collect(),
        action: Some(action(a, values)),
        ..Default::default()
    }
}

/// Wraps a table entry as an entity.
pub fn table_entity(e: TableEntry) -> Entity {
    Entity {
        entity: Some(p4rt::entity::Entity::TableEntry(e)),
    }
}
