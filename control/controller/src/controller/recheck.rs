//! A second look before an epoch is judged. A loaded switch can hold a packet longer than the
//! drain: counted upstream, it reaches its DSM after the harvest read it, and its segment reads
//! as lossy though nothing was lost. The finished epoch's cells stay as they are until its
//! parity comes round again, so the downstream switches of the segments that lost packets are
//! read once more, a while later, and the epoch is judged on that read.

use super::Controller;
use canary_core::detect::{expected_by_downstream, join, EpochDetection, SwitchRecords};
use canary_core::fabric::Fabric;
use canary_core::topo::SwitchIx;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

impl Controller {
    /// `det` joined from `records`, or, when the downstream switches of its lossy segments,
    /// read again `wait` later, counted packets the harvest missed, joined again with those
    /// reads (which replace their switches' `records`); the late packets are counted in its
    /// anomalies. Only where the join runs here (a cluster's workers hold its records) and
    /// when the settings ask for it.
    pub(super) async fn recheck_late<F: Fabric>(
        &mut self,
        fabric: &mut F,
        finished: u64,
        records: &mut [SwitchRecords],
        det: EpochDetection,
        wait: Duration,
    ) -> EpochDetection {
        if !self.cfg.recheck_late || records.is_empty() {
            return det;
        }
        let lossy: BTreeSet<SwitchIx> = det
            .segments
            .iter()
            .filter(|(_, c)| c.lost > 0)
            .map(|(&id, _)| self.segments.get(id).downstream())
            .collect();
        if lossy.is_empty() {
            return det;
        }
        fabric.wait(wait).await;
        let switches: Vec<SwitchIx> = lossy.into_iter().collect();
        let expected = expected_by_downstream(&self.segments, &self.selector.expected());
        let (segments, codec) = (&self.segments, &self.codec);
        let none = Vec::new();
        let mut again: HashMap<SwitchIx, SwitchRecords> = HashMap::new();
        fabric
            .reread(finished, &switches, &mut |s, r| {
                if let Ok(snap) = r {
                    let here = expected.get(&s).unwrap_or(&none);
                    again.insert(
                        s,
                        SwitchRecords::decode_expecting(segments, codec, &snap, here),
                    );
                }
            })
            .await;
        if again.is_empty() {
            return det;
        }
        for r in records.iter_mut() {
            if let Some(newer) = again.remove(&r.switch) {
                *r = newer;
            }
        }
        let mut second = join(&self.segments, records);
        let late = det.lost().saturating_sub(second.lost());
        if late == 0 {
            return det;
        }
        tracing::warn!(
            "{late} packets of epoch {finished} reached their downstream switch after the \
             harvest ({} switches read again {wait:?} later): judged on the second read",
            switches.len()
        );
        second.anomalies.late = late;
        second
    }
}
