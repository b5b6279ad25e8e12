//! A run started on the cluster: its stream made afresh, its setup published.

use super::ClusterStages;
use crate::cluster::nats::{self, connect, publish_stored, Inputs};
use crate::cluster::wire::{self, Setup};
use crate::cluster::{js_err, ClusterConfig, ClusterError, Result};
use crate::report::ClusterReport;
use async_nats::jetstream::{stream, Context};
use std::time::{Duration, Instant};

/// How long a starting run waits for the servers to agree on a leader.
const START_PATIENCE: Duration = Duration::from_secs(30);

impl ClusterStages {
    /// Starts run `cfg.run` afresh on the cluster (a stream of that name left by an earlier run
    /// is deleted) and publishes what the workers need to know of it.
    pub async fn start(cfg: ClusterConfig, setup: Setup) -> Result<Self> {
        let (parts, canary) = (setup.parts, setup.canary.clone());
        if parts.harvest == 0 || parts.join == 0 || parts.localize == 0 {
            return Err(ClusterError::Setup(format!(
                "--partitions {},{},{}: every stage needs at least one partition",
                parts.harvest, parts.join, parts.localize
            )));
        }
        let js = connect(&cfg, "controller", Duration::from_secs(10)).await?;
        make_stream(&js, &cfg).await?;
        let bytes = wire::encode(&setup);
        let patience = Some(START_PATIENCE);
        publish_stored(&js, &cfg.setup_subject(), "setup", patience, |_| {
            bytes.clone()
        })
        .await?;
        let joined = Inputs::open(&js, &cfg, "controller-joined", cfg.joined(), 0, true).await?;
        let verdicts =
            Inputs::open(&js, &cfg, "controller-verdicts", cfg.verdicts(), 0, true).await?;
        Ok(ClusterStages {
            regs: vec![Vec::new(); parts.harvest as usize],
            cfg,
            js,
            parts,
            canary,
            joined,
            verdicts,
            last: ClusterReport::default(),
            carried: Vec::new(),
            reads: None,
        })
    }
}

/// The run's stream, made afresh: an earlier run's of the same name is deleted. Waits while the
/// servers elect a leader; a stream they refuse (more replicas than servers) is an error that
/// says so.
async fn make_stream(js: &Context, cfg: &ClusterConfig) -> Result<stream::Stream> {
    // A replicated stream answers once its servers have elected its leader: seconds.
    let mut js = js.clone();
    js.set_timeout(Duration::from_secs(15));
    let started = Instant::now();
    let mut tries = 0;
    loop {
        let made = async {
            if js.get_stream(cfg.stream()).await.is_ok() {
                js.delete_stream(cfg.stream()).await.map_err(js_err)?;
            }
            Ok::<_, ClusterError>(js.create_stream(cfg.stream_config()).await)
        };
        match made.await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) if !nats::passing(&e) => {
                return Err(ClusterError::Setup(format!(
                    "the NATS servers {} refused the run's stream {} with {} replica(s) \
                     (cluster.stream_replicas, --stream-replicas): {e}. A stream of N replicas \
                     needs a JetStream cluster of at least N servers (at most 5)",
                    cfg.servers.join(","),
                    cfg.stream(),
                    cfg.stream_replicas
                )))
            }
            Ok(Err(e)) if started.elapsed() >= START_PATIENCE => return Err(js_err(e)),
            Err(e) if started.elapsed() >= START_PATIENCE => return Err(e),
            Ok(Err(e)) => tracing::warn!("making the run's stream: {e}"),
            Err(e) => tracing::warn!("making the run's stream: {e}"),
        }
        tries += 1;
        tokio::time::sleep(nats::backoff(tries)).await;
    }
}
