//! The epoch boundary on the simulated fabric: packets in flight when the parity flips, and
//! switches that flip at different moments, must not show up as loss.

use canary_controller::controller::{Controller, ControllerConfig};
use canary_controller::setup::{load_topology, prepare};
use canary_core::pathbf::PathBfParams;
use canary_sim::{SimConfig, SimFabric};
use std::time::Duration;

fn topo_path(name: &str) -> String {
    format!("{}/../../topologies/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `epochs` epochs on a loss-free line3 whose hops take 3 ms (so a flip always catches
/// thousands of packets mid-path) and whose switches flip up to 2 ms apart.
fn run(drain: Option<Duration>, epochs: usize) -> Vec<canary_controller::report::EpochReport> {
    run_with(|_| drain, false, epochs)
}

/// [`run`] with the drain chosen from the fabric's own (`drain_of`), and the second read of
/// lossy segments' downstream switches on or off.
fn run_with(
    drain_of: impl Fn(Duration) -> Option<Duration>,
    recheck_late: bool,
    epochs: usize,
) -> Vec<canary_controller::report::EpochReport> {
    let topo = load_topology(&topo_path("line3.yaml"), None).unwrap();
    let prep = prepare(topo, PathBfParams::default()).unwrap();
    let mut cfg = SimConfig {
        hop_latency_ns: 3_000_000,
        max_flip_skew_ns: 2_000_000,
        ..Default::default()
    };
    cfg.traffic.elephants.flows_per_host = 40;
    let loss = vec![0.0; prep.topo.links.len()];
    let mut fabric = SimFabric::new(prep.topo.clone(), &prep.codec, loss, cfg);
    let ctl_cfg = ControllerConfig {
        drain: drain_of(fabric.drain_time()).unwrap_or_else(|| fabric.drain_time()),
        recheck_late,
        ..Default::default()
    };
    let mut ctl = Controller::new(prep.topo, prep.segments, prep.codec, ctl_cfg);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        ctl.start(&mut fabric).await;
        let mut out = Vec::new();
        for _ in 0..epochs {
            out.push(ctl.run_epoch(&mut fabric).await);
        }
        out
    })
}

#[test]
fn packets_in_flight_across_a_flip_are_counted_in_the_marked_instance() {
    let reports = run(None, 12);
    for r in &reports[1..] {
        assert!(
            r.packets_counted > 1000,
            "epoch {} counted {}",
            r.epoch,
            r.packets_counted
        );
        assert!(
            r.lossy_segments.is_empty(),
            "epoch {}: {:?}",
            r.epoch,
            r.lossy_segments
        );
        assert_eq!(r.anomalies.negative_loss, 0);
        assert!(r.blamed.is_empty());
    }
}

#[test]
fn harvesting_before_the_drain_would_show_phantom_loss() {
    // The control experiment: without waiting for packets in flight, their upstream counts are
    // harvested but their downstream counts land after the reset. The drain is what prevents it.
    let reports = run(Some(Duration::ZERO), 8);
    let phantom: u64 = reports[1..]
        .iter()
        .map(|r| r.lossy_segments.iter().map(|s| s.lost).sum::<u64>() + r.anomalies.negative_loss)
        .sum();
    assert!(phantom > 0, "a zero drain must expose in-flight packets");
}

/// Lost counted on lossy segments and as negative loss, over the epochs after the first.
fn phantom(reports: &[canary_controller::report::EpochReport]) -> u64 {
    reports[1..]
        .iter()
        .map(|r| r.lossy_segments.iter().map(|s| s.lost).sum::<u64>() + r.anomalies.negative_loss)
        .sum()
}

#[test]
fn packets_that_arrive_after_a_short_drain_are_found_by_a_second_read() {
    // The drain is the fabric's 2 x (longest time in flight) (`SimFabric::drain_time`); at 30 %
    // of it the harvest misses packets still on their way, and the second read, as long again
    // after it, finds every one of them.
    let short = |d: Duration| Some(d.mul_f64(0.3));
    let without = run_with(short, false, 8);
    assert!(
        phantom(&without) > 0,
        "the short drain must expose late packets"
    );
    let with = run_with(short, true, 8);
    assert_eq!(
        phantom(&with),
        0,
        "the second read judged what arrived late as lost"
    );
    let late: u64 = with.iter().map(|r| r.anomalies.late).sum();
    assert!(late > 0, "the second read must have found the late packets");
    for r in &with[1..] {
        assert!(r.blamed.is_empty(), "epoch {}: {:?}", r.epoch, r.blamed);
    }
}
