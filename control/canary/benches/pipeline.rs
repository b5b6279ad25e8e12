//! Pipeline benchmarks.
//!
//! * `simulator/epoch_100ms/kK`: packets per second of the packet simulator. The fabric is built
//!   as `canary simulate` builds it (load_topology → prepare → SimFabric::new, random:10% faults)
//!   and a `Controller` runs it; each iteration times `fabric.wait(100 ms)` alone, then lets the
//!   controller close the epoch (flip, drain, harvest, detect, localize, select) untimed. k = 16
//!   runs with 10 elephants + 15 mice per host (default 80 + 120) to keep an epoch tolerable.
//! * `detect_localize/epoch/kK`: one epoch of `minus_meters` + `observations` +
//!   `Canary.localize` on a synthesized epoch of real USM/DSM meters (`canary_sim::synth`).
//!
//! Run: `cargo bench -p canary --bench pipeline -- --warm-up-time 1 --measurement-time 3`.

mod common;

use canary_controller::controller::{Controller, ControllerConfig};
use canary_controller::setup::{load_topology, prepare};
use canary_core::fabric::Fabric;
use canary_core::fault::loss_vector;
use canary_core::localize::{Canary, CanaryParams, Grouping};
use canary_core::topo::MonitorPlacement;
use canary_sim::{SimConfig, SimFabric};
use common::{ms, Fixture, SEED};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use rand::SeedableRng;
use std::time::{Duration, Instant};

const EPOCH: Duration = Duration::from_millis(100);

/// A simulated fabric and its controller, set up as `canary_controller::simulate::run_full` does.
fn simulated(k: u32, elephants: u32, mice: u32) -> (SimFabric, Controller) {
    let topo = load_topology(
        &format!("fattree:{k}"),
        Some(MonitorPlacement::TopAndBottom),
    )
    .expect("fat-tree");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(SEED);
    let faults = canary_core::fault::random(&topo, 10.0, &mut rng);
    let loss = loss_vector(&topo, &faults, 0.0, &mut rng);
    let prep = prepare(topo, Default::default()).expect("pathBF audit");
    let mut sim = SimConfig {
        seed: SEED,
        ..Default::default()
    };
    sim.traffic.elephants.flows_per_host = elephants;
    sim.traffic.mice.flows_per_host = mice;
    let fabric = SimFabric::new(prep.topo.clone(), &prep.codec, loss, sim);
    let canary = CanaryParams {
        groups: Grouping::fixed_n(5, 0.001),
        ..Default::default()
    };
    let cfg = ControllerConfig {
        epoch: EPOCH,
        drain: fabric.drain_time(),
        canary,
        ..Default::default()
    };
    let ctl = Controller::new(prep.topo, prep.segments, prep.codec, cfg);
    (fabric, ctl)
}

fn simulator(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("simulator");
    g.sample_size(10).sampling_mode(SamplingMode::Flat);
    let mut summary = Vec::new();
    for (k, elephants, mice) in [(4u32, 80u32, 120u32), (8, 80, 120), (16, 10, 15)] {
        let (mut fabric, mut ctl) = simulated(k, elephants, mice);
        rt.block_on(async {
            ctl.start(&mut fabric).await;
            // Past slow start and the first round of flow selection.
            ctl.run_epoch(&mut fabric).await;
        });
        let p0 = fabric.stats.packets;
        rt.block_on(fabric.wait(EPOCH));
        let per_epoch = fabric.stats.packets - p0;
        rt.block_on(ctl.run_epoch(&mut fabric));
        g.throughput(Throughput::Elements(per_epoch));
        let (mut packets, mut spent) = (0u64, Duration::ZERO);
        g.bench_function(BenchmarkId::new("epoch_100ms", format!("k{k}")), |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let p0 = fabric.stats.packets;
                    let t = Instant::now();
                    rt.block_on(fabric.wait(EPOCH));
                    timed += t.elapsed();
                    packets += fabric.stats.packets - p0;
                    rt.block_on(ctl.run_epoch(&mut fabric));
                }
                spent += timed;
                timed
            })
        });
        summary.push((k, elephants + mice, per_epoch, packets, spent));
    }
    g.finish();
    println!("\nsimulator throughput (all timed iterations, warm-up included):");
    println!("| k | flows/host | packets/epoch | epoch wall ms | packets/s |");
    println!("|---|---|---|---|---|");
    for (k, flows, per_epoch, packets, spent) in summary {
        let epochs = packets as f64 / per_epoch as f64;
        println!(
            "| {k} | {flows} | {per_epoch} | {:.0} | {:.2e} |",
            ms(spent) / epochs,
            packets as f64 / spent.as_secs_f64()
        );
    }
}

fn detect_localize(c: &mut Criterion) {
    let mut g = c.benchmark_group("detect_localize");
    g.sample_size(10).sampling_mode(SamplingMode::Flat);
    let canary = Canary::default();
    let mut summary = Vec::new();
    // (k, meter width factor): the default w ≥ 4 × the busiest meter's flows, and k = 32 again
    // at 2 × (w = 2^15; Theorem 2 still gives P_clean 0.981, above the paper's 0.966 example).
    for (k, width) in [(4u32, 4usize), (8, 4), (16, 4), (32, 4), (32, 2)] {
        let id = if width == 4 {
            format!("k{k}")
        } else {
            format!("k{k}-w{width}x")
        };
        let t = Instant::now();
        let mut fx = Fixture::new(k, SEED);
        let prep_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let syn = fx.synth_with(width);
        let synth_s = t.elapsed().as_secs_f64();
        let (d, o, l, v) = fx.epoch_phases(&syn.snapshots, &canary);
        eprintln!(
            "{id}: prepare {prep_s:.1} s, synth {synth_s:.1} s; one epoch: minus_meters {:.1} ms, \
             observations {:.1} ms, localize {:.1} ms; F1 {:.3}",
            ms(d),
            ms(o),
            ms(l),
            fx.f1(&v)
        );
        g.throughput(Throughput::Elements(syn.flows));
        g.bench_function(BenchmarkId::new("epoch", &id), |b| {
            b.iter(|| fx.epoch(&syn.snapshots, &canary))
        });
        summary.push((
            id,
            fx.prep.segments.len(),
            syn.flows,
            syn.snapshots.len(),
            syn.meters,
            (d, o, l),
            fx.f1(&v),
        ));
    }
    g.finish();
    println!("\ndetect + localize, one synthesized epoch (phases timed once, outside criterion):");
    println!(
        "| k | segments | flows | monitors | meters d×w | minus_meters ms | observations ms | localize ms | F1 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (id, segs, flows, mons, m, (d, o, l), f1) in summary {
        println!(
            "| {id} | {segs} | {flows} | {mons} | {}×{} | {:.1} | {:.1} | {:.1} | {f1:.3} |",
            m.rows,
            m.width,
            ms(d),
            ms(o),
            ms(l)
        );
    }
}

criterion_group!(benches, simulator, detect_localize);
criterion_main!(benches);
