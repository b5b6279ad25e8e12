//! USM and DSM meters: `d` rows × `w` buckets updated by the paper's Algorithms 1 and 2.
//!
//! A bucket is **clean** while only one flow (and, in a DSM, one pathBF) has ever hit it; a clean
//! bucket's count is then the exact number of that flow's packets counted by the meter, and all
//! clean buckets of a flow agree. A dirty bucket counts every packet that reaches it; its count
//! means nothing and is never read (as in the data plane, p4src/include/meters.p4). A bucket is **empty** when no flow has been recorded; the P4
//! program may encode that as `count == 0` (counts do not wrap within an epoch).

use super::error::SketchConfigError;
use super::hash::{meter_index, FlowHashes};
use serde::{Deserialize, Serialize};

mod bucket;
mod config;
mod dsm;
mod scan;
mod usm;

pub use bucket::{Bucket, DsmBucket, UsmBucket, DSM_BUCKET_BITS, USM_BUCKET_BITS};
pub use config::MeterConfig;
pub use dsm::DsmRecord;
pub use scan::{CleanFlows, UsmRecord};
pub use usm::CleanLookup;

/// A meter: `rows × width` buckets, row-major.
///
/// It also keeps the positions of its non-empty buckets, so that reading it out and resetting
/// it cost what is in it rather than its size: at k = 32 the meters are 2¹⁶ buckets wide and
/// mostly empty, and the number of dirty buckets, so that counting them reads nothing. Neither
/// is serialised; both are rebuilt when a meter is read back.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(from = "MeterRepr<B>", into = "MeterRepr<B>")]
#[serde(bound(
    serialize = "B: Serialize + Clone",
    deserialize = "B: Deserialize<'de> + Bucket"
))]
pub struct Meter<B> {
    config: MeterConfig,
    buckets: Vec<B>,
    used: Vec<u32>,
    dirty: usize,
}

/// The serialised form of a [`Meter`].
#[derive(Serialize, Deserialize)]
struct MeterRepr<B> {
    config: MeterConfig,
    buckets: Vec<B>,
}

impl<B: Bucket> From<MeterRepr<B>> for Meter<B> {
    fn from(r: MeterRepr<B>) -> Self {
        let used = r
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, b)| b.flow().is_some())
            .map(|(i, _)| i as u32)
            .collect::<Vec<u32>>();
        let dirty = used
            .iter()
            .filter(|&&i| r.buckets[i as usize].is_dirty())
            .count();
        Meter {
            config: r.config,
            buckets: r.buckets,
            used,
            dirty,
        }
    }
}

impl<B> From<Meter<B>> for MeterRepr<B> {
    fn from(m: Meter<B>) -> Self {
        MeterRepr {
            config: m.config,
            buckets: m.buckets,
        }
    }
}

impl<B: PartialEq> PartialEq for Meter<B> {
    fn eq(&self, o: &Self) -> bool {
        self.config == o.config && self.buckets == o.buckets
    }
}

impl<B: Eq> Eq for Meter<B> {}

/// Upstream meter (Algorithm 2).
pub type Usm = Meter<UsmBucket>;
/// Downstream meter (Algorithm 1).
pub type Dsm = Meter<DsmBucket>;

impl<B: Bucket> Meter<B> {
    /// An all-empty meter.
    pub fn new(config: MeterConfig) -> Result<Self, SketchConfigError> {
        config.validate()?;
        Ok(Meter {
            config,
            buckets: vec![B::default(); config.num_buckets()],
            used: Vec::new(),
            dirty: 0,
        })
    }

    pub fn config(&self) -> MeterConfig {
        self.config
    }

    /// Empties every bucket (the control plane's read-and-reset at the end of an epoch).
    pub fn reset(&mut self) {
        for &i in &self.used {
            self.buckets[i as usize] = B::default();
        }
        self.used.clear();
        self.dirty = 0;
        debug_assert!(self.buckets.iter().all(|b| b.flow().is_none()));
    }

    /// Builds a meter from bucket contents read off a switch (row-major).
    pub fn from_buckets(config: MeterConfig, buckets: Vec<B>) -> Result<Self, SketchConfigError> {
        config.validate()?;
        assert_eq!(
            buckets.len(),
            config.num_buckets(),
            "one bucket per row and column"
        );
        Ok(MeterRepr { config, buckets }.into())
    }

    /// Non-empty buckets as (flat position, bucket).
    fn used_buckets(&self) -> impl Iterator<Item = (usize, &B)> + '_ {
        self.used
            .iter()
            .map(|&i| (i as usize, &self.buckets[i as usize]))
    }

    /// Records that the bucket at `pos` is about to be written (for the occupancy index).
    fn touch(&mut self, pos: usize) {
        if self.buckets[pos].flow().is_none() {
            self.used.push(pos as u32);
        }
    }

    /// Writes the bucket at `pos` with `f`, keeping the occupancy index and the dirty count.
    fn write(&mut self, pos: usize, f: impl FnOnce(&mut B)) {
        self.touch(pos);
        let was_dirty = self.buckets[pos].is_dirty();
        f(&mut self.buckets[pos]);
        self.dirty += usize::from(!was_dirty && self.buckets[pos].is_dirty());
    }

    /// # Panics
    /// If `row` or `col` is out of range.
    pub fn bucket(&self, row: usize, col: usize) -> &B {
        assert!(row < self.config.rows && col < self.config.width);
        &self.buckets[row * self.config.width + col]
    }

    /// All buckets, row-major.
    pub fn buckets(&self) -> &[B] {
        &self.buckets
    }

    /// Number of dirty (non-empty) buckets.
    pub fn dirty_buckets(&self) -> usize {
        debug_assert_eq!(
            self.dirty,
            self.used_buckets().filter(|(_, b)| b.is_dirty()).count()
        );
        self.dirty
    }

    /// Number of non-empty buckets.
    pub fn occupied(&self) -> usize {
        self.used.len()
    }
}

/// Flat (row-major) positions of a flow's buckets, one per row.
fn positions(config: MeterConfig, h: FlowHashes) -> impl Iterator<Item = usize> {
    let MeterConfig { rows, width } = config;
    (0..rows).map(move |row| row * width + meter_index(h, row, width))
}

/// Theorem 2: probability that a large flow has at least one clean bucket in a `d × w` meter
/// monitoring `f` large flows, `1 - (1 - e^{-(f-1)/w})^d` (1 when `f <= 1`).
pub fn p_clean(d: usize, w: usize, f: usize) -> f64 {
    let others = f.saturating_sub(1) as f64;
    1.0 - (1.0 - (-others / w as f64).exp()).powi(d as i32)
}
