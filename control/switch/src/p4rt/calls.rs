//! The unary calls of a connected client: pipeline push and cookie, batched writes, reads, and
//! enabling a digest; and the digest lists the stream reader queued.

use super::error::rpc_error;
use super::{uint128, P4RtClient, P4RtError};
use bfrt_proto::p4rt::{
    self, get_forwarding_pipeline_config_request::ResponseType,
    set_forwarding_pipeline_config_request, update, DigestEntry, DigestList, Entity,
    ForwardingPipelineConfig, GetForwardingPipelineConfigRequest, ReadRequest,
    SetForwardingPipelineConfigRequest, Update, WriteRequest,
};
use std::time::Duration;
use tokio_stream::StreamExt;

/// Runs one unary call with a deadline, as the switch's error or DEADLINE_EXCEEDED.
pub(super) async fn call<T>(
    switch: &str,
    op: &'static str,
    deadline: Duration,
    fut: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, P4RtError> {
    match tokio::time::timeout(deadline, fut).await {
        Ok(Ok(r)) => Ok(r.into_inner()),
        Ok(Err(s)) => Err(rpc_error(switch, op, s)),
        Err(_) => Err(P4RtError::Rpc {
            switch: switch.to_string(),
            op,
            code: tonic::Code::DeadlineExceeded,
            message: format!("no answer within {deadline:?}"),
            details: Vec::new(),
        }),
    }
}

impl P4RtClient {
    /// Pushes the compiled program (`p4info`: encoded P4Info; `device_config`: the target's
    /// binary, the BMv2 JSON) and tags it with `cookie`, which later tells whether the switch
    /// still runs what we pushed.
    pub async fn set_pipeline(
        &mut self,
        p4info: &[u8],
        device_config: &[u8],
        cookie: u64,
    ) -> Result<(), P4RtError> {
        let req = SetForwardingPipelineConfigRequest {
            device_id: self.cfg.device_id,
            election_id: Some(uint128(self.cfg.election_id)),
            role: self.cfg.role.clone(),
            action: set_forwarding_pipeline_config_request::Action::VerifyAndCommit as i32,
            config: Some(ForwardingPipelineConfig {
                p4info: p4info.to_vec(),
                p4_device_config: device_config.to_vec(),
                cookie: Some(p4rt::forwarding_pipeline_config::Cookie { cookie }),
            }),
        };
        let name = self.cfg.name.clone();
        let deadline = self.cfg.pipeline_timeout;
        call(
            &name,
            "SetForwardingPipelineConfig",
            deadline,
            self.client.set_forwarding_pipeline_config(req),
        )
        .await?;
        Ok(())
    }

    /// The cookie of the running pipeline; `None` when no pipeline is set (a fresh switch).
    pub async fn pipeline_cookie(&mut self) -> Result<Option<u64>, P4RtError> {
        let req = GetForwardingPipelineConfigRequest {
            device_id: self.cfg.device_id,
            response_type: ResponseType::CookieOnly as i32,
        };
        let name = self.cfg.name.clone();
        let timeout = self.cfg.timeout;
        match call(
            &name,
            "GetForwardingPipelineConfig",
            timeout,
            self.client.get_forwarding_pipeline_config(req),
        )
        .await
        {
            Ok(r) => Ok(r.config.and_then(|c| c.cookie).map(|c| c.cookie)),
            // BMv2 answers FAILED_PRECONDITION before a pipeline is set.
            Err(e) if e.code() == Some(tonic::Code::FailedPrecondition) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes `updates` in batches of at most `batch`; stops at the first failed batch.
    pub async fn write(&mut self, updates: Vec<Update>, batch: usize) -> Result<(), P4RtError> {
        let mut it = updates.into_iter().peekable();
        while it.peek().is_some() {
            let chunk: Vec<Update> = it.by_ref().take(batch.max(1)).collect();
            let req = WriteRequest {
                device_id: self.cfg.device_id,
                election_id: Some(uint128(self.cfg.election_id)),
                role: self.cfg.role.clone(),
                updates: chunk,
                atomicity: 0,
            };
            let name = self.cfg.name.clone();
            let timeout = self.cfg.timeout;
            call(&name, "Write", timeout, self.client.write(req)).await?;
        }
        Ok(())
    }

    /// Reads every entity matching the wildcards in `entities`.
    pub async fn read(&mut self, entities: Vec<Entity>) -> Result<Vec<Entity>, P4RtError> {
        let req = ReadRequest {
            device_id: self.cfg.device_id,
            role: self.cfg.role.clone(),
            entities,
        };
        let name = self.cfg.name.clone();
        let timeout = self.cfg.timeout;
        let mut stream = call(&name, "Read", timeout, self.client.read(req)).await?;
        let mut out = Vec::new();
        while let Some(r) = stream.next().await {
            out.extend(
                r.map_err(|s| rpc_error(&self.cfg.name, "Read", s))?
                    .entities,
            );
        }
        Ok(out)
    }

    /// Enables a digest. `max_list_size` and `max_timeout` batch its messages on the switch;
    /// `ack_timeout` is how long the switch suppresses repeats of a message until acked.
    pub async fn enable_digest(
        &mut self,
        digest_id: u32,
        max_timeout: Duration,
        max_list_size: i32,
        ack_timeout: Duration,
    ) -> Result<(), P4RtError> {
        let entity = Entity {
            entity: Some(p4rt::entity::Entity::DigestEntry(DigestEntry {
                digest_id,
                config: Some(p4rt::digest_entry::Config {
                    max_timeout_ns: max_timeout.as_nanos() as i64,
                    max_list_size,
                    ack_timeout_ns: ack_timeout.as_nanos() as i64,
                }),
            })),
        };
        let up = |t: update::Type| Update {
            r#type: t as i32,
            entity: Some(entity.clone()),
        };
        match self.write(vec![up(update::Type::Insert)], 1).await {
            // Configured by a controller before this one (a restart, a standby taking over).
            Err(e) if e.already_exists() => self.write(vec![up(update::Type::Modify)], 1).await,
            r => r,
        }
    }

    /// Digest lists received since the last call (at most what the queue held).
    pub fn take_digests(&mut self) -> Vec<DigestList> {
        let mut out = Vec::new();
        while let Ok(d) = self.digests.try_recv() {
            out.push(d);
        }
        out
    }
}
