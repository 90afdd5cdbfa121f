//! Helm release rows: the chart version of each deployed release against its source: the
//! repository the config names for it (a classic repository with `index.yaml`, or `oci://`),
//! else an ArtifactHub search by chart name, scored, with the match and how sure it is.

use crate::engine::versions::{VersionsOptions, images::Registry, judge};
use crate::report::progress::{Counter, Progress};
use crate::report::versions::{Category, VersionRow, VersionStatus};
use crate::source::helm::release::Release;
use crate::source::upstream::{HubPackage, Upstream};

/// How sure an ArtifactHub match is, from its score.
pub fn confidence(score: u32) -> &'static str {
    match score {
        s if s >= 150 => "high",
        s if s >= 100 => "medium",
        _ => "low",
    }
}

/// Score an ArtifactHub package as the source of `chart`: the exact name counts most, then an
/// official or verified publisher, then the chart's own `home`/`sources` links naming the
/// package's repository. Packages whose name differs score 0 (never used).
pub fn score(chart: &str, links: &[String], p: &HubPackage) -> u32 {
    if !p.name.eq_ignore_ascii_case(chart) && !p.normalized_name.eq_ignore_ascii_case(chart) {
        return 0;
    }
    let mut s: u32 = 100;
    if p.official || p.repository.official {
        s += 40;
    }
    if p.repository.verified_publisher {
        s += 20;
    }
    let repo_host = p.repository.url.split("://").nth(1).unwrap_or(&p.repository.url).trim_end_matches('/');
    if !repo_host.is_empty()
        && links.iter().any(|l| {
            l.contains(repo_host) || (!p.repository.name.is_empty() && l.contains(&format!("/{}/", p.repository.name)))
        })
    {
        s += 50;
    }
    if p.deprecated {
        s = s.saturating_sub(30);
    }
    s
}

/// The best-scoring package (ties: ArtifactHub's order), with its score.
pub fn best_match<'a>(chart: &str, links: &[String], packages: &'a [HubPackage]) -> Option<(&'a HubPackage, u32)> {
    let mut best: Option<(&HubPackage, u32)> = None;
    for p in packages {
        let s = score(chart, links, p);
        if s > 0 && best.is_none_or(|(_, b)| s > b) {
            best = Some((p, s));
        }
    }
    best
}

/// What a chart row reads of a deployed release (kept instead of the decoded release, which
/// holds the whole chart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledChart {
    /// The release's name and namespace.
    pub name: String,
    pub namespace: String,
    /// The chart's name and version.
    pub chart: String,
    pub version: String,
    /// The chart's own `home` and `sources` links, from the release record's chart metadata.
    pub links: Vec<String>,
}

impl InstalledChart {
    pub fn of(rel: &Release) -> InstalledChart {
        let mut links = Vec::new();
        if let Some(meta) = rel.chart.as_ref().map(|c| &c.metadata) {
            links.extend(meta.home.iter().cloned());
            links.extend(meta.sources.iter().cloned());
        }
        InstalledChart {
            name: rel.name.clone(),
            namespace: rel.namespace.clone(),
            chart: rel.chart_name().to_string(),
            version: rel.chart_version().to_string(),
            links,
        }
    }
}

/// One row per release.
pub async fn release_rows(
    releases: &[InstalledChart],
    options: &VersionsOptions,
    upstream: &Upstream,
    registry: &Registry,
    progress: &dyn Progress,
) -> Vec<VersionRow> {
    let mut out = Vec::new();
    progress.start("charts", Some(releases.len() as u64));
    for rel in releases {
        out.push(release_row(rel, options, upstream, registry).await);
        progress.set(Counter::CacheHits, registry.cache_hits());
        progress.step(&rel.name);
    }
    out
}

/// One release's row: ignored, from the chart repository its rule names, else from ArtifactHub.
async fn release_row(
    rel: &InstalledChart,
    options: &VersionsOptions,
    upstream: &Upstream,
    registry: &Registry,
) -> VersionRow {
    let chart = rel.chart.clone();
    let mut row = VersionRow::new(Category::Helm, rel.name.clone(), rel.version.clone());
    row.namespace = Some(rel.namespace.clone());
    row.component = Some(chart.clone());
    let sources = vec![format!("helm:{}", rel.name)];
    if let Some(r) = options.config.ignored_by("HelmRelease", &rel.namespace, &rel.name, &sources) {
        return crate::engine::versions::mark_ignored(row, r);
    }
    if let Some(rule) = options.config.chart_rule(&rel.name, &rel.namespace) {
        let name = rule.chart.clone().unwrap_or_else(|| chart.clone());
        row.source = Some(format!("{}/{}", rule.repo.trim_end_matches('/'), name));
        let track = options.track_for(rule.track);
        return match registry.0.chart_versions(&rule.repo, &name).await {
            Err(e) => row.error(format!("chart {name} in {}: {e}", rule.repo)),
            Ok(versions) => judge::tagged_row(row, &versions, track),
        };
    }
    artifacthub_row(row, rel, options, upstream).await
}

/// A release's row from ArtifactHub: search by chart name, score, read the best match's versions.
async fn artifacthub_row(
    mut row: VersionRow,
    rel: &InstalledChart,
    options: &VersionsOptions,
    upstream: &Upstream,
) -> VersionRow {
    let base = &options.config.upstreams.artifacthub;
    let chart = rel.chart.as_str();
    let links = &rel.links;
    let packages = match upstream.artifacthub_search(base, chart).await {
        Ok(p) => p,
        Err(e) => return row.error(format!("ArtifactHub search for {chart}: {e}")),
    };
    let Some((p, score)) = best_match(chart, links, &packages) else {
        return row.unknown(format!("no chart named {chart:?} on ArtifactHub; name its repository in versions.charts"));
    };
    let details = match upstream.artifacthub_package(base, &p.repository.name, &p.name).await {
        Ok(d) => d,
        Err(e) => return row.error(format!("ArtifactHub package {}/{}: {e}", p.repository.name, p.name)),
    };
    let page = format!("{}/packages/helm/{}/{}", base.trim_end_matches('/'), p.repository.name, p.name);
    row.source =
        Some(format!("artifacthub {}/{} ({} confidence, score {score})", p.repository.name, p.name, confidence(score)));
    let versions: Vec<&str> =
        details.available_versions.iter().filter(|v| !v.prerelease).map(|v| v.version.as_str()).collect();
    let mut row = judge::tagged_row(row, &versions, options.track_for(None));
    if let Some(latest) = row.latest.clone().filter(|_| details.has_changelog) {
        row.notes = Some(format!("{page}?modal=changelog&version={latest}"));
    } else {
        row.notes = Some(page);
    }
    if details.deprecated || p.deprecated {
        let note = "the chart is deprecated on ArtifactHub".to_string();
        row.why = Some(match row.why.take() {
            Some(w) => format!("{w}; {note}"),
            None => note,
        });
        if row.status == VersionStatus::Current {
            row.status = VersionStatus::Unknown;
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::upstream::HubRepository;

    fn pkg(name: &str, repo: &str, url: &str, official: bool, verified: bool) -> HubPackage {
        HubPackage {
            name: name.into(),
            normalized_name: name.into(),
            version: "1.0.0".into(),
            app_version: None,
            deprecated: false,
            official,
            repository: HubRepository { name: repo.into(), url: url.into(), official, verified_publisher: verified },
        }
    }

    #[test]
    fn scoring() {
        let packages = vec![
            pkg("redis-ha", "dandydev", "https://dandydev.github.io/charts", false, false),
            pkg("redis", "someone", "https://someone.github.io/charts", false, false),
            pkg("redis", "bitnami", "https://charts.bitnami.com/bitnami", false, true),
        ];
        let (p, s) = best_match("redis", &[], &packages).unwrap();
        assert_eq!((p.repository.name.as_str(), confidence(s)), ("bitnami", "medium"));
        // The chart's own links naming a repository win.
        let links = vec!["https://someone.github.io/charts/redis".to_string()];
        let (p, s) = best_match("redis", &links, &packages).unwrap();
        assert_eq!((p.repository.name.as_str(), confidence(s)), ("someone", "high"));
        assert!(best_match("postgres", &[], &packages).is_none());
    }
}
