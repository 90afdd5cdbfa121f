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
/// (`2024-05-01T12:00:00Z`, fractions and offsets accepted).
pub fn parse_timestamp(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || (b[10] != b'T' && b[10] != b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| ts.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, s) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &ts[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.chars().take_while(char::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && &o[3..4] == ":" => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o[1..3].parse::<i64>().ok()? * 3600 + o[4..6].parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    Some(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// `YYYYMMDDTHHMMSSZ` for a Unix time (the backup directory name in scripts).
pub fn compact_utc(epoch: i64) -> String {
    let days = epoch.div_euclid(86400);
    let secs = epoch.rem_euclid(86400);
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC) for a Unix time.
pub fn rfc3339_utc(epoch: i64) -> String {
    let c = compact_utc(epoch);
    format!("{}-{}-{}T{}:{}:{}Z", &c[0..4], &c[4..6], &c[6..8], &c[9..11], &c[11..13], &c[13..15])
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
        assert_eq!(compact_utc(1709208000), "20240229T120000Z");
        assert_eq!(compact_utc(0), "19700101T000000Z");
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
