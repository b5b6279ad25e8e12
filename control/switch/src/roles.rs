//! P4Runtime roles: which controller may touch which of a switch's entities.
//!
//! A role is named in arbitration; each role has its own primary (the highest election id among
//! its controllers), so a fabric's own controller and Canary can both be primary, each for its
//! role. A named role's configuration, given by its primary in arbitration as an `Any`, is
//! Stratum's `P4RoleConfig`: the P4 ids the role writes alone (exclusive) or beside others
//! (shared), and whether it may push a pipeline. The default role (no name) owns everything no
//! named role holds exclusively, the packet replication engine, and the pipeline.
//!
//! The rules here are pure; [`crate::role_gateway`] enforces them in front of a switch whose
//! P4Runtime server has no roles (BMv2's), and Canary builds its own configuration with
//! [`canary_role_config`].

use crate::contract::{Program, Table};
use bfrt_proto::p4rt::{entity, Entity};
use bfrt_proto::stratum::P4RoleConfig;
use prost::Message;
use std::collections::BTreeMap;

/// The `type_url` of a `P4RoleConfig` packed in an `Any`.
pub const ROLE_CONFIG_TYPE_URL: &str = "type.googleapis.com/stratum.P4RoleConfig";

pub fn pack(c: &P4RoleConfig) -> prost_types::Any {
    prost_types::Any {
        type_url: ROLE_CONFIG_TYPE_URL.into(),
        value: c.encode_to_vec(),
    }
}

pub fn unpack(any: &prost_types::Any) -> Result<P4RoleConfig, String> {
    if any.type_url != ROLE_CONFIG_TYPE_URL {
        return Err(format!(
            "role config of type `{}`, expected `{ROLE_CONFIG_TYPE_URL}`",
            any.type_url
        ));
    }
    P4RoleConfig::decode(any.value.as_slice()).map_err(|e| format!("role config: {e}"))
}

/// What Canary writes over P4Runtime, as a role: its configuration and rule tables, its meter,
/// HashPipe and counter ids, and its digest. Forwarding, multicast groups and the pipeline stay
/// with the default role.
pub fn canary_role_config(p: &Program) -> P4RoleConfig {
    let mut ids: Vec<u32> = [Table::SwitchConfig, Table::Dsm, Table::Usm, Table::Hh]
        .into_iter()
        .map(|t| p.table(t).id)
        .collect();
    ids.extend(p.meters.rows().flat_map(|r| [r.id.id, r.count.id]));
    ids.extend(p.hashpipe.iter().map(|r| r.id));
    ids.extend(p.hh_counter);
    ids.push(p.digest.id);
    ids.sort_unstable();
    ids.dedup();
    P4RoleConfig {
        exclusive_p4_ids: ids,
        shared_p4_ids: vec![],
        receives_packet_ins: false,
        can_push_pipeline: false,
    }
}

/// What an update or a read touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touches {
    /// A P4 entity by id (table, counter, register, digest); 0: every table (a wildcard read).
    P4(u32),
    /// The packet replication engine (multicast groups): no P4 id.
    Pre,
}

pub fn touches(e: &Entity) -> Option<Touches> {
    Some(match e.entity.as_ref()? {
        entity::Entity::TableEntry(t) => Touches::P4(t.table_id),
        entity::Entity::CounterEntry(c) => Touches::P4(c.counter_id),
        entity::Entity::RegisterEntry(r) => Touches::P4(r.register_id),
        entity::Entity::DigestEntry(d) => Touches::P4(d.digest_id),
        entity::Entity::PacketReplicationEngineEntry(_) => Touches::Pre,
    })
}

/// The named roles' configurations; the default role is `""`.
#[derive(Clone, Debug, Default)]
pub struct Roles {
    named: BTreeMap<String, P4RoleConfig>,
}

impl Roles {
    /// Sets `role`'s configuration, unless it claims exclusively an id another role holds
    /// exclusively.
    pub fn set(&mut self, role: &str, c: P4RoleConfig) -> Result<(), String> {
        if role.is_empty() {
            return Err("the default role takes no configuration".into());
        }
        for &id in &c.exclusive_p4_ids {
            if let Some(other) = self.exclusive_owner(id).filter(|o| *o != role) {
                return Err(format!("P4 id {id} is already exclusive to role `{other}`"));
            }
        }
        self.named.insert(role.to_string(), c);
        Ok(())
    }

    pub fn config(&self, role: &str) -> Option<&P4RoleConfig> {
        self.named.get(role)
    }

    /// The named role that holds `id` exclusively.
    pub fn exclusive_owner(&self, id: u32) -> Option<&str> {
        self.named
            .iter()
            .find(|(_, c)| c.exclusive_p4_ids.contains(&id))
            .map(|(r, _)| r.as_str())
    }

    /// Whether `role` may write `e`; if not, why.
    pub fn may_write(&self, role: &str, e: &Entity) -> Result<(), String> {
        let Some(t) = touches(e) else {
            return Err("an entity of a kind the role gateway does not carry".into());
        };
        match (role.is_empty(), t) {
            (true, Touches::Pre) => Ok(()),
            (true, Touches::P4(id)) => match self.exclusive_owner(id) {
                Some(owner) => Err(format!("P4 id {id} belongs to role `{owner}`")),
                None => Ok(()),
            },
            (false, Touches::Pre) => Err(format!(
                "multicast groups belong to the default role, not `{role}`"
            )),
            (false, Touches::P4(id)) => {
                let Some(c) = self.named.get(role) else {
                    return Err(format!("role `{role}` has no configuration"));
                };
                if c.exclusive_p4_ids.contains(&id) {
                    return Ok(());
                }
                if let Some(owner) = self.exclusive_owner(id) {
                    return Err(format!("P4 id {id} belongs to role `{owner}`"));
                }
                if c.shared_p4_ids.contains(&id) {
                    Ok(())
                } else {
                    Err(format!(
                        "P4 id {id} is not in role `{role}`'s configuration"
                    ))
                }
            }
        }
    }

    /// Whether `role` may read `t` (a named role reads only what it may write).
    pub fn may_read(&self, role: &str, t: Touches) -> bool {
        if role.is_empty() {
            return true;
        }
        match (t, self.named.get(role)) {
            (Touches::P4(id), Some(c)) => {
                c.exclusive_p4_ids.contains(&id) || c.shared_p4_ids.contains(&id)
            }
            _ => false,
        }
    }

    pub fn may_push_pipeline(&self, role: &str) -> bool {
        role.is_empty() || self.named.get(role).is_some_and(|c| c.can_push_pipeline)
    }

    /// The role a digest list goes to: the one holding the digest exclusively, else the default.
    pub fn digest_role(&self, digest_id: u32) -> &str {
        self.exclusive_owner(digest_id).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bfrt_proto::p4rt::{PacketReplicationEngineEntry, TableEntry};

    fn table(id: u32) -> Entity {
        Entity {
            entity: Some(entity::Entity::TableEntry(TableEntry {
                table_id: id,
                ..Default::default()
            })),
        }
    }

    fn roles() -> Roles {
        let mut r = Roles::default();
        r.set(
            "canary",
            P4RoleConfig {
                exclusive_p4_ids: vec![10, 11],
                shared_p4_ids: vec![20],
                ..Default::default()
            },
        )
        .unwrap();
        r
    }

    #[test]
    fn each_role_writes_its_own_entities_only() {
        let r = roles();
        assert!(r.may_write("canary", &table(10)).is_ok());
        assert!(r.may_write("canary", &table(20)).is_ok());
        assert_eq!(
            r.may_write("canary", &table(30)).unwrap_err(),
            "P4 id 30 is not in role `canary`'s configuration"
        );
        assert_eq!(
            r.may_write("", &table(10)).unwrap_err(),
            "P4 id 10 belongs to role `canary`"
        );
        assert!(r.may_write("", &table(30)).is_ok());
        assert!(r.may_write("", &table(20)).is_ok(), "shared, not exclusive");
        let pre = Entity {
            entity: Some(entity::Entity::PacketReplicationEngineEntry(
                PacketReplicationEngineEntry { r#type: None },
            )),
        };
        assert!(r.may_write("", &pre).is_ok());
        assert!(r.may_write("canary", &pre).is_err());
        assert!(
            r.may_write("other", &table(30)).is_err(),
            "no configuration"
        );
        assert!(r.may_write("", &Entity { entity: None }).is_err());
    }

    #[test]
    fn exclusive_ids_cannot_be_claimed_twice_and_digests_go_to_their_owner() {
        let mut r = roles();
        let err = r
            .set(
                "other",
                P4RoleConfig {
                    exclusive_p4_ids: vec![11],
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert_eq!(err, "P4 id 11 is already exclusive to role `canary`");
        assert_eq!(r.digest_role(10), "canary");
        assert_eq!(r.digest_role(99), "");
        assert!(r.may_push_pipeline(""));
        assert!(!r.may_push_pipeline("canary"));
        assert!(r.may_read("canary", Touches::P4(20)));
        assert!(!r.may_read("canary", Touches::P4(30)));
        assert!(r.may_read("", Touches::P4(10)));
        let c = r.config("canary").unwrap().clone();
        assert_eq!(unpack(&pack(&c)).unwrap(), c);
    }
}
