//! Connecting: the endpoint (TLS when configured), the stream channel and arbitration, and the
//! stream reader started behind the client.

use super::error::{rpc_error, source_chain};
use super::stream::stream_task;
use super::{uint128, P4RtClient, P4RtConfig, P4RtError, StreamStats};
use bfrt_proto::p4rt::{
    self, p4_runtime_client::P4RuntimeClient, stream_message_request, stream_message_response,
    MasterArbitrationUpdate, Role, StreamMessageRequest,
};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// The endpoint of `cfg`'s server, with its TLS material read.
async fn endpoint(cfg: &P4RtConfig) -> Result<Endpoint, P4RtError> {
    let scheme = if cfg.tls.is_some() { "https" } else { "http" };
    let connect_err = |detail: String| P4RtError::Connect {
        switch: cfg.name.clone(),
        endpoint: cfg.endpoint.clone(),
        detail,
    };
    let mut ep = Endpoint::from_shared(format!("{scheme}://{}", cfg.endpoint))
        .map_err(|e| connect_err(e.to_string()))?
        .connect_timeout(cfg.timeout)
        .tcp_nodelay(true);
    if let Some(tls) = &cfg.tls {
        let read = |p: &PathBuf| {
            std::fs::read(p).map_err(|e| P4RtError::Tls {
                switch: cfg.name.clone(),
                path: p.display().to_string(),
                detail: e.to_string(),
            })
        };
        let mut t = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(&tls.ca)?));
        if let Some(d) = &tls.domain {
            t = t.domain_name(d.clone());
        }
        match (&tls.cert, &tls.key) {
            (Some(c), Some(k)) => t = t.identity(Identity::from_pem(read(c)?, read(k)?)),
            (None, None) => {}
            _ => {
                return Err(P4RtError::Tls {
                    switch: cfg.name.clone(),
                    path: "tls.cert/tls.key".into(),
                    detail: "give both a client certificate and its key, or neither".into(),
                })
            }
        }
        ep = ep.tls_config(t).map_err(|e| connect_err(e.to_string()))?;
    }
    Ok(ep)
}

impl P4RtClient {
    /// Connects, opens the stream channel and runs arbitration. Returns a client whether or not
    /// it became primary (see [`P4RtClient::primary`]); use [`P4RtClient::connect_primary`] to
    /// insist.
    pub async fn connect(cfg: P4RtConfig) -> Result<Self, P4RtError> {
        let ep = endpoint(&cfg).await?;
        let channel = ep.connect().await.map_err(|e| P4RtError::Connect {
            switch: cfg.name.clone(),
            endpoint: cfg.endpoint.clone(),
            detail: format!("{e} ({})", source_chain(&e)),
        })?;
        let mut client = P4RuntimeClient::new(channel)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        let (stream_tx, rx) = mpsc::channel(64);
        let arbitration = StreamMessageRequest {
            update: Some(stream_message_request::Update::Arbitration(
                MasterArbitrationUpdate {
                    device_id: cfg.device_id,
                    role: (!cfg.role.is_empty()).then(|| Role {
                        name: cfg.role.clone(),
                        config: cfg.role_config.clone(),
                    }),
                    election_id: Some(uint128(cfg.election_id)),
                    status: None,
                },
            )),
        };
        stream_tx
            .send(arbitration)
            .await
            .expect("receiver alive: held by the request stream below");
        // The stream has no per-call deadline (it lives for the run); bound the wait for the
        // arbitration reply instead.
        let open = client.stream_channel(ReceiverStream::new(rx));
        let mut inbound = tokio::time::timeout(cfg.timeout, open)
            .await
            .map_err(|_| P4RtError::Connect {
                switch: cfg.name.clone(),
                endpoint: cfg.endpoint.clone(),
                detail: "no answer to StreamChannel".into(),
            })?
            .map_err(|s| rpc_error(&cfg.name, "StreamChannel", s))?
            .into_inner();
        let first = tokio::time::timeout(cfg.timeout, inbound.next())
            .await
            .map_err(|_| P4RtError::Connect {
                switch: cfg.name.clone(),
                endpoint: cfg.endpoint.clone(),
                detail: "no arbitration reply".into(),
            })?;
        let (primary, arbitration, primary_id) = match first {
            Some(Ok(p4rt::StreamMessageResponse {
                update: Some(stream_message_response::Update::Arbitration(a)),
            })) => {
                let st = a.status.unwrap_or_default();
                (
                    st.code == 0,
                    format!("{:?}: {}", tonic::Code::from(st.code), st.message),
                    a.election_id
                        .map(|e| u128::from(e.high) << 64 | u128::from(e.low)),
                )
            }
            Some(Ok(other)) => {
                return Err(P4RtError::StreamClosed {
                    switch: cfg.name.clone(),
                    detail: format!("expected an arbitration reply, got {other:?}"),
                })
            }
            Some(Err(s)) => return Err(rpc_error(&cfg.name, "StreamChannel", s)),
            None => {
                return Err(P4RtError::StreamClosed {
                    switch: cfg.name.clone(),
                    detail: "closed before arbitration".into(),
                })
            }
        };
        let stats = Arc::new(StreamStats::default());
        let (dtx, digests) = mpsc::channel(cfg.digest_queue.max(1));
        let stream_task = tokio::spawn(stream_task(
            cfg.name.clone(),
            cfg.digest_rate,
            inbound,
            stream_tx,
            dtx,
            stats.clone(),
        ));
        Ok(Self {
            cfg,
            client,
            digests,
            stats,
            primary,
            arbitration,
            primary_id,
            stream_task,
        })
    }

    /// Connects and fails with [`P4RtError::NotPrimary`] unless this client won arbitration.
    pub async fn connect_primary(cfg: P4RtConfig) -> Result<Self, P4RtError> {
        let c = Self::connect(cfg).await?;
        if !c.primary {
            return Err(P4RtError::NotPrimary {
                switch: c.cfg.name.clone(),
                ours: c.cfg.election_id,
                message: c.arbitration.clone(),
                primary: c.primary_id,
            });
        }
        Ok(c)
    }

    /// True while the stream is open and we are still primary.
    pub fn healthy(&self) -> bool {
        !self.stats.closed.load(Ordering::Relaxed) && !self.stats.demoted.load(Ordering::Relaxed)
    }
}
