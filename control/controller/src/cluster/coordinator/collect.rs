//! Taking an epoch's results back from the workers, each partition's once.

use crate::cluster::nats::Inputs;
use crate::cluster::wire::{self, Harvested, Joined, Verdicts};
use crate::report::ClusterReport;
use canary_core::detect::{EpochDetection, MmEntries, MmEntry};
use canary_core::topo::SwitchIx;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Something every stage result carries.
pub(super) trait Part: DeserializeOwned {
    /// The stage, as a late epoch's report names it.
    const STAGE: &'static str;
    fn epoch(&self) -> u64;
    fn part(&self) -> u32;
    fn delivered(&self) -> u64;
    fn retries(&self) -> u32;
}

/// Stage results carry their epoch, their partition, how often their input was handed out and
/// how often their worker tried again.
macro_rules! parts {
    ($($t:ty: $stage:literal),*) => {$(
        impl Part for $t {
            const STAGE: &'static str = $stage;
            fn epoch(&self) -> u64 {
                self.epoch
            }
            fn part(&self) -> u32 {
                self.part
            }
            fn delivered(&self) -> u64 {
                self.delivered
            }
            fn retries(&self) -> u32 {
                self.retries
            }
        }
    )*};
}

parts!(
    Joined: "harvest or join for join partition",
    Verdicts: "localizer partition",
    Harvested: "switch reads of harvest partition"
);

/// The `n` parts of `epoch` from `inputs`, waiting however long they take. `last` gets the bytes
/// taken and what made the epoch late: inputs handed out again (a worker was lost), a worker
/// that tried again, or the controller's own pull taken up again (a server was lost).
pub(super) async fn collect<T: Part>(
    inputs: &mut Inputs,
    epoch: u64,
    n: u32,
    last: &mut ClusterReport,
) -> Vec<T> {
    let mut got: BTreeMap<u32, T> = BTreeMap::new();
    let started = Instant::now();
    let subject = inputs.subject().to_string();
    while got.len() < n as usize {
        let msg = match tokio::time::timeout(Duration::from_secs(10), inputs.next()).await {
            Err(_) => {
                let missing: Vec<u32> = (0..n).filter(|p| !got.contains_key(p)).collect();
                tracing::warn!(
                    epoch,
                    "waited {:.0} s for {subject} of partitions {missing:?}: is a worker of \
                     each running?",
                    started.elapsed().as_secs_f64()
                );
                continue;
            }
            Ok(None) => {
                tracing::error!(
                    "{subject}: the run's stream is gone: is another controller running this run?"
                );
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Ok(Some(m)) => m,
        };
        last.bytes_in += msg.payload.len() as u64;
        let part: Option<T> = match wire::decode(&subject, &msg.payload) {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::error!("{e}: dropped");
                None
            }
        };
        // Lost, it is handed out again after the ack wait, and taken as a repeat.
        if let Err(e) = msg.ack().await {
            tracing::warn!("{subject}: acknowledging: {e}");
        }
        match part {
            Some(p) if p.epoch() == epoch && p.part() < n => {
                got.entry(p.part()).or_insert(p);
            }
            Some(p) if p.epoch() > epoch => tracing::error!(
                "{subject}: a part of epoch {} while epoch {epoch} is under way: is another \
                 controller running this run?",
                p.epoch()
            ),
            // A repeat of a part (its worker died after publishing it), or of an epoch done.
            _ => {}
        }
    }
    for p in got.values() {
        if p.delivered() > 1 {
            last.redelivered.push(format!("{} {}", T::STAGE, p.part()));
        }
        if p.retries() > 0 {
            last.redelivered.push(format!(
                "{} {}: its worker tried again or moved to another NATS server",
                T::STAGE,
                p.part()
            ));
        }
    }
    if inputs.taken_up() > 0 {
        last.redelivered.push(format!(
            "{subject}: taken up again or on another NATS server"
        ));
    }
    got.into_values().collect()
}

/// The join partitions' shares as one epoch's detection, entries in upstream switch order as a
/// single process's join gives them.
pub(super) fn merge_joins(parts: Vec<Joined>) -> EpochDetection {
    let mut det = EpochDetection::default();
    let mut groups: Vec<(SwitchIx, Vec<MmEntry>)> = Vec::new();
    for p in parts {
        groups.extend(p.entries);
        det.segments.extend(p.segments);
        det.anomalies.add(&p.anomalies);
        det.vanished += p.vanished;
        for (s, t) in p.torn_at {
            *det.torn_at.entry(s).or_default() += t;
        }
    }
    groups.sort_by_key(|g| g.0);
    det.entries = MmEntries::from_parts(groups.into_iter().map(|g| g.1).collect());
    det
}
