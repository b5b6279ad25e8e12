//! Floats in the JSON as precise as what they mean: a loss to 4 significant digits (a count of
//! thousands of packets tells no more), times to the microsecond. Only the written form is
//! rounded; what is read back is taken as written.

use serde::Serializer;

/// `x` to `digits` significant digits; 0, infinities and NaN as they are.
pub fn significant(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    let r = (x * scale).round() / scale;
    if r.is_finite() {
        r
    } else {
        x
    }
}

/// A loss, a share or a rate: 4 significant digits.
pub fn loss<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(significant(*x, 4))
}

/// An interval of losses, each end to 4 significant digits.
pub fn loss_pair<S: Serializer>(x: &Option<[f64; 2]>, s: S) -> Result<S::Ok, S::Error> {
    match x {
        Some([a, b]) => s.serialize_some(&[significant(*a, 4), significant(*b, 4)]),
        None => s.serialize_none(),
    }
}

/// Each direction's loss of a cable, to 4 significant digits.
pub fn losses<S: Serializer>(x: &[Option<f64>; 2], s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    x.map(|l| l.map(|l| significant(l, 4))).serialize(s)
}

/// Milliseconds (or seconds) to three decimals: the microsecond (or the millisecond).
pub fn thousandths<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((x * 1e3).round() / 1e3)
}

/// Seconds of fabric time to the microsecond.
pub fn micros<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((x * 1e6).round() / 1e6)
}

#[cfg(test)]
mod tests {
    use super::significant;

    #[test]
    fn a_loss_keeps_four_significant_digits_and_rounding_twice_changes_nothing() {
        for (x, want) in [
            (0.1576642335766424, 0.1577),
            (0.007356321839080415, 0.007356),
            (0.857, 0.857),
            (1.0, 1.0),
            (0.0, 0.0),
            (2.5e-5, 2.5e-5),
            (0.00012345678, 0.0001235),
        ] {
            assert_eq!(significant(x, 4), want, "{x}");
            assert_eq!(significant(significant(x, 4), 4), want, "{x} twice");
        }
        assert!(significant(f64::NAN, 4).is_nan());
    }
}
