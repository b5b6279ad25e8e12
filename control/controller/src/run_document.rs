//! The run document: what `canary simulate --json`, `canary simulate --synth-meters --json` and
//! `canary run --json` write, and what `canary view`, `canary draw` and the tests read.
//!
//! One format for the three kinds of run, versioned (`format: canary-run`, `version`), so that a
//! reader can refuse a document it does not know instead of misreading it. The document carries
//! the topology the run used: a fat-tree by its `fattree:K` and monitor placement, any other
//! fabric whole, as its topology file would write it. A reader needs no other file, and cannot
//! be handed the wrong fabric by mistake.

pub mod synthesized;

use crate::error::{Error, Result};
use crate::report::{EpochReport, Summary};
use crate::setup::load_topology;
use canary_core::fault::Fault;
use canary_core::topo::fattree::fattree;
use canary_core::topo::yaml::{self, TopologyFile};
use canary_core::topo::{MonitorPlacement, Topology};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` of every run document.
pub const FORMAT: &str = "canary-run";
/// The newest `version` this build writes and reads. Documents from before versioning have
/// none and read as 0 (their topology is not embedded; a reader may need `--topology`).
pub const VERSION: u32 = 1;

/// What measured the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// `canary simulate`: packets through simulated switches running the reference model.
    #[default]
    Packets,
    /// `canary simulate --synth-meters`: meters synthesized at data-center size, no packets.
    Synthesized,
    /// `canary run`: real switches.
    Switches,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FaultReport {
    pub link: [String; 2],
    pub loss: f64,
    /// The share of flows the fault drops on; absent when it drops on all.
    #[serde(default = "all_flows", skip_serializing_if = "is_all_flows")]
    pub flows: f64,
}

impl FaultReport {
    pub fn of(topo: &Topology, f: &Fault) -> Self {
        let [a, b] = topo.link_names(f.link);
        Self {
            link: [a.into(), b.into()],
            loss: f.loss,
            flows: f.flows,
        }
    }
}

fn all_flows() -> f64 {
    1.0
}

fn is_all_flows(share: &f64) -> bool {
    *share >= 1.0
}

/// A whole run: its fabric, its faults (the truth it was scored against, if any), every
/// epoch's report and the summary.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunDocument {
    #[serde(default)]
    pub format: String,
    #[serde(default)]
    pub version: u32,
    #[serde(default)]
    pub kind: RunKind,
    /// `fattree:K`, or the topology file's `name`.
    pub topology: String,
    /// Which switches held meters: `top+bottom` or `bottom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitors: Option<String>,
    /// Any fabric that is not `fattree:K`, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_file: Option<TopologyFile>,
    pub seed: u64,
    pub faults: Vec<FaultReport>,
    pub epochs: Vec<EpochReport>,
    pub summary: Summary,
    /// A synthesized run's own measurements: its watch plan, each epoch's cost, each fault's
    /// time to detect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthesized: Option<synthesized::ScaleRun>,
}

impl RunDocument {
    /// A document of the current version for a run on `topo`.
    pub fn new(
        kind: RunKind,
        topo: &Topology,
        seed: u64,
        faults: &[Fault],
        epochs: Vec<EpochReport>,
        summary: Summary,
    ) -> Self {
        let placement = placement_of(topo);
        RunDocument {
            format: FORMAT.into(),
            version: VERSION,
            kind,
            topology: topo.name.clone(),
            monitors: Some(placement.to_string()),
            topology_file: (!is_generated_fattree(topo, placement))
                .then(|| yaml::to_file(topo, placement)),
            seed,
            faults: faults.iter().map(|f| FaultReport::of(topo, f)).collect(),
            epochs,
            summary,
            synthesized: None,
        }
    }

    /// Reads a run document; an error names the file and, for content, the field.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parses a document's text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Self> {
        // The header first: a newer or foreign document is refused as such, not as a field
        // this build does not know.
        #[derive(Deserialize)]
        struct Header {
            #[serde(default)]
            format: Option<String>,
            #[serde(default)]
            version: u32,
        }
        let header: Header = serde_json::from_str(text)
            .map_err(|e| Error::given(file, format!("not a JSON run document: {e}")))?;
        if let Some(f) = header.format.as_deref().filter(|f| *f != FORMAT) {
            return Err(Error::given(
                format!("{file}: format"),
                format!("`{f}` is not a Canary run document (`{FORMAT}`)"),
            ));
        }
        if header.version > VERSION {
            return Err(Error::given(
                format!("{file}: version"),
                format!(
                    "{} is newer than this canary reads (up to {VERSION}): use the canary that wrote it",
                    header.version
                ),
            ));
        }
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let at = e.path().to_string();
            Error::given(format!("{file}: {at}"), e.into_inner())
        })
    }

    /// The fabric the run was on, from the document alone; `None` for a document from before
    /// versioning whose fabric was a topology file (it did not keep the file).
    pub fn fabric(&self, file: &str) -> Result<Option<Topology>> {
        if let Some(f) = &self.topology_file {
            let mut f = f.clone();
            f.monitors = f.monitors.or_else(|| self.monitors.clone());
            return Ok(Some(yaml::build(&format!("{file}: topology_file"), f)?));
        }
        if fattree_radix(&self.topology).is_none() {
            return Ok(None);
        }
        let placement = match &self.monitors {
            None => None,
            Some(m) => Some(
                m.parse::<MonitorPlacement>()
                    .map_err(|e| Error::given(format!("{file}: monitors"), e))?,
            ),
        };
        load_topology(&self.topology, placement)
            .map(Some)
            .map_err(|e| Error::given(format!("{file}: topology"), e))
    }

    /// The fabric to show the run on: the document's own, or `--topology` for an old document
    /// that did not keep it. A `--topology` that is not the run's is refused, and so is a
    /// document that names a link the fabric does not have.
    pub fn topology_for(&self, file: &str, flag: Option<&str>) -> Result<Topology> {
        let own = self.fabric(file)?;
        let topo = match (own, flag) {
            (Some(own), None) => own,
            (Some(own), Some(given)) => {
                let t = load_topology(given, None)?;
                if t.name != own.name {
                    return Err(Error::given(
                        format!("--topology {given}"),
                        format!(
                            "{file} is a run on {}; leave --topology out to use the run's own",
                            own.name
                        ),
                    ));
                }
                own
            }
            (None, Some(given)) => load_topology(given, None)?,
            (None, None) => {
                return Err(Error::given(
                    file,
                    format!(
                        "the run was on the topology file `{}`, which documents before version 1 \
                         do not keep: give it with --topology FILE",
                        self.topology
                    ),
                ))
            }
        };
        self.check_links(file, &topo)?;
        Ok(topo)
    }

    /// Every link the document names is a link of `topo`.
    fn check_links(&self, file: &str, topo: &Topology) -> Result<()> {
        let named = self
            .faults
            .iter()
            .enumerate()
            .map(|(i, f)| (format!("faults[{i}]"), &f.link))
            .chain(
                self.summary
                    .blamed
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (format!("summary.blamed[{i}]"), &b.link)),
            )
            .chain(self.epochs.iter().enumerate().flat_map(|(i, e)| {
                e.blamed
                    .iter()
                    .enumerate()
                    .map(move |(j, b)| (format!("epochs[{i}].blamed[{j}]"), &b.link))
            }));
        for (field, [a, b]) in named {
            if topo.link_by_names(a, b).is_none() {
                return Err(Error::given(
                    format!("{file}: {field}"),
                    format!("{a}→{b} is not a link of {}", topo.name),
                ));
            }
        }
        Ok(())
    }
}

/// `K` of a `fattree:K` name.
fn fattree_radix(name: &str) -> Option<u32> {
    name.strip_prefix("fattree:")?.parse().ok()
}

/// Whether `topo` is the fat-tree its `fattree:K` name generates (a topology file may take
/// that name for a fabric of its own). Switch IDs aside: the pathBF audit may have changed them.
fn is_generated_fattree(topo: &Topology, placement: MonitorPlacement) -> bool {
    let Some(Ok(generated)) = fattree_radix(&topo.name).map(|k| fattree(k, placement)) else {
        return false;
    };
    let without_ids = |t: &Topology| {
        let mut f = yaml::to_file(t, placement);
        for s in &mut f.switches {
            s.id = None;
        }
        f
    };
    without_ids(topo) == without_ids(&generated)
}

/// Where a topology's meters are: on its top layer too, or on the bottom alone.
fn placement_of(topo: &Topology) -> MonitorPlacement {
    let top = topo.top_layer();
    if top > 0 && topo.switches.iter().any(|s| s.layer == top && s.monitor) {
        MonitorPlacement::TopAndBottom
    } else {
        MonitorPlacement::Bottom
    }
}

#[cfg(test)]
mod tests;
