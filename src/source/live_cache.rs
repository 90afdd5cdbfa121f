//! A watch-fed cache of live objects (`watch --live`): the drift engine's fetch step reads it
//! through [`LiveSource`] instead of sending LIST requests.
//!
//! The first read of a (kind, namespace) starts a kube-rs watcher for it: one paged LIST, then a
//! WATCH from that list's resourceVersion with bookmarks. When the stream ends (the server's
//! timeout) or fails (API server restart), the watcher reconnects with backoff from the last
//! resourceVersion it saw, so edits made while it was away still arrive; when that version is too
//! old (410 Gone) it lists again and the store is replaced whole. Only the (kind, namespace) pairs
//! that checks ask for are watched.
//!
//! Objects are stored slim: what the comparison never reads is dropped (top-level `status`,
//! `metadata.resourceVersion`, the `last-applied-configuration` annotation, managedFields entries
//! of the status subresource and their `apiVersion`/`fieldsType`), and a Secret's values are kept
//! only as `sha256:HEX:LEN` fingerprints ([`secret_fingerprint_of`]; the comparison matches
//! them against the desired values' own). An update
//! that leaves the slim object unchanged (a status update) is not reported as a change.
//!
//! Each change is sent on a channel as a [`Change`] so the caller can re-check what read that
//! (kind, namespace). Reads only: list and watch.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Instant;

use base64::Engine as _;
use futures::StreamExt;
use futures::future::BoxFuture;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use serde_json::Value;

pub use crate::report::secret::{parse_secret_fingerprint, secret_fingerprint_of};
use tokio::sync::{mpsc, watch as tokio_watch};

use crate::source::live::{Listing, LiveError, LiveSource, ResolvedKind};
use crate::source::watch_store::{Applied, WatchBook, entries};

/// Which LIST a change belongs to: (group, version, plural, namespace).
pub type ListKey = (String, String, String, Option<String>);

/// The key of `kind` in `namespace`, as the cache and its changes name it.
pub fn list_key(kind: &ResolvedKind, namespace: Option<&str>) -> ListKey {
    let ar = &kind.resource;
    let ns = if kind.namespaced { namespace.map(str::to_string) } else { None };
    (ar.group.clone(), ar.version.clone(), ar.plural.clone(), ns)
}

/// Something changed in a watched (kind, namespace): an object was added, changed or deleted,
/// the stream listed again, or its first list finished or failed.
#[derive(Debug, Clone)]
pub struct Change {
    pub key: ListKey,
    /// When the event was received (the start of the event-to-alert time).
    pub at: Instant,
}

/// Counters for `/metrics`, shared by every watch stream of a cache (and of the caches that
/// replace it at a resync).
#[derive(Debug, Default)]
pub struct StreamStats {
    /// Watch events received (initial list items included).
    pub events: AtomicU64,
    /// Times a stream failed and was re-established (reconnect from resourceVersion, or relist).
    pub restarts: AtomicU64,
    /// Times a stream listed again after its first list (410 Gone, or a failed resume).
    pub relists: AtomicU64,
    /// Streams currently open (one per watched kind and namespace).
    pub streams: AtomicU64,
    /// Stream id -> its last failure, while it may not have recovered (see [`FAILING_WINDOW`]).
    failing: Mutex<HashMap<u64, Instant>>,
    next_id: AtomicU64,
}

/// A stream that failed within this window counts as failing. A watcher that reconnects sends
/// no event until something changes, so recovery cannot be observed directly; a stream that
/// keeps failing does so at least every 30 s (the longest backoff between attempts).
pub const FAILING_WINDOW: std::time::Duration = std::time::Duration::from_secs(40);

impl StreamStats {
    /// A new stream's id.
    pub fn stream_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Stream `id` failed (it reconnects with backoff).
    pub fn failed(&self, id: u64) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
        self.failing.lock().expect("stats lock").insert(id, Instant::now());
    }

    /// Stream `id` delivered an event: it works.
    pub fn works(&self, id: u64) {
        self.events.fetch_add(1, Ordering::Relaxed);
        let mut failing = self.failing.lock().expect("stats lock");
        if !failing.is_empty() {
            failing.remove(&id);
        }
    }

    /// Stream `id` ended.
    pub fn ended(&self, id: u64) {
        self.streams.fetch_sub(1, Ordering::Relaxed);
        self.failing.lock().expect("stats lock").remove(&id);
    }

    /// Streams that failed within [`FAILING_WINDOW`] and sent nothing since.
    pub fn failing(&self) -> u64 {
        let failing = self.failing.lock().expect("stats lock");
        failing.values().filter(|t| t.elapsed() < FAILING_WINDOW).count() as u64
    }
}

/// One watched (kind, namespace).
struct Store {
    /// `None` until the first list finished; then the result of the latest one.
    ready: tokio_watch::Receiver<Option<Result<(), LiveError>>>,
    objects: Arc<RwLock<BTreeMap<(String, String), Value>>>,
    /// What [`LiveSource::list`] hands out while some check still holds it: held weakly, so
    /// between checks only `objects` is kept (a second copy of every object watched doubled the
    /// cache's memory); rebuilt after a change, or when no check holds it any more.
    snapshot: Arc<Mutex<Weak<Vec<Value>>>>,
    task: tokio::task::JoinHandle<()>,
}

/// The watch-fed cache. Dropping it stops its streams.
pub struct LiveCache {
    client: Client,
    stores: Mutex<HashMap<ListKey, Arc<Store>>>,
    changes: mpsc::UnboundedSender<Change>,
    stats: Arc<StreamStats>,
}

impl LiveCache {
    /// A cache on `client`; changes are sent to `changes`. Nothing is requested yet.
    pub fn new(client: Client, changes: mpsc::UnboundedSender<Change>, stats: Arc<StreamStats>) -> LiveCache {
        LiveCache { client, stores: Mutex::new(HashMap::new()), changes, stats }
    }

    /// Number of (kind, namespace) pairs watched.
    pub fn watched(&self) -> usize {
        self.stores.lock().expect("cache lock").len()
    }

    /// Number of objects held (for the memory figures).
    pub fn objects(&self) -> usize {
        let stores = self.stores.lock().expect("cache lock");
        stores.values().map(|s| s.objects.read().expect("store lock").len()).sum()
    }

    fn store(&self, kind: &ResolvedKind, namespace: Option<&str>) -> Arc<Store> {
        let key = list_key(kind, namespace);
        let mut stores = self.stores.lock().expect("cache lock");
        stores
            .entry(key.clone())
            .or_insert_with(|| Arc::new(self.start(kind.clone(), key, namespace.map(str::to_string))))
            .clone()
    }

    /// Start the watcher of one (kind, namespace).
    fn start(&self, kind: ResolvedKind, key: ListKey, namespace: Option<String>) -> Store {
        let (ready_tx, ready) = tokio_watch::channel(None);
        let objects: Arc<RwLock<BTreeMap<(String, String), Value>>> = Arc::default();
        let snapshot: Arc<Mutex<Weak<Vec<Value>>>> = Arc::default();
        let ar = kind.resource.clone();
        let api: Api<DynamicObject> = match (kind.namespaced, namespace.as_deref()) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &ar),
            _ => Api::all_with(self.client.clone(), &ar),
        };
        let secret = ar.group.is_empty() && ar.kind == "Secret";
        let mut config = watcher::Config::default().page_size(500);
        // Helm's release storage is never compared (and is large): the same filter as LISTs.
        let fields = crate::source::live::whole_list_fields(&ar);
        if !fields.is_empty() {
            config = config.fields(fields);
        }
        let resource = if ar.group.is_empty() { ar.plural.clone() } else { format!("{}.{}", ar.plural, ar.group) };
        let scope = match (kind.namespaced, namespace.as_deref()) {
            (true, Some(ns)) => format!("in namespace {ns}"),
            (true, None) => "in all namespaces".to_string(),
            (false, _) => "(cluster-scoped)".to_string(),
        };
        let task_objects = objects.clone();
        let task_snapshot = snapshot.clone();
        let changes = self.changes.clone();
        let stats = self.stats.clone();
        let task = tokio::spawn(async move {
            stats.streams.fetch_add(1, Ordering::Relaxed);
            let id = stats.stream_id();
            let _ended = Ended(stats.clone(), id);
            let mut stream = watcher::watcher(api, config).default_backoff().boxed();
            let mut book: WatchBook<BTreeMap<(String, String), Value>> = WatchBook::default();
            let notify = |at: Instant| {
                *task_snapshot.lock().expect("snapshot lock") = Weak::new();
                let _ = changes.send(Change { key: key.clone(), at });
            };
            while let Some(item) = stream.next().await {
                let at = Instant::now();
                let event = match item {
                    Ok(e) => e,
                    Err(e) => {
                        stats.failed(id);
                        if !book.listed() {
                            let error = watch_error(e, &resource, &scope);
                            ready_tx.send_replace(Some(Err(error)));
                            notify(at);
                        }
                        continue;
                    }
                };
                stats.works(id);
                // Slimmed before the store is locked: readers wait only for the map's own change.
                let event = entries(event, |obj| {
                    let v = slim(obj, &ar.api_version, &ar.kind, secret);
                    (crate::source::live::object_key(&v), v)
                });
                let applied = book.apply(&mut task_objects.write().expect("store lock"), event);
                match applied {
                    Applied::ListStarted { relist } => {
                        if relist {
                            stats.relists.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Applied::Buffered => {}
                    Applied::Listed { first, changed } => {
                        ready_tx.send_replace(Some(Ok(())));
                        if changed || first {
                            notify(at);
                        }
                    }
                    Applied::Upserted { changed, .. } | Applied::Deleted { present: changed, .. } => {
                        if changed {
                            notify(at);
                        }
                    }
                }
            }
        });
        Store { ready, objects, snapshot, task }
    }

    /// The objects of `kind` in `namespace`, waiting for the first list of a new stream.
    async fn read(&self, kind: &ResolvedKind, namespace: Option<&str>) -> Listing {
        let store = self.store(kind, namespace);
        let mut ready = store.ready.clone();
        let state = match ready.wait_for(Option::is_some).await {
            Ok(state) => state.clone(),
            Err(_) => Some(Err(LiveError::List {
                resource: kind.resource.plural.clone(),
                scope: namespace.unwrap_or_default().to_string(),
                message: "the watch stream stopped".into(),
            })),
        };
        if let Some(Err(e)) = state {
            return Err(e);
        }
        let mut snap = store.snapshot.lock().expect("snapshot lock");
        if let Some(s) = snap.upgrade() {
            return Ok(s);
        }
        let all: Arc<Vec<Value>> = Arc::new(store.objects.read().expect("store lock").values().cloned().collect());
        *snap = Arc::downgrade(&all);
        Ok(all)
    }
}

impl Drop for LiveCache {
    fn drop(&mut self) {
        if let Ok(stores) = self.stores.lock() {
            for s in stores.values() {
                s.task.abort();
            }
        }
    }
}

/// Counts a stream's end however its task stops (an abort included).
pub struct Ended(pub Arc<StreamStats>, pub u64);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.ended(self.1);
    }
}

impl LiveSource for LiveCache {
    fn list<'a>(&'a self, kind: &'a ResolvedKind, namespace: Option<&'a str>) -> BoxFuture<'a, Listing> {
        Box::pin(self.read(kind, namespace))
    }
}

/// A [`LiveSource`] that remembers which (kind, namespace) pairs were read through it: what a
/// check depends on, so a change there re-runs that check.
pub struct Recording {
    inner: Arc<LiveCache>,
    seen: Mutex<std::collections::BTreeSet<ListKey>>,
}

impl Recording {
    pub fn new(inner: Arc<LiveCache>) -> Recording {
        Recording { inner, seen: Mutex::default() }
    }

    /// The pairs read so far.
    pub fn keys(&self) -> std::collections::BTreeSet<ListKey> {
        self.seen.lock().expect("recording lock").clone()
    }
}

impl LiveSource for Recording {
    fn list<'a>(&'a self, kind: &'a ResolvedKind, namespace: Option<&'a str>) -> BoxFuture<'a, Listing> {
        self.seen.lock().expect("recording lock").insert(list_key(kind, namespace));
        self.inner.list(kind, namespace)
    }
}

fn watch_error(e: watcher::Error, resource: &str, scope: &str) -> LiveError {
    match e {
        watcher::Error::InitialListFailed(c) | watcher::Error::WatchStartFailed(c) | watcher::Error::WatchFailed(c) => {
            crate::source::live::classify_list_error(c, resource, scope)
        }
        other => {
            LiveError::List { resource: resource.to_string(), scope: scope.to_string(), message: other.to_string() }
        }
    }
}

/// The object as the comparison needs it (see the module documentation).
pub fn slim(obj: DynamicObject, api_version: &str, kind: &str, secret: bool) -> Value {
    let mut v = serde_json::to_value(&obj).unwrap_or(Value::Null);
    let Some(m) = v.as_object_mut() else {
        return v;
    };
    m.insert("apiVersion".into(), Value::String(api_version.to_string()));
    m.insert("kind".into(), Value::String(kind.to_string()));
    m.remove("status");
    if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            ann.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
        if let Some(Value::Array(entries)) = meta.get_mut("managedFields") {
            entries.retain(|e| e.get("subresource").and_then(Value::as_str) != Some("status"));
            for e in entries.iter_mut().filter_map(Value::as_object_mut) {
                e.remove("apiVersion");
                e.remove("fieldsType");
            }
        }
    }
    if secret {
        for field in ["data", "stringData"] {
            if let Some(Value::Object(data)) = m.get_mut(field) {
                for value in data.values_mut() {
                    let text = value.as_str().unwrap_or_default();
                    let bytes = match field {
                        "data" => base64::engine::general_purpose::STANDARD.decode(text.trim()).ok(),
                        _ => None,
                    };
                    *value = Value::String(secret_fingerprint_of(bytes.as_deref().unwrap_or(text.as_bytes())));
                }
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slim_drops_what_the_comparison_never_reads_and_hashes_secrets() {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "n", "resourceVersion": "7",
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "a": "b"},
                "managedFields": [
                    {"manager": "helm", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:data": {"f:k": {}}}},
                    {"manager": "kubelet", "operation": "Update", "subresource": "status", "fieldsV1": {}}]},
            "data": {"k": "aGVsbG8="}, "status": {"x": 1}
        }))
        .unwrap();
        let v = slim(obj, "v1", "Secret", true);
        assert_eq!(v.pointer("/metadata/resourceVersion"), None);
        assert_eq!(v.pointer("/status"), None);
        assert_eq!(v.pointer("/metadata/annotations"), Some(&json!({"a": "b"})));
        assert_eq!(
            v.pointer("/metadata/managedFields"),
            Some(&json!([{"manager": "helm", "operation": "Update", "fieldsV1": {"f:data": {"f:k": {}}}}]))
        );
        let k = v.pointer("/data/k").and_then(Value::as_str).unwrap();
        assert!(!k.contains("aGVsbG8") && k.starts_with("sha256:") && k.ends_with(":5"), "{k}");
        assert_eq!(secret_fingerprint_of(b"hello"), k);
        assert_eq!(parse_secret_fingerprint(k).map(|(_, len)| len), Some(5));
        assert_eq!(parse_secret_fingerprint("aGVsbG8="), None);
    }
}
