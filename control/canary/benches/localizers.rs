//! Every localizer's inference time on one fabric, as a ratio to Canary's, measured in one run.
//!
//! For each k (fat-tree, top+bottom monitors, random:10% faults, no noise):
//! * Canary and CdOnSegments on the observations of one synthesized epoch of meters
//!   (`canary_sim::synth`, β = 20 flows and α = 1000 packets per segment);
//! * NetBouncer, NetBouncer-stage and Flock on `bounce_probes` (100 probes per path);
//! * 007 on one epoch of `tcp007::simulate_epoch`;
//! * deTector on `probe_paths` over its `probe_matrix` (PMC over every shortest ToR-to-ToR path:
//!   32.6 M candidates at k = 32; its time is reported in the note).
//!
//! Only `localize` is timed: median of a few repetitions (std::time::Instant). Input generation
//! is reported beside it. Run:
//! `cargo bench -p canary --bench localizers` (optionally `-- 4 8 16` to pick the radixes).

mod common;

use canary_core::localize::{
    probe_matrix, Canary, CdOnSegments, Detector, Flock, FlockInput, Localizer, NetBouncer,
    NetBouncerParams, PmcParams, Verdict, Vote007,
};
use canary_core::topo::Topology;
use canary_sim::bounce_probes::bounce_probes;
use canary_sim::matrix_probes::{probe_paths, PmProbeParams};
use canary_sim::tcp007::{simulate_epoch, Tcp007Params};
use common::{ms, Fixture, SEED};
use std::time::Instant;

struct Row {
    k: u32,
    name: &'static str,
    input: String,
    gen_s: f64,
    ms: Option<f64>,
    f1: f64,
    note: String,
}

fn median_ms<L: Localizer>(
    l: &L,
    topo: &Topology,
    input: &L::Input,
    reps: usize,
) -> (f64, Verdict) {
    let mut times = Vec::with_capacity(reps);
    let mut verdict = Verdict::default();
    for _ in 0..reps {
        let t = Instant::now();
        verdict = std::hint::black_box(l.localize(topo, std::hint::black_box(input)));
        times.push(ms(t.elapsed()));
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], verdict)
}

fn main() {
    let ks: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ks = if ks.is_empty() {
        vec![4, 8, 16, 32]
    } else {
        ks
    };
    let mut rows: Vec<Row> = Vec::new();
    for &k in &ks {
        let reps = if k >= 32 { 3 } else { 5 };
        let mut fx = Fixture::new(k, SEED);
        let topo = fx.prep.topo.clone();

        // Canary's own measurements.
        let t = Instant::now();
        let syn = fx.synth();
        let obs = fx.observe(&syn.snapshots);
        drop(syn);
        let gen = t.elapsed().as_secs_f64();
        let input = format!("{} observed segments", obs.segments.len());
        for (name, timed) in [
            ("Canary", median_ms(&Canary::default(), &topo, &obs, reps)),
            (
                "CdOnSegments",
                median_ms(&CdOnSegments::default(), &topo, &obs, reps),
            ),
        ] {
            rows.push(Row {
                k,
                name,
                input: input.clone(),
                gen_s: gen,
                ms: Some(timed.0),
                f1: fx.f1(&timed.1),
                note: String::new(),
            });
        }
        drop(obs);

        // Bounce probes.
        let t = Instant::now();
        let probes = bounce_probes(&topo, &fx.loss, 100, &mut fx.rng);
        let gen = t.elapsed().as_secs_f64();
        let input = format!("{} bounce paths × 100 probes", probes.len());
        let flock_in = FlockInput::from_probes(&probes);
        for (name, timed) in [
            (
                "NetBouncer",
                median_ms(&NetBouncer::default(), &topo, &probes, reps),
            ),
            (
                "NetBouncer-stage",
                median_ms(
                    &NetBouncer::new(NetBouncerParams::staged()),
                    &topo,
                    &probes,
                    reps,
                ),
            ),
            (
                "Flock",
                median_ms(&Flock::default(), &topo, &flock_in, reps),
            ),
        ] {
            rows.push(Row {
                k,
                name,
                input: input.clone(),
                gen_s: gen,
                ms: Some(timed.0),
                f1: fx.f1(&timed.1),
                note: String::new(),
            });
        }
        drop((probes, flock_in));

        // 007.
        let t = Instant::now();
        let e = simulate_epoch(
            &topo,
            &fx.prep.routing,
            &fx.loss,
            &Tcp007Params::default(),
            &mut fx.rng,
        );
        let gen = t.elapsed().as_secs_f64();
        let timed = median_ms(&Vote007::default(), &topo, &e.reports, reps);
        rows.push(Row {
            k,
            name: "007",
            input: format!("{} TCP flows, {} traced", e.reports.len(), e.traced),
            gen_s: gen,
            ms: Some(timed.0),
            f1: fx.f1(&timed.1),
            note: String::new(),
        });
        drop(e);

        // deTector.
        let t = Instant::now();
        let m = probe_matrix(&topo, &fx.prep.routing, &PmcParams::default());
        let pmc_s = t.elapsed().as_secs_f64();
        let probes = probe_paths(
            &topo,
            &m.paths,
            &fx.loss,
            &PmProbeParams::default(),
            &mut fx.rng,
        );
        let gen = t.elapsed().as_secs_f64();
        let timed = median_ms(&Detector::default(), &topo, &probes, reps);
        rows.push(Row {
            k,
            name: "deTector",
            input: format!("{} of {} candidate paths", m.paths.len(), m.candidates),
            gen_s: gen,
            ms: Some(timed.0),
            f1: fx.f1(&timed.1),
            note: format!("probe matrix {pmc_s:.1} s"),
        });

        eprintln!("k={k} done");
    }

    println!("\nLocalizer inference time (median of 5 runs, 3 at k=32), ratio to Canary's at the same k:\n");
    println!("| k | localizer | input | input gen s | median ms | × Canary | F1 | note |");
    println!("|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let canary = rows
            .iter()
            .find(|c| c.k == r.k && c.name == "Canary")
            .and_then(|c| c.ms);
        let (t, ratio) = match (r.ms, canary) {
            (Some(t), Some(c)) => (format!("{t:.3}"), format!("{:.2}", t / c)),
            _ => ("—".into(), "—".into()),
        };
        let f1 = if r.f1.is_nan() {
            "—".into()
        } else {
            format!("{:.3}", r.f1)
        };
        let gen = if r.gen_s.is_nan() {
            "—".into()
        } else {
            format!("{:.1}", r.gen_s)
        };
        println!(
            "| {} | {} | {} | {gen} | {t} | {ratio} | {f1} | {} |",
            r.k, r.name, r.input, r.note
        );
    }
}
