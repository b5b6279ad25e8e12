//! Reading what a run is given: topology (`fattree:K` or a YAML file), faults (a YAML file or
//! `random:P%`), and the pathBF audit that makes every segment decodable before anything starts.

use anyhow::{bail, Context, Result};
use canary_core::fault::{self, Fault};
use canary_core::pathbf::{self, Audit, PathBfCodec, PathBfParams};
use canary_core::topo::{fattree::fattree, yaml, MonitorPlacement, Routing, Segments, Topology};
use rand::Rng;

/// `fattree:K` or a path to a YAML topology. `monitors` overrides the file's placement.
pub fn load_topology(spec: &str, monitors: Option<MonitorPlacement>) -> Result<Topology> {
    let mut topo = if let Some(k) = spec.strip_prefix("fattree:") {
        let k: u32 = k
            .parse()
            .with_context(|| format!("--topology {spec}: `{k}` is not a number"))?;
        fattree(k, monitors.unwrap_or_default()).with_context(|| format!("--topology {spec}"))?
    } else {
        let text = std::fs::read_to_string(spec)
            .with_context(|| format!("cannot read topology file {spec}"))?;
        yaml::parse(spec, &text)?
    };
    if let Some(m) = monitors {
        topo.place_monitors(m);
    }
    Ok(topo)
}

/// A topology ready to run: routing, segments, and pathBF IDs audited and repaired.
pub struct Prepared {
    pub topo: Topology,
    pub routing: Routing,
    pub segments: Segments,
    pub codec: PathBfCodec,
    pub audit: Audit,
}

pub fn prepare(mut topo: Topology, params: PathBfParams) -> Result<Prepared> {
    if let Err(e) = params.validate() {
        bail!("{e}");
    }
    let routing = Routing::new(&topo);
    let segments = Segments::new(&topo, &routing);
    let audit = pathbf::repair(&mut topo, &segments, params, 50);
    if !audit.undecodable.is_empty() {
        bail!(
            "{} segments of {} stay undecodable after reassigning switch IDs: \
             use a larger pathBF (--pathbf-bits) or monitors on more layers",
            audit.undecodable.len(),
            topo.name
        );
    }
    let codec = PathBfCodec::new(&topo, &segments, params);
    Ok(Prepared {
        topo,
        routing,
        segments,
        codec,
        audit,
    })
}

/// A fault file or `random:P%`.
pub fn load_faults(spec: &str, topo: &Topology, rng: &mut impl Rng) -> Result<Vec<Fault>> {
    if let Some(p) = spec.strip_prefix("random:") {
        let p = p.trim_end_matches('%');
        let pct: f64 = p
            .parse()
            .with_context(|| format!("--faults {spec}: `{p}` is not a percentage"))?;
        if !(0.0..=100.0).contains(&pct) {
            bail!("--faults {spec}: the percentage must be in 0..100");
        }
        return Ok(fault::random(topo, pct, rng));
    }
    if spec == "none" {
        return Ok(vec![]);
    }
    let text =
        std::fs::read_to_string(spec).with_context(|| format!("cannot read fault file {spec}"))?;
    Ok(fault::parse(spec, &text, topo)?)
}
