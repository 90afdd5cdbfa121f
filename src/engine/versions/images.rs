//! Image rows: one lookup per unique repository (tags) and per unique repository and floating
//! tag (digests), however many workloads use them; then each use is judged by tag shape, or by
//! digest for floating tags.
//!
//! The registry is reached through [`RegistryApi`], which the registry client implements (and
//! tests fake), so the engine holds no HTTP code of its own.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};

use crate::engine::versions::inventory::ImageUse;
use crate::engine::versions::probes::{self, Extract, ProbeRequest};
use crate::engine::versions::tags::VersionTag;
use crate::engine::versions::{Show, VersionsOptions, judge, mark_ignored};
use crate::report::progress::{Counter, Progress};
use crate::report::versions::{Category, VersionRow};
use crate::source::chart_repo::{ChartRepos, ChartSource};
use crate::source::registry::{ImageRef, Registries};

/// An image reference, parsed and normalised (`nginx` → `docker.io/library/nginx`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageName {
    /// Registry host with port (`docker.io`, `127.0.0.1:5000`).
    pub registry: String,
    /// Repository path (`library/nginx`).
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl ImageName {
    /// `registry/repository`.
    pub fn repo(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }
}

/// What the engine asks of registries and chart repositories.
pub trait RegistryApi: Send + Sync {
    /// Parse and normalise an image reference.
    fn parse(&self, image: &str) -> Result<ImageName, String>;
    /// Every tag of the repository (all pages).
    fn tags<'a>(&'a self, image: &'a ImageName) -> BoxFuture<'a, Result<Vec<String>, String>>;
    /// The digests a tag stands for: the manifest or index digest first, then each per-platform
    /// manifest digest of an index.
    fn digests<'a>(&'a self, image: &'a ImageName, tag: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>>;
    /// Credentials from an imagePullSecret (`.dockerconfigjson` bytes), kept in memory only;
    /// returns the registries they are for.
    fn add_pull_secret(&self, docker_config: &[u8]) -> Result<Vec<String>, String>;
    /// Every version of `chart` in a chart repository (`https://...` with index.yaml, or
    /// `oci://host/path`).
    fn chart_versions<'a>(&'a self, repo: &'a str, chart: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>>;
    /// Requests made so far, per host.
    fn request_counts(&self) -> BTreeMap<String, u64>;
    /// Answers served from the disk cache so far, every host together.
    fn cache_hits(&self) -> u64 {
        0
    }
    /// One GET of an app probe's URL, with credentials from the environment variables it names
    /// (never shown); the answer's body. Errors name what failed, never the answer or a secret.
    fn probe<'a>(&'a self, probe: &'a ProbeRequest) -> BoxFuture<'a, Result<Vec<u8>, String>>;
}

/// The registry seam, shared.
#[derive(Clone)]
pub struct Registry(pub Arc<dyn RegistryApi>);

impl Registry {
    /// The seam over the registry client (shared with the upstream lookups).
    pub fn new(client: Arc<Registries>) -> Registry {
        Registry(Arc::new(Client(client)))
    }

    pub fn request_counts(&self) -> BTreeMap<String, u64> {
        self.0.request_counts()
    }

    /// Answers served from the disk cache so far (for the progress display).
    pub fn cache_hits(&self) -> u64 {
        self.0.cache_hits()
    }
}

/// The registry client and chart repositories behind the seam.
struct Client(Arc<Registries>);

fn name_of(r: ImageRef) -> ImageName {
    ImageName { registry: r.registry, repository: r.repository, tag: r.tag, digest: r.digest }
}

impl RegistryApi for Client {
    fn parse(&self, image: &str) -> Result<ImageName, String> {
        ImageRef::parse(image).map(name_of).map_err(|e| e.to_string())
    }
    fn tags<'a>(&'a self, image: &'a ImageName) -> BoxFuture<'a, Result<Vec<String>, String>> {
        Box::pin(async move { self.0.tags(&image.registry, &image.repository).await.map_err(|e| e.to_string()) })
    }
    fn digests<'a>(&'a self, image: &'a ImageName, tag: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>> {
        Box::pin(async move {
            let d = self.0.digest(&image.registry, &image.repository, tag).await.map_err(|e| e.to_string())?;
            let mut out = vec![d.digest.clone()];
            out.extend(d.index.iter().cloned());
            out.extend(d.manifests.iter().map(|m| m.digest.clone()));
            out.dedup();
            Ok(out)
        })
    }
    fn add_pull_secret(&self, docker_config: &[u8]) -> Result<Vec<String>, String> {
        self.0.add_docker_config(docker_config).map_err(|e| e.to_string())
    }
    fn chart_versions<'a>(&'a self, repo: &'a str, chart: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>> {
        Box::pin(async move {
            let source = ChartSource::parse(repo).map_err(|e| e.to_string())?;
            ChartRepos::new(&self.0).versions(&source, chart).await.map_err(|e| e.to_string())
        })
    }
    fn request_counts(&self) -> BTreeMap<String, u64> {
        self.0.counts().into_iter().filter(|(_, c)| c.requests > 0).map(|(h, c)| (h, c.requests)).collect()
    }
    fn cache_hits(&self) -> u64 {
        self.0.counts().values().map(|c| c.cache_hits).sum()
    }
    fn probe<'a>(&'a self, probe: &'a ProbeRequest) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move {
            let var = |name: &str, key: &str| {
                std::env::var(name)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| format!("environment variable {name} ({key}) is not set"))
            };
            let authorization = match (&probe.token_env, &probe.username_env, &probe.password_env) {
                (Some(t), _, _) => Some(format!("Bearer {}", var(t, "token_env")?)),
                (None, Some(u), Some(p)) => {
                    let (u, p) = (var(u, "username_env")?, var(p, "password_env")?);
                    Some(crate::source::registry::Credential::new(u, p).basic())
                }
                _ => None,
            };
            let headers: Vec<(&str, &str)> = authorization.iter().map(|a| ("authorization", a.as_str())).collect();
            let accept = "application/json, text/plain;q=0.9, */*;q=0.8";
            match self.0.probe(&probe.url, accept, &headers, probes::MAX_ANSWER, probe.timeout).await {
                Ok(got) => Ok(got.body.to_vec()),
                Err(e) => Err(probe_error(e)),
            }
        })
    }
}

/// A probe's failure in the words of a probe (the client's errors speak of registries).
fn probe_error(e: crate::source::registry::RegistryError) -> String {
    use crate::source::registry::RegistryError as E;
    match e {
        E::Connect { reason, .. } => format!("could not connect: {reason}"),
        E::Timeout { secs, .. } => format!("no answer within {secs} s"),
        E::Unauthorized { status, .. } => format!("HTTP {status} (the app refused the request or its credentials)"),
        E::NotFound { .. } => "HTTP 404".to_string(),
        E::Status { status, .. } => format!("HTTP {status}"),
        E::BadResponse { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// A lookup's answer, shared by every row that needs it.
type Answer = Result<Arc<Vec<String>>, String>;

/// Lookups for one scan: each repository's tags and each (repository, tag)'s digests once.
struct Memo {
    tags: HashMap<String, Answer>,
    digests: HashMap<(String, String), Answer>,
}

/// The rows of every image use. `uses` carries each use's category (cluster or workloads).
/// Helm-managed images are looked up only under `--show all` (hidden otherwise); ignored ones
/// never.
pub async fn image_rows(
    uses: Vec<(Category, ImageUse)>,
    options: &VersionsOptions,
    registry: &Registry,
    progress: &dyn Progress,
) -> Vec<VersionRow> {
    let api = registry.0.as_ref();
    let config = &options.config;
    // Group uses into rows: one per (category, namespace, workload, container).
    // Each row: the row, the image to look up, whether to look it up, and its app probe.
    #[allow(clippy::type_complexity)]
    let mut rows: Vec<(VersionRow, Option<ImageName>, bool, Option<(ProbeRequest, Extract)>)> = Vec::new();
    for (category, u) in uses {
        let name = format!("{}/{}", u.kind, u.name);
        let mut row = VersionRow::new(category, name.clone(), "?");
        row.namespace = Some(u.namespace.clone());
        row.component = Some(u.container.clone());
        row.image = Some(u.image.clone());
        row.objects = vec![u.object()];
        row.running_digests = u.running_digests.iter().cloned().collect();
        row.helm_managed = u.helm_release.is_some();
        let sources: Vec<String> = u.helm_release.iter().map(|r| format!("helm:{r}")).collect();
        let parsed = match api.parse(&u.image) {
            Ok(p) => p,
            Err(e) => {
                rows.push((row.error(format!("image {:?}: {e}", u.image)), None, false, None));
                continue;
            }
        };
        row.installed = parsed.tag.clone().or_else(|| parsed.digest.clone()).unwrap_or_else(|| "?".into());
        let rule = config.image_rule(&parsed.repo(), parsed.tag.as_deref());
        if let Some(r) = config.ignored_by(&u.kind, &u.namespace, &u.name, &sources) {
            rows.push((mark_ignored(row, r), None, false, None));
            continue;
        }
        if let Some(r) = rule.filter(|r| r.ignore) {
            row.ignored = Some(format!(
                "versions.images {}{}",
                r.image,
                r.note.as_ref().map(|n| format!(": {n}")).unwrap_or_default()
            ));
            let why = row.ignored.clone().map(|i| format!("ignored by {i}"));
            row.why = why;
            rows.push((row, None, false, None));
            continue;
        }
        let look = !row.helm_managed || options.show == Show::All;
        let probe = config
            .probe_for(&parsed.repo(), parsed.tag.as_deref(), &u.namespace, &u.name)
            .map(|p| (p.request(&u.namespace, &u.name), p.extract()));
        let lookup_name = match rule.and_then(|r| r.source.as_deref()) {
            Some(src) => match api.parse(src) {
                Ok(mut s) => {
                    s.tag = parsed.tag.clone();
                    s.digest = parsed.digest.clone();
                    s
                }
                Err(e) => {
                    rows.push((row.error(format!("versions.images source {src:?}: {e}")), None, false, None));
                    continue;
                }
            },
            None => parsed,
        };
        rows.push((row, Some(lookup_name), look, probe));
    }

    // One tag list per unique repository; one digest lookup per unique floating (repo, tag).
    let mut memo = Memo { tags: HashMap::new(), digests: HashMap::new() };
    let mut want_tags: BTreeMap<String, ImageName> = BTreeMap::new();
    let mut want_digests: BTreeMap<(String, String), ImageName> = BTreeMap::new();
    let mut want_probes: BTreeMap<ProbeRequest, ()> = BTreeMap::new();
    for (_, name, look, probe) in &rows {
        let (Some(n), true) = (name, *look) else { continue };
        if let Some((p, _)) = probe {
            want_probes.insert(p.clone(), ());
        }
        match n.tag.as_deref() {
            // A floating tag with a probe is judged by the probed version against the tags.
            Some(t) if VersionTag::parse(t).is_some() || probe.is_some() => {
                want_tags.entry(n.repo()).or_insert_with(|| n.clone());
            }
            Some(t) => {
                want_digests.entry((n.repo(), t.to_string())).or_insert_with(|| n.clone());
            }
            None => {}
        }
    }
    // Each lookup is one step ("repositories asked"), the cache hits read after it.
    let lookups = want_tags.len() + want_digests.len() + want_probes.len();
    if lookups > 0 {
        progress.start("repositories", Some(lookups as u64));
    }
    let asked = |what: &str| {
        progress.set(Counter::CacheHits, registry.cache_hits());
        progress.step(what);
    };
    let tag_results: Vec<(String, Result<Vec<String>, String>)> = stream::iter(want_tags)
        .map(|(repo, n)| async move { (repo, api.tags(&n).await) })
        .buffer_unordered(16)
        .inspect(|(repo, _)| asked(repo))
        .collect()
        .await;
    for (repo, r) in tag_results {
        memo.tags.insert(repo, r.map(Arc::new));
    }
    #[allow(clippy::type_complexity)]
    let digest_results: Vec<((String, String), Result<Vec<String>, String>)> = stream::iter(want_digests)
        .map(|(key, n)| async move {
            let tag = key.1.clone();
            let r = api.digests(&n, &tag).await;
            (key, r)
        })
        .buffer_unordered(16)
        .inspect(|((repo, tag), _)| asked(&format!("{repo}:{tag}")))
        .collect()
        .await;
    for (key, r) in digest_results {
        memo.digests.insert(key, r.map(Arc::new));
    }
    // One request per unique probe, however many rows share it.
    let probe_answers: HashMap<ProbeRequest, Result<Vec<u8>, String>> = stream::iter(want_probes.into_keys())
        .map(|p| async move {
            let r = api.probe(&p).await;
            (p, r)
        })
        .buffer_unordered(8)
        .inspect(|(p, _)| asked(&p.url))
        .collect()
        .await;

    rows.into_iter()
        .map(|(row, name, look, probe)| {
            let Some(n) = name else { return row };
            if let (Some((p, how)), true) = (&probe, look) {
                let mut row = row;
                row.source = Some(format!("{} + probe {}", n.repo(), p.url));
                let track = options.track_for(config.image_rule(&n.repo(), n.tag.as_deref()).and_then(|r| r.track));
                let answer = match &probe_answers[p] {
                    Ok(body) => probes::extract_version(body, how),
                    Err(e) => Err(e.clone()),
                };
                let tags = memo.tags.get(&n.repo());
                let floating = n.tag.as_deref().is_none_or(|t| VersionTag::parse(t).is_none());
                if let Some(Err(e)) = tags {
                    return row.error(format!("{}: {e}", n.repo()));
                }
                let tags = tags.and_then(|t| t.as_ref().ok()).map(|t| t.as_slice());
                if !floating {
                    row = judge::tagged_row(row, tags.unwrap_or_default(), track);
                }
                return probes::probed_row(row, floating, &answer, &p.url, tags, track);
            }
            if !look {
                return row.unknown("image of a Helm-managed workload: looked up with --show all");
            }
            let mut row = row;
            row.source = Some(n.repo());
            let track = options.track_for(config.image_rule(&n.repo(), n.tag.as_deref()).and_then(|r| r.track));
            match n.tag.as_deref() {
                None => {
                    let why = "pinned by digest, without a tag to compare".to_string();
                    row.unknown(why)
                }
                Some(t) if VersionTag::parse(t).is_some() => match &memo.tags[&n.repo()] {
                    Err(e) => row.error(format!("{}: {e}", n.repo())),
                    Ok(tags) => judge::tagged_row(row, tags, track),
                },
                Some(t) => match &memo.digests[&(n.repo(), t.to_string())] {
                    Err(e) => row.error(format!("{}:{t}: {e}", n.repo())),
                    Ok(d) => {
                        // A reference pinned by digest runs that digest, whatever pods say.
                        if let Some(pinned) = &n.digest
                            && row.running_digests.is_empty()
                        {
                            row.running_digests.push(pinned.clone());
                        }
                        judge::floating_row(row, d)
                    }
                },
            }
        })
        .collect()
}

#[cfg(test)]
pub mod fake {
    //! A registry in memory that counts its calls.
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    pub struct FakeRegistry {
        pub tags: BTreeMap<String, Vec<String>>,
        pub digests: BTreeMap<String, Vec<String>>,
        /// Probe answers by URL.
        pub probes: BTreeMap<String, Result<String, String>>,
        pub calls: Mutex<Vec<String>>,
    }

    impl RegistryApi for FakeRegistry {
        fn parse(&self, image: &str) -> Result<ImageName, String> {
            let (rest, digest) = match image.split_once('@') {
                Some((r, d)) => (r, Some(d.to_string())),
                None => (image, None),
            };
            let (repo, tag) = match rest.rsplit_once(':') {
                Some((r, t)) if !t.contains('/') => (r, Some(t.to_string())),
                _ => (rest, None),
            };
            let (registry, repository) = repo.split_once('/').ok_or("no registry")?;
            Ok(ImageName { registry: registry.into(), repository: repository.into(), tag, digest })
        }
        fn tags<'a>(&'a self, image: &'a ImageName) -> BoxFuture<'a, Result<Vec<String>, String>> {
            self.calls.lock().unwrap().push(format!("tags {}", image.repo()));
            let r = self.tags.get(&image.repo()).cloned().ok_or_else(|| "NAME_UNKNOWN".to_string());
            Box::pin(async move { r })
        }
        fn digests<'a>(&'a self, image: &'a ImageName, tag: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>> {
            let key = format!("{}:{tag}", image.repo());
            self.calls.lock().unwrap().push(format!("digests {key}"));
            let r = self.digests.get(&key).cloned().ok_or_else(|| "MANIFEST_UNKNOWN".to_string());
            Box::pin(async move { r })
        }
        fn probe<'a>(&'a self, probe: &'a ProbeRequest) -> BoxFuture<'a, Result<Vec<u8>, String>> {
            self.calls.lock().unwrap().push(format!("probe {}", probe.url));
            let r = self.probes.get(&probe.url).cloned().unwrap_or_else(|| Err("could not connect".into()));
            Box::pin(async move { r.map(String::into_bytes) })
        }
        fn add_pull_secret(&self, _: &[u8]) -> Result<Vec<String>, String> {
            Ok(Vec::new())
        }
        fn chart_versions<'a>(&'a self, repo: &'a str, chart: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>> {
            let key = format!("{repo}/{chart}");
            self.calls.lock().unwrap().push(format!("charts {key}"));
            let r = self.tags.get(&key).cloned().ok_or_else(|| "no such chart".to_string());
            Box::pin(async move { r })
        }
        fn request_counts(&self) -> BTreeMap<String, u64> {
            BTreeMap::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::FakeRegistry;
    use super::*;
    use crate::report::progress::NoProgress;
    use crate::report::versions::VersionStatus;

    fn use_of(name: &str, image: &str, digests: &[&str], helm: bool) -> (Category, ImageUse) {
        (
            Category::Workloads,
            ImageUse {
                kind: "Deployment".into(),
                namespace: "shop".into(),
                name: name.into(),
                container: "app".into(),
                image: image.into(),
                running_digests: digests.iter().map(|d| d.to_string()).collect(),
                helm_release: helm.then(|| "shop".into()),
                pull_secrets: Vec::new(),
            },
        )
    }

    pub fn options(show: Show) -> VersionsOptions {
        VersionsOptions {
            namespace: None,
            categories: Default::default(),
            show,
            manifests: Vec::new(),
            target_minor: None,
            config: Default::default(),
        }
    }

    #[tokio::test]
    async fn one_lookup_per_repository_and_statuses() {
        let mut fake = FakeRegistry::default();
        fake.tags.insert(
            "r:5000/org/app".into(),
            vec!["1.2.3".into(), "1.2.4".into(), "1.3.0-rc.1".into(), "latest".into()],
        );
        fake.digests.insert("r:5000/org/app:latest".into(), vec!["sha256:idx".into(), "sha256:amd".into()]);
        let fake = Arc::new(fake);
        let registry = Registry(fake.clone());
        let mut uses: Vec<_> =
            (0..20).map(|i| use_of(&format!("web{i}"), "r:5000/org/app:1.2.3", &[], false)).collect();
        uses.push(use_of("float-ok", "r:5000/org/app:latest", &["sha256:amd"], false));
        uses.push(use_of("float-old", "r:5000/org/app:latest", &["sha256:old"], false));
        uses.push(use_of("missing", "r:5000/org/gone:1.0", &[], false));
        uses.push(use_of("helm", "r:5000/org/helm:1.0", &[], true));
        let rows = image_rows(uses, &options(Show::Default), &registry, &NoProgress).await;
        let calls = fake.calls.lock().unwrap().clone();
        // 20 workloads on one repository: one tag list. The Helm-managed image: no lookup.
        assert_eq!(calls.iter().filter(|c| c.starts_with("tags r:5000/org/app")).count(), 1, "{calls:?}");
        assert_eq!(calls.iter().filter(|c| c.starts_with("digests")).count(), 1, "{calls:?}");
        assert!(!calls.iter().any(|c| c.contains("helm")), "{calls:?}");
        let by = |n: &str| rows.iter().find(|r| r.name == format!("Deployment/{n}")).unwrap();
        assert_eq!((by("web0").status, by("web0").latest.as_deref()), (VersionStatus::PatchBehind, Some("1.2.4")));
        assert_eq!(by("float-ok").status, VersionStatus::Current);
        assert_eq!(by("float-old").status, VersionStatus::NewerImage);
        assert_eq!(by("missing").status, VersionStatus::Error);
        assert!(by("missing").why.as_deref().unwrap().contains("r:5000/org/gone"));
        assert!(by("helm").helm_managed);
    }

    #[tokio::test]
    async fn probes_answer_for_floating_tags_once_per_url() {
        let mut fake = FakeRegistry::default();
        fake.tags.insert("r:5000/org/app".into(), vec!["1.2.3".into(), "1.2.4".into(), "latest".into()]);
        fake.probes.insert("http://probe/shop/version".into(), Ok(r#"{"version":"1.2.3"}"#.into()));
        fake.probes.insert("http://probe/shop/broken".into(), Ok("<html>".into()));
        let fake = Arc::new(fake);
        let registry = Registry(fake.clone());
        let mut opts = options(Show::Default);
        let yaml = "- {image: 'r:5000/org/app', name: 'float*', url: 'http://probe/{namespace}/version', json_pointer: /version}\n- {image: 'r:5000/org/app', name: 'broken', url: 'http://probe/{namespace}/broken', json_pointer: /version}\n- {image: 'r:5000/org/app', name: 'down', url: 'http://down/v', regex: '.+'}\n- {image: 'r:5000/org/app:1.2.3', url: 'http://probe/{namespace}/version', json_pointer: /version}\n";
        opts.config.probes = serde_saphyr::from_str(yaml).unwrap();
        for (i, p) in opts.config.probes.iter_mut().enumerate() {
            p.compile(&format!("probe {i}")).unwrap();
        }
        let uses = vec![
            use_of("float-a", "r:5000/org/app:latest", &["sha256:x"], false),
            use_of("float-b", "r:5000/org/app:latest", &[], false),
            use_of("broken", "r:5000/org/app:latest", &[], false),
            use_of("down", "r:5000/org/app:latest", &[], false),
            use_of("tagged", "r:5000/org/app:1.2.3", &[], false),
        ];
        let rows = image_rows(uses, &opts, &registry, &NoProgress).await;
        let calls = fake.calls.lock().unwrap().clone();
        // Three unique URLs (float-a, float-b and tagged share one); floating tags with a probe
        // need the tag list, not the tag's digest.
        assert_eq!(calls.iter().filter(|c| c.starts_with("probe")).count(), 3, "{calls:?}");
        assert_eq!(calls.iter().filter(|c| c.starts_with("tags")).count(), 1, "{calls:?}");
        assert!(!calls.iter().any(|c| c.starts_with("digests")), "{calls:?}");
        let by = |n: &str| rows.iter().find(|r| r.name == format!("Deployment/{n}")).unwrap();
        for n in ["float-a", "float-b"] {
            let r = by(n);
            assert_eq!(
                (r.status, r.installed.as_str(), r.probed.as_deref()),
                (VersionStatus::PatchBehind, "latest", Some("1.2.3"))
            );
            assert_eq!(r.latest.as_deref(), Some("1.2.4"));
            assert!(r.source.as_deref().unwrap().contains("probe http://probe/shop/version"));
        }
        assert_eq!(by("broken").status, VersionStatus::Error);
        assert!(by("broken").why.as_deref().unwrap().contains("not JSON"), "{:?}", by("broken").why);
        assert_eq!(by("down").status, VersionStatus::Error);
        assert_eq!(by("down").why.as_deref(), Some("probe http://down/v: could not connect"));
        let t = by("tagged");
        assert_eq!(
            (t.status, t.probed.as_deref(), t.latest.as_deref()),
            (VersionStatus::PatchBehind, Some("1.2.3"), Some("1.2.4"))
        );
    }
}
