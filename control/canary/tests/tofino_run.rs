//! `canary run --target tofino` end to end, the binary as a user starts it, against one BF
//! Runtime server per switch of a k=4 fat-tree (`canary_doubles::bfrt_model`). Each server holds
//! every request to the real compiler's `bfrt.json` of the TNA program (kept equal to a fresh
//! compile by `tna_compile` when bf-p4c is on PATH) and stands in front of the reference model
//! of one switch; all twenty share one simulated data plane that carries traffic in real time
//! over a lossy link.
//!
//! No Tofino, hardware or model, can be had here: this checks everything up to the wire (ids,
//! field widths, register data names, operations, learn lists, the restart of a bf_switchd),
//! not the ASIC's behaviour.

mod tofino_fabric;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tofino_fabric::TofinoLab;

const EPOCHS: usize = 12;
/// Epochs before the selected flows cover the fabric.
const WARM_UP: usize = 4;

/// The daemon configures twenty switches over BF Runtime (bind, forwarding, configuration),
/// runs its epochs, blames exactly the lossy link, and repairs a switch whose bf_switchd
/// restarted mid-run; the report says so. No request broke the compiled schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_run_on_tofino_localizes_a_lossy_link() {
    let dir = tempfile::tempdir().unwrap();
    let lab = TofinoLab::start(dir.path()).await;
    let switches = dir.path().join("switches.yaml");
    std::fs::write(&switches, &lab.switches_yaml).unwrap();
    let json = dir.path().join("run.json");
    let report = dir.path().join("epochs.jsonl");
    let child = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(["run", "--target", "tofino", "--topology", "fattree:4"])
        .arg("--switches")
        .arg(&switches)
        .args(["--epochs", &EPOCHS.to_string(), "--epoch-ms", "2000"])
        .args(["--drain-ms", "20", "--alpha", "300", "--beta", "20"])
        .arg("--faults")
        .arg(dir.path().join("faults.yaml"))
        .arg("--json")
        .arg(&json)
        .arg("--report")
        .arg(&report)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Mid-run, bf_switchd on one aggregation switch restarts: connections cut, tables and
    // registers lost, the program loaded but not bound.
    let restarted = "agg0_0";
    let ix = (0..lab.switches.len())
        .find(|&i| lab.plane.lock().unwrap().topology().switches[i].name == restarted)
        .unwrap();
    let t0 = Instant::now();
    let lines = |p: &Path| std::fs::read_to_string(p).map_or(0, |s| s.lines().count());
    while lines(&report) < 5 && t0.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    lab.switches[ix].restart();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "canary run failed:\n{stderr}");
    assert_eq!(
        lab.violations(),
        Vec::<String>::new(),
        "requests broke bfrt.json"
    );

    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // The one run document, of real switches, on the fabric they form.
    let doc = canary_controller::run_document::RunDocument::load(&json).unwrap();
    assert_eq!(doc.kind, canary_controller::run_document::RunKind::Switches);
    let topo = doc.topology_for("run.json", None).unwrap();
    assert_eq!(topo.name, "fattree:4");
    // The last epoch names the cable to look at, with the ports the switches file gives.
    let last = doc.epochs.last().expect("epochs");
    let cable = last
        .cables
        .iter()
        .find(|c| c.ends == ["agg1_1".to_string(), "edge1_0".to_string()])
        .unwrap_or_else(|| panic!("no cable agg1_1 — edge1_0 in {:?}", last.cables));
    let ports = canary_core::topo::PortMap::canonical(&topo);
    let port =
        |s: &str, n: &str| ports.of(topo.switch(s).unwrap()).switch_ports[&topo.switch(n).unwrap()];
    assert_eq!(
        cable.ports,
        [port("agg1_1", "edge1_0"), port("edge1_0", "agg1_1")]
    );
    assert!(cable.loss[1].is_some(), "{cable:?}");
    let epochs = v["epochs"].as_array().expect("epochs in --json");
    assert_eq!(epochs.len(), EPOCHS);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fault = vec!["edge1_0->agg1_1".to_string()];
    assert_eq!(
        canary_testkit::blamed_links(&v["summary"]["blamed"]),
        fault,
        "{stdout}
{stderr}"
    );
    assert_eq!(v["summary"]["fp"].as_u64(), Some(0), "{stdout}");
    if std::env::var_os("TOFINO_RUN_PRINT").is_some() {
        eprintln!("{stdout}");
    }
    // A harvest slower than its deadline skips that switch for the epoch (the report says so):
    // on a loaded machine (20 servers, the plane and the daemon on 2 cores) some are.
    let slow = |d: &Value| {
        d["detail"]
            .as_str()
            .is_some_and(|x| x.contains("slower than its deadline"))
    };
    let complete = |e: &Value| {
        e["unreachable"].as_array().unwrap().is_empty()
            && !e["disturbed"].as_array().unwrap().iter().any(slow)
    };
    // The first epochs see few segments: with only edge1_0→agg1_1→core2 and →core3 observed,
    // loss on edge1_0→agg1_1 and loss on both agg1_1→core links explain them alike. Once the
    // selected flows cover the fabric, no epoch blames anything but the lossy link, and every
    // epoch whose monitors were all harvested blames it.
    for e in &epochs[WARM_UP..] {
        let b = canary_testkit::blamed_links(&e["blamed"]);
        assert!(
            b.is_empty() || b == fault,
            "epoch {} blamed {b:?}\n{stdout}",
            e["epoch"]
        );
        if complete(e) {
            assert_eq!(b, fault, "epoch {} blamed {b:?}\n{stdout}", e["epoch"]);
        }
    }
    let complete_epochs = epochs[WARM_UP..].iter().filter(|e| complete(e)).count();
    assert!(
        complete_epochs >= 3,
        "only {complete_epochs} epochs after the warm-up harvested every monitor in time: the \
         machine is too loaded for this test to show anything\n{stdout}"
    );
    // The restart is in the reports (the connection lost, then the switch found restarted and
    // configured again, then left out once more while its rules were written back), and three
    // epochs after its restart the switch is counted as before.
    let events = |e: &Value| -> Vec<String> {
        let mut v: Vec<String> = e["disturbed"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["switch"] == restarted && !slow(d))
            .map(|d| d["detail"].as_str().unwrap().to_string())
            .collect();
        let late = e["disturbed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["switch"] == restarted && slow(d));
        if !late
            && e["unreachable"]
                .as_array()
                .unwrap()
                .iter()
                .any(|u| u == restarted)
        {
            v.push("unreachable".into());
        }
        v
    };
    let first = epochs
        .iter()
        .position(|e| !events(e).is_empty())
        .unwrap_or_else(|| panic!("no report names {restarted}\n{stdout}"));
    let said: Vec<String> = epochs[first..first + 3].iter().flat_map(events).collect();
    assert!(
        said.iter().any(|d| d.contains("restarted")),
        "{said:?}\n{stdout}"
    );
    assert!(
        epochs[first + 3..].iter().all(|e| events(e).is_empty()),
        "{restarted} is back to normal three epochs after its restart\n{stdout}"
    );
}
