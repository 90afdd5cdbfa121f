//! Lengths of time as users write them, the one type behind every duration flag (`--older-than`,
//! `--interval`, `--timeout`, `--request-timeout`): `500ms`, `45s`, `30m`, `1h30m`, `7d`, or bare
//! seconds (`60`, `0`, as kubectl's `--request-timeout` takes them). A bad value is a usage error
//! (exit 2) naming the flag, through clap's value parser.
//!
//! Also durations as orphans shows them (ages, `--older-than` written back), the API's
//! timestamps and the one clock ([`now`]): `serve`, the app, the renderers and the engines use
//! them too.

use std::time::Duration;

/// A duration that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: {message} (examples: 0s, 45m, 1h30m, 7d)")]
pub struct DurationError {
    pub text: String,
    pub message: &'static str,
}

/// A length of time given on the command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Span(Duration);

impl Span {
    pub fn from_secs(secs: u64) -> Span {
        Span(Duration::from_secs(secs))
    }

    /// Read `500ms`, `45s`, `30m`, `1h30m`, `2d` (units ms, s, m, h, d, summed) or bare seconds.
    /// Every sum is checked: a huge number is an error, never an overflow.
    pub fn parse(text: &str) -> Result<Span, DurationError> {
        let err = |message| DurationError { text: text.to_string(), message };
        let s = text.trim();
        if s.is_empty() {
            return Err(err("it is empty"));
        }
        if s.chars().all(|c| c.is_ascii_digit()) {
            return s.parse().map(Span::from_secs).map_err(|_| err("the number is too large"));
        }
        let too_large = || err("the number is too large");
        let mut total = Duration::ZERO;
        let mut number = String::new();
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_digit() {
                number.push(c);
                continue;
            }
            if number.is_empty() {
                return Err(err("a unit without a number"));
            }
            let n: u64 = number.parse().map_err(|_| too_large())?;
            number.clear();
            let secs = |per: u64| n.checked_mul(per).map(Duration::from_secs).ok_or_else(too_large);
            let part = match (c, chars.peek()) {
                ('m', Some('s')) => {
                    chars.next();
                    Duration::from_millis(n)
                }
                ('s', _) => secs(1)?,
                ('m', _) => secs(60)?,
                ('h', _) => secs(3600)?,
                ('d', _) => secs(86400)?,
                _ => return Err(err("unknown unit (use ms, s, m, h or d)")),
            };
            total = total.checked_add(part).ok_or_else(too_large)?;
        }
        if !number.is_empty() {
            return Err(err("a number without a unit"));
        }
        Ok(Span(total))
    }

    pub fn as_duration(self) -> Duration {
        self.0
    }

    /// Whole seconds (milliseconds are dropped).
    pub fn as_secs(self) -> u64 {
        self.0.as_secs()
    }

    pub fn is_zero(self) -> bool {
        self.0.is_zero()
    }

    /// `None` for zero (what "0: no limit" flags mean).
    pub fn limit(self) -> Option<Duration> {
        (!self.is_zero()).then_some(self.0)
    }
}

impl std::str::FromStr for Span {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Span, DurationError> {
        Span::parse(s)
    }
}

/// Parse a duration into whole seconds ([`Span`], the one parser).
pub fn parse_duration(text: &str) -> Result<u64, DurationError> {
    Span::parse(text).map(|s| s.as_secs())
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

/// Now, in Unix seconds: the one clock of every timestamp a result carries (orphans' ages, a
/// scan's time, the dashboard's ignores, the drift history's rounds).
pub fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC) for a Unix time.
pub fn rfc3339_utc(epoch: i64) -> String {
    instant(epoch).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: &str) -> u64 {
        Span::parse(s).unwrap().as_secs()
    }

    #[test]
    fn units_sum_and_bare_numbers_are_seconds() {
        assert_eq!(secs("0"), 0);
        assert_eq!(secs("0s"), 0);
        assert_eq!(secs("60"), 60);
        assert_eq!(secs("90m"), 5400);
        assert_eq!(secs("1h30m"), 5400);
        assert_eq!(secs(" 7d "), 7 * 86400);
        assert_eq!(Span::parse("1s500ms").unwrap().as_duration(), Duration::from_millis(1500));
        assert_eq!(Span::parse("0").unwrap().limit(), None);
        assert_eq!(Span::parse("2m").unwrap().limit(), Some(Duration::from_secs(120)));
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        let msg = |s: &str| Span::parse(s).unwrap_err().message;
        assert_eq!(msg(""), "it is empty");
        assert_eq!(msg("5x"), "unknown unit (use ms, s, m, h or d)");
        assert_eq!(msg("h"), "a unit without a number");
        assert_eq!(msg("1h30"), "a number without a unit");
        assert_eq!(msg("99999999999999999999d"), "the number is too large");
        assert_eq!(msg("213503982334602d"), "the number is too large");
        assert_eq!(
            Span::parse("soon").unwrap_err().to_string(),
            "invalid duration \"soon\": a unit without a number (examples: 0s, 45m, 1h30m, 7d)"
        );
    }

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
