//! Reading what a run is given: topology (`fattree:K` or a YAML file), faults (a YAML file or
//! `random:P%`), and the pathBF audit that makes every segment decodable before anything starts.

use crate::error::{Error, Result};
use canary_core::fault::{self, Fault};
use canary_core::pathbf::{self, Audit, PathBfCodec, PathBfParams};
use canary_core::topo::{fattree::fattree, yaml, MonitorPlacement, Routing, Segments, Topology};
use rand::Rng;

/// The fabric every command takes when given none (`simulate`, `eval`, `audit`, `draw`): small
/// enough to run in seconds on a laptop.
pub const DEFAULT_TOPOLOGY: &str = "fattree:4";

/// `fattree:K` or a path to a YAML topology. `monitors` overrides the file's placement.
pub fn load_topology(spec: &str, monitors: Option<MonitorPlacement>) -> Result<Topology> {
    let mut topo = if let Some(k) = spec.strip_prefix("fattree:") {
        let k: u32 = k.parse().map_err(|_| {
            Error::given(
                format!("--topology {spec}"),
                format!("`{k}` is not a number"),
            )
        })?;
        fattree(k, monitors.unwrap_or_default())
            .map_err(|e| Error::given(format!("--topology {spec}"), e))?
    } else {
        let text = std::fs::read_to_string(spec)
            .map_err(|e| Error::io(format!("cannot read topology file {spec}"), e))?;
        yaml::parse(spec, &text)?
    };
    if let Some(m) = monitors {
        topo.place_monitors(m);
    }
    Ok(topo)
}

/// A topology ready to run: routing, segments, and pathBF IDs audited and repaired.
#[derive(Clone)]
pub struct Prepared {
    pub topo: Topology,
    pub routing: Routing,
    pub segments: Segments,
    pub codec: PathBfCodec,
    pub audit: Audit,
}

pub fn prepare(mut topo: Topology, params: PathBfParams) -> Result<Prepared> {
    let routing = Routing::new(&topo);
    let segments = Segments::new(&topo, &routing);
    let audit = pathbf::repair(&mut topo, &segments, params, 50)?;
    if !audit.undecodable.is_empty() {
        return Err(Error::given(
            format!("--topology {}", topo.name),
            format!(
                "{} segments stay undecodable after reassigning switch IDs: use a larger \
                 pathBF (--pathbf-bits) or monitors on more layers",
                audit.undecodable.len()
            ),
        ));
    }
    let codec = PathBfCodec::new(&topo, &segments, params)?;
    Ok(Prepared {
        topo,
        routing,
        segments,
        codec,
        audit,
    })
}

/// Faults from a spec:
/// * `random:P%`: P % of the undirected links, both directions, in the paper's loss mix;
/// * `links:N`: N random undirected links, both directions, in the paper's mix;
/// * `oneway:N`: N random links, one direction each, in the paper's mix;
/// * any of these with `@R` (every fault drops R) or `@LO..HI` (each draws from U(LO, HI));
/// * `none`, or a YAML fault file.
pub fn load_faults(spec: &str, topo: &Topology, rng: &mut impl Rng) -> Result<Vec<Fault>> {
    Ok(load_fault_plan(spec, topo, rng)?.0)
}

/// [`load_faults`], and the links a fault file takes out of service (`out_of_service: true`),
/// which only the simulator can enact: `load_faults` leaves them out.
pub fn load_fault_plan(
    spec: &str,
    topo: &Topology,
    rng: &mut impl Rng,
) -> Result<(Vec<Fault>, Vec<Fault>)> {
    Ok(fault::split_out_of_service(load_every_entry(
        spec, topo, rng,
    )?))
}

fn load_every_entry(spec: &str, topo: &Topology, rng: &mut impl Rng) -> Result<Vec<Fault>> {
    let (body, rates) = match spec.split_once('@') {
        Some((b, r)) => (b, parse_rates(spec, r)?),
        None => (spec, fault::Rates::PaperMix),
    };
    if let Some(p) = body.strip_prefix("random:") {
        let p = p.trim_end_matches('%');
        let what = || format!("--faults {spec}");
        let pct: f64 = p
            .parse()
            .map_err(|_| Error::given(what(), format!("`{p}` is not a percentage")))?;
        if !(0.0..=100.0).contains(&pct) {
            return Err(Error::given(what(), "the percentage must be in 0..100"));
        }
        let mut faults = fault::random(topo, pct, rng);
        for f in &mut faults {
            match rates {
                fault::Rates::PaperMix => {}
                fault::Rates::Fixed(r) => f.loss = r,
                fault::Rates::Uniform(lo, hi) if hi > lo => f.loss = rng.random_range(lo..hi),
                fault::Rates::Uniform(lo, _) => f.loss = lo,
            }
        }
        return Ok(faults);
    }
    for (prefix, both) in [("links:", true), ("oneway:", false)] {
        if let Some(n) = body.strip_prefix(prefix) {
            let n: usize = n.parse().map_err(|_| {
                Error::given(
                    format!("--faults {spec}"),
                    format!("`{n}` is not a link count"),
                )
            })?;
            return Ok(fault::pick(topo, n, both, rates, rng));
        }
    }
    if spec == "none" {
        return Ok(vec![]);
    }
    let text = std::fs::read_to_string(spec)
        .map_err(|e| Error::io(format!("cannot read fault file {spec}"), e))?;
    Ok(fault::parse(spec, &text, topo)?)
}

/// `R` or `LO..HI`, each a probability.
fn parse_rates(spec: &str, r: &str) -> Result<fault::Rates> {
    let prob = |x: &str| -> Result<f64> {
        let what = || format!("--faults {spec}");
        let v: f64 = x
            .trim()
            .parse()
            .map_err(|_| Error::given(what(), format!("`{x}` is not a loss rate")))?;
        if !(0.0..=1.0).contains(&v) {
            return Err(Error::given(
                what(),
                format!("the loss rate {v} is not in [0, 1]"),
            ));
        }
        Ok(v)
    };
    Ok(match r.split_once("..") {
        Some((lo, hi)) => {
            let (lo, hi) = (prob(lo)?, prob(hi)?);
            if hi < lo {
                return Err(Error::given(
                    format!("--faults {spec}"),
                    format!("the range {lo}..{hi} is empty"),
                ));
            }
            fault::Rates::Uniform(lo, hi)
        }
        None => fault::Rates::Fixed(prob(r)?),
    })
}
