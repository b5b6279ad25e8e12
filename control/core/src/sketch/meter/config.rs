//! A meter's shape, `rows × width`, and the limits the P4 program puts on it. Apart because
//! capacities and configuration files carry it without any buckets.

use crate::sketch::error::{check_pow2, check_range, SketchConfigError};
use serde::{Deserialize, Serialize};

/// Shape of a meter: `rows` (d, 1..=3) × `width` (w, a power of two, at most 2^16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MeterConfig {
    pub rows: usize,
    pub width: usize,
}

impl MeterConfig {
    /// At most one row per hash slice (see [`crate::sketch::hash`]).
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
