//! `canary faults`: a fault file as the controller resolves it, for the testbed.
//!
//! Every entry becomes one fault per directed link (a device's links out, `both_directions`'s
//! two), with its schedule as [`When`] holds it, and the faults active in each epoch as
//! [`When::active`] decides; links taken out of service are listed apart
//! ([`fault::split_out_of_service`], [`fault::out_of_service_at`]). `testbed/fabric.py` reads
//! this instead of parsing the file and evaluating schedules again.

use anyhow::{Context, Result};
use canary_controller::setup::load_topology;
use canary_core::decide::DecisionParams;
use canary_core::fault::{self, Fault, When};
use canary_core::topo::Topology;
use clap::Args;
use serde_json::{json, Value};

#[derive(Args)]
pub struct FaultsArgs {
    /// The topology: fattree:K or a file.
    #[arg(long)]
    topology: String,
    /// A fault file (the controller's format), or `none`.
    #[arg(long)]
    faults: String,
    /// List the faults active in each epoch 0..=EPOCHS.
    #[arg(long, default_value_t = 0)]
    epochs: u64,
    /// Print JSON (the testbed's input) instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn command(a: FaultsArgs) -> Result<()> {
    let topo = load_topology(&a.topology, None)?;
    let all = if a.faults == "none" {
        Vec::new()
    } else {
        let text = std::fs::read_to_string(&a.faults)
            .with_context(|| format!("cannot read fault file {}", a.faults))?;
        fault::parse(&a.faults, &text, &topo)?
    };
    let (faults, maintenance) = fault::split_out_of_service(all);
    let doc = resolved(&topo, &faults, &maintenance, a.epochs);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    for (f, v) in faults
        .iter()
        .zip(doc["faults"].as_array().into_iter().flatten())
    {
        let [x, y] = topo.link_names(f.link);
        println!("{x}->{y}  loss {}  {}", f.loss, v["when"]);
    }
    for (f, v) in maintenance
        .iter()
        .zip(doc["out_of_service"].as_array().into_iter().flatten())
    {
        let [x, y] = topo.link_names(f.link);
        println!("{x}->{y}  out of service  {}", v["when"]);
    }
    Ok(())
}

/// The document: faults, links out of service, each epoch's active ones, and the decision's
/// parameters the testbed's score judges evidence with.
pub fn resolved(topo: &Topology, faults: &[Fault], maintenance: &[Fault], epochs: u64) -> Value {
    let names = |f: &Fault| topo.link_names(f.link).map(str::to_string);
    let faults_doc: Vec<Value> = faults
        .iter()
        .map(|f| {
            json!({
                "link": names(f),
                "loss": f.loss,
                "flows": f.flows,
                "when": when(&f.when),
                "device": f.device.map(|d| topo.switches[d as usize].name.clone()),
                "corruption": f.corruption,
            })
        })
        .collect();
    let out_of_service: Vec<Value> = maintenance
        .iter()
        .map(|f| json!({"link": names(f), "when": when(&f.when)}))
        .collect();
    let per_epoch: Vec<Value> = (0..=epochs)
        .map(|e| {
            let active: Vec<usize> = (0..faults.len()).filter(|&i| faults[i].active(e)).collect();
            let down: Vec<[&str; 2]> = fault::out_of_service_at(maintenance, e)
                .into_iter()
                .map(|l| topo.link_names(l))
                .collect();
            json!({"epoch": e, "active": active, "out_of_service": down})
        })
        .collect();
    let d = DecisionParams::default();
    json!({
        "topology": topo.name,
        "faults": faults_doc,
        "scheduled": fault::scheduled(faults),
        "out_of_service": out_of_service,
        "epochs": per_epoch,
        "decision": {"background": d.background, "false_alarms": d.false_alarms},
    })
}

fn when(w: &When) -> Value {
    json!({
        "from": w.from,
        "until": w.until,
        "flap": w.flap.map(|f| json!({"period": f.period, "on": f.on})),
    })
}
