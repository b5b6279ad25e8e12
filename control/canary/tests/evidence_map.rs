//! The evidence map of `canary simulate --json`: every directed link's smallest loss its
//! evidence could show, checked against the packets the same report counted on the segments
//! through the link (`--report-observations`), and the decision's own threshold.

use canary_core::decide::{Decider, DecisionParams};
use canary_core::detect::Observations;
use canary_core::topo::{fattree::fattree, MonitorPlacement, Routing, Segments};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

fn simulate(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let out = Command::new(env!("CARGO_BIN_EXE_canary"))
        .arg("simulate")
        .args(args)
        .args(["--report-observations", "--quiet", "--json"])
        .arg(&path)
        .output()
        .expect("runs canary");
    assert!(
        out.status.success(),
        "canary simulate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// KL(q ‖ p) of two Bernoulli laws, written here apart from the product's.
fn kl(q: f64, p: f64) -> f64 {
    let t = |a: f64, b: f64| if a <= 0.0 { 0.0 } else { a * (a / b).ln() };
    t(q, p) + t(1.0 - q, 1.0 - p)
}

/// The smallest q > p0 with n · KL(q ‖ p0) ≥ h, by plain bisection; 1 when none.
fn bound(n: u64, p0: f64, h: f64) -> f64 {
    if n == 0 || n as f64 * kl(1.0, p0) < h {
        return 1.0;
    }
    let (mut lo, mut hi) = (p0, 1.0);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if n as f64 * kl(mid, p0) >= h {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Checks each link of epoch report `e`'s evidence map against the packets its observations
/// counted through the link and the threshold `h`; returns the map's links, its unwatched
/// links, every link it names, and how many bounds with packets it checked.
fn check_bounds(e: &Value, topo: &canary_core::topo::Topology, h: f64) -> Checked {
    let params = DecisionParams::default();
    let epoch = e["epoch"].as_u64().unwrap();
    let mut checked = 0;
    let map = &e["evidence_map"];
    let obs: Observations = serde_json::from_value(e["observations"].clone()).unwrap();
    // Packets and background per link, from the segments the epoch localized from.
    let mut through: BTreeMap<[String; 2], (u64, f64)> = BTreeMap::new();
    for s in &obs.segments {
        for &l in &s.links {
            let t = through
                .entry(topo.link_names(l).map(String::from))
                .or_default();
            t.0 += s.sent;
            t.1 = t.1.max(params.p0(s.links.len()));
        }
    }
    let links = map["links"].as_array().cloned().unwrap_or_default();
    let unwatched: BTreeSet<[String; 2]> =
        serde_json::from_value(map["unwatched"].clone()).unwrap_or_default();
    // Every directed link once: watched with a bound, or unwatched.
    let mut named: BTreeSet<[String; 2]> = unwatched.clone();
    for l in &links {
        let link: [String; 2] = serde_json::from_value(l["link"].clone()).unwrap();
        assert!(named.insert(link.clone()), "epoch {epoch}: {link:?} twice");
        let (packets, p0) = through.get(&link).copied().unwrap_or((0, 0.0));
        assert_eq!(l["packets"], packets, "epoch {epoch}: {link:?}");
        let reported = l["min_loss"].as_f64().unwrap();
        let want = if packets == 0 {
            1.0
        } else {
            bound(packets, p0, h)
        };
        // Rounded up to 4 significant digits: a bound, never below the exact one.
        assert!(
            reported >= want * (1.0 - 1e-9) && reported <= want * 1.001,
            "epoch {epoch}: {link:?} {packets} packets: reported {reported}, want {want}"
        );
        if packets > 0 {
            checked += 1;
        }
    }
    Checked {
        links,
        unwatched,
        named,
        checked,
    }
}

struct Checked {
    links: Vec<Value>,
    unwatched: BTreeSet<[String; 2]>,
    named: BTreeSet<[String; 2]>,
    checked: usize,
}

#[test]
fn every_links_bound_is_what_the_packets_counted_through_it_show() {
    let dir = tempfile::tempdir().unwrap();
    let faults = dir.path().join("faults.yaml");
    std::fs::write(
        &faults,
        "faults:\n  - {link: [agg2_0, core0], loss: 0.02}\n",
    )
    .unwrap();
    let v = simulate(&[
        "--topology",
        "fattree:4",
        "--faults",
        faults.to_str().unwrap(),
        "--epochs",
        "8",
    ]);
    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let segments = Segments::new(&topo, &Routing::new(&topo));
    let links: Vec<Vec<u32>> = segments.list.iter().map(|s| s.links.clone()).collect();
    let params = DecisionParams::default();
    let h = Decider::with_links(&links, topo.links.len(), params).threshold();
    let all: BTreeSet<[String; 2]> = (0..topo.links.len() as u32)
        .map(|l| topo.link_names(l).map(String::from))
        .collect();
    assert_eq!(all.len(), 64);

    let mut checked = 0;
    for e in v["epochs"].as_array().unwrap() {
        let epoch = e["epoch"].as_u64().unwrap();
        let Checked {
            links,
            unwatched,
            named,
            checked: n,
        } = check_bounds(e, &topo, h);
        checked += n;
        if epoch == 0 {
            // Nothing counted yet: every link is unwatched.
            assert_eq!(unwatched, all, "epoch 0");
            continue;
        }
        assert_eq!(named, all, "epoch {epoch}");
        // A k=4 fat-tree under traffic: every link is watched, every age is this epoch's.
        assert!(unwatched.is_empty(), "epoch {epoch}: {unwatched:?}");
        // The faulty link carries enough of Canary's packets to show its 2 %.
        let faulty = links
            .iter()
            .find(|l| l["link"] == serde_json::json!(["agg2_0", "core0"]))
            .expect("the faulty link");
        assert!(faulty["min_loss"].as_f64().unwrap() < 0.02, "{faulty}");
    }
    assert!(checked >= 7 * 64, "{checked} bounds checked");
}

/// Watching in rounds, a link's evidence is its segments' latest watches: the map dates it, never
/// older than one period of the rounds, and its bounds are still those of the packets counted.
#[test]
fn in_rounds_each_links_evidence_has_its_age() {
    let v = simulate(&[
        "--topology",
        "fattree:8",
        "--epochs",
        "12",
        "--seed",
        "2",
        "--watch-rounds",
        "3",
    ]);
    let topo = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
    let segments = Segments::new(&topo, &Routing::new(&topo));
    let links: Vec<Vec<u32>> = segments.list.iter().map(|s| s.links.clone()).collect();
    let h = Decider::with_links(&links, topo.links.len(), DecisionParams::default()).threshold();
    let (mut old, mut checked) = (0, 0);
    for e in v["epochs"].as_array().unwrap() {
        let c = check_bounds(e, &topo, h);
        assert_eq!(c.named.len(), topo.links.len(), "epoch {}", e["epoch"]);
        checked += c.checked;
        for l in &c.links {
            let age = l["age_epochs"].as_u64().unwrap_or(0);
            assert!(age < 9, "{l}: older than the 3 rounds of 3 epochs");
            old += usize::from(age > 0);
        }
    }
    assert!(old > 0, "no link's evidence older than its epoch");
    assert!(checked > 1000, "{checked}");
}

/// The testbed's score reads every link's bound from the epoch reports instead of working it
/// out again: on a simulated run's document, its `smallest_loss_shown` of each link is the
/// smallest `min_loss` any epoch reported.
#[test]
fn the_testbeds_score_reads_the_bound_from_the_report() {
    let lacks = canary_testkit::tools_lacking(&["python3"], "Debian python3");
    if !canary_testkit::runnable("evidence_map score.py", &lacks) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let v = simulate(&["--topology", "fattree:4", "--epochs", "5", "--seed", "2"]);
    std::fs::write(&run, v.to_string()).unwrap();
    let verdict = dir.path().join("verdict.json");
    let out = Command::new("python3")
        .arg(canary_testkit::repo_root().join("testbed/score.py"))
        .arg(&run)
        .arg("--json")
        .arg(&verdict)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("smallest loss Canary's packets through a link show reliably"),
        "{said}"
    );
    let scored: Value = serde_json::from_slice(&std::fs::read(&verdict).unwrap()).unwrap();
    let shown = scored["smallest_loss_shown"].as_object().unwrap();
    let mut least: BTreeMap<String, f64> = BTreeMap::new();
    for e in v["epochs"].as_array().unwrap() {
        for l in e["evidence_map"]["links"].as_array().into_iter().flatten() {
            let k = format!(
                "{}->{}",
                l["link"][0].as_str().unwrap(),
                l["link"][1].as_str().unwrap()
            );
            let q = l["min_loss"].as_f64().unwrap();
            let m = least.entry(k).or_insert(1.0);
            *m = m.min(q);
        }
    }
    assert_eq!(shown.len(), 64, "{said}");
    for (k, q) in &least {
        let got = shown[k].as_f64().unwrap_or(1.0);
        assert_eq!(got, *q, "{k}: {said}");
    }
}
