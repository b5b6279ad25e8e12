//! USM and DSM meters: `d` rows × `w` buckets updated by the paper's Algorithms 1 and 2.
//!
//! A bucket is **clean** while only one flow (and, in a DSM, one pathBF) has ever hit it; a clean
//! bucket's count is then the exact number of that flow's packets counted by the meter, and all
//! clean buckets of a flow agree. A dirty bucket counts every packet that reaches it; its count
//! means nothing and is never read (as in the data plane, p4src/include/meters.p4). A bucket is **empty** when no flow has been recorded; the P4
//! program may encode that as `count == 0` (counts do not wrap within an epoch).

use super::error::{check_pow2, check_range, SketchConfigError};
use super::hash::{meter_index, FlowHashes};
use crate::flow::FlowId;
use serde::{Deserialize, Serialize};

mod scan;
pub use scan::{CleanFlows, UsmRecord};

/// Bits of a DSM bucket: dirtyFlag (1) + flowID (104) + pathBF (32) + count (32).
pub const DSM_BUCKET_BITS: usize = 1 + 104 + 32 + 32;
/// Bits of a USM bucket: dirtyFlag (1) + flowID (104) + count (32).
pub const USM_BUCKET_BITS: usize = 1 + 104 + 32;

/// Shape of a meter: `rows` (d, 1..=3) × `width` (w, a power of two, at most 2^16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MeterConfig {
    pub rows: usize,
    pub width: usize,
}

impl MeterConfig {
    /// At most one row per hash slice (see [`super::hash`]).
    pub const MAX_ROWS: usize = 3;
    /// `c16` gives 16 bits to row 2.
    pub const MAX_WIDTH: usize = 1 << 16;

    /// A validated configuration.
    pub fn new(rows: usize, width: usize) -> Result<Self, SketchConfigError> {
        let config = MeterConfig { rows, width };
        config.validate()?;
        Ok(config)
    }

    /// Checks the constraints of [`MeterConfig`].
    pub fn validate(&self) -> Result<(), SketchConfigError> {
        check_range("rows", self.rows, 1, Self::MAX_ROWS)?;
        check_pow2("width", self.width, Self::MAX_WIDTH)
    }

    /// Number of buckets, `rows * width`.
    pub fn num_buckets(&self) -> usize {
        self.rows * self.width
    }
}

impl Default for MeterConfig {
    /// The paper's d = 3, w = 2^10.
    fn default() -> Self {
        MeterConfig {
            rows: 3,
            width: 1024,
        }
    }
}

/// What the meters need to know about a bucket.
pub trait Bucket: Clone + Default {
    fn is_dirty(&self) -> bool;
    fn flow(&self) -> Option<FlowId>;
}

/// A USM bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsmBucket {
    pub dirty: bool,
    pub flow: Option<FlowId>,
    pub count: u32,
}

/// A DSM bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DsmBucket {
    pub dirty: bool,
    pub flow: Option<FlowId>,
    pub path_bf: u32,
    pub count: u32,
}

impl Bucket for UsmBucket {
    fn is_dirty(&self) -> bool {
        self.dirty
    }
    fn flow(&self) -> Option<FlowId> {
        self.flow
    }
}

impl Bucket for DsmBucket {
    fn is_dirty(&self) -> bool {
        self.dirty
    }
    fn flow(&self) -> Option<FlowId> {
        self.flow
    }
}

impl UsmBucket {
    /// `n` consecutive executions of one row of Algorithm 2.
    fn update_n(&mut self, flow: &FlowId, n: u32) {
        if n == 0 {
            return;
        }
        match self.flow {
            None => {
                self.flow = Some(*flow);
                self.count = n;
            }
            Some(resident) => {
                // Another flow dirties the bucket. A dirty bucket's count is never read, so it
                // counts on (the data plane keeps the dirty flag with the rule ID, the count
                // apart, and would need a third condition to stop it).
                self.dirty |= resident != *flow;
                self.count = self.count.wrapping_add(n);
            }
        }
    }
}

impl DsmBucket {
    /// `n` consecutive executions of one row of Algorithm 1.
    fn update_n(&mut self, flow: &FlowId, path_bf: u32, n: u32) {
        if n == 0 {
            return;
        }
        match self.flow {
            None => {
                self.flow = Some(*flow);
                self.path_bf = path_bf;
                self.count = n;
            }
            Some(resident) => {
                self.dirty |= resident != *flow || self.path_bf != path_bf;
                self.count = self.count.wrapping_add(n);
            }
        }
    }
}

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

impl Default for Usm {
    fn default() -> Self {
        Self::new(MeterConfig::default()).expect("default config is valid")
    }
}

impl Default for Dsm {
    fn default() -> Self {
        Self::new(MeterConfig::default()).expect("default config is valid")
    }
}

impl Usm {
    /// Algorithm 2 (UpdateUSM). The paper's listing is lost in extraction; reconstructed as
    /// Algorithm 1 without the pathBF field: a bucket turns dirty when a second flow hits it.
    pub fn update(&mut self, flow: &FlowId, h: FlowHashes) {
        self.update_n(flow, h, 1);
    }

    /// Exactly `n` consecutive [`Usm::update`]s of the same packet key.
    pub fn update_n(&mut self, flow: &FlowId, h: FlowHashes, n: u32) {
        if n == 0 {
            return;
        }
        for pos in positions(self.config, h) {
            self.write(pos, |b| b.update_n(flow, n));
        }
    }

    /// The count of any clean bucket holding `flow` (all of them agree), if there is one.
    pub fn clean_count(&self, flow: &FlowId, h: FlowHashes) -> Option<u32> {
        match self.clean_lookup(flow, h) {
            CleanLookup::Count(c) => Some(c),
            CleanLookup::Missing | CleanLookup::Torn => None,
        }
    }

    /// The flow's count from its clean buckets, checking that they agree. On a switch they can
    /// disagree only when the meter was read while still counting (rows are separate register
    /// arrays, read one after the other).
    pub fn clean_lookup(&self, flow: &FlowId, h: FlowHashes) -> CleanLookup {
        lookup_in(
            positions(self.config, h).map(|pos| &self.buckets[pos]),
            flow,
        )
    }
}

/// [`Usm::clean_lookup`] over the flow's buckets.
fn lookup_in<'a>(buckets: impl Iterator<Item = &'a UsmBucket>, flow: &FlowId) -> CleanLookup {
    let mut found = CleanLookup::Missing;
    for b in buckets {
        if b.dirty || b.flow != Some(*flow) {
            continue;
        }
        found = match found {
            CleanLookup::Missing => CleanLookup::Count(b.count),
            CleanLookup::Count(c) if c == b.count => found,
            _ => return CleanLookup::Torn,
        };
    }
    found
}

/// What a USM says about one flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CleanLookup {
    /// No clean bucket holds the flow.
    Missing,
    Count(u32),
    /// Clean buckets hold different counts: read while counting.
    Torn,
}

/// A flow read from a clean DSM bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DsmRecord {
    pub flow: FlowId,
    pub path_bf: u32,
    pub count: u32,
}

impl Dsm {
    /// Algorithm 1 (UpdateDSM) for one packet of `flow` carrying `path_bf`.
    pub fn update(&mut self, flow: &FlowId, h: FlowHashes, path_bf: u32) {
        self.update_n(flow, h, path_bf, 1);
    }

    /// Exactly `n` consecutive [`Dsm::update`]s of the same packet key and pathBF.
    pub fn update_n(&mut self, flow: &FlowId, h: FlowHashes, path_bf: u32, n: u32) {
        if n == 0 {
            return;
        }
        for pos in positions(self.config, h) {
            self.write(pos, |b| b.update_n(flow, path_bf, n));
        }
    }

    /// One record per flow with at least one clean bucket, sorted by flow; flows whose clean
    /// buckets disagree are left out (see [`Dsm::clean_flows_checked`]).
    pub fn clean_flows(&self) -> Vec<DsmRecord> {
        self.clean_flows_checked().0
    }

    /// [`Dsm::clean_flows`], and how many flows were left out because their clean buckets
    /// disagree: on a switch, the meter was read while a packet was still being counted.
    pub fn clean_flows_checked(&self) -> (Vec<DsmRecord>, u64) {
        // Visit non-empty buckets in memory order (a harvest of wide meters is mostly empty and
        // random access into it is what costs), keep clean ones, then one record per flow.
        let mut used = self.used.clone();
        used.sort_unstable();
        let mut all: Vec<DsmRecord> = used
            .iter()
            .map(|&i| &self.buckets[i as usize])
            .filter(|b| !b.dirty)
            .filter_map(|b| {
                b.flow.map(|flow| DsmRecord {
                    flow,
                    path_bf: b.path_bf,
                    count: b.count,
                })
            })
            .collect();
        all.sort_unstable_by_key(|r| r.flow);
        let mut out = Vec::with_capacity(all.len());
        let mut torn = 0;
        for group in all.chunk_by(|a, b| a.flow == b.flow) {
            if group.iter().all(|r| r == &group[0]) {
                out.push(group[0]);
            } else {
                torn += 1;
            }
        }
        (out, torn)
    }
}

/// Theorem 2: probability that a large flow has at least one clean bucket in a `d × w` meter
/// monitoring `f` large flows, `1 - (1 - e^{-(f-1)/w})^d` (1 when `f <= 1`).
pub fn p_clean(d: usize, w: usize, f: usize) -> f64 {
    let others = f.saturating_sub(1) as f64;
    1.0 - (1.0 - (-others / w as f64).exp()).powi(d as i32)
}
