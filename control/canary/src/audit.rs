//! `canary audit`: does every segment's pathBF decode, and which switch IDs to reassign.

use anyhow::{Context, Result};
use canary_controller::setup::{load_topology, prepare};
use canary_core::pathbf::PathBfParams;
use canary_core::topo::MonitorPlacement;
use clap::Args;

#[derive(Args)]
pub struct AuditArgs {
    #[arg(long, default_value = canary_controller::setup::DEFAULT_TOPOLOGY)]
    topology: String,
    #[arg(long)]
    monitors: Option<MonitorPlacement>,
    #[arg(long, default_value_t = 32)]
    pathbf_bits: u32,
    #[arg(long, default_value_t = 3)]
    pathbf_hashes: u32,
    #[arg(long)]
    json: Option<String>,
}

pub fn command(a: AuditArgs) -> Result<()> {
    let params = PathBfParams {
        bits: a.pathbf_bits,
        hashes: a.pathbf_hashes,
    };
    // Checked before anything computes masks with them; the error names the flag.
    params.validate().map_err(|e| {
        let (flag, value) = match e.field() {
            "bits" => ("--pathbf-bits", a.pathbf_bits),
            _ => ("--pathbf-hashes", a.pathbf_hashes),
        };
        anyhow::anyhow!("{flag} {value}: {e}")
    })?;
    let topo = load_topology(&a.topology, a.monitors)?;
    let routing = canary_core::topo::Routing::new(&topo);
    let segments = canary_core::topo::Segments::new(&topo, &routing);
    let before = canary_core::pathbf::audit(&topo, &segments, params)?;
    let prepared = prepare(topo, params);
    println!(
        "topology {}: {} segments, pathBF b={} m={}",
        a.topology, before.segments, params.bits, params.hashes
    );
    println!("undecodable before repair: {}", before.undecodable.len());
    println!(
        "membership test (the paper's decoder), wrong candidates between the same two monitors:"
    );
    println!(
        "  {:>2} {:>9} {:>12} {:>8} {:>12} {:>12}",
        "h", "differing", "candidates", "passed", "observed", "Theorem 1"
    );
    for m in &before.membership {
        println!(
            "  {:>2} {:>9} {:>12} {:>8} {:>12.3e} {:>12.3e}",
            m.h, m.differing, m.candidates, m.passed, m.observed_rate, m.theorem1
        );
    }
    match prepared {
        Ok(p) => {
            println!(
                "after repair: {} undecodable; {} switch IDs reassigned",
                p.audit.undecodable.len(),
                p.audit.reassigned.len()
            );
            for (s, old, new) in &p.audit.reassigned {
                println!("  {:<12} {old:#010x} -> {new:#010x}", p.topo.name_of(*s));
            }
            if let Some(path) = a.json {
                std::fs::write(&path, serde_json::to_string_pretty(&p.audit)?)
                    .with_context(|| format!("cannot write {path}"))?;
            }
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}
