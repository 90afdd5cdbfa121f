//! Upstream release information, read over HTTP(S) from configurable base URLs: the Kubernetes
//! release pointers (`stable.txt`, `stable-1.N.txt`), GitHub releases (containerd), and the
//! ArtifactHub package search. Fetches and parses; comparing versions is the engine's job.
//!
//! Every request goes through the registry client's plain GET ([`Registries::get_cached`]), so
//! upstream lookups share its manners: the on-disk cache (TTL, then `If-None-Match` and a 304
//! reusing the cached body), the per-host concurrency cap and request counters, and the bounded
//! 429 `Retry-After` rule (a long wait is an error naming the host and when to retry), and one
//! request per URL per client (per run), shared by every caller, its error as much as its answer.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::source::registry::{Registries, RegistryError};

/// GitHub release pages read at most (100 releases each).
pub const MAX_PAGES: usize = 10;

/// Why an upstream lookup failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum UpstreamError {
    /// The request failed (connection, timeout, status, rate limit): the client's error.
    #[error(transparent)]
    Fetch(#[from] RegistryError),
    #[error("{url}: unexpected answer: {message}")]
    Parse { url: String, message: String },
}

/// A body and the next page's URL, if any.
#[derive(Debug, Clone)]
pub struct Page {
    pub body: String,
    pub next: Option<String>,
}

/// Upstream lookups through the shared client (cloning shares it).
#[derive(Clone)]
pub struct Upstream {
    client: Arc<Registries>,
    ttl: Duration,
    /// Sent to the GitHub API only (`GITHUB_TOKEN`); never cached or shown.
    github_token: Option<String>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("ttl", &self.ttl).finish_non_exhaustive()
    }
}

/// The `rel="next"` target of a `Link` header, resolved against `url`.
pub fn next_link(link: &str, url: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        if !params.split(';').any(|p| p.trim().replace(' ', "") == "rel=\"next\"") {
            return None;
        }
        let target = target.trim().trim_start_matches('<').trim_end_matches('>');
        if target.contains("://") {
            Some(target.to_string())
        } else {
            let scheme_end = url.find("://").map(|i| i + 3)?;
            let host_end = url[scheme_end..].find('/').map_or(url.len(), |i| scheme_end + i);
            Some(format!("{}{}", &url[..host_end], target))
        }
    })
}

impl Upstream {
    /// Lookups through `client`, cached answers used for `ttl`; `github_token` (optional) raises
    /// GitHub's anonymous rate limit.
    pub fn new(client: Arc<Registries>, ttl: Duration, github_token: Option<String>) -> Upstream {
        Upstream { client, ttl, github_token }
    }

    /// GET `url` with `accept` (through the cache); GitHub API requests (`accept` of GitHub's media
    /// type) carry the API version and the token.
    pub async fn get(&self, url: &str, accept: &str) -> Result<Page, UpstreamError> {
        let bearer = self.github_token.as_ref().map(|t| format!("Bearer {t}"));
        let mut headers: Vec<(&str, &str)> = Vec::new();
        if accept.contains("github") {
            headers.push(("X-GitHub-Api-Version", "2022-11-28"));
            if let Some(b) = &bearer {
                headers.push(("Authorization", b));
            }
        }
        let got = self.client.get_cached_with(url, accept, Some(self.ttl), &headers).await?;
        let next = got.header("link").and_then(|l| next_link(l, url));
        Ok(Page { body: String::from_utf8_lossy(&got.body).into_owned(), next })
    }

    /// The version a Kubernetes release pointer names (`stable.txt`, `stable-1.35.txt`).
    pub async fn kubernetes_pointer(&self, base: &str, file: &str) -> Result<String, UpstreamError> {
        let url = format!("{}/{file}", base.trim_end_matches('/'));
        let page = self.get(&url, "text/plain").await?;
        let v = page.body.trim().to_string();
        if v.is_empty() || v.contains(char::is_whitespace) || !v.starts_with('v') {
            return Err(UpstreamError::Parse { url, message: format!("not a version: {:?}", truncate(&v)) });
        }
        Ok(v)
    }

    /// Every published (not draft) release of `owner/repo`, following `Link` pages (at most
    /// [`MAX_PAGES`]).
    pub async fn github_releases(&self, base: &str, repo: &str) -> Result<Vec<GithubRelease>, UpstreamError> {
        let mut url = Some(format!("{}/repos/{repo}/releases?per_page=100", base.trim_end_matches('/')));
        let mut out = Vec::new();
        let mut pages = 0;
        while let Some(u) = url.take() {
            pages += 1;
            let page = self.get(&u, "application/vnd.github+json").await?;
            let list: Vec<GithubRelease> = serde_json::from_str(&page.body)
                .map_err(|e| UpstreamError::Parse { url: u.clone(), message: e.to_string() })?;
            out.extend(list.into_iter().filter(|r| !r.draft));
            if pages < MAX_PAGES {
                url = page.next;
            }
        }
        Ok(out)
    }

    /// ArtifactHub packages whose name matches `name` (Helm charts, best first as ArtifactHub
    /// ranks them; at most 60).
    pub async fn artifacthub_search(&self, base: &str, name: &str) -> Result<Vec<HubPackage>, UpstreamError> {
        let url = format!(
            "{}/api/v1/packages/search?ts_query_web={}&kind=0&limit=60&offset=0&sort=relevance",
            base.trim_end_matches('/'),
            encode(name)
        );
        let page = self.get(&url, "application/json").await?;
        let v: Value = serde_json::from_str(&page.body)
            .map_err(|e| UpstreamError::Parse { url: url.clone(), message: e.to_string() })?;
        let packages = v.get("packages").cloned().unwrap_or(Value::Array(Vec::new()));
        serde_json::from_value(packages).map_err(|e| UpstreamError::Parse { url, message: e.to_string() })
    }

    /// One ArtifactHub package's details (versions, links, deprecated).
    pub async fn artifacthub_package(
        &self,
        base: &str,
        repo: &str,
        package: &str,
    ) -> Result<HubPackageDetails, UpstreamError> {
        let url = format!("{}/api/v1/packages/helm/{}/{}", base.trim_end_matches('/'), encode(repo), encode(package));
        let page = self.get(&url, "application/json").await?;
        serde_json::from_str(&page.body).map_err(|e| UpstreamError::Parse { url, message: e.to_string() })
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(40).collect()
}

/// Percent-encode a query or path value.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One GitHub release.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct GithubRelease {
    pub tag_name: String,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub prerelease: bool,
    #[serde(default)]
    pub html_url: String,
}

/// An ArtifactHub repository, as a search result names it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
pub struct HubRepository {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub official: bool,
    #[serde(default)]
    pub verified_publisher: bool,
}

/// One ArtifactHub search result.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct HubPackage {
    pub name: String,
    #[serde(default)]
    pub normalized_name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub app_version: Option<String>,
    #[serde(default)]
    pub deprecated: bool,
    #[serde(default)]
    pub official: bool,
    #[serde(default)]
    pub repository: HubRepository,
}

/// A link on an ArtifactHub package.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct HubLink {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub url: String,
}

/// One version an ArtifactHub package lists.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct HubVersion {
    pub version: String,
    #[serde(default)]
    pub prerelease: bool,
}

/// An ArtifactHub package's details.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct HubPackageDetails {
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub deprecated: bool,
    #[serde(default)]
    pub home_url: Option<String>,
    #[serde(default)]
    pub links: Vec<HubLink>,
    #[serde(default)]
    pub available_versions: Vec<HubVersion>,
    #[serde(default)]
    pub has_changelog: bool,
    #[serde(default)]
    pub repository: HubRepository,
}

/// Where the cache lives under a user's cache home.
pub fn cache_dir_under(cache_home: &std::path::Path) -> std::path::PathBuf {
    cache_home.join("kubectl-drift").join("versions")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_hosts() {
        let u = "http://127.0.0.1:5000/repos/c/c/releases?per_page=100";
        assert_eq!(
            next_link("</repos/c/c/releases?page=2>; rel=\"next\", </x?page=9>; rel=\"last\"", u).as_deref(),
            Some("http://127.0.0.1:5000/repos/c/c/releases?page=2")
        );
        assert_eq!(next_link("<https://a/b?page=2>; rel=\"next\"", u).as_deref(), Some("https://a/b?page=2"));
        assert_eq!(next_link("<https://a/b?page=1>; rel=\"prev\"", u), None);
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
    }

    /// An upstream client as `versions --no-cache` builds it: nothing on disk, a zero TTL.
    fn no_cache() -> (Arc<Registries>, Upstream) {
        let options =
            crate::source::registry::ClientOptions { cache_dir: None, cache_ttl: Duration::ZERO, ..Default::default() };
        let client = Arc::new(Registries::new(options, |_| None).unwrap());
        (client.clone(), Upstream::new(client, Duration::ZERO, None))
    }

    /// Requests sent to `url`'s host so far.
    fn sent(client: &Registries, url: &str) -> u64 {
        let host = crate::source::registry::url_host(url).unwrap();
        client.counts().get(&host).map_or(0, |c| c.requests)
    }

    /// A thousand releases of one chart, an ArtifactHub that fails: one search request per run,
    /// its error on every release (asked at once and one after another).
    #[tokio::test]
    async fn a_failing_upstream_is_asked_once_per_run() {
        let server = crate::source::test_server::serve(|_| (500, vec![], "down".into())).await;
        let (client, upstream) = no_cache();
        let at_once =
            futures::future::join_all((0..20).map(|_| upstream.artifacthub_search(&server.url, "shop"))).await;
        let mut answers = at_once;
        for _ in 0..980 {
            answers.push(upstream.artifacthub_search(&server.url, "shop").await);
        }
        assert_eq!(answers.len(), 1000);
        for a in &answers {
            let e = a.as_ref().unwrap_err().to_string();
            assert!(e.contains("HTTP 500") && e.contains("/api/v1/packages/search"), "{e}");
        }
        assert_eq!(server.seen().len(), 1, "{:?}", server.seen());
        assert_eq!(sent(&client, &server.url), 1);
        // Another URL of the same host is its own request, once.
        for _ in 0..3 {
            assert!(upstream.artifacthub_package(&server.url, "repo", "shop").await.is_err());
        }
        assert_eq!(server.count("/api/v1/packages/helm/repo/shop"), 1);
    }

    /// A host nothing listens on: one connection attempt per URL per run, however many ask.
    #[tokio::test]
    async fn an_unreachable_upstream_is_tried_once_per_url() {
        let closed = {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            format!("http://{}", l.local_addr().unwrap())
        };
        let (client, upstream) = no_cache();
        let answers = futures::future::join_all((0..50).map(|i| {
            let upstream = upstream.clone();
            let base = closed.clone();
            async move {
                if i % 2 == 0 {
                    upstream.kubernetes_pointer(&format!("{base}/release"), "stable.txt").await.map(|_| ())
                } else {
                    upstream.github_releases(&base, "containerd/containerd").await.map(|_| ())
                }
            }
        }))
        .await;
        for a in &answers {
            assert!(matches!(a, Err(UpstreamError::Fetch(RegistryError::Connect { .. }))), "{a:?}");
        }
        assert_eq!(sent(&client, &closed), 2, "stable.txt and the release list, once each");
    }

    /// The bounded retry rule runs inside the one shared attempt: a 503 is asked again as the
    /// rule says, once for everyone.
    #[tokio::test]
    async fn retries_stay_inside_the_one_attempt() {
        let server =
            crate::source::test_server::serve(|_| (503, vec![("retry-after", "0".into())], String::new())).await;
        let (_, upstream) = no_cache();
        let answers = futures::future::join_all((0..10).map(|_| upstream.artifacthub_search(&server.url, "x"))).await;
        assert!(answers.iter().all(|a| a.as_ref().unwrap_err().to_string().contains("HTTP 503")));
        assert_eq!(server.seen().len(), 1 + crate::source::retry::MAX_RETRIES as usize, "{:?}", server.seen());
    }

    /// Without a disk cache a good answer is still read once per run.
    #[tokio::test]
    async fn a_good_answer_is_read_once_per_run_without_a_cache() {
        let server = crate::source::test_server::serve(|_| (200, vec![], "v1.35.2\n".into())).await;
        let (_, upstream) = no_cache();
        for _ in 0..5 {
            assert_eq!(upstream.kubernetes_pointer(&server.url, "stable.txt").await.unwrap(), "v1.35.2");
        }
        assert_eq!(server.seen(), vec!["/stable.txt".to_string()]);
        // The next run (a new client) asks again.
        let (_, next) = no_cache();
        next.kubernetes_pointer(&server.url, "stable.txt").await.unwrap();
        assert_eq!(server.seen().len(), 2);
    }
}
