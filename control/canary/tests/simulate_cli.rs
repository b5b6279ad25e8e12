//! `canary simulate` as a user runs it: the binary, its report, its JSON, its errors.

use canary_controller::run_document::{RunDocument, RunKind};
use serde_json::Value;
use std::process::Command;

fn canary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(args)
        .output()
        .expect("runs canary")
}

/// The run document `canary ARGS --json` writes, read as `canary view` reads it.
fn document_of(args: &[&str]) -> RunDocument {
    let v = json_of(args);
    RunDocument::parse("run.json", &v.to_string()).unwrap()
}

fn json_of(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let mut all: Vec<&str> = args.to_vec();
    let p = path.to_str().unwrap().to_string();
    all.extend(["--json", &p, "--quiet"]);
    let out = canary(&all);
    assert!(
        out.status.success(),
        "canary {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn default_run_prints_epochs_and_a_scored_summary() {
    let out = canary(&["simulate", "--epochs", "4"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("epoch ")).count(),
        4,
        "{text}"
    );
    assert!(text.contains("── summary over 4 epochs ──"), "{text}");
    assert!(text.contains("precision") && text.contains("F1"), "{text}");
}

#[test]
fn json_has_the_documented_shape_and_a_consistent_score() {
    let v = json_of(&[
        "simulate",
        "--topology",
        "fattree:4",
        "--faults",
        "random:10%",
        "--epochs",
        "6",
        "--seed",
        "3",
    ]);
    assert_eq!(v["topology"], "fattree:4");
    assert_eq!(v["seed"], 3);
    let faults = v["faults"].as_array().unwrap();
    assert_eq!(
        faults.len(),
        6,
        "10% of 32 undirected links, both directions"
    );
    assert_eq!(v["epochs"].as_array().unwrap().len(), 6);
    let s = &v["summary"];
    let blamed: Vec<(String, String)> = s["blamed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["link"][0].as_str().unwrap().into(),
                b["link"][1].as_str().unwrap().into(),
            )
        })
        .collect();
    let truth: Vec<(String, String)> = faults
        .iter()
        .map(|f| {
            (
                f["link"][0].as_str().unwrap().into(),
                f["link"][1].as_str().unwrap().into(),
            )
        })
        .collect();
    let tp = blamed.iter().filter(|b| truth.contains(b)).count() as f64;
    let precision = if blamed.is_empty() {
        1.0
    } else {
        tp / blamed.len() as f64
    };
    let recall = tp / truth.len() as f64;
    assert!((s["precision"].as_f64().unwrap() - precision).abs() < 1e-9);
    assert!((s["recall"].as_f64().unwrap() - recall).abs() < 1e-9);
    let f1 = s["f1"].as_f64().unwrap();
    assert!(f1 >= 0.8, "k=4, 6 epochs: F1 {f1}");
    // Every epoch after the first counted packets on the meters.
    for e in &v["epochs"].as_array().unwrap()[1..] {
        assert!(e["packets_counted"].as_u64().unwrap() > 10_000, "{e}");
        assert_eq!(
            e["anomalies"]["negative_loss"], 0,
            "marked packets make loss exact"
        );
    }
}

#[test]
fn fault_file_is_localized_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("faults.yaml");
    std::fs::write(&f, "faults:\n  - {link: [agg1_1, core2], loss: 0.3}\n  - {link: [edge2_0, agg2_0], loss: 0.004}\n").unwrap();
    let v = json_of(&["simulate", "--faults", f.to_str().unwrap(), "--epochs", "8"]);
    let blamed: Vec<String> = canary_testkit::blamed_links(&v["summary"]["blamed"]);
    assert_eq!(blamed.len(), 2, "{blamed:?}");
    assert!(blamed.contains(&"agg1_1->core2".to_string()), "{blamed:?}");
    assert!(
        blamed.contains(&"edge2_0->agg2_0".to_string()),
        "{blamed:?}"
    );
    let est = v["summary"]["blamed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["link"][1] == "core2")
        .unwrap();
    let loss = est["loss"].as_f64().unwrap();
    assert!((loss - 0.3).abs() < 0.02, "estimated {loss}");
    lossy_segments_show_their_flows(&v);
}

/// Each lossy segment of an epoch lists the flows that lost packets on it: from its upstream
/// edge's hosts (10.pod.edge.host), the lossiest first, and through the 30 % link at about
/// that loss each.
fn lossy_segments_show_their_flows(v: &Value) {
    let mut through_fault = 0;
    for e in v["epochs"].as_array().unwrap() {
        for seg in e["lossy_segments"].as_array().unwrap() {
            let hops: Vec<&str> = seg["segment"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h.as_str().unwrap())
                .collect();
            let flows = seg["flows"].as_array().cloned().unwrap_or_default();
            let n = seg["flows_lossy"].as_u64().unwrap_or(0) as usize;
            assert!(flows.len() <= 5 && flows.len() <= n, "{seg}");
            let lost: Vec<u64> = flows.iter().map(|f| f["lost"].as_u64().unwrap()).collect();
            assert!(
                lost.windows(2).all(|w| w[0] >= w[1]),
                "lossiest first: {seg}"
            );
            for f in &flows {
                let (sent, lost) = (f["sent"].as_u64().unwrap(), f["lost"].as_u64().unwrap());
                assert!(0 < lost && lost <= sent, "{f}");
                if let Some(edge) = hops[0].strip_prefix("edge") {
                    let src = format!("10.{}.", edge.replace('_', "."));
                    assert!(
                        f["flow"].as_str().unwrap().starts_with(&src),
                        "{f} on {seg}"
                    );
                }
                if hops.windows(2).any(|h| h == ["agg1_1", "core2"]) {
                    let q = lost as f64 / sent as f64;
                    assert!((0.2..0.45).contains(&q), "{f} through the 30 % link");
                    through_fault += 1;
                }
            }
        }
    }
    assert!(
        through_fault > 0,
        "the 30 % link's segments list their flows"
    );
}

#[test]
fn healthy_fabric_blames_nothing_over_50_epochs() {
    for noise in ["0", "1e-5"] {
        let v = json_of(&[
            "simulate", "--faults", "none", "--epochs", "50", "--noise", noise, "--seed", "5",
        ]);
        for e in v["epochs"].as_array().unwrap() {
            assert!(
                e["blamed"].as_array().unwrap().is_empty(),
                "noise {noise}, epoch {}: {}",
                e["epoch"],
                e["blamed"]
            );
        }
        assert!(
            v["summary"]["blamed"].as_array().unwrap().is_empty(),
            "noise {noise}"
        );
    }
}

#[test]
fn malformed_topology_names_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.yaml");
    std::fs::write(&f, "name: x\nswitches:\n  - {name: a, layer: 0, hosts: 1}\n  - {name: b, layer: two}\nlinks: []\n").unwrap();
    let out = canary(&["simulate", "--topology", f.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.yaml: switches[1].layer"), "{err}");
    std::fs::write(&f, "name: x\nswitches:\n  - {name: a, layer: 0, hosts: 1}\n  - {name: b, layer: 1}\nlinks:\n  - [a, c]\n").unwrap();
    let err =
        String::from_utf8_lossy(&canary(&["simulate", "--topology", f.to_str().unwrap()]).stderr)
            .to_string();
    assert!(
        err.contains("bad.yaml: links[0]: link [a, c] names unknown switch `c`"),
        "{err}"
    );
}

#[test]
fn malformed_fault_file_names_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.yaml");
    std::fs::write(&f, "faults:\n  - {link: [agg1_1, core0], loss: 0.3}\n").unwrap();
    let err =
        String::from_utf8_lossy(&canary(&["simulate", "--faults", f.to_str().unwrap()]).stderr)
            .to_string();
    assert!(
        err.contains("f.yaml: faults[0].link: no link between `agg1_1` and `core0`"),
        "{err}"
    );
    std::fs::write(&f, "faults:\n  - {link: [agg1_1, core2], los: 0.3}\n").unwrap();
    let err =
        String::from_utf8_lossy(&canary(&["simulate", "--faults", f.to_str().unwrap()]).stderr)
            .to_string();
    assert!(
        err.contains("f.yaml: faults[0]") && err.contains("los"),
        "{err}"
    );
}

#[test]
fn topology_files_in_the_repository_are_valid() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../topologies");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let out = canary(&["audit", "--topology", path.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("after repair: 0 undecodable"));
    }
    for k in [4, 8] {
        let gen = canary(&["topology", &format!("fattree:{k}")]).stdout;
        let file = std::fs::read(format!("{dir}/fattree-k{k}.yaml")).unwrap();
        assert_eq!(
            gen, file,
            "topologies/fattree-k{k}.yaml is `canary topology fattree:{k}`"
        );
    }
}

#[test]
fn synthesized_meters_at_the_programs_size_are_watched_in_rounds() {
    let doc = document_of(&[
        "simulate",
        "--synth-meters",
        "--topology",
        "fattree:8",
        "--epochs",
        "7",
        "--seed",
        "4",
    ]);
    assert_eq!(doc.kind, RunKind::Synthesized);
    let m = doc
        .synthesized
        .as_ref()
        .expect("a synthesized run's measurements");
    assert_eq!(m.setup.meters.width, 1024, "the program's METER_WIDTH");
    assert_eq!((m.setup.rounds, m.setup.period), (3, 3));
    assert_eq!(doc.epochs.len(), 7);
    let watched: usize = m.epochs[..3].iter().map(|e| e.watched).sum();
    assert_eq!(watched, m.setup.segments, "one period watches each once");
    for e in &m.epochs[2..] {
        assert_eq!(e.evidence.never_seen, 0);
        assert!(e.evidence.oldest <= 2);
    }
    assert!(!m.faults.is_empty());
    assert!(m
        .faults
        .iter()
        .all(|f| f.time_to_detect.is_some_and(|t| t <= 3)));
    assert!(m.after_first_period.f1 >= 0.95);
    // The epochs' reports name what the measurements count.
    for (r, e) in doc.epochs.iter().zip(&m.epochs) {
        assert_eq!(r.watch.as_ref().map(|w| w.watched), Some(e.watched));
        assert_eq!(r.flows_counted, e.flows_counted);
    }
}

#[test]
fn synthesized_meters_of_an_impossible_width_name_the_flag() {
    let out = canary(&[
        "simulate",
        "--synth-meters",
        "--meter-width",
        "1000",
        "--epochs",
        "1",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--meter-width 1000"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `--report-observations` puts every segment the localizer weighed into each epoch's report,
/// and they are enough to replay it: the localizer, given them and the topology, blames what
/// the epoch blamed. Without the flag the report has none.
#[test]
fn reported_observations_replay_each_epochs_verdict() {
    use canary_controller::controller::localizer_params;
    use canary_core::decide::DecisionParams;
    use canary_core::detect::Observations;
    use canary_core::localize::{Canary, Localizer};
    use canary_core::topo::{fattree::fattree, MonitorPlacement};

    let dir = tempfile::tempdir().unwrap();
    let faults = dir.path().join("faults.yaml");
    std::fs::write(
        &faults,
        "faults:\n  - {link: [edge1_0, agg1_1], loss: 0.05, from_epoch: 2, until_epoch: 8}\n  \
         - {link: [agg2_0, core0], loss: 0.3}\n",
    )
    .unwrap();
    let faults = faults.to_str().unwrap();
    let args = [
        "simulate",
        "--topology",
        "fattree:4",
        "--faults",
        faults,
        "--epochs",
        "12",
    ];
    let plain = json_of(&args);
    assert!(
        plain["epochs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e.get("observations").is_none()),
        "observations without the flag"
    );
    let mut with: Vec<&str> = args.to_vec();
    with.push("--report-observations");
    let v = json_of(&with);

    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let mut canary = Canary {
        params: localizer_params(5, false, 0.001, Some(DecisionParams::default())),
        ..Default::default()
    };
    let mut blamed_epochs = 0;
    for e in v["epochs"].as_array().unwrap() {
        let obs: Observations = serde_json::from_value(e["observations"].clone())
            .unwrap_or_else(|err| panic!("epoch {}: {err}", e["epoch"]));
        // Epoch 0 counts nothing: its flows are selected at its end.
        assert!(
            e["epoch"] == 0 || !obs.segments.is_empty(),
            "epoch {}: no segment",
            e["epoch"]
        );
        let mut replayed: Vec<[String; 2]> = canary
            .localize(&topo, &obs)
            .blamed
            .iter()
            .map(|b| topo.link_names(b.link).map(str::to_string))
            .collect();
        replayed.sort();
        let mut reported: Vec<[String; 2]> = e["blamed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| serde_json::from_value(b["link"].clone()).unwrap())
            .collect();
        reported.sort();
        assert_eq!(replayed, reported, "epoch {}", e["epoch"]);
        // A tie goes to the links blamed the epoch before: the replay carries them on.
        canary.incumbents = reported
            .iter()
            .map(|[a, b]| {
                topo.link(topo.switch(a).unwrap(), topo.switch(b).unwrap())
                    .unwrap()
            })
            .collect();
        blamed_epochs += usize::from(!reported.is_empty());
    }
    // The replay was of real verdicts, not of empty ones.
    assert!(blamed_epochs >= 8, "{blamed_epochs} epochs blamed anything");
}
