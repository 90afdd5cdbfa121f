//! Build script: records the git commit and the build date for `--version`.
//!
//! The commit is `DRIFT_GIT_COMMIT` when set (a release build from a source archive), else git's
//! `HEAD`. The build date is that of a release build, made reproducible: `DRIFT_BUILD_DATE` when
//! set (RFC 3339 or YYYY-MM-DD, as given), else `SOURCE_DATE_EPOCH` (seconds since 1970, as
//! reproducible builds set it; scripts/package and the release workflow set it to the commit's
//! time) as a UTC date. With neither, the build is a developer's and `--version` says "dev build"
//! rather than the time it happened to be compiled (which would change every build).
use std::process::Command;

fn main() {
    let commit = std::env::var("DRIFT_GIT_COMMIT").ok().filter(|s| !s.is_empty()).or_else(|| {
        Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
    });
    println!("cargo:rustc-env=DRIFT_GIT_COMMIT={}", commit.unwrap_or_else(|| "unknown".into()));
    println!("cargo:rerun-if-env-changed=DRIFT_GIT_COMMIT");

    let built = match (env_nonempty("DRIFT_BUILD_DATE"), env_nonempty("SOURCE_DATE_EPOCH")) {
        (Some(date), _) => {
            if !date.chars().all(|c| c.is_ascii_alphanumeric() || "-:+.".contains(c)) {
                panic!("DRIFT_BUILD_DATE={date:?} is not a date (expected RFC 3339 or YYYY-MM-DD)");
            }
            format!("built {date}")
        }
        (None, Some(epoch)) => {
            let secs: i64 = epoch
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("SOURCE_DATE_EPOCH={epoch:?} is not a number of seconds since 1970-01-01"));
            format!("built {}", rfc3339_utc(secs))
        }
        (None, None) => "dev build".to_string(),
    };
    println!("cargo:rustc-env=DRIFT_BUILD_INFO={built}");
    println!("cargo:rerun-if-env-changed=DRIFT_BUILD_DATE");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");

    // Rebuild when the commit changes. In a git worktree `.git` is a file, so ask git where HEAD
    // lives; outside a checkout there is nothing to watch.
    let git_dir = Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string());
    if let Some(dir) = git_dir {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/refs/heads");
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|s| !s.trim().is_empty())
}

/// Seconds since 1970-01-01T00:00:00Z as RFC 3339 in UTC, e.g. 2026-12-02T03:31:13Z (the days to
/// civil date conversion of the proleptic Gregorian calendar, in 400-year eras). The e2e tests
/// include this file to check it.
pub(crate) fn rfc3339_utc(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097; // day of era, 0..=146096
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // year of era, 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the year starting in March
    let mp = (5 * doy + 2) / 153; // month starting in March, 0..=11
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3_600, rem % 3_600 / 60, rem % 60)
}
