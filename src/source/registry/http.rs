//! The HTTP layer under the registry client: one hyper client (HTTPS with the system roots, or
//! plain HTTP where configured), a per-host concurrency cap, per-host request counts, the bounded
//! 429/503 rule, redirects, and the on-disk response cache (TTL + ETag/If-None-Match).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use super::challenge::{Token, bearer_token_url};
use super::{RegistryError, RetryAfter};
use crate::source::retry;

/// The largest response body read (a big chart repository's index.yaml is tens of MB).
const MAX_BODY: usize = 128 * 1024 * 1024;
/// Redirects followed per request (blob storage often answers 307 to a CDN).
const MAX_REDIRECTS: usize = 5;

/// How far one request may go: the registry's limits ([`Bounds::REGISTRY`]), or an app probe's
/// tighter ones (a small answer, a short timeout, no redirect to another host, no retries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// The largest body read; a longer one is an error.
    pub max_body: usize,
    /// The request's own timeout (`None`: the client's).
    pub timeout: Option<Duration>,
    /// Whether a redirect may lead to another host (Authorization is dropped there).
    pub other_hosts: bool,
    /// Whether 429 and 5xx answers are retried (the bounded rule of `source::retry`).
    pub retries: bool,
}

impl Bounds {
    pub const REGISTRY: Bounds = Bounds { max_body: MAX_BODY, timeout: None, other_hosts: true, retries: true };
}

/// What a request was for (the per-host counters break requests down by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// `GET /v2/`, once per host, to read the authentication challenge.
    Ping,
    /// A token from a Bearer realm.
    Token,
    /// One page of `tags/list`.
    TagList,
    /// `HEAD` of a manifest (digest).
    ManifestHead,
    /// `GET` of a manifest or index.
    ManifestGet,
    /// `GET` of a blob.
    Blob,
    /// Anything else ([`super::Registries::get_cached`]).
    Other,
}

/// Requests per host. `requests` counts what went on the wire (retries and redirects included);
/// `cacheHits` were answered from the disk cache without a request; `notModified` were 304s.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostCounts {
    pub requests: u64,
    pub ping: u64,
    pub token: u64,
    pub tag_list: u64,
    pub manifest_head: u64,
    pub manifest_get: u64,
    pub blob: u64,
    pub other: u64,
    pub cache_hits: u64,
    pub not_modified: u64,
    pub rate_limited: u64,
}

/// An answer, fresh or from the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedBody {
    pub status: u16,
    /// Response headers, names lower-case (Set-Cookie is not kept).
    pub headers: BTreeMap<String, String>,
    pub body: Bytes,
    /// Answered from the disk cache (fresh, or revalidated by a 304).
    pub from_cache: bool,
}

impl CachedBody {
    /// A header by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// The host (with port) of a URL, for counting and errors.
pub fn url_host(url: &str) -> Result<String, RegistryError> {
    let uri: hyper::Uri = url.parse().map_err(|_| RegistryError::Config(format!("invalid URL {url:?}")))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(RegistryError::Config(format!("URL {url:?} is not http or https")));
    }
    let auth = uri.authority().ok_or_else(|| RegistryError::Config(format!("URL {url:?} has no host")))?;
    // Never keep user:password@ from a URL.
    Ok(auth.as_str().rsplit('@').next().unwrap_or(auth.as_str()).to_string())
}

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;

pub(super) struct Fetcher {
    client: HttpsClient,
    cache: Option<PathBuf>,
    counts: Mutex<BTreeMap<String, HostCounts>>,
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
    default_limit: usize,
    limits: HashMap<String, usize>,
    timeout: Duration,
}

/// One cache file.
#[derive(Serialize, Deserialize)]
struct Entry {
    url: String,
    /// Seconds since the epoch when the answer was stored or last revalidated.
    stored: u64,
    status: u16,
    headers: BTreeMap<String, String>,
    body: String,
}

/// What one request carries besides its URL.
pub(super) struct Req<'a> {
    pub method: Method,
    pub url: &'a str,
    pub accept: &'a str,
    pub kind: RequestKind,
    /// The Authorization header value (never logged, never cached, dropped on a redirect to
    /// another host).
    pub authorization: Option<&'a str>,
    /// More request headers (sent as given; not part of the cache key; never stored).
    pub extra: &'a [(&'a str, &'a str)],
}

impl Fetcher {
    pub fn new(
        cache: Option<PathBuf>,
        default_limit: usize,
        limits: HashMap<String, usize>,
        timeout: Duration,
    ) -> Result<Fetcher, RegistryError> {
        if let Some(dir) = &cache {
            create_private_dir(dir)
                .map_err(|e| RegistryError::Config(format!("cannot use cache directory {}: {e}", dir.display())))?;
        }
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| RegistryError::Config(format!("cannot load TLS root certificates: {e}")))?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(30)).build(https);
        Ok(Fetcher {
            client,
            cache,
            counts: Mutex::new(BTreeMap::new()),
            gates: Mutex::new(HashMap::new()),
            default_limit,
            limits,
            timeout,
        })
    }

    pub fn counts(&self) -> BTreeMap<String, HostCounts> {
        self.counts.lock().expect("counts lock").clone()
    }

    fn count(&self, host: &str, f: impl FnOnce(&mut HostCounts)) {
        f(self.counts.lock().expect("counts lock").entry(host.to_string()).or_default());
    }

    fn gate(&self, host: &str) -> Arc<Semaphore> {
        let mut gates = self.gates.lock().expect("gates lock");
        gates
            .entry(host.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(self.limits.get(host).copied().unwrap_or(self.default_limit))))
            .clone()
    }

    /// The cached answer to (method, url, accept) if it is younger than `ttl` (`None`: any age).
    /// Counts a cache hit.
    pub fn fresh(&self, method: &Method, url: &str, accept: &str, ttl: Option<Duration>) -> Option<CachedBody> {
        let entry = self.read_entry(method, url, accept)?;
        let age = now_secs().saturating_sub(entry.stored);
        if ttl.is_some_and(|t| age >= t.as_secs()) {
            return None;
        }
        let host = url_host(url).ok()?;
        let body = entry_body(&entry)?;
        self.count(&host, |c| c.cache_hits += 1);
        Some(body)
    }

    /// A GET through the cache.
    pub async fn get(
        &self,
        url: &str,
        accept: &str,
        kind: RequestKind,
        ttl: Option<Duration>,
        extra: &[(&str, &str)],
    ) -> Result<CachedBody, RegistryError> {
        self.cached(Req { method: Method::GET, url, accept, kind, authorization: None, extra }, ttl).await
    }

    /// A request through the cache: fresh entries answer without a request; stale ones are
    /// revalidated with If-None-Match when they have an ETag; 2xx answers are stored.
    pub async fn cached(&self, req: Req<'_>, ttl: Option<Duration>) -> Result<CachedBody, RegistryError> {
        if let Some(hit) = self.fresh(&req.method, req.url, req.accept, ttl) {
            return Ok(hit);
        }
        let old = self.read_entry(&req.method, req.url, req.accept);
        let etag = old.as_ref().and_then(|e| e.headers.get("etag").cloned());
        let got = self.send(&req, etag.as_deref()).await?;
        if got.status == 304
            && let Some(mut entry) = old
        {
            let host = url_host(req.url)?;
            self.count(&host, |c| c.not_modified += 1);
            entry.stored = now_secs();
            self.write_entry(&req.method, req.accept, &entry);
            if let Some(mut body) = entry_body(&entry) {
                body.from_cache = true;
                return Ok(body);
            }
        }
        if (200..300).contains(&got.status) && self.cache.is_some() {
            let entry = Entry {
                url: req.url.to_string(),
                stored: now_secs(),
                status: got.status,
                headers: got.headers.clone(),
                body: B64.encode(&got.body),
            };
            self.write_entry(&req.method, req.accept, &entry);
        }
        Ok(got)
    }

    /// Send one request (no cache): the host's gate, redirects, the bounded 429/503 waits, a
    /// timeout. Returns any status; only transport failures and exhausted rate limits are errors.
    pub async fn send(&self, req: &Req<'_>, if_none_match: Option<&str>) -> Result<CachedBody, RegistryError> {
        self.send_bounded(req, if_none_match, Bounds::REGISTRY).await
    }

    /// [`Fetcher::send`] within `bounds`.
    pub async fn send_bounded(
        &self,
        req: &Req<'_>,
        if_none_match: Option<&str>,
        bounds: Bounds,
    ) -> Result<CachedBody, RegistryError> {
        let timeout = bounds.timeout.unwrap_or(self.timeout);
        let first_host = url_host(req.url)?;
        let mut url = req.url.to_string();
        let mut authorization = req.authorization;
        // A host redirected to that asked for its own Bearer token: (host, `Bearer ...`).
        let mut redirect_bearer: Option<(String, String)> = None;
        let mut redirect_token_tried = false;
        let mut redirects = 0;
        let mut attempt = 0;
        loop {
            let host = url_host(&url)?;
            let mut builder = hyper::Request::builder()
                .method(req.method.clone())
                .uri(&url)
                .header("accept", req.accept)
                .header("user-agent", concat!("kubectl-drift/", env!("CARGO_PKG_VERSION")));
            let redirect_auth = redirect_bearer.as_ref().filter(|(h, _)| *h == host).map(|(_, a)| a.as_str());
            if let Some(a) = authorization.or(redirect_auth) {
                builder = builder.header("authorization", a);
            }
            for (name, value) in req.extra {
                // Credentials in extra headers follow the same rule as Authorization.
                if host == first_host || !name.eq_ignore_ascii_case("authorization") {
                    builder = builder.header(*name, *value);
                }
            }
            if let Some(e) = if_none_match {
                builder = builder.header("if-none-match", e);
            }
            let request = builder
                .body(Empty::new())
                .map_err(|_| RegistryError::Config(format!("invalid request URL {url:?}")))?;
            let gate = self.gate(&host);
            let permit = gate.acquire().await.expect("gates are never closed");
            self.count(&host, |c| {
                c.requests += 1;
                match req.kind {
                    RequestKind::Ping => c.ping += 1,
                    RequestKind::Token => c.token += 1,
                    RequestKind::TagList => c.tag_list += 1,
                    RequestKind::ManifestHead => c.manifest_head += 1,
                    RequestKind::ManifestGet => c.manifest_get += 1,
                    RequestKind::Blob => c.blob += 1,
                    RequestKind::Other => c.other += 1,
                }
            });
            let answer = tokio::time::timeout(timeout, async {
                let resp = self
                    .client
                    .request(request)
                    .await
                    .map_err(|e| RegistryError::Connect { registry: host.clone(), reason: error_chain(&e) })?;
                let (parts, body) = resp.into_parts();
                let body = Limited::new(body, bounds.max_body).collect().await.map_err(|e| {
                    let reason = if e.is::<http_body_util::LengthLimitError>() {
                        format!("the answer is larger than {} bytes", bounds.max_body)
                    } else {
                        format!("reading the body failed: {e}")
                    };
                    RegistryError::BadResponse { registry: host.clone(), what: url.clone(), reason }
                })?;
                Ok::<_, RegistryError>((parts.status, parts.headers, body.to_bytes()))
            })
            .await;
            drop(permit);
            let (status, headers, body) = match answer {
                Ok(r) => r?,
                Err(_) => return Err(RegistryError::Timeout { registry: host, secs: timeout.as_secs() }),
            };
            // A host the registry redirected to (registry.k8s.io sends /v2/ requests on to Artifact
            // Registry) may answer its own Bearer challenge: get an anonymous token from its realm
            // (the registry's credentials never cross hosts) and ask once more.
            if status == StatusCode::UNAUTHORIZED
                && host != first_host
                && !redirect_token_tried
                && let Some(token_url) =
                    headers.get("www-authenticate").and_then(|v| v.to_str().ok()).and_then(bearer_token_url)
            {
                redirect_token_tried = true;
                let token_req = Req {
                    method: Method::GET,
                    url: &token_url,
                    accept: "application/json",
                    kind: RequestKind::Token,
                    authorization: None,
                    extra: &[],
                };
                let got = Box::pin(self.send_bounded(&token_req, None, bounds)).await?;
                if (200..300).contains(&got.status)
                    && let Some(token) = Token::from_json(&got.body)
                {
                    redirect_bearer = Some((host.clone(), format!("Bearer {token}")));
                    continue;
                }
            }
            if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
                let Some(location) = headers.get("location").and_then(|v| v.to_str().ok()) else {
                    return Err(RegistryError::BadResponse {
                        registry: host,
                        what: url,
                        reason: format!("HTTP {} without a Location", status.as_u16()),
                    });
                };
                redirects += 1;
                if redirects > MAX_REDIRECTS {
                    return Err(RegistryError::BadResponse {
                        registry: host,
                        what: url,
                        reason: format!("more than {MAX_REDIRECTS} redirects"),
                    });
                }
                let next = resolve(&url, location);
                let next_host = url_host(&next)?;
                if !bounds.other_hosts && next_host != first_host {
                    return Err(RegistryError::BadResponse {
                        registry: host,
                        what: url,
                        reason: format!("redirect to another host ({next_host}) refused"),
                    });
                }
                url = next;
                // Credentials are for the registry only, never for the storage it redirects to.
                if url_host(&url)? != first_host {
                    authorization = None;
                }
                continue;
            }
            let retry_after_raw = headers.get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_string);
            if status == StatusCode::TOO_MANY_REQUESTS && bounds.retries {
                self.count(&host, |c| c.rate_limited += 1);
                let retry_after = parse_retry_after(retry_after_raw.as_deref());
                // A wait longer than the bound is not waited for: the caller hears when to retry.
                let too_long = match &retry_after {
                    RetryAfter::Seconds(s) => Duration::from_secs(*s) > retry::MAX_WAIT,
                    RetryAfter::Date(_) => true,
                    RetryAfter::Unknown => false,
                };
                let wait =
                    if too_long { None } else { retry::wait_before_retry(status, retry_after_raw.as_deref(), attempt) };
                match wait {
                    Some(w) => {
                        attempt += 1;
                        tokio::time::sleep(w).await;
                        continue;
                    }
                    None => {
                        return Err(RegistryError::RateLimited {
                            registry: host,
                            what: what_of(req.kind, &url),
                            retry_after,
                        });
                    }
                }
            }
            if status.is_server_error()
                && bounds.retries
                && let Some(w) = retry::wait_before_retry(status, retry_after_raw.as_deref(), attempt)
            {
                attempt += 1;
                tokio::time::sleep(w).await;
                continue;
            }
            return Ok(CachedBody {
                status: status.as_u16(),
                headers: keep_headers(&headers),
                body,
                from_cache: false,
            });
        }
    }

    fn cache_path(&self, method: &Method, url: &str, accept: &str) -> Option<PathBuf> {
        let dir = self.cache.as_ref()?;
        let mut h = Sha256::new();
        for part in [method.as_str(), url, accept] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        Some(dir.join(format!("{hex}.json")))
    }

    fn read_entry(&self, method: &Method, url: &str, accept: &str) -> Option<Entry> {
        let path = self.cache_path(method, url, accept)?;
        let text = std::fs::read(&path).ok()?;
        let entry: Entry = serde_json::from_slice(&text).ok()?;
        // A hash collision or a hand-edited file is a miss, never another URL's answer.
        (entry.url == url).then_some(entry)
    }

    /// Store an entry (write to a temporary file, then rename). A cache that cannot be written is
    /// only slower: errors are ignored.
    fn write_entry(&self, method: &Method, accept: &str, entry: &Entry) {
        let Some(path) = self.cache_path(method, &entry.url, accept) else { return };
        let Ok(text) = serde_json::to_vec(entry) else { return };
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if write_private(&tmp, &text).is_ok() && std::fs::rename(&tmp, &path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

fn entry_body(entry: &Entry) -> Option<CachedBody> {
    Some(CachedBody {
        status: entry.status,
        headers: entry.headers.clone(),
        body: Bytes::from(B64.decode(&entry.body).ok()?),
        from_cache: true,
    })
}

fn what_of(kind: RequestKind, url: &str) -> String {
    let path = url.split_once("://").map_or(url, |(_, r)| r.find('/').map_or("/", |i| &r[i..]));
    let path = path.split('?').next().unwrap_or(path);
    match kind {
        RequestKind::TagList => format!("the tag list {path}"),
        RequestKind::Token => "a token".to_string(),
        _ => path.to_string(),
    }
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

pub(super) fn parse_retry_after(v: Option<&str>) -> RetryAfter {
    match v.map(str::trim) {
        None | Some("") => RetryAfter::Unknown,
        Some(s) => match s.parse::<u64>() {
            Ok(n) => RetryAfter::Seconds(n),
            Err(_) => RetryAfter::Date(s.chars().filter(|c| !c.is_control()).take(64).collect()),
        },
    }
}

/// Headers kept with an answer: all but cookies.
fn keep_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (name, value) in headers {
        if name == "set-cookie" {
            continue;
        }
        if let Ok(v) = value.to_str() {
            out.entry(name.as_str().to_string())
                .and_modify(|old: &mut String| {
                    old.push_str(", ");
                    old.push_str(v);
                })
                .or_insert_with(|| v.to_string());
        }
    }
    out
}

/// Resolve a Location or Link target against the URL it came from.
pub(super) fn resolve(base: &str, target: &str) -> String {
    if target.starts_with("http://") || target.starts_with("https://") {
        return target.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    let authority = rest.split('/').next().unwrap_or(rest);
    if target.starts_with('/') {
        return format!("{scheme}://{authority}{target}");
    }
    let path_end = base.rfind('/').filter(|&i| i > scheme.len() + 2).unwrap_or(base.len());
    format!("{}/{target}", &base[..path_end])
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.contains(&t) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)?.write_all(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_locations_resolve_against_the_request() {
        assert_eq!(
            resolve("http://127.0.0.1:5000/v2/a/tags/list?n=3", "/v2/a/tags/list?last=x&n=3"),
            "http://127.0.0.1:5000/v2/a/tags/list?last=x&n=3"
        );
        assert_eq!(resolve("https://r.io/v2/a/blobs/x", "https://cdn.io/b?sig=1"), "https://cdn.io/b?sig=1");
        assert_eq!(resolve("https://r.io/v2/a/tags/list", "list?last=z"), "https://r.io/v2/a/tags/list?last=z");
    }

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        assert_eq!(parse_retry_after(Some("120")), RetryAfter::Seconds(120));
        assert_eq!(
            parse_retry_after(Some("Wed, 21 Oct 2026 07:28:00 GMT")),
            RetryAfter::Date("Wed, 21 Oct 2026 07:28:00 GMT".into())
        );
        assert_eq!(parse_retry_after(None), RetryAfter::Unknown);
    }

    #[test]
    fn hosts_never_keep_userinfo() {
        assert_eq!(url_host("https://u:p@r.io:443/x").unwrap(), "r.io:443");
        assert!(url_host("ftp://r.io/").is_err());
    }

    #[test]
    fn cache_entries_are_private_and_keyed_by_method_url_and_accept() {
        let dir = std::env::temp_dir().join(format!("drift-registry-cache-{}", std::process::id()));
        let f = Fetcher::new(Some(dir.clone()), 1, HashMap::new(), Duration::from_secs(1)).unwrap();
        let entry = Entry {
            url: "http://h/x".into(),
            stored: now_secs(),
            status: 200,
            headers: BTreeMap::from([("etag".into(), "\"1\"".into())]),
            body: B64.encode(b"hello"),
        };
        f.write_entry(&Method::GET, "a", &entry);
        let hit = f.fresh(&Method::GET, "http://h/x", "a", Some(Duration::from_secs(60))).unwrap();
        assert_eq!(&hit.body[..], b"hello");
        assert!(hit.from_cache);
        assert!(f.fresh(&Method::GET, "http://h/x", "b", None).is_none());
        assert!(f.fresh(&Method::HEAD, "http://h/x", "a", None).is_none());
        assert!(f.fresh(&Method::GET, "http://h/x", "a", Some(Duration::ZERO)).is_none());
        assert_eq!(f.counts()["h"].cache_hits, 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let path = f.cache_path(&Method::GET, "http://h/x", "a").unwrap();
            assert_eq!(std::fs::metadata(path).unwrap().permissions().mode() & 0o777, 0o600);
            assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Requests a test server saw: (path and query, Authorization).
    type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

    /// A server on `ip` answering with `handler(path, authorization)`; every request is logged.
    async fn loopback(
        ip: &str,
        log: Seen,
        handler: impl Fn(&str, Option<&str>, u16) -> (u16, Vec<(&'static str, String)>, String) + Send + Sync + 'static,
    ) -> u16 {
        use hyper::service::service_fn;
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let handler = Arc::new(handler);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (handler, log) = (handler.clone(), log.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let path = req.uri().path_and_query().map(|p| p.to_string()).unwrap_or_default();
                        let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).map(String::from);
                        log.lock().unwrap().push((path.clone(), auth.clone()));
                        let (status, headers, body) = handler(&path, auth.as_deref(), port);
                        let mut resp = hyper::Response::builder().status(status);
                        for (k, v) in headers {
                            resp = resp.header(k, v);
                        }
                        let resp = resp.body(http_body_util::Full::new(Bytes::from(body))).unwrap();
                        async move { Ok::<_, std::convert::Infallible>(resp) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, svc).await;
                });
            }
        });
        port
    }

    /// registry.k8s.io's way: the registry redirects to another host, which answers its own Bearer
    /// challenge. The client gets an anonymous token from that host's realm and asks again; the
    /// registry's credentials never reach the other host or its realm.
    #[tokio::test]
    async fn a_redirect_target_s_bearer_challenge_is_answered_without_the_registry_s_credentials() {
        let seen_b: Seen = Arc::default();
        let seen_a: Seen = Arc::default();
        let b = loopback("127.0.0.2", seen_b.clone(), |path, auth, port| {
            if path.starts_with("/token?") {
                return (200, vec![], r#"{"token":"anon-token"}"#.into());
            }
            match auth {
                Some("Bearer anon-token") => (200, vec![], r#"{"name":"mirror/app","tags":["1.0"]}"#.into()),
                _ => (
                    401,
                    vec![(
                        "www-authenticate",
                        format!(
                            r#"Bearer realm="http://127.0.0.2:{port}/token",service="mirror",scope="repository:mirror/app:pull""#
                        ),
                    )],
                    String::new(),
                ),
            }
        })
        .await;
        let a = loopback("127.0.0.1", seen_a.clone(), move |path, _, _| match path {
            "/v2/app/tags/list" => {
                (307, vec![("location", format!("http://127.0.0.2:{b}/v2/mirror/app/tags/list"))], String::new())
            }
            _ => (404, vec![], String::new()),
        })
        .await;
        let f = Fetcher::new(None, 4, HashMap::new(), Duration::from_secs(10)).unwrap();
        let url = format!("http://127.0.0.1:{a}/v2/app/tags/list");
        let req = Req {
            method: Method::GET,
            url: &url,
            accept: "application/json",
            kind: RequestKind::TagList,
            authorization: Some("Basic cmVnLXVzZXI6cmVnLXNlY3JldA=="),
            extra: &[],
        };
        let got = f.send(&req, None).await.unwrap();
        assert_eq!(got.status, 200, "{:?}", String::from_utf8_lossy(&got.body));
        assert!(String::from_utf8_lossy(&got.body).contains("\"1.0\""));
        // The registry got its credentials; the other host and its realm never did.
        assert_eq!(seen_a.lock().unwrap()[0].1.as_deref(), Some("Basic cmVnLXVzZXI6cmVnLXNlY3JldA=="));
        let seen_b = seen_b.lock().unwrap().clone();
        assert_eq!(seen_b.len(), 3, "{seen_b:?}");
        assert_eq!(seen_b[0], ("/v2/mirror/app/tags/list".to_string(), None));
        assert_eq!(seen_b[1], ("/token?service=mirror&scope=repository:mirror/app:pull".to_string(), None));
        assert_eq!(seen_b[2], ("/v2/mirror/app/tags/list".to_string(), Some("Bearer anon-token".to_string())));

        // A realm that gives no token: the 401 is the answer (one try, no loop).
        let seen_c: Seen = Arc::default();
        let c = loopback("127.0.0.2", seen_c.clone(), |path, _, port| {
            if path.starts_with("/token") {
                return (403, vec![], String::new());
            }
            (401, vec![("www-authenticate", format!(r#"Bearer realm="http://127.0.0.2:{port}/token""#))], String::new())
        })
        .await;
        let to_c = loopback("127.0.0.1", Arc::default(), move |_, _, _| {
            (302, vec![("location", format!("http://127.0.0.2:{c}/y"))], String::new())
        })
        .await;
        let url2 = format!("http://127.0.0.1:{to_c}/x");
        let req = Req { url: &url2, ..req };
        assert_eq!(f.send(&req, None).await.unwrap().status, 401);
        assert_eq!(seen_c.lock().unwrap().len(), 2);
    }
}
