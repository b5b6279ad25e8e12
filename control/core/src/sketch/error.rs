//! Configuration errors of the sketches.

use thiserror::Error;

/// A meter or HashPipe configuration the data plane cannot realise; names the offending field.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SketchConfigError {
    #[error("{field} must be a power of two, got {value}")]
    NotPowerOfTwo { field: &'static str, value: usize },
    #[error("{field} must be in {min}..={max}, got {value}")]
    OutOfRange {
        field: &'static str,
        value: usize,
        min: usize,
        max: usize,
    },
}

/// Checks `min <= value <= max`.
pub(crate) fn check_range(
    field: &'static str,
    value: usize,
    min: usize,
    max: usize,
) -> Result<(), SketchConfigError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(SketchConfigError::OutOfRange {
            field,
            value,
            min,
            max,
        })
    }
}

/// Checks that `value` is a power of two in `1..=max`.
pub(crate) fn check_pow2(
    field: &'static str,
    value: usize,
    max: usize,
) -> Result<(), SketchConfigError> {
    if !value.is_power_of_two() {
        return Err(SketchConfigError::NotPowerOfTwo { field, value });
    }
    check_range(field, value, 1, max)
}

/// Why an invertible sketch (FlowRadar, LossRadar, FermatSketch) could not be decoded. Decoders
/// return this instead of a partial or guessed answer.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// Peeling ran out of pure buckets with items left: the sketch is too small for its load.
    #[error(
        "decoding stuck: {decoded} items recovered, {undecoded_buckets} buckets still hold items"
    )]
    Stuck {
        decoded: usize,
        undecoded_buckets: usize,
    },
    /// The buckets contradict each other (a negative count after subtraction, or counts left
    /// with no items): the inputs were not an upstream/downstream pair, or a false-positive
    /// pure bucket or flow-filter hit corrupted the result.
    #[error("inconsistent sketch at row {row}, bucket {bucket}: {what}")]
    Inconsistent {
        row: usize,
        bucket: usize,
        what: &'static str,
    },
    /// Two sketches of different shape or seed cannot be subtracted.
    #[error("sketches differ in shape or seed: {0}")]
    Mismatch(&'static str),
}
