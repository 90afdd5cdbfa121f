//! Chart repositories: what versions of a chart a repository has, and each version's metadata
//! (appVersion, deprecated, home, sources, created). Two kinds:
//!
//! - a classic repository: `<url>/index.yaml` (as `helm repo index` writes it), read through the
//!   registry client's HTTP cache (the TTL of its options), read and parsed once per client, an
//!   error too;
//! - an OCI repository (`oci://host[:port]/path`): the chart is the repository `path/<chart>`
//!   (as `helm push chart.tgz oci://host/path` stores it; a URL that already ends in `/<chart>` is
//!   used as it is). Versions are its tags with `_` read back as `+` (OCI tags cannot hold `+`);
//!   a version's metadata is the chart's config blob (`application/vnd.cncf.helm.config.v1+json`,
//!   Chart.yaml as JSON), fetched only for the versions asked about and cached by digest.
//!
//! Comparing versions is the engine's job; this module only reads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Deserialize;

use crate::source::chart_index::{ChartVersion, Index};
use crate::source::registry::{Registries, RegistryError, url_host};

/// The media type of a Helm chart's config blob in an OCI registry.
pub const HELM_CONFIG_MEDIA_TYPE: &str = "application/vnd.cncf.helm.config.v1+json";

/// Where a chart's versions are read from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ChartSource {
    /// A classic repository: the URL `index.yaml` is under.
    Classic { url: String },
    /// An OCI repository: registry and repository path prefix (from `oci://registry/path`).
    Oci { registry: String, path: String },
}

impl ChartSource {
    /// `https://charts.example.com/stable`, `http://127.0.0.1:8080`, or `oci://ghcr.io/org/charts`.
    pub fn parse(url: &str) -> Result<ChartSource, RegistryError> {
        let url = url.trim();
        if let Some(rest) = url.strip_prefix("oci://") {
            let rest = rest.trim_end_matches('/');
            let (registry, path) = rest.split_once('/').unwrap_or((rest, ""));
            if registry.is_empty() {
                return Err(RegistryError::Config(format!("chart source {url:?} names no registry")));
            }
            return Ok(ChartSource::Oci { registry: registry.to_string(), path: path.to_string() });
        }
        url_host(url)?;
        Ok(ChartSource::Classic { url: url.trim_end_matches('/').to_string() })
    }

    /// The OCI repository holding `chart`.
    fn oci_repository(path: &str, chart: &str) -> String {
        if path.is_empty() {
            chart.to_string()
        } else if path.rsplit('/').next() == Some(chart) {
            path.to_string()
        } else {
            format!("{path}/{chart}")
        }
    }
}

/// A classic repository's index.yaml: only what is read.
#[derive(Deserialize)]
struct IndexFile {
    #[serde(default)]
    entries: HashMap<String, Vec<IndexEntry>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexEntry {
    #[serde(default)]
    name: String,
    #[serde(default)]
    version: Option<serde_json::Value>,
    #[serde(default)]
    app_version: Option<serde_json::Value>,
    #[serde(default)]
    deprecated: bool,
    #[serde(default)]
    home: Option<String>,
    #[serde(default)]
    sources: Option<Vec<String>>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    created: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

/// Reads chart repositories through a [`Registries`] client (its cache, counters and manners).
/// A classic repository's `index.yaml` is read once per client (the client keeps it, as it keeps
/// tag lists): every release of one repository shares one fetch, with or without the disk cache.
pub struct ChartRepos<'a> {
    registries: &'a Registries,
}

impl<'a> ChartRepos<'a> {
    pub fn new(registries: &'a Registries) -> ChartRepos<'a> {
        ChartRepos { registries }
    }

    /// The versions of `chart` in `source`, as the repository lists them (index order, or tag
    /// order with `_` read back as `+`). A chart the repository does not have is
    /// [`RegistryError::NotFound`].
    pub async fn versions(&self, source: &ChartSource, chart: &str) -> Result<Vec<String>, RegistryError> {
        match source {
            ChartSource::Classic { url } => {
                let index = self.index(url).await?;
                let list = index.get(chart).ok_or_else(|| not_in_index(url, chart))?;
                Ok(list.iter().map(|v| v.version.clone()).collect())
            }
            ChartSource::Oci { registry, path } => {
                let repository = ChartSource::oci_repository(path, chart);
                let tags = self.registries.tags(registry, &repository).await?;
                Ok(tags.into_iter().map(|t| t.replace('_', "+")).collect())
            }
        }
    }

    /// Every version of `chart` with its metadata. For an OCI repository this reads one manifest
    /// and one config blob per version: prefer [`ChartRepos::version`] for the few the engine needs.
    pub async fn all(&self, source: &ChartSource, chart: &str) -> Result<Vec<ChartVersion>, RegistryError> {
        match source {
            ChartSource::Classic { url } => {
                let index = self.index(url).await?;
                index.get(chart).cloned().ok_or_else(|| not_in_index(url, chart))
            }
            ChartSource::Oci { .. } => {
                let mut out = Vec::new();
                for v in self.versions(source, chart).await? {
                    out.push(self.version(source, chart, &v).await?);
                }
                Ok(out)
            }
        }
    }

    /// One version's metadata.
    pub async fn version(
        &self,
        source: &ChartSource,
        chart: &str,
        version: &str,
    ) -> Result<ChartVersion, RegistryError> {
        match source {
            ChartSource::Classic { url } => {
                let index = self.index(url).await?;
                index
                    .get(chart)
                    .and_then(|l| l.iter().find(|v| v.version == version))
                    .cloned()
                    .ok_or_else(|| not_in_index(url, &format!("{chart} {version}")))
            }
            ChartSource::Oci { registry, path } => self.oci_version(registry, path, chart, version).await,
        }
    }

    /// The repository's index, read once per client (its error too: a repository that is down
    /// is asked once, and every release of it reports the failure).
    async fn index(&self, url: &str) -> Result<Index, RegistryError> {
        crate::source::registry::shared(&self.registries.chart_indexes, url.to_string(), || self.read_index(url)).await
    }

    async fn read_index(&self, url: &str) -> Result<Index, RegistryError> {
        let index_url = format!("{url}/index.yaml");
        let ttl = Some(self.registries.options().cache_ttl);
        // Kept parsed by `index`, so not kept as a body too.
        let got = self.registries.get_unshared(&index_url, "application/x-yaml, text/yaml, */*", ttl, &[]).await?;
        let host = url_host(url)?;
        let bad =
            |reason: String| RegistryError::BadResponse { registry: host.clone(), what: index_url.clone(), reason };
        let text = std::str::from_utf8(&got.body).map_err(|_| bad("index.yaml is not UTF-8".into()))?;
        let file: IndexFile = serde_saphyr::from_str_with_options(text, serde_saphyr::options! { with_snippet: false })
            .map_err(|e| bad(format!("index.yaml is not a chart repository index: {e}")))?;
        let mut out = HashMap::new();
        for (name, entries) in file.entries {
            let versions = entries
                .into_iter()
                .filter_map(|e| {
                    Some(ChartVersion {
                        name: if e.name.is_empty() { name.clone() } else { e.name },
                        version: scalar(e.version?)?,
                        app_version: e.app_version.and_then(scalar),
                        deprecated: e.deprecated,
                        home: e.home,
                        sources: e.sources.unwrap_or_default(),
                        description: e.description,
                        created: e.created,
                        annotations: e.annotations.unwrap_or_default(),
                    })
                })
                .collect();
            out.insert(name, versions);
        }
        Ok(Arc::new(out))
    }

    async fn oci_version(
        &self,
        registry: &str,
        path: &str,
        chart: &str,
        version: &str,
    ) -> Result<ChartVersion, RegistryError> {
        #[derive(Deserialize)]
        struct Manifest {
            config: Descriptor,
            #[serde(default)]
            annotations: BTreeMap<String, String>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Descriptor {
            media_type: String,
            digest: String,
        }
        let repository = ChartSource::oci_repository(path, chart);
        let tag = version.replace('+', "_");
        let what = format!("chart {repository}:{tag}");
        let bad =
            |reason: String| RegistryError::BadResponse { registry: registry.to_string(), what: what.clone(), reason };
        let got =
            self.registries.manifest(registry, &repository, &tag, crate::source::registry::media::OCI_MANIFEST).await?;
        let manifest: Manifest =
            serde_json::from_slice(&got.body).map_err(|e| bad(format!("not an OCI manifest: {e}")))?;
        if manifest.config.media_type != HELM_CONFIG_MEDIA_TYPE {
            return Err(bad(format!("not a Helm chart (config media type {})", manifest.config.media_type)));
        }
        let blob = self.registries.blob(registry, &repository, &manifest.config.digest).await?;
        let mut meta: ChartVersion = serde_json::from_slice(&blob.body)
            .map_err(|e| bad(format!("the chart config is not Chart.yaml JSON: {e}")))?;
        if meta.created.is_none() {
            meta.created = manifest.annotations.get("org.opencontainers.image.created").cloned();
        }
        Ok(meta)
    }
}

fn not_in_index(url: &str, what: &str) -> RegistryError {
    RegistryError::NotFound {
        registry: url_host(url).unwrap_or_else(|_| url.to_string()),
        what: format!("chart {what} in {url}/index.yaml"),
    }
}

/// A YAML scalar as text (`version: 1.0` parses as a number).
fn scalar(v: serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chart repository on loopback serving one index.yaml at `/index.yaml` and `/down/`
    /// failing (HTTP 500); it logs the requests it answers.
    async fn repository() -> crate::source::test_server::TestServer {
        crate::source::test_server::serve(|target| match target {
            "/index.yaml" => (
                200,
                vec![("content-type", "text/yaml".to_string())],
                "apiVersion: v1\nentries:\n  web:\n  - {name: web, version: 1.2.0}\n  - {name: web, version: 1.1.0}\n  db:\n  - {name: db, version: 2.0.0}\n".into(),
            ),
            _ => (500, vec![], "down".into()),
        })
        .await
    }

    /// A client as `versions --no-cache` (or `cache_ttl: 0s` with no cache directory) builds it.
    fn no_cache() -> Registries {
        let options = crate::source::registry::ClientOptions {
            cache_dir: None,
            cache_ttl: std::time::Duration::ZERO,
            ..Default::default()
        };
        Registries::new(options, |_| None).unwrap()
    }

    /// `--no-cache` and `cache_ttl: 0s` keep nothing between runs, but within one run a
    /// repository's index is read once, however many releases (and lookups) name it.
    #[tokio::test]
    async fn an_index_is_fetched_once_per_repository_per_run_without_a_cache() {
        let server = repository().await;
        let source = ChartSource::parse(&server.url).unwrap();
        let registries = no_cache();
        // Three releases of the repository, each looked up on its own (as the engine does),
        // two of them at once.
        let (one, two) = (ChartRepos::new(&registries), ChartRepos::new(&registries));
        let (a, b) = tokio::join!(one.versions(&source, "web"), two.versions(&source, "db"));
        assert_eq!(
            (a.unwrap(), b.unwrap()),
            (vec!["1.2.0".to_string(), "1.1.0".to_string()], vec!["2.0.0".to_string()])
        );
        assert_eq!(ChartRepos::new(&registries).version(&source, "web", "1.1.0").await.unwrap().version, "1.1.0");
        assert!(matches!(
            ChartRepos::new(&registries).versions(&source, "gone").await,
            Err(RegistryError::NotFound { .. })
        ));
        assert_eq!(server.seen(), vec!["/index.yaml".to_string()], "one fetch of index.yaml");
        // A new client (the next run) reads it again: nothing is kept on disk.
        ChartRepos::new(&no_cache()).versions(&source, "web").await.unwrap();
        assert_eq!(server.count("/index.yaml"), 2);
    }

    /// A repository whose index fails: asked once per run (at once or one after another), and
    /// every release of it gets the error.
    #[tokio::test]
    async fn a_failing_index_is_fetched_once_per_run() {
        let server = repository().await;
        let source = ChartSource::parse(&format!("{}/down", server.url)).unwrap();
        let registries = no_cache();
        let repos = ChartRepos::new(&registries);
        let mut answers =
            futures::future::join_all((0..10).map(|i| repos.versions(&source, if i % 2 == 0 { "web" } else { "db" })))
                .await;
        for _ in 0..10 {
            answers.push(repos.versions(&source, "web").await);
        }
        for a in &answers {
            assert!(matches!(a, Err(RegistryError::Status { status: 500, .. })), "{a:?}");
        }
        assert_eq!(server.seen(), vec!["/down/index.yaml".to_string()]);
    }

    #[test]
    fn sources_are_classic_or_oci() {
        assert_eq!(
            ChartSource::parse("oci://127.0.0.1:5000/charts/").unwrap(),
            ChartSource::Oci { registry: "127.0.0.1:5000".into(), path: "charts".into() }
        );
        assert_eq!(
            ChartSource::parse("https://charts.example.com/stable/").unwrap(),
            ChartSource::Classic { url: "https://charts.example.com/stable".into() }
        );
        assert!(ChartSource::parse("ftp://x").is_err());
        assert!(ChartSource::parse("oci:///charts").is_err());
        assert_eq!(ChartSource::oci_repository("charts", "web"), "charts/web");
        assert_eq!(ChartSource::oci_repository("charts/web", "web"), "charts/web");
        assert_eq!(ChartSource::oci_repository("", "web"), "web");
    }
}
