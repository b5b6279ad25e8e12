//! Who holds which role: the controllers' streams, each role's primary (the highest election
//! id among its streams), the arbitration replies that tell them, and the check that a request
//! came from its role's primary.

use super::upstream::Upstream;
use super::{from_uint128, lock, role_name, uint128, RoleGateway, Tx};
use crate::roles::{self, Roles};
use bfrt_proto::google::rpc;
use bfrt_proto::p4rt::{
    stream_message_response, MasterArbitrationUpdate, Role, StreamMessageResponse,
};
use std::collections::BTreeMap;
use tonic::Status;

/// One controller's stream.
pub(super) struct Conn {
    pub(super) role: String,
    pub(super) election_id: u128,
    pub(super) tx: Tx,
}

/// What the gateway holds: the switch's connection, the roles and the controllers' streams.
#[derive(Default)]
pub(super) struct State {
    pub(super) upstream: Option<Upstream>,
    pub(super) generation: u64,
    pub(super) roles: Roles,
    pub(super) conns: BTreeMap<u64, Conn>,
    pub(super) next_conn: u64,
    /// Digest lists acknowledged by the gateway because no controller held their role.
    pub(super) digests_unclaimed: u64,
}

impl State {
    /// The primary of `role` (its stream and election id), if any stream holds the role.
    pub(super) fn primary(&self, role: &str) -> Option<(u64, u128)> {
        self.conns
            .iter()
            .filter(|(_, c)| c.role == role)
            .max_by_key(|(_, c)| c.election_id)
            .map(|(&id, c)| (id, c.election_id))
    }

    /// Tells every stream of `role` who its primary is (OK to the primary, ALREADY_EXISTS to
    /// the others, as P4Runtime's arbitration does).
    pub(super) fn announce(&self, role: &str, device_id: u64) {
        let primary = self.primary(role);
        for (&id, c) in self.conns.iter().filter(|(_, c)| c.role == role) {
            let ours = primary.is_some_and(|(p, _)| p == id);
            let msg = arbitration_reply(device_id, role, primary.map(|p| p.1), ours);
            let _ = c.tx.try_send(Ok(msg));
        }
    }

    /// The switch's connection is gone: every controller's stream ends.
    pub(super) fn drop_upstream(&mut self, generation: u64) {
        if self.upstream.as_ref().map(|u| u.generation) != Some(generation) {
            return;
        }
        self.upstream = None;
        for (_, c) in std::mem::take(&mut self.conns) {
            let _ =
                c.tx.try_send(Err(Status::unavailable("the switch's connection was lost")));
        }
    }
}

fn arbitration_reply(
    device_id: u64,
    role: &str,
    primary: Option<u128>,
    ours: bool,
) -> StreamMessageResponse {
    let (code, message) = match (ours, primary) {
        (true, _) => (tonic::Code::Ok, "primary".to_string()),
        (false, Some(_)) => (
            tonic::Code::AlreadyExists,
            "a controller with a higher election id is primary for this role".to_string(),
        ),
        (false, None) => (tonic::Code::NotFound, "no primary".to_string()),
    };
    StreamMessageResponse {
        update: Some(stream_message_response::Update::Arbitration(
            MasterArbitrationUpdate {
                device_id,
                role: (!role.is_empty()).then(|| Role {
                    name: role.to_string(),
                    config: None,
                }),
                election_id: primary.map(uint128),
                status: Some(rpc::Status {
                    code: code as i32,
                    message,
                    details: vec![],
                }),
            },
        )),
    }
}

impl RoleGateway {
    /// Checks that `role`'s primary sent this request.
    pub(super) fn check_primary(
        &self,
        role: &str,
        election: u128,
        device_id: u64,
    ) -> Result<(), Status> {
        if device_id != self.cfg.device_id {
            return Err(Status::not_found(format!("no device {device_id}")));
        }
        match lock(&self.state).primary(role) {
            Some((_, e)) if e == election => Ok(()),
            _ => Err(Status::permission_denied(format!(
                "election id {election} is not the primary of role `{}`",
                role_name(role)
            ))),
        }
    }

    /// One arbitration message of stream `me` (None: its first).
    pub(super) fn arbitrate(
        &self,
        me: Option<u64>,
        a: &MasterArbitrationUpdate,
        tx: &Tx,
    ) -> Result<u64, Status> {
        if a.device_id != self.cfg.device_id {
            return Err(Status::not_found(format!("no device {}", a.device_id)));
        }
        let role = a.role.as_ref().map(|r| r.name.clone()).unwrap_or_default();
        let election = from_uint128(a.election_id.as_ref());
        let mut st = lock(&self.state);
        if let Some(id) = me {
            if st.conns.get(&id).is_some_and(|c| c.role != role) {
                return Err(Status::invalid_argument("a stream cannot change its role"));
            }
        }
        if st
            .conns
            .iter()
            .any(|(&id, c)| Some(id) != me && c.role == role && c.election_id == election)
        {
            return Err(Status::invalid_argument(format!(
                "election id {election} is already in use for role `{}`",
                role_name(&role)
            )));
        }
        let id = me.unwrap_or_else(|| {
            st.next_conn += 1;
            st.next_conn
        });
        st.conns.insert(
            id,
            Conn {
                role: role.clone(),
                election_id: election,
                tx: tx.clone(),
            },
        );
        // The primary's configuration is the role's.
        let config = a.role.as_ref().and_then(|r| r.config.as_ref());
        if let (Some(any), Some((p, _))) = (config, st.primary(&role)) {
            if p == id {
                let applied = roles::unpack(any).and_then(|c| st.roles.set(&role, c));
                if let Err(why) = applied {
                    st.conns.remove(&id);
                    return Err(Status::invalid_argument(why));
                }
            }
        }
        st.announce(&role, self.cfg.device_id);
        Ok(id)
    }
}
