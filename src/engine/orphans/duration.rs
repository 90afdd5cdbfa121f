//! Durations as orphans shows them (ages, `--older-than` written back) and API timestamps.

pub use crate::report::duration::DurationError;

/// Parse a duration into whole seconds ([`crate::report::duration::Span`], the one parser).
pub fn parse_duration(text: &str) -> Result<u64, DurationError> {
    crate::report::duration::Span::parse(text).map(|s| s.as_secs())
}

/// A duration the way the table shows ages: `45s`, `12m`, `5h`, `3d`.
pub fn short_duration(seconds: i64) -> String {
    let s = seconds.max(0);
    if s < 120 {
        format!("{s}s")
    } else if s < 2 * 3600 {
        format!("{}m", s / 60)
    } else if s < 2 * 86400 {
        format!("{}h", s / 3600)
    } else {
        format!("{}d", s / 86400)
    }
}

/// A duration written back the way `--older-than` takes it: `1h`, `1h30m`, `7d`, `0s`.
pub fn exact_duration(seconds: u64) -> String {
    if seconds == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    let mut rest = seconds;
    for (unit, size) in [("d", 86400), ("h", 3600), ("m", 60), ("s", 1)] {
        if rest >= size {
            out.push_str(&format!("{}{unit}", rest / size));
            rest %= size;
        }
    }
    out
}

/// Seconds since the Unix epoch of an RFC 3339 timestamp as the API server writes it
/// (`2024-05-01T12:00:00Z`, fractions and offsets accepted). Parsed by jiff, the time library
/// already in the tree through k8s-openapi.
pub fn parse_timestamp(ts: &str) -> Option<i64> {
    ts.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// The instant of a Unix time, held inside jiff's range (years -9999 to 9999).
fn instant(epoch: i64) -> jiff::Timestamp {
    let (min, max) = (jiff::Timestamp::MIN.as_second(), jiff::Timestamp::MAX.as_second());
    jiff::Timestamp::from_second(epoch.clamp(min, max)).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC) for a Unix time.
pub fn rfc3339_utc(epoch: i64) -> String {
    instant(epoch).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_timestamp("2024-02-29T12:00:00Z"), Some(1709208000));
        assert_eq!(parse_timestamp("2024-02-29T13:00:00.123+01:00"), Some(1709208000));
        assert_eq!(parse_timestamp("yesterday"), None);
        assert_eq!(rfc3339_utc(1_764_460_800 + 3723), "2025-11-30T01:02:03Z");
        assert_eq!(parse_timestamp(&rfc3339_utc(1_764_460_800)), Some(1_764_460_800));
        assert_eq!(parse_timestamp("2024-02-30T00:00:00Z"), None);
    }

    #[test]
    fn short_ages() {
        assert_eq!(short_duration(5), "5s");
        assert_eq!(short_duration(600), "10m");
        assert_eq!(short_duration(3 * 3600), "3h");
        assert_eq!(short_duration(9 * 86400), "9d");
        for d in ["0s", "1h", "1h30m", "7d", "1d2h3m4s"] {
            assert_eq!(exact_duration(parse_duration(d).unwrap()), d);
        }
    }
}
