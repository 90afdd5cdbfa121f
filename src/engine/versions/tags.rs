//! Version tags and how they compare: a tag is compared only with tags of the **same shape**
//! (the same prefix, the same `v`, the same number of numeric parts and the same suffix), so
//! `v1.35.9` is only compared with `vX.Y.Z`, `9.0-alpine` with `X.Y-alpine`, and
//! `distroless-v1.39.1` with `distroless-vX.Y.Z`. Prereleases (`rc`, `alpha`, `beta`, `pre`,
//! `dev`, `snapshot`, `nightly`, letters glued to digits), signature and attestation tags
//! (`sha256-….sig/.att/.sbom`) and bare hex tags are never candidates. Pure functions only.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

/// How far an update may go: `patch` keeps major and minor, `minor` keeps the major, `major`
/// (the default) takes anything newer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Track {
    Patch,
    Minor,
    #[default]
    Major,
}

impl Track {
    pub fn parse(s: &str) -> Option<Track> {
        match s.trim().to_ascii_lowercase().as_str() {
            "patch" => Some(Track::Patch),
            "minor" => Some(Track::Minor),
            "major" => Some(Track::Major),
            _ => None,
        }
    }
}

/// How far behind the installed version is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Behind {
    Current,
    Patch,
    Minor,
    Major,
}

/// A version tag split into its shape and its numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionTag {
    /// Text before the numbers (`distroless-`), without the `v`.
    pub prefix: String,
    /// A `v` right before the numbers.
    pub v: bool,
    /// The numeric parts (`1.39.1` → `[1, 39, 1]`).
    pub numbers: Vec<u64>,
    /// Text after the numbers (`-alpine`), prerelease marker included.
    pub suffix: String,
    /// `rc`, `alpha`, ..., or letters glued to the last number.
    pub prerelease: bool,
}

const PRERELEASE_WORDS: &[&str] = &["rc", "alpha", "beta", "pre", "preview", "dev", "snapshot", "nightly", "canary"];

/// A signature, attestation or SBOM tag (`sha256-<hex>.sig`), or a bare commit-like hex tag.
pub fn is_ignored_tag(tag: &str) -> bool {
    let lower = tag.to_ascii_lowercase();
    if lower.starts_with("sha256-") || [".sig", ".att", ".sbom"].iter().any(|s| lower.ends_with(s)) {
        return true;
    }
    (7..=64).contains(&lower.len())
        && lower.bytes().all(|b| b.is_ascii_hexdigit())
        && lower.bytes().any(|b| b.is_ascii_alphabetic())
}

impl VersionTag {
    /// Parse a tag; `None` when it is not a version (`latest`, `main`, a hex tag, a signature).
    pub fn parse(tag: &str) -> Option<VersionTag> {
        if tag.is_empty() || is_ignored_tag(tag) {
            return None;
        }
        let bytes = tag.as_bytes();
        // The numbers start at the first digit that is at the start, or after `-`, `_`, `/`, `+`, or
        // after a `v` that is itself at the start or after a separator.
        let is_sep = |b: u8| matches!(b, b'-' | b'_' | b'/' | b'+');
        let start = (0..bytes.len()).find(|&i| {
            bytes[i].is_ascii_digit()
                && (i == 0
                    || is_sep(bytes[i - 1])
                    || ((bytes[i - 1] == b'v' || bytes[i - 1] == b'V') && (i == 1 || is_sep(bytes[i - 2]))))
        })?;
        let v = start > 0 && matches!(bytes[start - 1], b'v' | b'V');
        let prefix = &tag[..if v { start - 1 } else { start }];
        let mut numbers = Vec::new();
        let mut i = start;
        loop {
            let begin = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            numbers.push(tag[begin..i].parse::<u64>().ok()?);
            if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                i += 1;
            } else {
                break;
            }
        }
        let suffix = &tag[i..];
        // Letters glued to the last number (`1.2.3rc1`, `1.0b`) mark a prerelease; so does a
        // prerelease word anywhere in the suffix (`-rc.1`, `-beta2`, `-alpine-dev`).
        let glued = suffix.as_bytes().first().is_some_and(|b| b.is_ascii_alphabetic());
        let word = suffix.split(['-', '.', '_', '+']).any(|part| {
            let letters = part.trim_end_matches(|c: char| c.is_ascii_digit()).to_ascii_lowercase();
            PRERELEASE_WORDS.contains(&letters.as_str())
        });
        Some(VersionTag {
            prefix: prefix.to_string(),
            v,
            numbers,
            suffix: suffix.to_string(),
            prerelease: glued || word,
        })
    }

    /// Same prefix, same `v`, same number of parts, same suffix.
    pub fn same_shape(&self, other: &VersionTag) -> bool {
        self.prefix == other.prefix
            && self.v == other.v
            && self.numbers.len() == other.numbers.len()
            && self.suffix == other.suffix
    }

    /// How far `self` is behind `newer` (`Current` when not behind).
    pub fn behind(&self, newer: &VersionTag) -> Behind {
        if newer.numbers.cmp(&self.numbers) != Ordering::Greater {
            return Behind::Current;
        }
        match self.numbers.iter().zip(&newer.numbers).position(|(a, b)| a != b) {
            Some(0) => Behind::Major,
            Some(1) => Behind::Minor,
            _ => Behind::Patch,
        }
    }

    fn in_track(&self, candidate: &VersionTag, track: Track) -> bool {
        let keep = match track {
            Track::Major => 0,
            Track::Minor => 1,
            Track::Patch => 2,
        };
        let keep = keep.min(self.numbers.len());
        self.numbers[..keep] == candidate.numbers[..keep]
    }
}

/// The answer for one installed tag against the tags upstream has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagComparison {
    /// The newest tag within the track (the installed one when nothing newer is).
    pub latest: String,
    /// The newest tag of any track, when it is newer than `latest`.
    pub newer_track: Option<String>,
    /// How far the installed tag is behind `latest`.
    pub behind: Behind,
    /// How many candidate tags had the same shape.
    pub candidates: usize,
}

/// Compare `installed` with `available`: only same-shape, non-prerelease candidates, never a
/// lower version. `None` when `installed` is not a version tag (a floating tag such as `latest`).
/// An installed prerelease is compared with the releases of the same shape without its marker
/// (`1.2.3-rc.1` is behind `1.2.3`).
pub fn compare_tags<S: AsRef<str>>(installed: &str, available: &[S], track: Track) -> Option<TagComparison> {
    let mine = VersionTag::parse(installed)?;
    let shape = if mine.prerelease { stable_shape(&mine) } else { mine.clone() };
    let mut best: Option<(VersionTag, &str)> = None;
    let mut best_track: Option<(VersionTag, &str)> = None;
    let mut candidates = 0;
    for tag in available {
        let tag = tag.as_ref();
        let Some(t) = VersionTag::parse(tag) else { continue };
        if t.prerelease || !t.same_shape(&shape) {
            continue;
        }
        candidates += 1;
        let newer = |b: &Option<(VersionTag, &str)>| b.as_ref().is_none_or(|(x, _)| t.numbers > x.numbers);
        if newer(&best) {
            best = Some((t.clone(), tag));
        }
        if mine.in_track(&t, track) && newer(&best_track) {
            best_track = Some((t, tag));
        }
    }
    let is_newer = |t: &VersionTag| t.numbers > mine.numbers || (mine.prerelease && t.numbers == mine.numbers);
    let behind_of = |t: &VersionTag| {
        if mine.prerelease && t.numbers == mine.numbers { Behind::Patch } else { mine.behind(t) }
    };
    let (latest, behind) = match &best_track {
        Some((t, s)) if is_newer(t) => (s.to_string(), behind_of(t)),
        _ => (installed.to_string(), Behind::Current),
    };
    let newer_track = match (&best, &best_track) {
        (Some((b, s)), Some((bt, _))) if b.numbers > bt.numbers && is_newer(b) => Some(s.to_string()),
        (Some((b, s)), None) if is_newer(b) => Some(s.to_string()),
        _ => None,
    };
    Some(TagComparison { latest, newer_track, behind, candidates })
}

/// The shape of the release an installed prerelease leads to: its suffix without the marker.
fn stable_shape(t: &VersionTag) -> VersionTag {
    let mut s = t.clone();
    s.prerelease = false;
    s.suffix = if s.suffix.as_bytes().first().is_some_and(|b| b.is_ascii_alphabetic()) {
        String::new()
    } else {
        // Drop the first `-word...` that is a prerelease marker and what follows it up to the
        // next `-` (`-rc.1-alpine` → `-alpine`).
        let mut parts: Vec<&str> = t.suffix.split('-').collect();
        if let Some(pos) = parts.iter().position(|p| {
            let head = p.split(['.', '_', '+']).next().unwrap_or("");
            PRERELEASE_WORDS
                .contains(&head.trim_end_matches(|c: char| c.is_ascii_digit()).to_ascii_lowercase().as_str())
        }) {
            parts.remove(pos);
        }
        parts.join("-")
    };
    s
}

/// A Kubernetes version for comparison: `v1.35.2-eks-1a2b3c`, `v1.35.2-gke.100`,
/// `v1.35.2+k3s1` → `(1, 35, 2)`; the vendor suffix is kept only for display.
pub fn kubernetes_version(s: &str) -> Option<(u64, u64, u64)> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut it = s.splitn(3, '.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    let rest = it.next()?;
    let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let patch = rest[..end].parse().ok()?;
    Some((major, minor, patch))
}

/// How far `installed` is behind `newer` (both `(major, minor, patch)`).
pub fn behind_triple(installed: (u64, u64, u64), newer: (u64, u64, u64)) -> Behind {
    if newer <= installed {
        Behind::Current
    } else if newer.0 != installed.0 {
        Behind::Major
    } else if newer.1 != installed.1 {
        Behind::Minor
    } else {
        Behind::Patch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(installed: &str, tags: &[&str], track: Track) -> Option<(String, Option<String>, Behind)> {
        compare_tags(installed, tags, track).map(|c| (c.latest, c.newer_track, c.behind))
    }

    #[test]
    fn shapes() {
        let t = VersionTag::parse("distroless-v1.39.1").unwrap();
        assert_eq!(
            (t.prefix.as_str(), t.v, t.numbers.as_slice(), t.suffix.as_str()),
            ("distroless-", true, &[1, 39, 1][..], "")
        );
        let t = VersionTag::parse("9.0-alpine").unwrap();
        assert_eq!(
            (t.prefix.as_str(), t.v, t.numbers.as_slice(), t.suffix.as_str()),
            ("", false, &[9, 0][..], "-alpine")
        );
        assert!(!t.prerelease);
        assert!(VersionTag::parse("v1.35.9").unwrap().v);
        assert!(VersionTag::parse("latest").is_none());
        assert!(VersionTag::parse("main").is_none());
        assert!(VersionTag::parse("stable").is_none());
        // A `v` inside a word is not the version's `v`; digits inside a word do not start it.
        assert!(VersionTag::parse("dev1").is_none());
        assert_eq!(VersionTag::parse("alpine3.19-v2").unwrap().numbers, vec![2]);
        for pre in [
            "1.2.3-rc.1",
            "1.2.3rc1",
            "v2.0.0-beta2",
            "1.0-alpha",
            "1.2.3-dev",
            "3.1-SNAPSHOT",
            "1.0.0-nightly.5",
            "1.0b",
        ] {
            assert!(VersionTag::parse(pre).unwrap().prerelease, "{pre}");
        }
        // Numbers too big for u64 are not a version.
        assert!(VersionTag::parse("99999999999999999999999.1").is_none());
    }

    #[test]
    fn ignored_tags() {
        assert!(is_ignored_tag("sha256-3f2a9c0e1b.sig"));
        assert!(is_ignored_tag("sha256-3f2a9c0e1b.att"));
        assert!(is_ignored_tag("sha256-3f2a9c0e1b.sbom"));
        assert!(is_ignored_tag("a1b2c3d"));
        assert!(is_ignored_tag("0123456789abcdef0123456789abcdef01234567"));
        assert!(!is_ignored_tag("1234567"));
        assert!(!is_ignored_tag("1.2.3"));
        assert!(!is_ignored_tag("cafe"));
    }

    #[test]
    fn same_shape_only() {
        let tags =
            ["v1.35.9", "v1.36.1", "1.40.0", "v1.37", "v1.36.2-rc.1", "v1.37.0-alpine", "sha256-ab12.sig", "latest"];
        assert_eq!(cmp("v1.35.9", &tags, Track::Major), Some(("v1.36.1".into(), None, Behind::Minor)));
        let tags = ["9.0-alpine", "9.2-alpine", "9.3", "10.0-bookworm", "9.4-alpine-rc1", "9.1-alpine3.19"];
        assert_eq!(cmp("9.0-alpine", &tags, Track::Major), Some(("9.2-alpine".into(), None, Behind::Minor)));
        let tags = ["distroless-v1.39.1", "distroless-v1.40.0", "v1.99.0", "distroless-1.41.0"];
        assert_eq!(
            cmp("distroless-v1.39.1", &tags, Track::Major),
            Some(("distroless-v1.40.0".into(), None, Behind::Minor))
        );
    }

    #[test]
    fn tracks_and_newer_track() {
        let tags = ["1.2.3", "1.2.7", "1.3.0", "1.4.2", "2.0.1", "3.0.0-rc.1"];
        assert_eq!(cmp("1.2.3", &tags, Track::Patch), Some(("1.2.7".into(), Some("2.0.1".into()), Behind::Patch)));
        assert_eq!(cmp("1.2.3", &tags, Track::Minor), Some(("1.4.2".into(), Some("2.0.1".into()), Behind::Minor)));
        assert_eq!(cmp("1.2.3", &tags, Track::Major), Some(("2.0.1".into(), None, Behind::Major)));
        // Current within the track, newer elsewhere: current, with the newer track shown.
        assert_eq!(cmp("1.2.7", &tags, Track::Patch), Some(("1.2.7".into(), Some("2.0.1".into()), Behind::Current)));
        // Never a lower version: an installed version newer than anything listed is current.
        assert_eq!(cmp("9.9.9", &tags, Track::Major), Some(("9.9.9".into(), None, Behind::Current)));
        // Not a version: the caller compares digests.
        assert_eq!(cmp("latest", &tags, Track::Major), None);
    }

    #[test]
    fn prerelease_installed() {
        let tags = ["1.2.3", "1.2.2", "1.2.4-rc.1"];
        assert_eq!(cmp("1.2.3-rc.1", &tags, Track::Major), Some(("1.2.3".into(), None, Behind::Patch)));
        assert_eq!(cmp("1.2.3-rc.1-alpine", &["1.2.3-alpine", "1.2.3"], Track::Major).unwrap().0, "1.2.3-alpine");
    }

    #[test]
    fn one_and_four_parts() {
        assert_eq!(cmp("17", &["16", "17", "18", "18-alpine"], Track::Major), Some(("18".into(), None, Behind::Major)));
        assert_eq!(cmp("1.2.3.4", &["1.2.3.9", "1.2.3"], Track::Patch), Some(("1.2.3.9".into(), None, Behind::Patch)));
        assert_eq!(cmp("17", &["18"], Track::Minor), Some(("17".into(), Some("18".into()), Behind::Current)));
    }

    #[test]
    fn kubernetes_versions() {
        assert_eq!(kubernetes_version("v1.35.2-eks-1a2b3c"), Some((1, 35, 2)));
        assert_eq!(kubernetes_version("v1.35.2-gke.100"), Some((1, 35, 2)));
        assert_eq!(kubernetes_version("v1.35.2+k3s1"), Some((1, 35, 2)));
        assert_eq!(kubernetes_version("1.36.3"), Some((1, 36, 3)));
        assert_eq!(kubernetes_version("v1.36"), None);
        assert_eq!(behind_triple((1, 35, 2), (1, 35, 4)), Behind::Patch);
        assert_eq!(behind_triple((1, 35, 2), (1, 36, 0)), Behind::Minor);
        assert_eq!(behind_triple((1, 35, 2), (1, 35, 2)), Behind::Current);
        assert_eq!(behind_triple((1, 36, 2), (1, 35, 9)), Behind::Current);
    }
}
