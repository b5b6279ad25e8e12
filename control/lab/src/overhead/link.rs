//! The two-switch network of the overhead experiments (`topologies/line2.yaml`: s1 → s2, one
//! segment each way), prepared as every run is (pathBF audit, segments, codec).

use crate::{Error, Result};
use canary_controller::setup::{prepare, Prepared};
use canary_core::fabric::{MeterSnapshot, Parity};
use canary_core::pathbf::PathBfParams;
use canary_core::sketch::{Dsm, MeterConfig, Usm};
use canary_core::topo::{yaml, SegmentId, SwitchIx};

const LINE2: &str = include_str!("../../../../topologies/line2.yaml");

/// The two switches, the segment s1 → s2 and its pathBF.
pub struct Line2 {
    pub prepared: Prepared,
    pub up: SwitchIx,
    pub down: SwitchIx,
    pub segment: SegmentId,
    pub path_bf: u32,
}

impl Line2 {
    pub fn new() -> Result<Self> {
        let topo = yaml::parse("topologies/line2.yaml", LINE2)?;
        let prepared = prepare(topo, PathBfParams::default())?;
        let up = prepared
            .topo
            .switch("s1")
            .ok_or(Error::Line2("switch s1"))?;
        let down = prepared
            .topo
            .switch("s2")
            .ok_or(Error::Line2("switch s2"))?;
        let segment = prepared
            .segments
            .find(&[up, down])
            .ok_or(Error::Line2("segment s1 -> s2"))?;
        let path_bf = prepared.codec.segment_bf[segment as usize];
        Ok(Line2 {
            prepared,
            up,
            down,
            segment,
            path_bf,
        })
    }

    /// The harvest of one epoch: the upstream switch's USM, the downstream switch's DSM (the
    /// other meter of each switch is empty: traffic flows one way).
    pub fn snapshots(&self, usm: Usm, dsm: Dsm) -> Vec<MeterSnapshot> {
        let empty = |c: MeterConfig| (Usm::new(c).unwrap(), Dsm::new(c).unwrap());
        let (u0, d0) = empty(dsm.config());
        vec![
            MeterSnapshot {
                switch: self.up,
                epoch: 0,
                parity: Parity::Even,
                usm,
                dsm: d0,
            },
            MeterSnapshot {
                switch: self.down,
                epoch: 0,
                parity: Parity::Even,
                usm: u0,
                dsm,
            },
        ]
    }
}
