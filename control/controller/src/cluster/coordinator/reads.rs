//! The switches' meters read by the harvest workers, not by the controller: the fabric's
//! [`RemoteReads`]. Each epoch the controller publishes what each monitor's read takes (its
//! cells, the version of its rule IDs, the flows expected there) to the monitor's harvest
//! partition, and takes back how each read went; the records go from the workers to the join
//! partitions directly. A switch's whole rule-ID table goes out again only when
//! the change since would be more than half of it.

use super::collect::collect;
use crate::cluster::nats::publish_stored;
use crate::cluster::nats::Inputs;
use crate::cluster::wire::{
    self, HarvestInput, Harvested, IdsSince, ReadOrders, SwitchOrder, WireIds,
};
use crate::cluster::ClusterConfig;
use crate::report::ClusterReport;
use async_nats::jetstream::Context;
use canary_core::detect::Expected;
use canary_core::topo::SwitchIx;
use canary_switch::fabric::{ReadOrder, ReadOutcome, RemoteReads};
use canary_switch::rule_ids::IdTable;
use futures::future::BoxFuture;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What the controller's epoch and the reads share.
#[derive(Default)]
pub(crate) struct ReadsShared {
    /// This epoch's flows expected at each monitor (set before the harvest).
    pub(crate) expected: HashMap<SwitchIx, Vec<Expected>>,
    /// Monitors that missed the flip: not read this epoch.
    pub(crate) skip: HashSet<SwitchIx>,
    /// Monitors read this epoch.
    pub(crate) answered: Vec<SwitchIx>,
    /// What the reads cost and waited for, for the epoch's report.
    pub(crate) report: ClusterReport,
}

pub(crate) fn lock(m: &Mutex<ReadsShared>) -> std::sync::MutexGuard<'_, ReadsShared> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The harvest workers' reads, as the fabric asks for them.
pub struct ClusterReads {
    pub(super) cfg: ClusterConfig,
    pub(super) js: Context,
    pub(super) harvest_parts: u32,
    pub(super) shared: Arc<Mutex<ReadsShared>>,
    pub(super) harvested: Inputs,
    /// Each switch's rule-ID table last published on `ids.<switch>`, and its version.
    pub(super) ids: HashMap<SwitchIx, (u64, IdTable)>,
}

impl RemoteReads for ClusterReads {
    fn read(
        &mut self,
        epoch: u64,
        orders: Vec<ReadOrder>,
    ) -> BoxFuture<'_, Vec<(SwitchIx, ReadOutcome)>> {
        Box::pin(self.read_epoch(epoch, orders))
    }
}

impl ClusterReads {
    async fn read_epoch(
        &mut self,
        epoch: u64,
        orders: Vec<ReadOrder>,
    ) -> Vec<(SwitchIx, ReadOutcome)> {
        let t = Instant::now();
        let (mut expected, skip) = {
            let mut sh = lock(&self.shared);
            (
                std::mem::take(&mut sh.expected),
                std::mem::take(&mut sh.skip),
            )
        };
        let mut report = ClusterReport::default();
        let n = self.harvest_parts;
        let mut by_part: Vec<Vec<SwitchOrder>> = vec![Vec::new(); n as usize];
        let mut skipped = Vec::new();
        for o in orders {
            if skip.contains(&o.switch) {
                skipped.push((o.switch, ReadOutcome::Skipped));
                continue;
            }
            let ids = self.ids_since(o.switch, o.ids, &mut report).await;
            by_part[(o.switch % n) as usize].push(SwitchOrder {
                switch: o.switch,
                ids,
                expected: expected.remove(&o.switch).unwrap_or_default(),
            });
        }
        let mut index = 0;
        for (h, switches) in by_part.into_iter().enumerate() {
            let h = h as u32;
            let chunks = chunked(switches);
            let n_chunks = chunks.len() as u32;
            for (c, switches) in chunks.into_iter().enumerate() {
                let c = c as u32;
                let msg = HarvestInput::Reads(ReadOrders {
                    epoch,
                    part: h,
                    chunk: c,
                    chunks: n_chunks,
                    index,
                    switches,
                });
                let id = format!("{epoch}.regs.{h}.{c}");
                self.publish(self.cfg.regs(h), id, wire::encode(&msg), &mut report)
                    .await;
                index += 1;
            }
        }
        let parts: Vec<Harvested> = collect(&mut self.harvested, epoch, index, &mut report).await;
        let mut outcomes: Vec<(SwitchIx, ReadOutcome)> =
            parts.into_iter().flat_map(|p| p.outcomes).collect();
        outcomes.extend(skipped);
        let mut sh = lock(&self.shared);
        sh.answered = outcomes
            .iter()
            .filter(|(_, o)| matches!(o, ReadOutcome::Read { .. }))
            .map(|(s, _)| *s)
            .collect();
        report.detect_ms = t.elapsed().as_secs_f64() * 1e3;
        sh.report = report;
        outcomes
    }

    /// `switch`'s rule IDs for its read: the change since its table on `ids.<switch>`, which is
    /// published again (a new version) when that change would be more than half of it.
    async fn ids_since(
        &mut self,
        switch: SwitchIx,
        table: IdTable,
        report: &mut ClusterReport,
    ) -> IdsSince {
        if let Some((v, keyframe)) = self.ids.get(&switch) {
            let since = IdsSince::between(*v, keyframe, &table);
            if 2 * since.len() <= table.by_id.len().max(keyframe.by_id.len()) {
                return since;
            }
        }
        let version = self.ids.get(&switch).map_or(1, |(v, _)| v + 1);
        let msg = WireIds {
            switch,
            version,
            table,
        };
        let id = format!("ids.{switch}.{version}");
        self.publish(self.cfg.ids(switch), id, wire::encode(&msg), report)
            .await;
        let since = IdsSince {
            keyframe: version,
            unknown_ok: msg.table.unknown_ok,
            ..Default::default()
        };
        self.ids.insert(switch, (version, msg.table));
        since
    }

    /// Publishes until a server stores it, however long that takes (with the same ID, so it is
    /// stored once).
    async fn publish(
        &self,
        subject: String,
        id: String,
        bytes: Vec<u8>,
        report: &mut ClusterReport,
    ) {
        report.bytes_out += bytes.len() as u64;
        let tries = publish_stored(&self.js, &subject, &id, None, |_| bytes.clone()).await;
        if tries.is_ok_and(|n| n > 0) {
            report.redelivered.push(format!("{id}: published again"));
        }
    }
}

/// A chunk of orders, encoded, stays under this: NATS refuses messages over its
/// `max_payload` (1 MiB unless the server is told otherwise).
const CHUNK_BYTES: usize = 512 * 1024;

/// A partition's orders in chunks of at most [`CHUNK_BYTES`] (one order alone may be more):
/// always at least one chunk, so that every join partition hears from every harvest partition.
fn chunked(orders: Vec<SwitchOrder>) -> Vec<Vec<SwitchOrder>> {
    let mut out: Vec<Vec<SwitchOrder>> = vec![Vec::new()];
    let mut bytes = 0;
    for o in orders {
        let n = wire::encode(&o).len();
        let last = out.last_mut().expect("never empty");
        if !last.is_empty() && bytes + n > CHUNK_BYTES {
            out.push(Vec::new());
            bytes = 0;
        }
        bytes += n;
        out.last_mut().expect("never empty").push(o);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::detect::Expected;
    use canary_core::FlowId;

    fn order(switch: SwitchIx, flows: u32) -> SwitchOrder {
        SwitchOrder {
            switch,
            ids: IdsSince::default(),
            expected: (0..flows)
                .map(|f| Expected {
                    flow: FlowId::v4(f, 0x0a00_0001, 6, 1000, 80),
                    segment: f,
                })
                .collect(),
        }
    }

    #[test]
    fn orders_go_in_chunks_that_fit_a_nats_message() {
        assert_eq!(
            chunked(vec![]).len(),
            1,
            "an empty partition still sends one chunk"
        );
        let orders: Vec<SwitchOrder> = (0..40).map(|s| order(s, 2000)).collect();
        let one = wire::encode(&orders[0]).len();
        let chunks = chunked(orders);
        assert!(chunks.len() > 1, "{one} B an order");
        let mut seen = Vec::new();
        for c in &chunks {
            let bytes: usize = c.iter().map(|o| wire::encode(o).len()).sum();
            assert!(bytes <= CHUNK_BYTES, "{bytes} B in a chunk");
            seen.extend(c.iter().map(|o| o.switch));
        }
        assert_eq!(
            seen,
            (0..40).collect::<Vec<_>>(),
            "every order once, in order"
        );
    }
}
