//! Reading live objects: discovery (apiVersion/kind to resource and scope) and batched, cached
//! LIST requests (one per resource and namespace), paged, with bounded concurrency.
//!
//! Lists are shared: several releases in one namespace, or a release's desired objects and its
//! search for extra objects, reuse the same LIST. Errors keep their cause (forbidden, not found,
//! unreachable) so callers can report an incomplete scan instead of calling it clean.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use ijson::IValue;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiResource, Discovery, Scope};
use serde_json::Value;
use tokio::sync::{OnceCell, Semaphore};

/// How many API requests run at once.
pub const DEFAULT_CONCURRENCY: usize = 16;
/// Items per page of a LIST.
const PAGE_SIZE: u32 = 500;

/// Why live state could not be read. A failure of the client keeps it as the source; the text
/// shows it as [`error_text`] does (one line: the API server's message and code).
#[derive(Debug, Clone, thiserror::Error)]
pub enum LiveError {
    /// Discovery failed: the API server is unreachable or refuses us.
    #[error("failed to discover the API resources of the cluster: {}", error_text(.0))]
    Discovery(#[source] Arc<kube::Error>),
    /// The kind is not served by the cluster (removed API version, CRD not installed).
    #[error("{kind} ({api_version}) is not served by the cluster")]
    NotServed { api_version: String, kind: String },
    /// The LIST was forbidden by RBAC (403).
    #[error("forbidden to list {resource} {scope}: {}", error_text(source))]
    Forbidden {
        resource: String,
        scope: String,
        #[source]
        source: Arc<kube::Error>,
    },
    /// The client failed the LIST: any other answer of the API server, or no answer.
    #[error("failed to list {resource} {scope}: {}", error_text(source))]
    Client {
        resource: String,
        scope: String,
        #[source]
        source: Arc<kube::Error>,
    },
    /// Any other failure of the LIST (a request not built, a page not decoded, a watch that
    /// stopped, a LIST the plan did not ask for).
    #[error("failed to list {resource} {scope}: {message}")]
    List { resource: String, scope: String, message: String },
}

impl LiveError {
    /// The HTTP code the API server answered with, when it answered.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            LiveError::Discovery(source) | LiveError::Forbidden { source, .. } | LiveError::Client { source, .. } => {
                match &**source {
                    kube::Error::Api(status) => Some(status.code),
                    _ => None,
                }
            }
            LiveError::NotServed { .. } | LiveError::List { .. } => None,
        }
    }
}

/// A resolved kind: its API resource and whether it is namespaced.
#[derive(Debug, Clone)]
pub struct ResolvedKind {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// Discovery results, and the answers already looked up in them: discovery never changes after
/// it is read, and looking a kind up in kube's `Discovery` copies the whole group's resource list
/// each time (a tenth of `release --all -A`'s CPU on 2,000 releases before these memos).
pub struct Kinds {
    discovery: Discovery,
    /// (apiVersion, kind) -> [`Kinds::resolve`]'s answer (`None`: not served).
    resolved: std::sync::Mutex<HashMap<(String, String), Option<ResolvedKind>>>,
    /// (group, kind) -> [`Kinds::preferred`]'s answer.
    preferred: std::sync::Mutex<HashMap<(String, String), Option<Preferred>>>,
}

/// A kind's resource at its preferred version, and what it supports.
type Preferred = (ApiResource, kube::discovery::ApiCapabilities);

impl Kinds {
    /// Run discovery: aggregated discovery (two requests) with a fallback to the classic walk.
    pub async fn discover(client: &Client) -> Result<Kinds, LiveError> {
        let discovery = match Discovery::new(client.clone()).run_aggregated().await {
            Ok(d) => d,
            Err(_) => Discovery::new(client.clone()).run().await.map_err(|e| LiveError::Discovery(Arc::new(e)))?,
        };
        Ok(Kinds { discovery, resolved: Default::default(), preferred: Default::default() })
    }

    /// Map apiVersion + kind to its resource.
    pub fn resolve(&self, api_version: &str, kind: &str) -> Result<ResolvedKind, LiveError> {
        let key = (api_version.to_string(), kind.to_string());
        let mut memo = self.resolved.lock().expect("kinds memo lock");
        let found = memo.entry(key).or_insert_with(|| {
            let (group, version) = crate::report::group_version(api_version);
            let gvk = GroupVersionKind::gvk(group, version, kind);
            self.discovery
                .resolve_gvk(&gvk)
                .map(|(resource, caps)| ResolvedKind { resource, namespaced: caps.scope == Scope::Namespaced })
        });
        found
            .clone()
            .ok_or_else(|| LiveError::NotServed { api_version: api_version.to_string(), kind: kind.to_string() })
    }

    /// Every listable resource (at its most stable version) of the served groups `keep` accepts.
    pub fn listable_resources(&self, keep: impl Fn(&str) -> bool) -> Vec<ResolvedKind> {
        self.discovery
            .groups()
            .filter(|g| keep(g.name()))
            .flat_map(|g| g.resources_by_stability())
            .filter(|(_, caps)| caps.supports_operation(kube::discovery::verbs::LIST))
            .map(|(resource, caps)| ResolvedKind { resource, namespaced: caps.scope == Scope::Namespaced })
            .collect()
    }

    /// Every listable resource of every served version of every group (a deprecated version
    /// beside the one preferred), for asking the API server which of them it warns about.
    pub fn every_listable_version(&self) -> Vec<ResolvedKind> {
        self.discovery
            .groups()
            .flat_map(|g| g.versions().flat_map(|v| g.versioned_resources(v)).collect::<Vec<_>>())
            .filter(|(_, caps)| caps.supports_operation(kube::discovery::verbs::LIST))
            .map(|(resource, caps)| ResolvedKind { resource, namespaced: caps.scope == Scope::Namespaced })
            .collect()
    }

    /// The preferred version of a kind in a group, if served (for kinds we look for ourselves);
    /// else the most stable version that serves it (Gateway API serves TLSRoute only in
    /// v1alpha2 next to HTTPRoute in v1).
    pub fn resolve_preferred(&self, group: &str, kind: &str) -> Option<ResolvedKind> {
        let (resource, caps) = self.preferred(group, kind)?;
        Some(ResolvedKind { resource, namespaced: caps.scope == Scope::Namespaced })
    }

    /// [`Kinds::resolve_preferred`] when the resource can be listed: a create-only kind
    /// (TokenReview, SubjectAccessReview) answers a LIST with 405 and is never stored.
    pub fn resolve_preferred_listable(&self, group: &str, kind: &str) -> Option<ResolvedKind> {
        let (resource, caps) = self.preferred(group, kind)?;
        caps.supports_operation(kube::discovery::verbs::LIST)
            .then(|| ResolvedKind { resource, namespaced: caps.scope == Scope::Namespaced })
    }

    fn preferred(&self, group: &str, kind: &str) -> Option<Preferred> {
        let mut memo = self.preferred.lock().expect("kinds memo lock");
        memo.entry((group.to_string(), kind.to_string()))
            .or_insert_with(|| {
                let g = self.discovery.get(group)?;
                g.recommended_kind(kind)
                    .or_else(|| g.resources_by_stability().into_iter().find(|(ar, _)| ar.kind == kind))
            })
            .clone()
    }
}

/// A cached LIST result.
pub type Listing = Result<Arc<Vec<Value>>, LiveError>;

/// A cached LIST result of a caller that keeps part of each object ([`LiveReader::list_trimmed`]),
/// in compact form: an [`IValue`] takes a fraction of a `serde_json::Value`'s memory (one word per
/// value, objects as one allocation each, every string interned, so the namespaces, kinds, label
/// keys and values that thousands of objects repeat are held once).
pub type CompactListing = Result<Arc<Vec<IValue>>, LiveError>;

type ListKey = (String, String, String, Option<String>, String);

/// Reads and caches LISTs.
pub struct LiveReader {
    client: Client,
    permits: Arc<Semaphore>,
    /// A std mutex, never held across an await: a fair async mutex could hand the lock to a
    /// check that its caller is not polling (a `buffered` stream while the caller awaits
    /// [`LiveReader::forget_namespace`]) and wait for it forever.
    cache: std::sync::Mutex<HashMap<ListKey, Arc<OnceCell<Listing>>>>,
    /// The trimmed, compact lists ([`LiveReader::list_trimmed`]), the same way.
    compact: std::sync::Mutex<HashMap<ListKey, Arc<OnceCell<CompactListing>>>>,
}

impl LiveReader {
    pub fn new(client: Client, concurrency: usize) -> LiveReader {
        LiveReader {
            client,
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            cache: std::sync::Mutex::new(HashMap::new()),
            compact: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Every object of `kind` in `namespace` (`None`: cluster-wide or cluster-scoped), cached.
    /// Helm release storage Secrets are left out of Secret lists (they are large and never the
    /// subject of a comparison).
    pub async fn list(&self, kind: &ResolvedKind, namespace: Option<&str>) -> Listing {
        self.list_shaped(kind, namespace, Body::Whole, "").await
    }

    /// Like [`LiveReader::list`] (`metadata_only`: like [`LiveReader::list_metadata`] with
    /// `labels`), for a caller that keeps only part of each object: `trim` runs on each object as
    /// its page is decoded, and what it keeps is stored compact ([`CompactListing`]), so no more
    /// than one page of whole objects is held at a time. Cached apart from the untrimmed lists (a
    /// reader shared with a caller that needs whole objects would LIST twice).
    pub async fn list_trimmed(
        &self,
        kind: &ResolvedKind,
        namespace: Option<&str>,
        metadata_only: bool,
        labels: &str,
        trim: Trim,
    ) -> CompactListing {
        let body = if metadata_only { Body::MetadataOnly } else { Body::Whole };
        let (lp, fields) = list_params(kind, body, labels);
        let variant = format!("{body:?};fields={fields};labels={labels};trim={}", trim.name);
        let ar = &kind.resource;
        let key: ListKey =
            (ar.group.clone(), ar.version.clone(), ar.plural.clone(), namespace.map(str::to_string), variant);
        let cell = {
            let mut cache = self.compact.lock().expect("list cache lock");
            cache.entry(key).or_default().clone()
        };
        cell.get_or_init(|| async {
            match self.fetch_pages_decoded(kind, namespace, lp, body, None, trim.prune, |v| compact(v, trim)).await? {
                Capped::All(items) => Ok(Arc::new(items)),
                Capped::TooMany { .. } => unreachable!("no cap was given"),
            }
        })
        .await
        .clone()
    }

    /// Only the metadata (name, namespace, labels, annotations, ownerReferences, timestamps) of
    /// every object of `kind` in `namespace` matching `labels` (empty: all), cached. Used where
    /// the body is not needed, so Secret data never leaves the API server.
    pub async fn list_metadata(&self, kind: &ResolvedKind, namespace: Option<&str>, labels: &str) -> Listing {
        self.list_shaped(kind, namespace, Body::MetadataOnly, labels).await
    }

    /// The cached LIST of one shape: whole objects (Secrets without Helm's storage) or metadata
    /// only, and `labels` (empty: all); each shape is its own cache entry.
    async fn list_shaped(&self, kind: &ResolvedKind, namespace: Option<&str>, body: Body, labels: &str) -> Listing {
        let (lp, fields) = list_params(kind, body, labels);
        let variant = format!("{body:?};fields={fields};labels={labels};trim=");
        self.cached(kind, namespace, variant, lp, body).await
    }

    /// Every object of `kind` in `namespace`, compact ([`CompactListing`]) and whole but for what
    /// `trim` drops, unless there are more than `cap`: then `Capped::TooMany` (stopping after the
    /// first page when the server says how many remain). Not cached: the callers read each kind
    /// once.
    pub async fn list_capped(
        &self,
        kind: &ResolvedKind,
        namespace: Option<&str>,
        cap: usize,
        trim: Trim,
    ) -> Result<Capped, LiveError> {
        let lp = ListParams::default().limit(PAGE_SIZE);
        self.fetch_pages_decoded(kind, namespace, lp, Body::Whole, Some(cap), trim.prune, |v| compact(v, trim)).await
    }

    /// What the API server warns on a LIST of `kind` (its `Warning: 299` headers' texts): a
    /// deprecated version answers every request with its deprecation. One item, metadata only
    /// (nothing of a Secret's data is sent), under the concurrency limit; not cached.
    pub async fn list_warnings(&self, kind: &ResolvedKind, namespace: Option<&str>) -> Result<Vec<String>, LiveError> {
        let _permit = self.permits.acquire().await.expect("semaphore is never closed");
        let (api, resource, scope) = self.list_target(kind, namespace);
        let mut req =
            kube::core::Request::new(api.resource_url()).list_metadata(&ListParams::default().limit(1)).map_err(
                |e| LiveError::List { resource: resource.clone(), scope: scope.clone(), message: e.to_string() },
            )?;
        req.extensions_mut().insert("list_metadata");
        let response = self
            .client
            .send(req.map(kube::client::Body::from))
            .await
            .map_err(|e| classify_list_error(e, &resource, &scope))?;
        if !response.status().is_success() {
            let message = format!("the API server answered {}", response.status());
            return Err(LiveError::List { resource, scope, message });
        }
        Ok(response
            .headers()
            .get_all(http::header::WARNING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(warning_text)
            .collect())
    }

    /// Drop the cached lists of `namespace` (every kind and variant). A later read lists again;
    /// a caller still holding a list keeps it alive. `release --all -A` calls it once the last
    /// release of a namespace is checked, so its peak memory follows the namespaces in flight,
    /// not the whole cluster.
    pub fn forget_namespace(&self, namespace: &str) {
        self.cache.lock().expect("list cache lock").retain(|(_, _, _, ns, _), _| ns.as_deref() != Some(namespace));
        self.compact.lock().expect("list cache lock").retain(|(_, _, _, ns, _), _| ns.as_deref() != Some(namespace));
    }

    /// One cache cell per (resource, namespace, variant); the first caller fetches.
    async fn cached(
        &self,
        kind: &ResolvedKind,
        namespace: Option<&str>,
        variant: String,
        lp: ListParams,
        body: Body,
    ) -> Listing {
        let ar = &kind.resource;
        let key: ListKey =
            (ar.group.clone(), ar.version.clone(), ar.plural.clone(), namespace.map(str::to_string), variant);
        let cell = {
            let mut cache = self.cache.lock().expect("list cache lock");
            cache.entry(key).or_default().clone()
        };
        cell.get_or_init(|| self.fetch(kind, namespace, lp, body)).await.clone()
    }

    /// Page through a LIST (whole objects or metadata only), under the concurrency limit.
    async fn fetch(&self, kind: &ResolvedKind, namespace: Option<&str>, lp: ListParams, body: Body) -> Listing {
        match self.fetch_pages_decoded(kind, namespace, lp, body, None, &Prune::Keep, |v| v).await? {
            Capped::All(items) => Ok(Arc::new(items)),
            Capped::TooMany { .. } => unreachable!("no cap was given"),
        }
    }
}

impl LiveReader {
    /// What a LIST reads and how its errors name it: the API for `kind` in
    /// `namespace` (all namespaces, or cluster-scoped), the resource (`plural.group`) and the scope.
    fn list_target(&self, kind: &ResolvedKind, namespace: Option<&str>) -> (Api<DynamicObject>, String, String) {
        let ar = &kind.resource;
        let api: Api<DynamicObject> = match (kind.namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, ar),
            _ => Api::all_with(self.client.clone(), ar),
        };
        let resource = if ar.group.is_empty() { ar.plural.clone() } else { format!("{}.{}", ar.plural, ar.group) };
        let scope = match (kind.namespaced, namespace) {
            (true, Some(ns)) => format!("in namespace {ns}"),
            (true, None) => "in all namespaces".to_string(),
            (false, _) => "(cluster-scoped)".to_string(),
        };
        (api, resource, scope)
    }

    /// Page through a LIST (whole objects or metadata only) under the concurrency limit, with a
    /// cap stopping as soon as it is known to be exceeded, decoding each page's JSON as it is
    /// read: each item becomes a `serde_json::Value` on its own, without the parts `prune` skips
    /// (never built), and `keep` makes what is kept of it before the next is decoded, so a page
    /// is never held as a list of whole objects (kube's `Api::list` decodes all of a page first,
    /// into `DynamicObject`s that are then re-encoded).
    #[allow(clippy::too_many_arguments)]
    async fn fetch_pages_decoded<T>(
        &self,
        kind: &ResolvedKind,
        namespace: Option<&str>,
        mut lp: ListParams,
        body: Body,
        cap: Option<usize>,
        prune: &'static Prune,
        keep: impl Fn(Value) -> T,
    ) -> Result<Capped<T>, LiveError> {
        let _permit = self.permits.acquire().await.expect("semaphore is never closed");
        let ar = &kind.resource;
        let (api, resource, scope) = self.list_target(kind, namespace);
        let request = kube::core::Request::new(api.resource_url());
        let list_error =
            |message: String| LiveError::List { resource: resource.clone(), scope: scope.clone(), message };
        // An item as the other paths give it: apiVersion and kind put back (list items carry
        // none), or only those and the metadata.
        let item = |mut v: Value| -> T {
            match body {
                Body::Whole => {
                    if let Some(m) = v.as_object_mut() {
                        m.insert("apiVersion".into(), Value::String(ar.api_version.clone()));
                        m.insert("kind".into(), Value::String(ar.kind.clone()));
                    }
                    keep(v)
                }
                Body::MetadataOnly => {
                    let metadata = v.get_mut("metadata").map(Value::take).unwrap_or(Value::Null);
                    keep(serde_json::json!({"apiVersion": ar.api_version, "kind": ar.kind, "metadata": metadata}))
                }
            }
        };
        let mut out = Vec::new();
        let mut relisted = false;
        loop {
            let built = match body {
                Body::Whole => request.list(&lp).map(|mut r| {
                    r.extensions_mut().insert("list");
                    r
                }),
                Body::MetadataOnly => request.list_metadata(&lp).map(|mut r| {
                    r.extensions_mut().insert("list_metadata");
                    r
                }),
            };
            let req = built.map_err(|e| list_error(format!("could not build the request: {e}")))?;
            let text = match self.client.request_text(req).await {
                Err(e) if expired_continue(&e, &lp, &mut relisted) => {
                    (out, lp) = (Vec::new(), full_list(&lp));
                    continue;
                }
                text => text.map_err(|e| classify_list_error(e, &resource, &scope))?,
            };
            let meta = {
                use serde::de::DeserializeSeed;
                let mut de = serde_json::Deserializer::from_str(&text);
                let meta = PageSeed { out: &mut out, item: &item, prune }
                    .deserialize(&mut de)
                    .and_then(|m| de.end().map(|()| m))
                    .map_err(|e| list_error(format!("could not decode a page: {e}")))?;
                drop(text);
                meta
            };
            if let Some(cap) = cap {
                let known = out.len() + meta.remaining.and_then(|r| usize::try_from(r).ok()).unwrap_or(0);
                if known > cap {
                    return Ok(Capped::TooMany { at_least: known });
                }
            }
            match meta.continue_token.filter(|c| !c.is_empty()) {
                Some(token) => lp = lp.continue_token(&token),
                None => break,
            }
        }
        Ok(Capped::All(out))
    }
}

/// What a LIST page says about the pages after it.
#[derive(Debug, Default, serde::Deserialize)]
struct PageMeta {
    #[serde(rename = "continue")]
    continue_token: Option<String>,
    #[serde(rename = "remainingItemCount")]
    remaining: Option<i64>,
}

/// Decodes one LIST page (`{"metadata": ..., "items": [...]}`), handing each item to `item` as
/// soon as it is decoded and pushing what it returns to `out`; returns the page's metadata.
struct PageSeed<'a, T, F> {
    out: &'a mut Vec<T>,
    item: &'a F,
    /// What of each item is skipped, not decoded.
    prune: &'static Prune,
}

impl<'de, T, F: Fn(Value) -> T> serde::de::DeserializeSeed<'de> for PageSeed<'_, T, F> {
    type Value = PageMeta;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<PageMeta, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T, F: Fn(Value) -> T> serde::de::Visitor<'de> for PageSeed<'_, T, F> {
    type Value = PageMeta;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a LIST response")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<PageMeta, A::Error> {
        let mut meta = PageMeta::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "metadata" => meta = map.next_value()?,
                "items" => map.next_value_seed(Items { out: &mut *self.out, item: self.item, prune: self.prune })?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(meta)
    }
}

/// The `items` of a LIST page, one at a time (`null` when there are none).
struct Items<'a, T, F> {
    out: &'a mut Vec<T>,
    item: &'a F,
    prune: &'static Prune,
}

impl<'de, T, F: Fn(Value) -> T> serde::de::DeserializeSeed<'de> for Items<'_, T, F> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, T, F: Fn(Value) -> T> serde::de::Visitor<'de> for Items<'_, T, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the items of a LIST response")
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element_seed(Pruned(self.prune))? {
            self.out.push((self.item)(v));
        }
        Ok(())
    }
}

/// What a decoder may skip of a listed object, by where it is: the subtrees a caller's [`Trim`]
/// would drop anyway, never built (a Pod's status, the `fieldsV1` of its managed fields, most of
/// its spec are skipped as they are read, instead of being made into `serde_json::Value`s first
/// and dropped after). A prune only ever skips what the trim drops: the trim of the pruned object
/// equals the trim of the whole one.
#[derive(Debug)]
pub enum Prune {
    /// The value is built whole.
    Keep,
    /// The value is skipped: its key is left out of the object it is in.
    Drop,
    /// An object: the listed keys as given, every other key as the second. A value of another
    /// type is built whole.
    Fields(&'static [(&'static str, Prune)], &'static Prune),
    /// An array: each item as given. A value of another type is built whole.
    Items(&'static Prune),
}

impl Prune {
    /// One JSON document decoded as a LIST item is: without what this prune skips.
    pub fn decode(&'static self, text: &str) -> Result<Value, serde_json::Error> {
        use serde::de::DeserializeSeed;
        let mut de = serde_json::Deserializer::from_str(text);
        let v = Pruned(self).deserialize(&mut de)?;
        de.end()?;
        Ok(v)
    }

    /// Drop from `v`, in place, what this prune skips: `v` as the decoder would have built it.
    pub fn apply(&self, v: &mut Value) {
        match (self, v) {
            (Prune::Fields(..), Value::Object(map)) => {
                map.retain(|k, _| !matches!(self.at(k), Prune::Drop));
                for (k, child) in map.iter_mut() {
                    self.at(k).apply(child);
                }
            }
            (Prune::Items(item), Value::Array(items)) => items.iter_mut().for_each(|v| item.apply(v)),
            _ => {}
        }
    }

    fn at(&self, key: &str) -> &Prune {
        match self {
            Prune::Fields(fields, other) => fields.iter().find(|(k, _)| *k == key).map_or(*other, |(_, p)| p),
            _ => &Prune::Keep,
        }
    }
}

/// Decodes one value as a `serde_json::Value`, skipping what its [`Prune`] says.
#[derive(Clone, Copy)]
struct Pruned(&'static Prune);

impl<'de> serde::de::DeserializeSeed<'de> for Pruned {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        use serde::Deserialize;
        match self.0 {
            Prune::Keep | Prune::Drop => Value::deserialize(d),
            _ => d.deserialize_any(self),
        }
    }
}

impl<'de> serde::de::Visitor<'de> for Pruned {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        serde::de::DeserializeSeed::deserialize(self, d)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let item = match self.0 {
            Prune::Items(p) => p,
            _ => &Prune::Keep,
        };
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Pruned(item))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match self.0.at(&key) {
                Prune::Drop => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
                p => {
                    let v = map.next_value_seed(Pruned(p))?;
                    out.insert(key, v);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// The objects of one list that a check looks at ([`LiveSource::list_wanted`]): those of the
/// names it expects, and those that may belong to its release.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    /// Objects of these names.
    pub names: std::collections::BTreeSet<String>,
    /// And the objects that [`release_names`] says may belong to this release.
    pub release: Option<String>,
    /// Only their metadata is read (a source may hand out whole objects all the same).
    pub metadata: bool,
}

/// The release names an object may carry: its `meta.helm.sh/release-name` annotation, then its
/// `app.kubernetes.io/instance` label when that differs. An object can belong to a release only
/// if one of them is the release's name (the drift engine's `belongs_to` decides the rest).
pub fn release_names(o: &Value) -> impl Iterator<Item = &str> {
    let meta = o.get("metadata");
    let annotation = meta.and_then(|m| m.get("annotations")).and_then(|a| a.get("meta.helm.sh/release-name"));
    let label = meta.and_then(|m| m.get("labels")).and_then(|l| l.get("app.kubernetes.io/instance"));
    let annotation = annotation.and_then(Value::as_str);
    let label = label.and_then(Value::as_str).filter(|l| Some(*l) != annotation);
    annotation.into_iter().chain(label)
}

/// Where the drift engine's fetch step reads whole LISTs: [`LiveReader`] (cached LIST requests),
/// or any other holder of live objects (a watch-fed cache) that answers the same question.
pub trait LiveSource: Send + Sync {
    /// Every object of `kind` in `namespace` (`None`: cluster-wide or cluster-scoped).
    fn list<'a>(&'a self, kind: &'a ResolvedKind, namespace: Option<&'a str>) -> BoxFuture<'a, Listing>;

    /// At least the objects of `kind` in `namespace` that `wanted` names, in the order of the
    /// whole list; more is allowed, and by default it is the whole list (or its metadata). A
    /// LIST answers with every object anyway; a watch-fed cache decodes only these.
    fn list_wanted<'a>(
        &'a self,
        kind: &'a ResolvedKind,
        namespace: Option<&'a str>,
        wanted: &'a Wanted,
    ) -> BoxFuture<'a, Listing> {
        if wanted.metadata { self.list_metadata(kind, namespace, "") } else { self.list(kind, namespace) }
    }

    /// Only `apiVersion`, `kind` and `metadata` of the objects of `kind` in `namespace` whose
    /// labels match the selector `labels` (empty: all). By default [`list`](Self::list) filtered in
    /// memory (a source that holds whole objects); [`LiveReader`] sends a metadata-only LIST.
    fn list_metadata<'a>(
        &'a self,
        kind: &'a ResolvedKind,
        namespace: Option<&'a str>,
        labels: &'a str,
    ) -> BoxFuture<'a, Listing> {
        Box::pin(async move {
            let all = self.list(kind, namespace).await?;
            let no_labels = serde_json::Map::new();
            let mut out = Vec::new();
            for o in all.iter() {
                let l = at(o, "/metadata/labels").and_then(Value::as_object).unwrap_or(&no_labels);
                let matched = selector_matches(labels, l).map_err(|message| LiveError::List {
                    resource: kind.resource.plural.clone(),
                    scope: namespace.unwrap_or_default().to_string(),
                    message,
                })?;
                if matched {
                    out.push(serde_json::json!({"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": o["metadata"]}));
                }
            }
            Ok(Arc::new(out))
        })
    }
}

impl LiveSource for LiveReader {
    fn list<'a>(&'a self, kind: &'a ResolvedKind, namespace: Option<&'a str>) -> BoxFuture<'a, Listing> {
        Box::pin(LiveReader::list(self, kind, namespace))
    }

    fn list_metadata<'a>(
        &'a self,
        kind: &'a ResolvedKind,
        namespace: Option<&'a str>,
        labels: &'a str,
    ) -> BoxFuture<'a, Listing> {
        Box::pin(LiveReader::list_metadata(self, kind, namespace, labels))
    }
}

/// One requirement of a label selector as `kubectl -l` writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelRequirement<'a> {
    /// `k=v` or `k==v`
    Equals(&'a str, &'a str),
    /// `k!=v`
    NotEquals(&'a str, &'a str),
    /// `k in (a,b)`
    In(&'a str, Vec<&'a str>),
    /// `k notin (a,b)`
    NotIn(&'a str, Vec<&'a str>),
    /// `k`
    Exists(&'a str),
    /// `!k`
    DoesNotExist(&'a str),
}

/// The requirements of a label selector as `kubectl -l` and the API server take it:
/// comma-separated `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k` (empty: none,
/// which selects everything). `Err` names a requirement it cannot read.
pub fn parse_label_selector(selector: &str) -> Result<Vec<LabelRequirement<'_>>, String> {
    let mut requirements = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, ch) in selector.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                requirements.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    requirements.push(&selector[start..]);
    let mut out = Vec::new();
    for r in requirements.into_iter().map(str::trim).filter(|r| !r.is_empty()) {
        let set = |op: &str| {
            let (k, rest) = r.split_once(op)?;
            let values = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
            Some((k.trim(), values.split(',').map(str::trim).collect::<Vec<_>>()))
        };
        out.push(if let Some((k, values)) = set(" notin ") {
            LabelRequirement::NotIn(k, values)
        } else if let Some((k, values)) = set(" in ") {
            LabelRequirement::In(k, values)
        } else if let Some((k, v)) = r.split_once("!=") {
            LabelRequirement::NotEquals(k.trim(), v.trim())
        } else if let Some((k, v)) = r.split_once("==").or_else(|| r.split_once('=')) {
            LabelRequirement::Equals(k.trim(), v.trim())
        } else if let Some(k) = r.strip_prefix('!') {
            LabelRequirement::DoesNotExist(k.trim())
        } else if r.contains(|c: char| c.is_whitespace() || "()<>".contains(c)) {
            return Err(format!("label selector {selector:?}: cannot read {r:?}"));
        } else {
            LabelRequirement::Exists(r)
        });
    }
    Ok(out)
}

/// Whether `labels` match a label selector as `kubectl -l` and the API server take it (see
/// [`parse_label_selector`]; all requirements must hold; empty selects everything).
pub fn selector_matches(selector: &str, labels: &serde_json::Map<String, Value>) -> Result<bool, String> {
    let value = |k: &str| labels.get(k).and_then(Value::as_str);
    Ok(parse_label_selector(selector)?.into_iter().all(|r| match r {
        LabelRequirement::NotIn(k, values) => !value(k).is_some_and(|v| values.contains(&v)),
        LabelRequirement::In(k, values) => value(k).is_some_and(|v| values.contains(&v)),
        LabelRequirement::NotEquals(k, v) => value(k) != Some(v),
        LabelRequirement::Equals(k, v) => value(k) == Some(v),
        LabelRequirement::DoesNotExist(k) => !labels.contains_key(k),
        LabelRequirement::Exists(k) => labels.contains_key(k),
    }))
}

#[cfg(test)]
mod at_tests {
    use serde_json::json;

    #[test]
    fn at_finds_what_pointer_finds() {
        let v = json!({
            "metadata": {"name": "web", "labels": {"app.kubernetes.io/instance": "shop"}, "ownerReferences": []},
            "spec": {"ports": [{"port": 80}, {"port": 443, "name": "https"}], "empty": {}},
        });
        for p in [
            "",
            "/metadata",
            "/metadata/name",
            "/metadata/labels/app.kubernetes.io/instance",
            "/metadata/ownerReferences/0",
            "/spec/ports/1/name",
            "/spec/ports/2",
            "/spec/ports/x",
            "/spec/ports/-1",
            "/spec/ports/+1",
            "/spec/ports/01",
            "/spec/ports/0",
            "/spec/empty/missing",
            "/metadata/name/deeper",
            "/missing",
        ] {
            assert_eq!(super::at(&v, p), v.pointer(p), "{p}");
        }
        assert_eq!(super::at(&v, "/spec/ports/1/port"), Some(&json!(443)));
    }
}

#[cfg(test)]
mod selector_tests {
    use super::selector_matches;
    use serde_json::json;

    #[test]
    fn label_selectors_as_the_api_server_reads_them() {
        let l = json!({"app": "web", "tier": "front", "applyset.kubernetes.io/part-of": "applyset-x-v1"});
        let l = l.as_object().unwrap();
        let m = |s: &str| selector_matches(s, l).unwrap();
        assert!(m(""));
        assert!(m("app=web") && m("app==web") && m("app = web"));
        assert!(!m("app=db") && m("app!=db") && !m("app!=web"));
        assert!(m("app=web,tier=front") && !m("app=web,tier=back"));
        assert!(m("tier in (front, back)") && !m("tier in (back)") && m("tier notin (back)"));
        assert!(!m("tier notin (front,back)") && m("app in (web),tier notin (x, y)"));
        assert!(m("app") && !m("db") && m("!db") && !m("!app"));
        assert!(m("applyset.kubernetes.io/part-of=applyset-x-v1"));
        assert!(m("gone notin (a)"), "notin holds for a missing label, as in Kubernetes");
        assert!(selector_matches("app <> web", l).is_err());
    }
}

/// A LIST read with a cap on the number of objects.
#[derive(Debug, Clone)]
pub enum Capped<T = IValue> {
    /// Every object.
    All(Vec<T>),
    /// More objects than the cap: at least this many (the server's count when it gave one).
    TooMany { at_least: usize },
}

/// The field selector of a whole-object LIST or WATCH of `resource`: Secrets leave out Helm's
/// release storage (large, and never compared); other kinds are read unfiltered (empty).
pub fn whole_list_fields(resource: &ApiResource) -> &'static str {
    if resource.group.is_empty() && resource.kind == "Secret" { "type!=helm.sh/release.v1" } else { "" }
}

/// What a caller keeps of each listed object (see [`LiveReader::list_trimmed`]).
#[derive(Debug, Clone, Copy)]
pub struct Trim {
    /// Names the trim in the cache key.
    pub name: &'static str,
    /// What the decoder skips (a part of what `apply` drops; [`Prune::Keep`]: nothing).
    pub prune: &'static Prune,
    /// Drops, in place, what the caller does not read.
    pub apply: fn(&mut Value),
}

/// The parameters of a paged LIST of one shape, and its field selector.
fn list_params(kind: &ResolvedKind, body: Body, labels: &str) -> (ListParams, &'static str) {
    let mut lp = ListParams::default().limit(PAGE_SIZE);
    let fields = match body {
        Body::Whole => whole_list_fields(&kind.resource),
        Body::MetadataOnly => "",
    };
    if !fields.is_empty() {
        lp = lp.fields(fields);
    }
    if !labels.is_empty() {
        lp = lp.labels(labels);
    }
    (lp, fields)
}

/// The text of one `Warning` header value the API server sends (`299 - "text"`, RFC 7234's
/// warn-code, warn-agent and quoted warn-text, with `\"` and `\\` escapes), when its code is
/// 299 (a persistent warning, what the server uses for deprecations).
pub fn warning_text(value: &str) -> Option<String> {
    let rest = value.trim().strip_prefix("299 ")?;
    let (_agent, quoted) = rest.split_once(' ')?;
    let mut chars = quoted.strip_prefix('"')?.chars();
    let mut text = String::new();
    loop {
        match chars.next()? {
            '"' => return Some(text),
            '\\' => text.push(chars.next()?),
            c => text.push(c),
        }
    }
}

/// What a trimmed list keeps of one object: `trim` applied, then in compact form.
fn compact(mut v: Value, trim: Trim) -> IValue {
    (trim.apply)(&mut v);
    IValue::from(v)
}

/// What a LIST returns.
#[derive(Debug, Clone, Copy)]
enum Body {
    Whole,
    MetadataOnly,
}

/// Whether a LIST page failed because its continue token expired (410 Gone: the server compacted
/// the revision the first page was read at), for the first time in this LIST. The pages read so
/// far belong to an older snapshot and cannot be completed, so the LIST is read again from the
/// start, whole, in one request (what client-go's pager does: `FullListIfExpired`). A second
/// expiry is an error (exit 2) rather than a loop.
pub(crate) fn expired_continue(e: &kube::Error, lp: &ListParams, relisted: &mut bool) -> bool {
    let gone = matches!(e, kube::Error::Api(status) if status.code == 410);
    if gone && lp.continue_token.is_some() && !*relisted {
        *relisted = true;
        return true;
    }
    false
}

/// The parameters of a LIST read again after an expired continue token: the same selectors,
/// no limit, no token.
pub(crate) fn full_list(lp: &ListParams) -> ListParams {
    ListParams { limit: None, continue_token: None, ..lp.clone() }
}

pub(crate) fn classify_list_error(e: kube::Error, resource: &str, scope: &str) -> LiveError {
    let (resource, scope) = (resource.to_string(), scope.to_string());
    match &e {
        kube::Error::Api(status) if status.code == 403 => LiveError::Forbidden { resource, scope, source: Arc::new(e) },
        _ => LiveError::Client { resource, scope, source: Arc::new(e) },
    }
}

/// A short, single-line description of a client error.
pub fn error_text(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => {
            let mut s = other.to_string();
            let mut src = std::error::Error::source(other);
            while let Some(inner) = src {
                s.push_str(": ");
                s.push_str(&inner.to_string());
                src = inner.source();
            }
            s
        }
    }
}

/// Name and namespace of a live object.
pub fn object_key(v: &Value) -> (String, String) {
    let s = |p: &str| at(v, p).and_then(Value::as_str).unwrap_or("").to_string();
    (s("/metadata/namespace"), s("/metadata/name"))
}

/// [`Value::pointer`] for a pointer without `~` escapes (as every pointer written in this code
/// is), without allocating: `Value::pointer` copies each token to unescape it, and the checks of a
/// big cluster look up millions of fields (a twentieth of `release --all -A`'s CPU).
pub fn at<'v>(v: &'v Value, pointer: &str) -> Option<&'v Value> {
    debug_assert!(pointer.is_empty() || pointer.starts_with('/'), "not a JSON pointer: {pointer}");
    debug_assert!(!pointer.contains('~'), "a pointer with escapes: use Value::pointer ({pointer})");
    pointer.split('/').skip(1).try_fold(v, |target, token| match target {
        Value::Object(map) => map.get(token),
        // As RFC 6901 (and `Value::pointer`): no sign, no leading zero.
        Value::Array(list) if !token.starts_with('+') && (token == "0" || !token.starts_with('0')) => {
            token.parse::<usize>().ok().and_then(|i| list.get(i))
        }
        _ => None,
    })
}

#[cfg(test)]
mod warning_tests {
    use super::warning_text;

    #[test]
    fn warning_headers_as_the_api_server_writes_them() {
        assert_eq!(
            warning_text(r#"299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice""#)
                .as_deref(),
            Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
        );
        assert_eq!(warning_text(r#"299 - "say \"no\" \\ back""#).as_deref(), Some(r#"say "no" \ back"#));
        // Other codes, and values that are not warnings, are not read.
        assert_eq!(warning_text(r#"199 - "miscellaneous""#), None);
        assert_eq!(warning_text("299 - unquoted"), None);
        assert_eq!(warning_text(r#"299 - "never closed"#), None);
    }
}

#[cfg(test)]
mod page_tests {
    use serde::de::DeserializeSeed;
    use serde_json::{Value, json};

    use super::{PageMeta, PageSeed};

    fn decode(text: &str) -> (Vec<String>, PageMeta) {
        let mut out = Vec::new();
        let item = |v: Value| v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("?").to_string();
        let mut de = serde_json::Deserializer::from_str(text);
        let meta = PageSeed { out: &mut out, item: &item, prune: &super::Prune::Keep }.deserialize(&mut de).unwrap();
        de.end().unwrap();
        (out, meta)
    }

    #[test]
    fn pages_decode_item_by_item() {
        let page = json!({"kind": "PodList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "9", "continue": "tok", "remainingItemCount": 3},
            "items": [{"metadata": {"name": "a"}, "spec": {"x": [1, 2]}}, {"metadata": {"name": "b"}}]});
        let (names, meta) = decode(&page.to_string());
        assert_eq!(names, ["a", "b"]);
        assert_eq!((meta.continue_token.as_deref(), meta.remaining), (Some("tok"), Some(3)));
        // Items first, no continue, and `items: null` (an empty list from some servers).
        let (names, meta) = decode(r#"{"items": [{"metadata": {"name": "c"}}], "metadata": {}}"#);
        assert_eq!((names, meta.continue_token), (vec!["c".to_string()], None));
        let (names, _) = decode(r#"{"metadata": {"continue": ""}, "items": null}"#);
        assert!(names.is_empty());
    }
}
