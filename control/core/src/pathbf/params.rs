//! pathBF's parameters: the filter's size and hash count, the masks they give a switch ID, and
//! Theorem 1's false-match rate. Apart from the codec because the switch programs and the audit
//! take them too, without a topology.

/// pathBF parameters the data plane cannot use; each names the field at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathBfParamsError {
    #[error("pathBF bits must be a power of two in 8..=32, got {0}")]
    Bits(u32),
    #[error("pathBF hashes must be 1..={max} for {bits} bits, got {hashes}")]
    Hashes { bits: u32, hashes: u32, max: u32 },
}

impl PathBfParamsError {
    /// The field at fault: `bits` or `hashes`.
    pub fn field(&self) -> &'static str {
        match self {
            Self::Bits(_) => "bits",
            Self::Hashes { .. } => "hashes",
        }
    }
}

/// Bloom filter size `b` (bits) and hash count `m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathBfParams {
    pub bits: u32,
    pub hashes: u32,
}

impl Default for PathBfParams {
    fn default() -> Self {
        Self {
            bits: 32,
            hashes: 3,
        }
    }
}

impl PathBfParams {
    /// Bit positions of a switch ID: `h_i(id) = splitmix64(i << 32 | id) mod b`.
    ///
    /// Only the controller hashes switch IDs (the data plane ORs a mask it is given), so this
    /// need not be a hash the switch computes. It must mix well: CRC slices are affine in the ID,
    /// and with IDs derived from similar names they made wrong candidates pass the membership
    /// test three times as often as independent hashes do.
    pub fn positions(&self, id: u32) -> impl Iterator<Item = u32> {
        let bits = self.bits as u64;
        (0..self.hashes)
            .map(move |i| (crate::topo::mix64((i as u64) << 32 | id as u64) % bits) as u32)
    }

    pub fn mask(&self, id: u32) -> u32 {
        self.positions(id).fold(0, |m, p| m | 1 << p)
    }

    pub fn validate(&self) -> Result<(), PathBfParamsError> {
        if !self.bits.is_power_of_two() || !(8..=32).contains(&self.bits) {
            return Err(PathBfParamsError::Bits(self.bits));
        }
        let max = 32 / self.bits.trailing_zeros();
        if self.hashes == 0 || self.hashes > max {
            return Err(PathBfParamsError::Hashes {
                bits: self.bits,
                hashes: self.hashes,
                max,
            });
        }
        Ok(())
    }

    /// Theorem 1: probability that a wrong bottom-to-bottom candidate of `h` switches passes the
    /// membership test, `(1 − e^{−(h−1)m/b})^{(h−2)m}`.
    pub fn theorem1(&self, h: u32) -> f64 {
        self.false_match(h, h - 2)
    }

    /// Theorem 1's argument for a candidate that differs from the true segment in `differing`
    /// switches (the theorem assumes all h−2 intermediate switches differ; in a fat-tree, two
    /// paths through cores of the same plane share both agg switches and differ in one).
    pub fn false_match(&self, h: u32, differing: u32) -> f64 {
        let (m, b) = (self.hashes as f64, self.bits as f64);
        (1.0 - (-((h - 1) as f64) * m / b).exp()).powf(differing as f64 * m)
    }
}
