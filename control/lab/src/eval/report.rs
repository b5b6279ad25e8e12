//! What one seed's evaluation reports: each localizer's verdict scored on directed links, and
//! the `--json` document; apart from the run because sweeps, axes and plots read it too.

use super::calibrate;
use super::over_time;
use canary_controller::report::Summary;
use canary_controller::run_document::FaultReport;
use canary_core::localize::Verdict;
use canary_core::score::Score;
use canary_core::topo::{LinkIx, Topology};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

/// A blamed directed link, by switch names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlamedReport {
    pub link: [String; 2],
    pub loss: f64,
}

/// Precision, recall and F1 of one stage's cumulative verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageScore {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

impl From<&Score> for StageScore {
    fn from(s: &Score) -> Self {
        Self {
            precision: s.precision,
            recall: s.recall,
            f1: s.f1,
        }
    }
}

/// One localizer's verdict, scored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalizerReport {
    pub blamed: Vec<BlamedReport>,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub inference_ms: f64,
    pub stages: Vec<StageScore>,
    /// Probe paths the system probed (NetBouncer's bounce plan, deTector's probe matrix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_paths: Option<usize>,
    /// Probe packets sent in all (deTector: confirmation probes included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes_sent: Option<u64>,
    /// 007 only: share of the traced flows whose drops a faulty link caused most (the paper's
    /// "failure drops") for which 007's per-flow culprit is that link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_flow_accuracy: Option<f64>,
    /// On a fault schedule: time to detect and to clear, each epoch localized on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_time: Option<over_time::Timing>,
    #[serde(skip)]
    pub tp: usize,
    #[serde(skip)]
    pub fp: usize,
    #[serde(skip)]
    pub fn_: usize,
}

/// Localizer reports in the order they were asked for (serialised as a JSON object).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reports(pub Vec<(String, LocalizerReport)>);

impl Serialize for Reports {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl Reports {
    pub fn get(&self, name: &str) -> Option<&LocalizerReport> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

/// The `--json` document of one seed.
#[derive(Clone, Debug, Serialize)]
pub struct EvalReport {
    pub topology: String,
    pub seed: u64,
    pub faults: Vec<FaultReport>,
    pub localizers: Reports,
    /// The calibrated parameters these localizers ran with (`--calibrate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<calibrate::Calibration>,
}

/// Scores a verdict on directed links; blamed links are listed once each.
pub fn score_verdict(topo: &Topology, truth: &[LinkIx], v: &Verdict, ms: f64) -> LocalizerReport {
    let mut seen = std::collections::HashSet::new();
    let blamed: Vec<BlamedReport> = v
        .blamed
        .iter()
        .filter(|b| seen.insert(b.link))
        .map(|b| {
            let [x, y] = topo.link_names(b.link);
            BlamedReport {
                link: [x.into(), y.into()],
                loss: b.loss,
            }
        })
        .collect();
    let links: Vec<LinkIx> = v.blamed.iter().map(|b| b.link).collect();
    let n = topo.links.len();
    let s = Score::of(&links, truth, n);
    LocalizerReport {
        blamed,
        precision: s.precision,
        recall: s.recall,
        f1: s.f1,
        inference_ms: ms,
        stages: v
            .stages
            .iter()
            .map(|st| (&Score::of(st, truth, n)).into())
            .collect(),
        probe_paths: None,
        probes_sent: None,
        per_flow_accuracy: None,
        over_time: None,
        tp: s.tp,
        fp: s.fp,
        fn_: s.fn_,
    }
}

/// Canary's own run, reported as its summary scored it.
pub(super) fn from_summary(s: &Summary) -> LocalizerReport {
    LocalizerReport {
        blamed: s
            .blamed
            .iter()
            .map(|b| BlamedReport {
                link: b.link.clone(),
                loss: b.loss,
            })
            .collect(),
        precision: s.precision,
        recall: s.recall,
        f1: s.f1,
        inference_ms: s.localize_ms,
        stages: s.stages.iter().map(Into::into).collect(),
        probe_paths: None,
        probes_sent: None,
        per_flow_accuracy: None,
        over_time: None,
        tp: s.tp,
        fp: s.fp,
        fn_: s.fn_,
    }
}
