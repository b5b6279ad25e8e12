//! Value parsers the commands share. The settings `simulate` and `run` share are one type,
//! `canary_controller::config::Pipeline` (with its defaults).

/// A share between 0 and 1 (`--ipv6`, `--noise`).
pub fn share(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("`{s}` is not between 0 and 1"))
    }
}
