//! The accuracy bar, measured on the meter path: k = 8 fat-tree, `random:10%` (26 links,
//! 52 directed, the paper's loss mix), α = 1000, 5 groups, 10 seeds. The controller sees only
//! what the USM/DSM buckets recorded, through the Fabric.

use canary_controller::simulate::{run, SimulateOptions};
use rayon::prelude::*;

fn mean_f1(noise: f64) -> (f64, Vec<(u64, f64, Vec<f64>)>) {
    let per_seed: Vec<(u64, f64, Vec<f64>)> = (1..=10u64)
        .into_par_iter()
        .map(|seed| {
            let opts = SimulateOptions {
                topology: "fattree:8".into(),
                faults: "random:10%".into(),
                seed,
                noise,
                ..Default::default()
            };
            let r = run(&opts, |_| {}).expect("simulation runs");
            assert_eq!(r.faults.len(), 52);
            let stages = r.summary.stages.iter().map(|s| s.f1).collect();
            (seed, r.summary.f1, stages)
        })
        .collect();
    let mean = per_seed.iter().map(|x| x.1).sum::<f64>() / per_seed.len() as f64;
    for (seed, f1, stages) in &per_seed {
        let st: Vec<String> = stages.iter().map(|x| format!("{x:.3}")).collect();
        println!(
            "noise {noise:e} seed {seed:>2}: F1 {f1:.3}   per stage {}",
            st.join(" ")
        );
    }
    println!("noise {noise:e}: mean F1 {mean:.4}");
    (mean, per_seed)
}

#[test]
fn k8_random10_f1_is_at_least_098_over_10_seeds() {
    let (mean, _) = mean_f1(0.0);
    assert!(mean >= 0.98, "mean F1 {mean}");
}

#[test]
fn k8_random10_with_noise_1e4_keeps_f1_at_least_095() {
    let (mean, _) = mean_f1(1e-4);
    assert!(mean >= 0.95, "mean F1 {mean}");
}
