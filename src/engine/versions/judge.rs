//! The status of one row from what upstream answered: pure functions, one per kind of row.

use crate::engine::versions::tags::{Behind, Track, behind_triple, compare_tags, kubernetes_version};
use crate::report::versions::{VersionRow, VersionStatus};

pub fn status_of(b: Behind) -> VersionStatus {
    match b {
        Behind::Current => VersionStatus::Current,
        Behind::Patch => VersionStatus::PatchBehind,
        Behind::Minor => VersionStatus::MinorBehind,
        Behind::Major => VersionStatus::MajorBehind,
    }
}

/// The release-notes page of a Kubernetes minor.
pub fn kubernetes_changelog(minor: u64) -> String {
    format!("https://github.com/kubernetes/kubernetes/blob/master/CHANGELOG/CHANGELOG-1.{minor}.md")
}

/// A Kubernetes version (`/version` or a kubelet) against the release pointers: `patch_pointer`
/// is `stable-1.N.txt` of its minor, `stable` is `stable.txt`. Vendor suffixes are kept in
/// `installed` and ignored for the comparison.
pub fn kubernetes_row(
    mut row: VersionRow,
    patch_pointer: Option<&str>,
    stable: Option<&str>,
    track: Track,
) -> VersionRow {
    let Some(mine) = kubernetes_version(&row.installed) else {
        let why = format!("{:?} is not a Kubernetes version", row.installed);
        return row.unknown(why);
    };
    let parse = |s: Option<&str>| s.and_then(|s| kubernetes_version(s).map(|v| (v, s.to_string())));
    let patch = parse(patch_pointer);
    let newest = parse(stable);
    // The newest within the track: the patch pointer of our minor, or stable.txt when the track
    // allows a new minor (1.x has never had a new major). Never lower than installed.
    let in_track = match track {
        Track::Patch => patch.clone(),
        Track::Minor | Track::Major => match (&patch, &newest) {
            (Some(p), Some(n)) if n.0.0 == mine.0 || track == Track::Major => {
                Some(if n.0 > p.0 { n.clone() } else { p.clone() })
            }
            (Some(p), _) => Some(p.clone()),
            (None, n) => n.clone(),
        },
    };
    let Some((target, shown)) = in_track.filter(|(v, _)| *v > mine) else {
        row.latest = Some(row.installed.clone());
        row.status = VersionStatus::Current;
        if let Some((n, s)) = newest.filter(|(n, _)| *n > mine) {
            row.newer_track = Some(s);
            row.notes = Some(kubernetes_changelog(n.1));
        }
        return row;
    };
    row.status = status_of(behind_triple(mine, target));
    row.latest = Some(shown);
    row.notes = Some(kubernetes_changelog(target.1));
    if let Some((_, s)) = newest.filter(|(n, _)| *n > target) {
        row.newer_track = Some(s);
    }
    row
}

/// A version (containerd, a chart) against a list of upstream versions, by tag shape. The
/// installed version is compared as written, and with a `v` added or removed when upstream
/// writes its tags the other way (containerd reports `1.7.27`, releases are `v1.7.27`).
pub fn tagged_row<S: AsRef<str>>(mut row: VersionRow, available: &[S], track: Track) -> VersionRow {
    let installed = row.installed.clone();
    let flipped = match installed.strip_prefix('v') {
        Some(rest) => rest.to_string(),
        None => format!("v{installed}"),
    };
    let mut best = compare_tags(&installed, available, track);
    if best.as_ref().is_none_or(|c| c.candidates == 0)
        && let Some(alt) = compare_tags(&flipped, available, track).filter(|c| c.candidates > 0)
    {
        best = Some(alt);
    }
    match best {
        None => row.unknown(format!("{installed:?} is not a version (a floating tag)")),
        Some(c) if c.candidates == 0 => row.unknown(format!("upstream has no release shaped like {installed:?}")),
        Some(c) => {
            row.status = status_of(c.behind);
            row.latest = Some(if c.behind == Behind::Current { installed } else { c.latest });
            row.newer_track = c.newer_track;
            row
        }
    }
}

/// A floating tag (`latest`): the digests the pods run against the registry's digest for the tag,
/// counting the index digest and each of its per-platform manifests as the same image.
pub fn floating_row(mut row: VersionRow, registry_digests: &[String]) -> VersionRow {
    let Some(current) = registry_digests.first() else {
        return row.unknown("the registry gave no digest for the tag");
    };
    row.latest = Some(current.clone());
    if row.running_digests.is_empty() {
        return row.unknown("floating tag, and no pod reports the digest it runs (status.containerStatuses[].imageID)");
    }
    if row.running_digests.iter().all(|d| registry_digests.contains(d)) {
        row.status = VersionStatus::Current;
    } else {
        row.status = VersionStatus::NewerImage;
        let stale: Vec<&str> =
            row.running_digests.iter().filter(|d| !registry_digests.contains(d)).map(String::as_str).collect();
        row.why = Some(format!("running {} differs from the tag's current digest", stale.join(", ")));
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::versions::Category;

    fn row(installed: &str) -> VersionRow {
        VersionRow::new(Category::Cluster, "kubernetes", installed)
    }

    #[test]
    fn kubernetes() {
        let r = kubernetes_row(row("v1.35.2-eks-abc"), Some("v1.35.4"), Some("v1.36.3"), Track::Major);
        assert_eq!(
            (r.status, r.latest.as_deref(), r.newer_track.as_deref()),
            (VersionStatus::MinorBehind, Some("v1.36.3"), None)
        );
        assert!(r.notes.unwrap().ends_with("CHANGELOG-1.36.md"));
        let r = kubernetes_row(row("v1.35.2+k3s1"), Some("v1.35.4"), Some("v1.36.3"), Track::Patch);
        assert_eq!(
            (r.status, r.latest.as_deref(), r.newer_track.as_deref()),
            (VersionStatus::PatchBehind, Some("v1.35.4"), Some("v1.36.3"))
        );
        let r = kubernetes_row(row("v1.35.4"), Some("v1.35.4"), Some("v1.36.3"), Track::Patch);
        assert_eq!((r.status, r.newer_track.as_deref()), (VersionStatus::Current, Some("v1.36.3")));
        let r = kubernetes_row(row("v1.36.3"), Some("v1.36.3"), Some("v1.36.3"), Track::Major);
        assert_eq!((r.status, r.newer_track), (VersionStatus::Current, None));
        // Never a lower version: a pointer behind what runs (a mirror that lags) is current.
        let r = kubernetes_row(row("v1.36.5"), Some("v1.36.3"), Some("v1.36.3"), Track::Major);
        assert_eq!(r.status, VersionStatus::Current);
        assert_eq!(kubernetes_row(row("weird"), None, None, Track::Major).status, VersionStatus::Unknown);
    }

    #[test]
    fn containerd_and_charts() {
        let releases = ["v1.7.27", "v1.7.28", "v2.1.4", "v2.2.0-rc.1"];
        let r = tagged_row(row("1.7.27"), &releases, Track::Minor);
        assert_eq!(
            (r.status, r.latest.as_deref(), r.newer_track.as_deref()),
            (VersionStatus::PatchBehind, Some("v1.7.28"), Some("v2.1.4"))
        );
        let r = tagged_row(row("v2.1.4"), &releases, Track::Major);
        assert_eq!((r.status, r.latest.as_deref()), (VersionStatus::Current, Some("v2.1.4")));
        let r = tagged_row(row("1.2"), &releases, Track::Major);
        assert_eq!(r.status, VersionStatus::Unknown);
        assert!(r.why.unwrap().contains("shaped like"));
    }

    #[test]
    fn floating() {
        let mut r = row("latest");
        r.running_digests = vec!["sha256:amd64".into()];
        let r2 = floating_row(r.clone(), &["sha256:index".into(), "sha256:amd64".into(), "sha256:arm64".into()]);
        assert_eq!(r2.status, VersionStatus::Current);
        let r3 = floating_row(r.clone(), &["sha256:new".into(), "sha256:newamd64".into()]);
        assert_eq!(r3.status, VersionStatus::NewerImage);
        assert!(r3.why.unwrap().contains("sha256:amd64"));
        r.running_digests.clear();
        assert_eq!(floating_row(r, &["sha256:new".into()]).status, VersionStatus::Unknown);
    }
}
