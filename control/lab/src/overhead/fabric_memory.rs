//! Table II: network-wide memory on a k = 8 fat-tree. The comparison sketches must sit on every
//! switch (hop by hop) to localize anything; Canary's meters sit on the monitor switches only
//! (bottom layer, or top and bottom). As in the paper, whose Table II equals its Fig. 6 figures
//! times these switch counts (80, 32 and 48 switches: e.g. 54 608 KB / 80 = 682.6 KB per switch,
//! and Canary top+bottom / bottom = 48 / 32 = 1.5 in every column), each switch is charged the
//! per-switch memory of the two-switch experiment (Fig. 6) at the same loss rate.

use super::sketch_memory::SketchMemory;
use crate::{Error, Result};
use canary_core::topo::{fattree::fattree, MonitorPlacement};
use serde::{Deserialize, Serialize};

/// The paper's loss rates and values (KB).
pub const LOSSES: [f64; 3] = [1e-3, 1e-2, 1e-1];
pub const PAPER_KB: [(&str, [f64; 3]); 5] = [
    ("FlowRadar", [54_608.0, 54_608.0, 54_608.0]),
    ("LossRadar", [4_328.0, 43_232.0, 432_304.0]),
    ("FermatSketch", [2_912.0, 23_048.0, 46_408.0]),
    ("Canary (bottom)", [1_694.0, 213.0, 58.0]),
    ("Canary (top+bottom)", [2_542.0, 319.0, 86.0]),
];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub system: String,
    pub switches: usize,
    /// Ours, KB (1 KB = 1024 B), per loss rate of [`LOSSES`].
    pub kb: Vec<Option<f64>>,
    pub paper_kb: Vec<f64>,
    /// Ours / paper's.
    pub ratio: Vec<Option<f64>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FabricMemory {
    pub losses: Vec<f64>,
    pub rows: Vec<Row>,
}

pub fn run(fig6: &SketchMemory) -> Result<FabricMemory> {
    let k8 = |placement| fattree(8, placement).map_err(|source| Error::FatTree { k: 8, source });
    let all = k8(MonitorPlacement::Bottom)?.switches.len();
    let bottom = k8(MonitorPlacement::Bottom)?.monitors().count();
    let top_bottom = k8(MonitorPlacement::TopAndBottom)?.monitors().count();
    let per_switch = |system: &str, p: f64| -> Option<f64> {
        let row = fig6.rows.iter().find(|r| (r.loss - p).abs() < p * 1e-9)?;
        let point = match system {
            "FlowRadar" => &row.flowradar,
            "LossRadar" => &row.lossradar,
            "FermatSketch" => &row.fermat,
            _ => &row.canary,
        };
        point.as_ref().map(|x| x.memory_bytes)
    };
    let rows = PAPER_KB
        .iter()
        .map(|&(system, paper)| {
            let switches = match system {
                "Canary (bottom)" => bottom,
                "Canary (top+bottom)" => top_bottom,
                _ => all,
            };
            let kb: Vec<Option<f64>> = LOSSES
                .iter()
                .map(|&p| per_switch(system, p).map(|b| b * switches as f64 / 1024.0))
                .collect();
            let ratio = kb
                .iter()
                .zip(paper)
                .map(|(k, p)| k.map(|k| k / p))
                .collect();
            Row {
                system: system.to_string(),
                switches,
                kb,
                paper_kb: paper.to_vec(),
                ratio,
            }
        })
        .collect();
    Ok(FabricMemory {
        losses: LOSSES.to_vec(),
        rows,
    })
}
