//! Wall-clock times as the reports and incidents carry them: UTC, RFC 3339, to the millisecond
//! (`2026-11-27T10:42:03.250Z`).

use std::time::{Duration, SystemTime};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// `t` in UTC, RFC 3339, to the millisecond.
pub fn rfc3339_at(t: SystemTime) -> String {
    let t = OffsetDateTime::from(t);
    let t = t
        .replace_nanosecond(t.nanosecond() / 1_000_000 * 1_000_000)
        .expect("a nanosecond count below a second");
    t.format(&Rfc3339).expect("a UTC time formats as RFC 3339")
}

/// Now, in UTC, RFC 3339.
pub fn rfc3339() -> String {
    rfc3339_at(SystemTime::now())
}

/// `start` plus `after_s` seconds, in UTC, RFC 3339 (a simulated run dated from its start).
pub fn after(start: SystemTime, after_s: f64) -> String {
    rfc3339_at(start + Duration::from_secs_f64(after_s.max(0.0)))
}

/// An RFC 3339 time, or `None` when `s` is not one.
pub fn parse_rfc3339(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_rfc3339_to_the_millisecond_and_parse_back() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_000_250);
        let s = rfc3339_at(t + Duration::from_micros(700));
        assert_eq!(s, "2026-11-18T11:06:40.25Z");
        assert_eq!(parse_rfc3339(&s).unwrap(), OffsetDateTime::from(t), "{s}");
        assert_eq!(after(t, 1.5), "2026-11-18T11:06:41.75Z");
        assert!(parse_rfc3339("epoch 3").is_none());
    }
}
