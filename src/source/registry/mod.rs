//! Container registries through the OCI distribution API: tag lists and digests of images, read
//! with the manners a shared registry expects.
//!
//! - Authentication as the registry asks for it: one `/v2/` ping per host reads the
//!   `WWW-Authenticate` challenge; `Bearer` gets a pull token for the repository from the realm it
//!   names (anonymous, as Docker Hub, ghcr.io and quay.io hand out, or with Basic credentials);
//!   `Basic` sends the credentials. Credentials come from the configuration (the names of
//!   environment variables, read once) or, opt-in, from a pull secret's `.dockerconfigjson` given
//!   by the caller; they stay in memory and appear in no error, log or cache file.
//! - `tags/list` follows `Link: <...>; rel="next"` for at most [`ClientOptions::max_tag_pages`]
//!   pages; more is an error (a cut list could hide the newest tag).
//! - Digests by `HEAD` with the Accept header of the OCI and Docker manifest and index types;
//!   `GET` only when the index's platform manifests are needed or `HEAD` gives no digest.
//! - An on-disk cache ([`ClientOptions::cache_dir`]): a response younger than the TTL is used
//!   without a request, an older one is revalidated with `If-None-Match` when it has an ETag;
//!   content addressed by digest is kept without a TTL. Tag lists, chart indexes, plain GETs and
//!   each host's ping are also shared in memory for the client's life (one run), errors included:
//!   one request per repository or URL however many callers ask, even when the host is down.
//! - A per-host concurrency cap, per-host request counts ([`Registries::counts`]), and 429:
//!   `Retry-After` is honoured up to [`crate::source::retry::MAX_WAIT`], and a longer one (or a
//!   429 that persists) is [`RegistryError::RateLimited`], naming the registry and when to retry.
//!
//! The same HTTP manners serve other upstream lookups through [`Registries::get_cached`].

mod auth;
mod challenge;
mod http;
pub mod reference;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

pub use auth::Credential;
pub use http::{CachedBody, HostCounts, RequestKind, url_host};
pub use reference::{DOCKER_HUB, ImageRef, api_host};

/// Media types of manifests and indexes this client asks for and understands.
pub mod media {
    pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
    pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
    pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
    pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
    /// The Accept header of manifest requests: every type above.
    pub const ACCEPT_MANIFESTS: &str = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json";
    /// Whether a media type is an index (a list of per-platform manifests).
    pub fn is_index(media_type: &str) -> bool {
        let m = media_type.split(';').next().unwrap_or("").trim();
        m == OCI_INDEX || m == DOCKER_LIST
    }
}

/// What went wrong talking to a registry (or another upstream host). Every variant names the
/// host; none carries a credential, a token or an Authorization header.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// An image reference that does not follow the reference grammar.
    #[error("invalid image reference {reference:?}: {reason}")]
    BadReference { reference: String, reason: String },
    /// The configuration is unusable (an unset credential variable, a bad URL, an unusable cache
    /// directory).
    #[error("registry configuration: {0}")]
    Config(String),
    /// No connection could be made (refused, DNS, TLS).
    #[error("registry {registry}: could not connect: {reason}")]
    Connect { registry: String, reason: String },
    /// The registry did not answer in time.
    #[error("registry {registry}: no answer within {secs} s")]
    Timeout { registry: String, secs: u64 },
    /// The registry refused the credentials, or asked for credentials none were configured for.
    #[error("registry {registry}: access to {what} denied (HTTP {status}): {reason}")]
    Unauthorized { registry: String, what: String, status: u16, reason: String },
    /// The repository, tag or chart does not exist.
    #[error("registry {registry}: {what} not found (HTTP 404)")]
    NotFound { registry: String, what: String },
    /// HTTP 429 that outlasted the bounded waits, or whose `Retry-After` is longer than the bound.
    #[error("registry {registry}: rate limited (HTTP 429) while reading {what}; {retry_after}")]
    RateLimited { registry: String, what: String, retry_after: RetryAfter },
    /// Any other unexpected HTTP status.
    #[error("registry {registry}: HTTP {status} while reading {what}")]
    Status { registry: String, what: String, status: u16 },
    /// A response that could not be understood.
    #[error("registry {registry}: invalid response for {what}: {reason}")]
    BadResponse { registry: String, what: String, reason: String },
    /// A tag list longer than the page bound allows.
    #[error(
        "registry {registry}: {repository} has more than {pages} pages of tags (the bound); the list would be incomplete"
    )]
    TooManyPages { registry: String, repository: String, pages: usize },
}

/// When a rate-limited registry says to come back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetryAfter {
    /// `Retry-After: <seconds>`.
    Seconds(u64),
    /// `Retry-After: <HTTP date>`, as sent.
    Date(String),
    /// No `Retry-After`.
    Unknown,
}

impl fmt::Display for RetryAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryAfter::Seconds(s) => write!(f, "retry in {s} s"),
            RetryAfter::Date(d) => write!(f, "retry after {d}"),
            RetryAfter::Unknown => write!(f, "retry later (the registry sent no Retry-After)"),
        }
    }
}

/// One registry's settings (the `registries` entries of the shared config's `versions:` section;
/// snake_case keys like the rest of the config file: `plain_http`, `username_env`, `password_env`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    /// The registry as image references write it: `host`, `host:port`, `docker.io`.
    pub host: String,
    /// Talk plain HTTP instead of HTTPS (local and air-gapped registries).
    #[serde(default)]
    pub plain_http: bool,
    /// The environment variable holding the user name (read once, when the client is built).
    #[serde(default)]
    pub username_env: Option<String>,
    /// The environment variable holding the password or access token.
    #[serde(default)]
    pub password_env: Option<String>,
    /// At most this many requests in flight to this registry (default [`ClientOptions::concurrency`]).
    #[serde(default)]
    pub concurrency: Option<usize>,
}

/// How the client behaves. [`ClientOptions::default`] is what the tool uses when the config says
/// nothing.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Per-registry settings.
    pub registries: Vec<RegistryConfig>,
    /// The on-disk cache directory (created 0700); `None` keeps nothing on disk.
    pub cache_dir: Option<PathBuf>,
    /// How long a cached tag list or tag digest is used without asking again.
    pub cache_ttl: Duration,
    /// Requests in flight per host, unless the registry's config says otherwise.
    pub concurrency: usize,
    /// Tags asked for per page (`n=`).
    pub page_size: usize,
    /// At most this many pages of one tag list.
    pub max_tag_pages: usize,
    /// The longest one request (connect, answer and body) may take.
    pub timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            registries: Vec::new(),
            cache_dir: None,
            cache_ttl: Duration::from_secs(3600),
            concurrency: 4,
            page_size: 1000,
            max_tag_pages: 50,
            timeout: Duration::from_secs(30),
        }
    }
}

/// What a tag points at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Digests {
    /// The digest the tag resolves to (`Docker-Content-Digest`): the index's for a multi-platform
    /// image, else the manifest's.
    pub digest: String,
    /// Its media type.
    pub media_type: String,
    /// The index digest, when the tag is an index (OCI image index or Docker manifest list).
    pub index: Option<String>,
    /// The image manifests: the index's per-platform ones, or the single manifest.
    pub manifests: Vec<PlatformManifest>,
}

impl Digests {
    /// Whether `digest` (a pod's imageID digest, say) is this image: the index or any of its
    /// platform manifests.
    pub fn matches(&self, digest: &str) -> bool {
        self.digest == digest
            || self.index.as_deref() == Some(digest)
            || self.manifests.iter().any(|m| m.digest == digest)
    }
}

/// One manifest of an image.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlatformManifest {
    pub digest: String,
    /// `os/architecture[/variant]` from the index; `None` for a single-manifest tag.
    pub platform: Option<String>,
}

/// The registry client: build one per scan and share it (`&Registries` is enough; it is `Sync`).
pub struct Registries {
    http: http::Fetcher,
    options: ClientOptions,
    /// Per registry: its config, with credentials resolved.
    hosts: HashMap<String, HostSettings>,
    /// Per API host: the challenge (read once) and tokens by scope.
    auth: Mutex<HashMap<String, Arc<auth::HostAuth>>>,
    /// Credentials from pull secrets, by registry; used when the config has none.
    secret_credentials: Mutex<HashMap<String, Vec<Credential>>>,
    /// Tag lists in flight or done, by (registry, repository).
    tag_lists: Memo<(String, String), Vec<String>>,
    /// Classic chart repositories' indexes in flight or done, by repository URL: read once per
    /// repository per client, as tag lists are, whatever the cache TTL (`--no-cache`, `0s`).
    pub(crate) chart_indexes: Memo<String, crate::source::chart_index::Index>,
    /// Plain GETs ([`Registries::get_cached`]) in flight or done, by (URL, Accept).
    gets: Memo<(String, String), CachedBody>,
}

/// Answers shared by concurrent callers: one fetch per key, its result (or error) for everyone.
/// The client lives for one run (one scan), so each key is fetched at most once per run; an
/// error is kept like an answer: a host that is down is asked once, not once per caller.
pub(crate) type Memo<K, V> = Mutex<HashMap<K, Arc<OnceCell<Result<V, RegistryError>>>>>;

/// The answer for `key` in `memo`: the first caller runs `fetch` (with the retries it makes
/// inside), every other caller, at the same time or later, gets a clone of its result.
pub(crate) async fn shared<K, V, F>(memo: &Memo<K, V>, key: K, fetch: impl FnOnce() -> F) -> Result<V, RegistryError>
where
    K: Eq + std::hash::Hash,
    V: Clone,
    F: Future<Output = Result<V, RegistryError>>,
{
    let cell = memo.lock().expect("memo lock").entry(key).or_default().clone();
    cell.get_or_init(fetch).await.clone()
}

#[derive(Clone, Debug, Default)]
struct HostSettings {
    plain_http: bool,
    credential: Option<Credential>,
}

impl Registries {
    /// Build the client. `env` looks up environment variables (the credential variable names in
    /// the config): `|name| std::env::var(name).ok()` in the app, a map in tests. A named variable
    /// that is unset is a [`RegistryError::Config`] naming the variable.
    pub fn new(options: ClientOptions, env: impl Fn(&str) -> Option<String>) -> Result<Registries, RegistryError> {
        let mut hosts = HashMap::new();
        let mut limits = HashMap::new();
        for r in &options.registries {
            let host = normalise_registry(&r.host);
            if host.is_empty() {
                return Err(RegistryError::Config("a registry entry has an empty host".into()));
            }
            let credential = match (&r.username_env, &r.password_env) {
                (None, None) => None,
                (Some(u), Some(p)) => {
                    let read = |name: &str| {
                        env(name).ok_or_else(|| {
                            RegistryError::Config(format!("registry {host}: environment variable {name} is not set"))
                        })
                    };
                    Some(Credential::new(read(u)?, read(p)?))
                }
                _ => {
                    return Err(RegistryError::Config(format!(
                        "registry {host}: username_env and password_env must be given together"
                    )));
                }
            };
            if let Some(c) = r.concurrency {
                limits.insert(api_host(&host).to_string(), c.max(1));
            }
            hosts.insert(host, HostSettings { plain_http: r.plain_http, credential });
        }
        let http = http::Fetcher::new(options.cache_dir.clone(), options.concurrency.max(1), limits, options.timeout)?;
        Ok(Registries {
            http,
            options,
            hosts,
            auth: Mutex::new(HashMap::new()),
            secret_credentials: Mutex::new(HashMap::new()),
            tag_lists: Mutex::new(HashMap::new()),
            chart_indexes: Mutex::new(HashMap::new()),
            gets: Mutex::new(HashMap::new()),
        })
    }

    /// Add the credentials of a pull secret (`kubernetes.io/dockerconfigjson` data, the bytes of
    /// `.dockerconfigjson`, or a legacy `.dockercfg`). They are held in memory only and used for
    /// a registry the config gives no credentials for. Returns the registries it had entries for.
    pub fn add_docker_config(&self, json: &[u8]) -> Result<Vec<String>, RegistryError> {
        let entries = auth::parse_docker_config(json)?;
        let mut map = self.secret_credentials.lock().expect("credentials lock");
        let mut names = Vec::new();
        for (registry, cred) in entries {
            let list = map.entry(registry.clone()).or_default();
            if !list.contains(&cred) {
                list.push(cred);
            }
            names.push(registry);
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Every tag of `registry/repository`, in the registry's order, all pages. Fetched once per
    /// repository per client (concurrent callers share one fetch) and cached on disk for the TTL.
    pub async fn tags(&self, registry: &str, repository: &str) -> Result<Vec<String>, RegistryError> {
        let registry = normalise_registry(registry);
        let key = (registry.clone(), repository.to_string());
        shared(&self.tag_lists, key, || self.fetch_tags(&registry, repository)).await
    }

    /// The tags of an image's repository.
    pub async fn image_tags(&self, image: &ImageRef) -> Result<Vec<String>, RegistryError> {
        self.tags(&image.registry, &image.repository).await
    }

    /// What `reference` (a tag or a digest) points at in `registry/repository`: `HEAD` for the
    /// digest, and for an index one `GET` of the index (by digest, cached without a TTL) for its
    /// platform manifests.
    pub async fn digest(&self, registry: &str, repository: &str, reference: &str) -> Result<Digests, RegistryError> {
        self.resolve_digests(&normalise_registry(registry), repository, reference).await
    }

    /// A JSON manifest (or index) of `registry/repository` by tag or digest, as raw bytes with its
    /// media type and digest. By digest it is cached without a TTL, by tag for the TTL.
    pub async fn manifest(
        &self,
        registry: &str,
        repository: &str,
        reference: &str,
        accept: &str,
    ) -> Result<CachedBody, RegistryError> {
        let registry = normalise_registry(registry);
        let ttl = if reference::valid_digest(reference) { None } else { Some(self.options.cache_ttl) };
        let url = format!("{}/v2/{repository}/manifests/{reference}", self.base_url(&registry));
        let what = format!("manifest {repository}:{reference}");
        self.registry_fetch(
            ::http::Method::GET,
            &registry,
            repository,
            &url,
            accept,
            RequestKind::ManifestGet,
            ttl,
            &what,
        )
        .await
    }

    /// A blob by digest (a chart's config, say): cached without a TTL.
    pub async fn blob(&self, registry: &str, repository: &str, digest: &str) -> Result<CachedBody, RegistryError> {
        let registry = normalise_registry(registry);
        if !reference::valid_digest(digest) {
            return Err(RegistryError::BadResponse {
                registry,
                what: format!("blob of {repository}"),
                reason: "the blob digest is not <algorithm>:<hex>".into(),
            });
        }
        let url = format!("{}/v2/{repository}/blobs/{digest}", self.base_url(&registry));
        let what = format!("blob {repository}@{digest}");
        self.registry_fetch(::http::Method::GET, &registry, repository, &url, "*/*", RequestKind::Blob, None, &what)
            .await
    }

    /// A plain GET of any URL with the same cache, counters, concurrency cap and 429 rule, and no
    /// registry authentication (for upstream APIs: release pointers, release lists, ArtifactHub).
    /// `ttl`: a cached answer younger than this is returned without a request; `None` means the
    /// content never changes (cached for good). Only 2xx answers are returned; 304 is answered
    /// from the cache; anything else is an error naming the host and status.
    ///
    /// Each (URL, Accept) is fetched at most once per client, whatever the TTL: callers at the
    /// same time share the one request (and its bounded retries), later callers its answer or
    /// its error. A thousand releases of one chart ask a failing ArtifactHub once, not a
    /// thousand times, and each still reports the failure.
    pub async fn get_cached(
        &self,
        url: &str,
        accept: &str,
        ttl: Option<Duration>,
    ) -> Result<CachedBody, RegistryError> {
        self.get_cached_with(url, accept, ttl, &[]).await
    }

    /// [`Registries::get_cached`] with more request headers (`X-GitHub-Api-Version`, an
    /// `Authorization: Bearer` token for an API). Headers are not part of the cache key (on disk
    /// or in memory: a client sends one URL with the same headers) and are never stored or
    /// shown; an `Authorization` header is dropped on a redirect to another host.
    pub async fn get_cached_with(
        &self,
        url: &str,
        accept: &str,
        ttl: Option<Duration>,
        headers: &[(&str, &str)],
    ) -> Result<CachedBody, RegistryError> {
        let key = (url.to_string(), accept.to_string());
        shared(&self.gets, key, || self.get_unshared(url, accept, ttl, headers)).await
    }

    /// [`Registries::get_cached`] without the in-memory sharing, for a caller that keeps what it
    /// makes of the answer itself (a chart repository's parsed index, by repository): the body is
    /// then not held twice.
    pub(crate) async fn get_unshared(
        &self,
        url: &str,
        accept: &str,
        ttl: Option<Duration>,
        headers: &[(&str, &str)],
    ) -> Result<CachedBody, RegistryError> {
        let host = http::url_host(url)?;
        let got = self.http.get(url, accept, RequestKind::Other, ttl, headers).await?;
        check_status(got, &host, url)
    }

    /// One GET of an app's version endpoint (an opt-in probe): never cached, at most `max_body`
    /// bytes, `timeout`, redirects on the same host only, no retries; counted per host like every
    /// request. `headers` (an Authorization from the probe's environment variables) are never
    /// stored or shown. Only 2xx answers are returned.
    pub async fn probe(
        &self,
        url: &str,
        accept: &str,
        headers: &[(&str, &str)],
        max_body: usize,
        timeout: Duration,
    ) -> Result<CachedBody, RegistryError> {
        let host = http::url_host(url)?;
        let req = http::Req {
            method: ::http::Method::GET,
            url,
            accept,
            kind: RequestKind::Other,
            authorization: None,
            extra: headers,
        };
        let bounds = http::Bounds { max_body, timeout: Some(timeout), other_hosts: false, retries: false };
        let got = self.http.send_bounded(&req, None, bounds).await?;
        check_status(got, &host, url)
    }

    /// Requests sent so far, per host (cache hits are counted apart and are not requests).
    pub fn counts(&self) -> BTreeMap<String, HostCounts> {
        self.http.counts()
    }

    /// The options the client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    fn settings(&self, registry: &str) -> HostSettings {
        self.hosts.get(registry).cloned().unwrap_or_default()
    }

    /// `http(s)://api-host`.
    fn base_url(&self, registry: &str) -> String {
        let scheme = if self.settings(registry).plain_http { "http" } else { "https" };
        format!("{scheme}://{}", api_host(registry))
    }

    /// The credential for a registry: the config's, else the first pull-secret one.
    fn credential(&self, registry: &str) -> Option<Credential> {
        self.settings(registry).credential.or_else(|| {
            let map = self.secret_credentials.lock().expect("credentials lock");
            map.get(registry).and_then(|l| l.first().cloned())
        })
    }
}

/// `index.docker.io` and friends are `docker.io`; a trailing `/` is dropped.
fn normalise_registry(registry: &str) -> String {
    let r = registry.trim().trim_end_matches('/');
    let r = r.strip_prefix("https://").or_else(|| r.strip_prefix("http://")).unwrap_or(r);
    let r = r.split('/').next().unwrap_or(r);
    match r {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => DOCKER_HUB.to_string(),
        _ => r.to_string(),
    }
}

/// Turn a non-2xx answer into the error that names the host and status.
fn check_status(got: CachedBody, host: &str, what: &str) -> Result<CachedBody, RegistryError> {
    match got.status {
        200..=299 => Ok(got),
        404 => Err(RegistryError::NotFound { registry: host.to_string(), what: what.to_string() }),
        401 | 403 => Err(RegistryError::Unauthorized {
            registry: host.to_string(),
            what: what.to_string(),
            status: got.status,
            reason: "the server refused the request".into(),
        }),
        status => Err(RegistryError::Status { registry: host.to_string(), what: what.to_string(), status }),
    }
}

mod ops;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_normalised() {
        assert_eq!(normalise_registry("https://index.docker.io/v1/"), "docker.io");
        assert_eq!(normalise_registry("ghcr.io"), "ghcr.io");
        assert_eq!(normalise_registry("http://127.0.0.1:5000"), "127.0.0.1:5000");
    }

    #[test]
    fn errors_name_the_registry_and_when_to_retry() {
        let e = RegistryError::RateLimited {
            registry: "ghcr.io".into(),
            what: "tags of org/app".into(),
            retry_after: RetryAfter::Seconds(600),
        };
        assert_eq!(
            e.to_string(),
            "registry ghcr.io: rate limited (HTTP 429) while reading tags of org/app; retry in 600 s"
        );
    }

    #[test]
    fn unset_credential_variables_are_named_not_guessed() {
        let options = ClientOptions {
            registries: vec![RegistryConfig {
                host: "r.example".into(),
                username_env: Some("R_USER".into()),
                password_env: Some("R_PASS".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let err = Registries::new(options.clone(), |n| (n == "R_USER").then(|| "u".to_string())).err().unwrap();
        assert_eq!(
            err.to_string(),
            "registry configuration: registry r.example: environment variable R_PASS is not set"
        );
        assert!(Registries::new(options, |_| Some("x".into())).is_ok());
    }

    /// A registry that fails: its `/v2/` ping is sent once per run, whatever the number of
    /// repositories asked about (at once) and of callers per repository; every caller gets the
    /// error. With the ping answered, a failing tag list is asked once per repository.
    #[tokio::test]
    async fn a_failing_registry_is_asked_once_per_url() {
        let server = crate::source::test_server::serve(|_| (500, vec![], String::new())).await;
        let host = server.url.trim_start_matches("http://").to_string();
        let client = |host: &str| {
            let options = ClientOptions {
                registries: vec![RegistryConfig { host: host.to_string(), plain_http: true, ..Default::default() }],
                cache_ttl: Duration::ZERO,
                ..Default::default()
            };
            Registries::new(options, |_| None).unwrap()
        };
        let down = client(&host);
        let answers = futures::future::join_all((0..40).map(|i| {
            let down = &down;
            let host = host.clone();
            async move { down.tags(&host, &format!("org/app{}", i % 8)).await }
        }))
        .await;
        for a in &answers {
            assert!(matches!(a, Err(RegistryError::Status { status: 500, .. })), "{a:?}");
        }
        assert_eq!(server.seen(), vec!["/v2/".to_string()], "one ping, no tag list without it");

        // An open registry (the ping answers 200) whose tag lists fail: one request per list.
        let open = crate::source::test_server::serve(|target| match target {
            "/v2/" => (200, vec![], "{}".into()),
            _ => (503, vec![("retry-after", "0".into())], String::new()),
        })
        .await;
        let host = open.url.trim_start_matches("http://").to_string();
        let up = client(&host);
        for _ in 0..3 {
            let lists = tokio::join!(up.tags(&host, "org/app0"), up.tags(&host, "org/app1"));
            let lists = [lists.0, lists.1];
            assert!(lists.iter().all(|l| matches!(l, Err(RegistryError::Status { status: 503, .. }))), "{lists:?}");
        }
        let per_list = 1 + crate::source::retry::MAX_RETRIES as usize;
        assert_eq!(open.count("/v2/"), 1);
        assert_eq!(open.count("/v2/org/app0/tags/list?n=1000"), per_list, "{:?}", open.seen());
        assert_eq!(open.count("/v2/org/app1/tags/list?n=1000"), per_list, "{:?}", open.seen());
    }

    #[test]
    fn digests_match_index_and_platform_manifests() {
        let d = Digests {
            digest: "sha256:i".into(),
            media_type: media::OCI_INDEX.into(),
            index: Some("sha256:i".into()),
            manifests: vec![PlatformManifest { digest: "sha256:a".into(), platform: Some("linux/amd64".into()) }],
        };
        assert!(d.matches("sha256:i") && d.matches("sha256:a") && !d.matches("sha256:b"));
        assert!(media::is_index("application/vnd.oci.image.index.v1+json; charset=utf-8"));
        assert!(!media::is_index(media::DOCKER_MANIFEST));
    }
}
