//! `canary run` against real `simple_switch_grpc` processes (P4Runtime over real gRPC sockets,
//! Thrift register harvest), with real packets from host namespaces and real loss (`tc netem`, or an nftables egress
//! drop where the kernel lacks netem).
//!
//! Needs root, p4c and BMv2 on PATH (run: `sudo -E cargo test -p canary --test daemon_bmv2`);
//! each test prints `SKIP: ...` and passes when something is missing.

#[path = "../bmv2/mod.rs"]
mod bmv2;
#[path = "../fabric_lab/mod.rs"]
mod fabric_lab;

mod fattree_restart;
mod installed_binary;
mod line2;

use canary_controller::setup::load_topology;
use fabric_lab::FabricLab;
use serde_json::Value;

fn missing() -> bool {
    !bmv2::runnable("daemon_bmv2", &bmv2::missing())
}

fn topo_file(name: &str) -> String {
    bmv2::repo_root()
        .join("topologies")
        .join(name)
        .display()
        .to_string()
}

/// (harvest, detect, localize, select) in ms, averaged over epochs after the first two.
fn phases(json: &Value) -> [f64; 4] {
    let epochs = json["epochs"].as_array().unwrap();
    let tail = &epochs[2.min(epochs.len())..];
    let mut sum = [0.0; 4];
    for e in tail {
        for (i, k) in ["harvest", "detect", "localize", "select"]
            .iter()
            .enumerate()
        {
            sum[i] += e["phases_ms"][k].as_f64().unwrap();
        }
    }
    sum.map(|s| s / tail.len().max(1) as f64)
}

fn blamed(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["link"][0].as_str().unwrap().to_string(),
                b["link"][1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The two-switch line with 10 % loss on s1→s2, and its topology file; `None` (after printing
/// SKIP) where the tools are missing.
fn line2_losing_10_percent() -> Option<(String, FabricLab)> {
    let (topology, lab) = line2_healthy()?;
    lab.link_loss("s1", "s2", 10.0);
    Some((topology, lab))
}

/// `canary run` on the two-switch line for `epochs` one-second epochs, with the α, β and η its
/// few flows can meet, writing `json` and the per-epoch `report`.
fn line2_daemon_args<'a>(
    topology: &'a str,
    epochs: &'a str,
    json: &'a std::path::Path,
    report: &'a std::path::Path,
) -> Vec<&'a str> {
    vec![
        "--topology",
        topology,
        "--epochs",
        epochs,
        "--epoch-ms",
        "1000",
        "--alpha",
        "200",
        "--beta",
        "4",
        "--eta",
        "4",
        "--json",
        json.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]
}

/// The two-switch line, no loss yet, and its topology file; `None` (after printing SKIP) where
/// the tools are missing.
fn line2_healthy() -> Option<(String, FabricLab)> {
    if !bmv2::runnable("daemon_bmv2", &bmv2::loss_missing()) {
        return None;
    }
    let topology = topo_file("line2.yaml");
    Some((
        topology.clone(),
        FabricLab::new(load_topology(&topology, None).unwrap()),
    ))
}
