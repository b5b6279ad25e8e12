//! A fault at the testbed's traffic on the simulated fabric: a k = 4 fat-tree whose segments
//! count tens of packets a window, as the Mininet testbed's do. There a segment of two links
//! often cannot tell which of them lost its packets; the report must then say so rather than
//! blame one by link order (`docs/design.md`, "A loss the counts cannot place").

use canary_controller::config::Pipeline;
use canary_controller::run_document::RunDocument;
use canary_controller::simulate::{run, SimulateOptions};
use std::time::Duration;

const FAULTY: &str = "edge1_0→agg1_1";

fn thin_run(seed: u64) -> RunDocument {
    let dir = std::env::temp_dir().join(format!("canary-thin-evidence-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let faults = dir.join("uniform.yaml");
    std::fs::write(
        &faults,
        "faults:\n  - {link: [edge1_0, agg1_1], loss: 0.1, from_epoch: 2}\n",
    )
    .unwrap();
    let opts = SimulateOptions {
        topology: "fattree:4".into(),
        faults: faults.to_str().unwrap().into(),
        epochs: 12,
        seed,
        // Two short flows per host and 50 ms epochs: 300–900 packets an epoch in all, a few
        // tens per segment, as on the testbed (whose settings these are: n′ 2, η 8).
        elephants_per_host: 0,
        mice_per_host: 2,
        epoch: Duration::from_millis(50),
        pipeline: Pipeline {
            min_lossy_epochs: 2,
            eta: 8,
            ..Default::default()
        },
        ..Default::default()
    };
    run(&opts, |_| {}).expect("simulation runs")
}

fn name(l: &[String; 2]) -> String {
    format!("{}→{}", l[0], l[1])
}

/// Seeds 1–3 (in seeds 1 and 3 the binary before blamed `agg1_1→core3` for 6 link-epochs):
/// nothing but the faulty link is ever blamed, and it is blamed by the end. In seed 1 the
/// one lossy segment (4 of 62 lost, its two links pinned by 12 and 13 clean packets) is
/// reported as undecided between its two links, and nothing is blamed for it then.
#[test]
fn a_loss_on_thin_segments_is_never_put_on_the_neighbour() {
    for seed in 1..=3 {
        let r = thin_run(seed);
        for e in &r.epochs {
            let wrong: Vec<String> = e
                .blamed
                .iter()
                .map(|b| name(&b.link))
                .filter(|l| l != FAULTY)
                .collect();
            assert!(wrong.is_empty(), "seed {seed} epoch {}: {wrong:?}", e.epoch);
        }
        let last = r.epochs.last().unwrap();
        assert!(
            last.blamed.iter().any(|b| name(&b.link) == FAULTY),
            "seed {seed}: the fault is blamed by the end: {:?}",
            last.blamed
        );
        if seed == 1 {
            let open: Vec<Vec<String>> = r
                .epochs
                .iter()
                .flat_map(|e| e.undecided.iter())
                .map(|c| c.iter().map(name).collect())
                .collect();
            assert!(
                open.iter()
                    .any(|c| c == &vec![FAULTY.to_string(), "agg1_1→core3".to_string()]),
                "{open:?}"
            );
        }
    }
}
