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
