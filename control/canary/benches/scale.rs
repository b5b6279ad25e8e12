//! A data-center epoch inside the program's switch memory against today's k = 32 path, in one
//! run (the ratio is what compares across machine states).
//!
//! * new: a k = 48 fat-tree (2 880 switches, 27 648 hosts, 1.96 M segments) at the program's
//!   meters, 3 × 1024, its segments watched in the plan's rounds (`canary_lab::scale`); timed are
//!   the epochs after the first full period, when every segment has evidence (median of the
//!   last 10): minus meters, evidence update, success probabilities, Canary.
//! * old: k = 32 with every segment counted every epoch, meters 3 × 2^16 (w ≥ 4 × the busiest
//!   meter's 10 240 flows), one synthesized epoch, the same steps (median of 3).
//!
//! The new side runs first, so the peak memory printed after it is its own.
//! Run: `cargo bench -p canary --bench scale` (optionally `-- K` for the new side's radix).

mod common;

use canary_core::localize::Canary;
use canary_lab::scale::{self, ScaleOptions};
use common::{ms, Fixture, SEED};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let k: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(48);

    let topology = format!("fattree:{k}");
    let probe = scale::measure(
        &ScaleOptions {
            topology: topology.clone(),
            epochs: 0,
            seed: SEED,
            ..Default::default()
        },
        |_| {},
    )
    .expect("fabric");
    let period = probe.setup.period as u32;
    let t = Instant::now();
    let run = scale::measure(
        &ScaleOptions {
            topology,
            epochs: period + 10,
            seed: SEED,
            ..Default::default()
        },
        |_| {},
    )
    .expect("scale run");
    let new_ms = median(
        run.epochs[run.epochs.len() - 10..]
            .iter()
            .map(|e| e.epoch_ms)
            .collect(),
    );
    let new_peak = scale::peak_rss_mb().unwrap_or(f64::NAN);
    let s = &run.setup;
    println!(
        "new: k = {k}, {} segments, meters {}x{}, {} rounds; {} epochs in {:.0} s; \
         epoch median {new_ms:.0} ms (last 10); F1 after the first period {:.3}; \
         peak RSS so far {new_peak:.0} MB",
        s.segments,
        s.meters.rows,
        s.meters.width,
        s.rounds,
        run.epochs.len(),
        t.elapsed().as_secs_f64(),
        run.after_first_period.f1,
    );

    let mut old = Fixture::new(32, SEED);
    let epoch = old.synth();
    let canary = Canary::default();
    let old_ms = median(
        (0..3)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(old.epoch(&epoch.snapshots, &canary));
                ms(t.elapsed())
            })
            .collect(),
    );
    println!(
        "old: k = 32, {} segments, meters {}x{}, every segment every epoch; epoch median \
         {old_ms:.0} ms (3 runs); peak RSS {:.0} MB",
        old.prep.segments.len(),
        epoch.meters.rows,
        epoch.meters.width,
        scale::peak_rss_mb().unwrap_or(f64::NAN)
    );
    println!("new / old: {:.2}", new_ms / old_ms);
}
