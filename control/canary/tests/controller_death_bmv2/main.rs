//! The controller's own death on real switches: `canary run` SIGKILLed at a random point of an
//! epoch on a leaf-spine fabric of BMv2 switches with real traffic, then restarted, or taken
//! over by a standby `canary run` that was waiting (a lossy link stays blamed through the takeover,
//! one incident throughout). The switches keep their pipeline, meters,
//! rules and monitored flows; the report file goes on, every epoch once.
//!
//! Needs root, p4c and BMv2 on PATH; each test prints `SKIP: ...` and passes when something is
//! missing. The chaos-driven versions, which run everywhere, are in `controller_death`.

#[path = "../bmv2/mod.rs"]
mod bmv2;
#[path = "../fabric_lab/mod.rs"]
mod fabric_lab;

mod partition;
mod read_back;
mod restart;
mod standby;

use canary_controller::setup::load_topology;
use fabric_lab::{http_get_in_ns, wait_child, FabricLab};
use rand::{Rng, SeedableRng};
use read_back::{cookies_on, meters_on, rules_on};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

const EPOCH_MS: u64 = 1000;
/// The standby test's lossy link (10 % one way): blamed before the kill, through the takeover
/// and after, one incident throughout.
const LOSSY: [&str; 2] = ["leaf1", "spine0"];

fn missing() -> bool {
    !bmv2::runnable("controller_death_bmv2", &bmv2::missing())
}

fn topology() -> String {
    bmv2::repo_root()
        .join("topologies/leaf-spine.yaml")
        .display()
        .to_string()
}

fn run_args<'a>(topology: &'a str, report: &'a str, election: &'a str) -> Vec<&'a str> {
    vec![
        "--topology",
        topology,
        "--epoch-ms",
        "1000",
        "--alpha",
        "100",
        "--beta",
        "3",
        "--eta",
        "4",
        "--report",
        report,
        "--election-id",
        election,
    ]
}

fn report_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every report line is whole JSON"))
        .collect()
}

/// Waits up to `limit` for `done`; whether it came.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// A random point of an epoch: an offset within one epoch, seeded from the clock and printed
/// so that a failure can be replayed.
fn random_point() -> Duration {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let ms = rand_chacha::ChaCha8Rng::seed_from_u64(seed).random_range(0..EPOCH_MS);
    eprintln!("killing {ms} ms into the epoch (seed {seed})");
    Duration::from_millis(ms)
}

/// Whether report line `l` is the epoch a new controller found running (marked incomplete: it
/// began before it took over).
fn found_running(l: &Value) -> bool {
    l["incomplete"]
        .as_str()
        .is_some_and(|w| w.contains("began before"))
}

/// The epoch the new controller found running.
fn resumed_at(lines: &[Value]) -> usize {
    lines
        .iter()
        .position(found_running)
        .expect("an epoch found running by the new controller")
}

/// Every epoch once and in order; one epoch marked as found running by the new controller, and
/// at most one before it that nobody harvested; nothing blamed but `lossy` (nothing at all on a
/// fabric without faults), and `lossy` in every whole epoch after the takeover; the epochs
/// after the takeover count packets and flows.
fn assert_report_goes_on(lines: &[Value], after: usize, lossy: Option<[&str; 2]>) {
    let epochs: Vec<u64> = lines.iter().map(|l| l["epoch"].as_u64().unwrap()).collect();
    let want: Vec<u64> = (0..lines.len() as u64).collect();
    assert_eq!(epochs, want, "epochs lost or repeated");
    let marked = |what: &str| {
        lines
            .iter()
            .filter(|l| l["incomplete"].as_str().is_some_and(|w| w.contains(what)))
            .count()
    };
    assert_eq!(marked("began before"), 1, "{lines:#?}");
    assert!(marked("no controller harvested") <= 1);
    let blamed = |l: &Value| -> Vec<[String; 2]> {
        l["blamed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| serde_json::from_value(b["link"].clone()).unwrap())
            .collect()
    };
    let lossy: Option<[String; 2]> = lossy.map(|[a, b]| [a.into(), b.into()]);
    for l in lines {
        let wrong: Vec<_> = blamed(l)
            .into_iter()
            .filter(|b| Some(b) != lossy.as_ref())
            .collect();
        assert!(wrong.is_empty(), "epoch {} blamed {wrong:?}", l["epoch"]);
    }
    let resumed = resumed_at(lines);
    let later = &lines[resumed + 1..];
    assert!(
        later.len() >= after,
        "{} epochs after the takeover",
        later.len()
    );
    for l in later {
        assert!(l["incomplete"].is_null(), "epoch {}", l["epoch"]);
        if let Some(link) = &lossy {
            assert!(
                blamed(l).contains(link),
                "epoch {} after the takeover: {link:?} not blamed",
                l["epoch"]
            );
        }
        assert!(
            l["packets_counted"].as_u64().unwrap() > 0 && l["flows_counted"].as_u64().unwrap() > 0,
            "epoch {} counted nothing",
            l["epoch"]
        );
    }
    assert!(
        lines[resumed]["flows_monitored"].as_u64().unwrap() > 0,
        "the monitored flows were carried over"
    );
}
