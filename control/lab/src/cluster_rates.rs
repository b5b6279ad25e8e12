//! What each stage of the cluster mode costs, on one thread, per unit of its work: the sizes of
//! what crosses the network per switch and the time a worker spends per switch, per record and
//! per segment. Measured on a synthesized epoch of a k-ary fat-tree at the program's meter sizes
//! (one round of the watch plan, as the switches count it), the localizer on every segment's
//! evidence (what it solves once the first sweep is done).

use crate::{Error, Result};
use canary_controller::cluster::wire::{self, WireSnapshot};
use canary_controller::setup::{load_faults, load_topology, prepare, Prepared};
use canary_core::capacity::Capacity;
use canary_core::detect::{join, observations, DsmEntry, SwitchRecords, UsmEntry, WindowCount};
use canary_core::fabric::MeterSnapshot;
use canary_core::fault::{background, with_faults, LinkLoss};
use canary_core::localize::Canary;
use canary_core::schedule::{WatchBudget, WatchPlan};
use canary_core::topo::{MonitorPlacement, Segments};
use canary_sim::synth::{synth_watched, SynthConfig, SynthEpoch};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

#[derive(Clone, Debug, Serialize)]
pub struct StageRates {
    pub k: u32,
    pub switches: usize,
    pub monitors: usize,
    pub segments: usize,
    /// Segments of the round measured (the switches' meters hold one round at a time).
    pub watched: usize,
    /// A harvested monitor's registers without their empty buckets, as sent to a harvest
    /// worker (mean bytes).
    pub register_bytes_per_switch: f64,
    /// Its records, as a harvest worker sends them on (mean bytes).
    pub record_bytes_per_switch: f64,
    /// What the controller holds per monitor during a harvest: its register image in memory
    /// (what every switch's image at once used to cost), and its records (what the streaming
    /// harvest keeps), mean bytes.
    pub image_mem_bytes_per_switch: f64,
    pub record_mem_bytes_per_switch: f64,
    /// A harvest worker's time to read one monitor's registers into records (mean µs).
    pub decode_us_per_switch: f64,
    /// Records (DSM and USM flows) the join took, and its time per record (µs).
    pub records: usize,
    pub join_us_per_record: f64,
    /// Observed segments the localizer solved (every segment with evidence), in sub-problems,
    /// and its time per segment (µs).
    pub localized_segments: usize,
    pub subproblems: usize,
    pub localize_us_per_segment: f64,
    /// The observations' bytes on the wire to the localizers, per segment.
    pub observation_bytes_per_segment: f64,
}

/// One thread, as one worker of each stage has.
fn on_one_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool")
        .install(f)
}

pub fn measure(k: u32, seed: u64) -> Result<StageRates> {
    let topology = format!("fattree:{k}");
    let topo = load_topology(&topology, Some(MonitorPlacement::TopAndBottom))?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let faults = load_faults("random:10%", &topo, &mut rng)?;
    let loss = with_faults(&background(&topo, 0.0, &mut rng), &faults);
    let prep = prepare(topo, Default::default())?;
    let (topo, segments, codec) = (&prep.topo, &prep.segments, &prep.codec);
    let synth = SynthConfig::default();
    let (epoch, watched) = first_round(&topology, &prep, &loss, &synth, &mut rng)?;
    let snaps = &epoch.snapshots;

    let register_bytes: usize = snaps
        .iter()
        .map(|s| wire::encode(&WireSnapshot::of(s)).len())
        .sum();
    let t = Instant::now();
    let records: Vec<SwitchRecords> = snaps
        .iter()
        .map(|s| SwitchRecords::decode(segments, codec, s))
        .collect();
    let decode_s = t.elapsed().as_secs_f64();
    let record_bytes: usize = records.iter().map(|r| wire::encode(r).len()).sum();
    let n_records: usize = records.iter().map(SwitchRecords::len).sum();
    let t = Instant::now();
    let det = on_one_thread(|| join(segments, &records));
    let join_s = t.elapsed().as_secs_f64();
    if det.segments.is_empty() {
        return Err(Error::NothingCounted { topology });
    }

    let totals = every_segment_evidence(segments, &loss, synth.packets_per_segment, &mut rng);
    let obs = observations(segments, &totals, 1);
    let obs_bytes: usize = obs
        .segments
        .iter()
        .map(|s| wire::encode(&wire::WireSegment::from(s.clone())).len())
        .sum();
    let canary = Canary::default();
    let t = Instant::now();
    let subs = on_one_thread(|| canary.diagnose(&obs));
    let localize_s = t.elapsed().as_secs_f64();

    let m = snaps.len().max(1) as f64;
    Ok(StageRates {
        k,
        switches: topo.switches.len(),
        monitors: snaps.len(),
        segments: segments.len(),
        watched,
        image_mem_bytes_per_switch: image_mem(snaps) as f64 / m,
        record_mem_bytes_per_switch: record_mem(&records) as f64 / m,
        register_bytes_per_switch: register_bytes as f64 / m,
        record_bytes_per_switch: record_bytes as f64 / m,
        decode_us_per_switch: decode_s * 1e6 / m,
        records: n_records,
        join_us_per_record: join_s * 1e6 / n_records.max(1) as f64,
        localized_segments: obs.segments.len(),
        subproblems: subs.len(),
        localize_us_per_segment: localize_s * 1e6 / obs.segments.len().max(1) as f64,
        observation_bytes_per_segment: obs_bytes as f64 / obs.segments.len().max(1) as f64,
    })
}

/// The first round of the watch plan at the program's capacity, synthesized into the
/// switches' meters; with the number of segments it watches.
fn first_round(
    topology: &str,
    prep: &Prepared,
    loss: &[f64],
    synth: &SynthConfig,
    rng: &mut ChaCha8Rng,
) -> Result<(SynthEpoch, usize)> {
    let capacity = Capacity::of_program();
    let plan = WatchPlan::new(
        &prep.segments,
        WatchBudget::of(&capacity, synth.flows_per_segment),
        1,
    );
    let watched = plan.watched_at(0);
    let epoch = synth_watched(
        &prep.topo,
        &prep.segments,
        &prep.codec,
        &LinkLoss::on_every_flow(loss),
        synth,
        capacity.meter,
        watched,
        rng,
    )
    .map_err(|source| Error::Meters {
        topology: topology.to_string(),
        meters: "the program's meters",
        source,
    })?;
    Ok((epoch, watched.len()))
}

/// Every segment's evidence, as after the first sweep: `sent` (α) packets each, lost through its
/// links' loss rates.
fn every_segment_evidence(
    segments: &Segments,
    loss: &[f64],
    sent: u64,
    rng: &mut impl Rng,
) -> BTreeMap<u32, WindowCount> {
    segments
        .list
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let ok = s.delivery(loss);
            let lost = (0..sent).filter(|_| !rng.random_bool(ok)).count() as u64;
            (i as u32, WindowCount::of_one_epoch(sent, lost))
        })
        .collect()
}

/// Bytes of the monitors' register images in memory: both meters' buckets, and the list of
/// occupied buckets of each.
fn image_mem(snaps: &[MeterSnapshot]) -> usize {
    snaps
        .iter()
        .map(|s| {
            std::mem::size_of_val(s.usm.buckets())
                + std::mem::size_of_val(s.dsm.buckets())
                + (s.usm.occupied() + s.dsm.occupied()) * std::mem::size_of::<u32>()
        })
        .sum()
}

/// Bytes of the monitors' records in memory.
fn record_mem(records: &[SwitchRecords]) -> usize {
    records
        .iter()
        .map(|r| {
            r.dsm.len() * std::mem::size_of::<DsmEntry>()
                + r.usm.len() * std::mem::size_of::<UsmEntry>()
        })
        .sum()
}
