//! Each structure filled from one trial at both ends of the link, and Canary's memory and
//! minus-meter decode; apart from the search, which only asks whether a width decodes.

use super::trial::{Lost, Trial};
use crate::overhead::link::Line2;
use canary_core::detect::minus_meters;
use canary_core::sketch::fermat::{FermatConfig, FermatSketch};
use canary_core::sketch::flowradar::{FlowRadar, FlowRadarConfig};
use canary_core::sketch::{
    Dsm, MeterConfig, Usm, DSM_BUCKET_BITS, HASHPIPE_ENTRY_BITS, USM_BUCKET_BITS,
};
use canary_core::FlowId;
use std::collections::BTreeMap;
use std::time::Instant;

/// Canary's memory at meter width `w`: USM + DSM (3 rows each) + the 3 × 32 HashPipe.
pub fn canary_bits(w: usize) -> usize {
    3 * w * (USM_BUCKET_BITS + DSM_BUCKET_BITS) + 3 * 32 * HASHPIPE_ENTRY_BITS
}

pub(super) fn flowradars(t: &Trial, l: &Lost, cfg: FlowRadarConfig) -> (FlowRadar, FlowRadar) {
    let (mut up, mut down) = (FlowRadar::new(cfg), FlowRadar::new(cfg));
    for (i, f) in t.epoch.flows.iter().enumerate() {
        up.insert_n(f, t.epoch.sizes[i]);
        down.insert_n(f, t.epoch.sizes[i] - l.per_flow[i]);
    }
    (up, down)
}

pub(super) fn fermats(t: &Trial, l: &Lost, cfg: FermatConfig) -> (FermatSketch, FermatSketch) {
    let (mut up, mut down) = (FermatSketch::new(cfg), FermatSketch::new(cfg));
    for (i, f) in t.epoch.flows.iter().enumerate() {
        up.insert_n(f, t.epoch.sizes[i]);
        down.insert_n(f, t.epoch.sizes[i] - l.per_flow[i]);
    }
    (up, down)
}

/// Canary's meters for one trial: every monitored flow's packets upstream, the delivered ones
/// downstream. Returns (exact, saw a loss, decode time).
pub(super) fn canary_trial(line: &Line2, t: &Trial, l: &Lost, w: usize) -> (bool, bool, f64) {
    let cfg = MeterConfig::new(3, w).expect("power-of-two width");
    let (mut usm, mut dsm) = (Usm::new(cfg).unwrap(), Dsm::new(cfg).unwrap());
    for &i in &l.monitored {
        let i = i as usize;
        let (f, h) = (&t.epoch.flows[i], t.hashes[i]);
        usm.update_n(f, h, t.epoch.sizes[i]);
        dsm.update_n(f, h, line.path_bf, t.epoch.sizes[i] - l.per_flow[i]);
    }
    let snaps = line.snapshots(usm, dsm);
    let p = &line.prepared;
    let t0 = Instant::now();
    let det = minus_meters(&p.segments, &p.codec, &snaps);
    let us = t0.elapsed().as_secs_f64() * 1e6;
    let got: BTreeMap<FlowId, u64> = det.entries.iter().map(|e| (e.flow, e.lost)).collect();
    let exact = l.monitored.iter().all(|&i| {
        let i = i as usize;
        t.epoch.sizes[i] == l.per_flow[i]
            || got.get(&t.epoch.flows[i]) == Some(&(l.per_flow[i] as u64))
    });
    let saw = det.entries.iter().any(|e| e.lost > 0);
    (exact, saw, us)
}
