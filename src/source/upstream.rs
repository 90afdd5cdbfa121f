//! Upstream release information, read over HTTP(S) from configurable base URLs: the Kubernetes
//! release pointers (`stable.txt`, `stable-1.N.txt`), GitHub releases (containerd), and the
//! ArtifactHub package search. Fetches and parses; comparing versions is the engine's job.
//!
//! Manners: every answer is kept in an on-disk cache with its `ETag`; within the TTL no request is
//! made, after it the request carries `If-None-Match` and a 304 reuses the cached body. A 429 (or
//! 503) with `Retry-After` is waited out when the wait is at most [`MAX_RETRY_AFTER`], once;
//! otherwise the lookup fails naming the host and when to retry. Requests are counted per host.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The longest `Retry-After` waited out before a lookup fails.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// Time allowed for one request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// GitHub release pages read at most (100 releases each).
pub const MAX_PAGES: usize = 10;

/// Why an upstream lookup failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum UpstreamError {
    #[error("{url}: {message}")]
    Request { url: String, message: String },
    #[error("{url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{host} is rate limiting (HTTP 429); retry after {retry_after}")]
    RateLimited { host: String, retry_after: String },
    #[error("{url}: unexpected answer: {message}")]
    Parse { url: String, message: String },
}

/// A cached answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CacheEntry {
    url: String,
    etag: Option<String>,
    fetched: u64,
    body: String,
    /// The next page's URL (`Link: <...>; rel="next"`).
    next: Option<String>,
}

/// A body and the next page's URL, if any.
#[derive(Debug, Clone)]
pub struct Page {
    pub body: String,
    pub next: Option<String>,
}

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// The HTTP client for upstream lookups (cloning shares its counters).
#[derive(Clone)]
pub struct Upstream {
    client: HttpsClient,
    cache_dir: Option<PathBuf>,
    ttl: Duration,
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
    github_token: Option<String>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("cache_dir", &self.cache_dir).field("ttl", &self.ttl).finish_non_exhaustive()
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The host (with port) of a URL.
pub fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?']).next().unwrap_or("").to_string()
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

/// Seconds in a `Retry-After` value (seconds only; an HTTP date counts as unknown).
fn retry_after_seconds(v: Option<&str>) -> Option<u64> {
    v?.trim().parse().ok()
}

impl Upstream {
    /// A client caching under `cache_dir` (none: no cache) for `ttl`. `github_token` is sent to
    /// the GitHub API only (from the environment; never printed).
    pub fn new(cache_dir: Option<PathBuf>, ttl: Duration, github_token: Option<String>) -> Result<Upstream, String> {
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| format!("TLS setup: {e}"))?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(https);
        Ok(Upstream { client, cache_dir, ttl, counts: Arc::default(), github_token })
    }

    /// Requests made so far, per host.
    pub fn request_counts(&self) -> BTreeMap<String, u64> {
        self.counts.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn cache_path(&self, url: &str) -> Option<PathBuf> {
        let digest = Sha256::digest(url.as_bytes());
        let name: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        self.cache_dir.as_ref().map(|d| d.join("upstream").join(format!("{name}.json")))
    }

    fn read_cache(&self, url: &str) -> Option<CacheEntry> {
        let text = std::fs::read_to_string(self.cache_path(url)?).ok()?;
        serde_json::from_str::<CacheEntry>(&text).ok().filter(|e| e.url == url)
    }

    fn write_cache(&self, entry: &CacheEntry) {
        let Some(path) = self.cache_path(&entry.url) else { return };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Write then rename, so a concurrent reader never sees half a file.
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if let Ok(text) = serde_json::to_string(entry)
            && std::fs::write(&tmp, text).is_ok()
        {
            let _ = std::fs::rename(&tmp, &path);
        }
    }

    /// GET `url` (through the cache), with `accept`.
    pub async fn get(&self, url: &str, accept: &str) -> Result<Page, UpstreamError> {
        let cached = self.read_cache(url);
        if let Some(c) = &cached
            && now().saturating_sub(c.fetched) < self.ttl.as_secs()
        {
            return Ok(Page { body: c.body.clone(), next: c.next.clone() });
        }
        let host = host_of(url);
        let mut waited = false;
        loop {
            let mut req = hyper::Request::get(url)
                .header(hyper::header::ACCEPT, accept)
                .header(hyper::header::USER_AGENT, concat!("kubectl-drift/", env!("CARGO_PKG_VERSION")));
            if let Some(etag) = cached.as_ref().and_then(|c| c.etag.as_deref()) {
                req = req.header(hyper::header::IF_NONE_MATCH, etag);
            }
            if accept.contains("github") {
                req = req.header("X-GitHub-Api-Version", "2022-11-28");
                if let Some(t) = &self.github_token {
                    req = req.header(hyper::header::AUTHORIZATION, format!("Bearer {t}"));
                }
            }
            let req = req
                .body(Empty::<Bytes>::new())
                .map_err(|e| UpstreamError::Request { url: url.to_string(), message: e.to_string() })?;
            if let Ok(mut c) = self.counts.lock() {
                *c.entry(host.clone()).or_default() += 1;
            }
            let resp = match tokio::time::timeout(REQUEST_TIMEOUT, self.client.request(req)).await {
                Err(_) => {
                    return Err(UpstreamError::Request {
                        url: url.to_string(),
                        message: format!("no answer within {}s", REQUEST_TIMEOUT.as_secs()),
                    });
                }
                Ok(Err(e)) => {
                    let mut message = e.to_string();
                    let mut src = std::error::Error::source(&e);
                    while let Some(inner) = src {
                        message.push_str(": ");
                        message.push_str(&inner.to_string());
                        src = inner.source();
                    }
                    return Err(UpstreamError::Request { url: url.to_string(), message });
                }
                Ok(Ok(r)) => r,
            };
            let status = resp.status().as_u16();
            let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
            let etag = header("etag");
            let link = header("link");
            let retry_after = header("retry-after");
            if status == 304
                && let Some(mut c) = cached.clone()
            {
                c.fetched = now();
                self.write_cache(&c);
                return Ok(Page { body: c.body, next: c.next });
            }
            if status == 429 || status == 503 {
                match retry_after_seconds(retry_after.as_deref()) {
                    Some(s) if !waited && Duration::from_secs(s) <= MAX_RETRY_AFTER => {
                        waited = true;
                        tokio::time::sleep(Duration::from_secs(s)).await;
                        continue;
                    }
                    _ if status == 429 => {
                        return Err(UpstreamError::RateLimited {
                            host,
                            retry_after: match retry_after {
                                Some(r) => format!("{r} s (Retry-After)"),
                                None => "a while (no Retry-After)".into(),
                            },
                        });
                    }
                    _ => {}
                }
            }
            if !(200..300).contains(&status) {
                return Err(UpstreamError::Status { url: url.to_string(), status });
            }
            let bytes = tokio::time::timeout(REQUEST_TIMEOUT, resp.into_body().collect())
                .await
                .map_err(|_| UpstreamError::Request { url: url.to_string(), message: "body timed out".into() })?
                .map_err(|e| UpstreamError::Request { url: url.to_string(), message: e.to_string() })?
                .to_bytes();
            let body = String::from_utf8_lossy(&bytes).into_owned();
            let next = link.as_deref().and_then(|l| next_link(l, url));
            let entry = CacheEntry { url: url.to_string(), etag, fetched: now(), body, next };
            self.write_cache(&entry);
            return Ok(Page { body: entry.body, next: entry.next });
        }
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
pub fn cache_dir_under(cache_home: &Path) -> PathBuf {
    cache_home.join("kubectl-drift").join("versions")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_hosts() {
        let u = "http://127.0.0.1:5000/repos/c/c/releases?per_page=100";
        assert_eq!(host_of(u), "127.0.0.1:5000");
        assert_eq!(
            next_link("</repos/c/c/releases?page=2>; rel=\"next\", </x?page=9>; rel=\"last\"", u).as_deref(),
            Some("http://127.0.0.1:5000/repos/c/c/releases?page=2")
        );
        assert_eq!(next_link("<https://a/b?page=2>; rel=\"next\"", u).as_deref(), Some("https://a/b?page=2"));
        assert_eq!(next_link("<https://a/b?page=1>; rel=\"prev\"", u), None);
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
        assert_eq!(retry_after_seconds(Some(" 3 ")), Some(3));
        assert_eq!(retry_after_seconds(Some("Wed, 21 Oct 2015 07:28:00 GMT")), None);
    }
}
