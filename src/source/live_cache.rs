//! A watch-fed cache of live objects (`watch --live`): the drift engine's fetch step reads it
//! through [`LiveSource`] instead of sending LIST requests.
//!
//! The first read of a (kind, namespace) starts a kube-rs watcher for it (or, watching all
//! namespaces, [`WatchScope::AllNamespaces`], of the kind: one stream serves every namespace's
//! reads): its first list streamed, as the start of a WATCH with `sendInitialEvents` (one object
//! at a time), or where the API server refuses that, one paged LIST and then a WATCH from that
//! list's resourceVersion; with bookmarks. When the stream ends (the server's
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
//! Each slim object is kept packed ([`Packed`]: its JSON, deflated against its store's
//! [`Dictionary`]) and decoded when a check reads its list.
//!
//! Each change is sent on a channel as a [`Change`] so the caller can re-check what read that
//! (kind, namespace). Reads only: list and watch.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

use crate::source::live::{Listing, LiveError, LiveSource, ResolvedKind, Wanted, release_names};
use crate::source::watch_store::{Applied, WatchBook, entries};

/// Which LIST a change belongs to: (group, version, plural, namespace).
pub type ListKey = (String, String, String, Option<String>);

/// The key of `kind` in `namespace`, as the cache and its changes name it.
pub fn list_key(kind: &ResolvedKind, namespace: Option<&str>) -> ListKey {
    let ar = &kind.resource;
    let ns = if kind.namespaced { namespace.map(str::to_string) } else { None };
    (ar.group.clone(), ar.version.clone(), ar.plural.clone(), ns)
}

/// Whether a change to the lists `changed` concerns what a check read as `read`: the same list,
/// or the same kind with no namespace named (a stream over all namespaces that listed again or
/// failed: any of its namespaces may have changed).
pub fn touches(changed: &BTreeSet<ListKey>, read: &ListKey) -> bool {
    changed.contains(read)
        || (read.3.is_some() && changed.contains(&(read.0.clone(), read.1.clone(), read.2.clone(), None)))
}

/// How the cache watches a namespaced kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WatchScope {
    /// One stream per (kind, namespace) that a check reads: a few namespaces (`-n`).
    #[default]
    PerNamespace,
    /// One stream per kind over all namespaces (`--all -A`), each namespace's read taken from
    /// it. Per (kind, namespace), 2,000 releases in 200 namespaces opened 3,400 streams, each an
    /// HTTP/1.1 connection with its own TLS session and buffers (about 50 KiB each, measured
    /// with heaptrack: a third of the live mode's heap at 300 releases), and 3,400 watches for
    /// the API server to keep. A kind whose stream over all namespaces is refused (403: a user
    /// allowed in some namespaces only) is watched per namespace instead.
    AllNamespaces,
}

/// Something changed in a watched (kind, namespace): an object was added, changed or deleted,
/// the stream listed again, or its first list finished or failed. A stream over all namespaces
/// names the namespace of the object that changed, and none (see [`touches`]) when it listed
/// or failed.
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

/// A decoded list handed out, with the store's change count it was decoded at.
type Snapshot = (u64, Weak<Vec<Value>>);

/// Lists held while a load or a batch runs: whether every list is held, and those held.
type Held = (bool, Vec<Arc<Vec<Value>>>);

/// One watched (kind, namespace).
struct Store {
    /// `None` until the first list finished; then the result of the latest one.
    ready: tokio_watch::Receiver<Option<Result<(), LiveError>>>,
    /// By (namespace, name).
    objects: Arc<RwLock<BTreeMap<(String, String), Packed>>>,
    /// What `objects` are packed against (set by the first object packed).
    dictionary: Dictionary,
    /// Changes made to `objects` so far (counted while its write lock is held).
    version: Arc<AtomicU64>,
    /// What [`LiveSource::list`] hands out while some check still holds it, by the namespace
    /// read (`None`: the whole store), with the `version` it was decoded at: held weakly, so
    /// between checks only `objects` is kept (a second copy of every object watched doubled the
    /// cache's memory); decoded again after a change, or when no check holds it any more.
    snapshots: Mutex<HashMap<Option<String>, Snapshot>>,
    task: tokio::task::JoinHandle<()>,
}

/// The watch-fed cache. Dropping it stops its streams.
pub struct LiveCache {
    client: Client,
    stores: Mutex<HashMap<ListKey, Arc<Store>>>,
    changes: mpsc::UnboundedSender<Change>,
    stats: Arc<StreamStats>,
    scope: WatchScope,
    /// Kinds (group, version, plural) whose stream over all namespaces was refused: watched per
    /// namespace.
    refused: Mutex<HashSet<(String, String, String)>>,
    /// While a load or a batch of checks runs ([`LiveCache::hold`]): the lists decoded, held
    /// until it ends, and whether every list is held or only those of a whole kind.
    held: Mutex<Option<Held>>,
    /// The API server refused a streamed first list: later streams list in pages.
    paged: Arc<AtomicBool>,
}

impl LiveCache {
    /// A cache on `client`; changes are sent to `changes`. Nothing is requested yet.
    pub fn new(client: Client, changes: mpsc::UnboundedSender<Change>, stats: Arc<StreamStats>) -> LiveCache {
        LiveCache {
            client,
            stores: Mutex::new(HashMap::new()),
            changes,
            stats,
            scope: WatchScope::default(),
            refused: Mutex::default(),
            held: Mutex::default(),
            paged: Arc::default(),
        }
    }

    /// Hold the whole lists decoded from now on until [`LiveCache::release`]: every list
    /// (`everything`: a batch of checks, run one after the other) or only the lists of a whole
    /// kind (the first generation: cluster-scoped kinds, one list that every check reads; a
    /// namespace's lists are shared by its releases' checks, which run side by side). Held
    /// weakly, a list no check held any more was decoded again by the next check: at 2,000
    /// releases each check decoded the 2,000 ClusterRoles and ClusterRoleBindings, and the first
    /// generation took 169 s against 11 s for a round. A release's check now reads whole lists
    /// only of HPAs ([`LiveSource::list_wanted`] for the rest, never held).
    pub fn hold(&self, everything: bool) {
        *self.held.lock().expect("cache lock") = Some((everything, Vec::new()));
    }

    /// Drop the lists held since [`LiveCache::hold`].
    pub fn release(&self) {
        *self.held.lock().expect("cache lock") = None;
    }

    /// `listing` (of a whole kind when `whole`) read: held if lists are being held.
    fn keep(&self, listing: Listing, whole: bool) -> Listing {
        if let (Ok(list), Some((everything, held))) = (&listing, self.held.lock().expect("cache lock").as_mut())
            && (*everything || whole)
            && !held.iter().any(|h| Arc::ptr_eq(h, list))
        {
            held.push(list.clone());
        }
        listing
    }

    /// The cache watching namespaced kinds as `scope` says.
    pub fn watching(mut self, scope: WatchScope) -> LiveCache {
        self.scope = scope;
        self
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

    /// Bytes the packed objects and their dictionaries take (for the memory figures).
    pub fn packed_bytes(&self) -> usize {
        let stores = self.stores.lock().expect("cache lock");
        let packed = |s: &Store| s.objects.read().expect("store lock").values().map(Packed::len).sum::<usize>();
        stores.values().map(|s| s.dictionary.bytes().len() + packed(s)).sum()
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
        let objects: Arc<RwLock<BTreeMap<(String, String), Packed>>> = Arc::default();
        let version: Arc<AtomicU64> = Arc::default();
        let dictionary = Dictionary::default();
        let mut packer = Packer::new(dictionary.clone());
        // A namespaced kind over all namespaces: an object's change names its namespace.
        let by_namespace = kind.namespaced && namespace.is_none();
        let ar = kind.resource.clone();
        let api: Api<DynamicObject> = match (kind.namespaced, namespace.as_deref()) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &ar),
            _ => Api::all_with(self.client.clone(), &ar),
        };
        let secret = ar.group.is_empty() && ar.kind == "Secret";
        // The first list streamed (a watch with sendInitialEvents: one object at a time, docs/live.md
        // "Streamed first lists"); where the API server refuses that, pages of 100: a page is
        // decoded whole (every field, status too) before it is slimmed and packed, and at 500 the
        // streams' first lists over all namespaces, decoded at once, were most of the live mode's
        // peak.
        let fields = crate::source::live::whole_list_fields(&ar);
        let config = move |streamed: bool| {
            let config = watcher::Config::default();
            let config = if streamed { config.streaming_lists() } else { config.page_size(100) };
            // Helm's release storage is never compared (and is large): the same filter as LISTs.
            if fields.is_empty() { config } else { config.fields(fields) }
        };
        let paged = self.paged.clone();
        let resource = if ar.group.is_empty() { ar.plural.clone() } else { format!("{}.{}", ar.plural, ar.group) };
        let scope = match (kind.namespaced, namespace.as_deref()) {
            (true, Some(ns)) => format!("in namespace {ns}"),
            (true, None) => "in all namespaces".to_string(),
            (false, _) => "(cluster-scoped)".to_string(),
        };
        let task_objects = objects.clone();
        let task_version = version.clone();
        let changes = self.changes.clone();
        let stats = self.stats.clone();
        let task = tokio::spawn(async move {
            stats.streams.fetch_add(1, Ordering::Relaxed);
            let id = stats.stream_id();
            let _ended = Ended(stats.clone(), id);
            let mut streamed = !paged.load(Ordering::Relaxed);
            let mut stream = watcher::watcher(api.clone(), config(streamed)).default_backoff().boxed();
            let mut book: WatchBook<BTreeMap<(String, String), Packed>> = WatchBook::default();
            // The stream reported an error before its first list.
            let mut errored = false;
            // `object`: the namespace of the object that changed (None: the whole store may have).
            let notify = |at: Instant, object: Option<&str>| {
                let key = match object {
                    Some(ns) if by_namespace => (key.0.clone(), key.1.clone(), key.2.clone(), Some(ns.to_string())),
                    _ => key.clone(),
                };
                let _ = changes.send(Change { key, at });
            };
            while let Some(item) = stream.next().await {
                let at = Instant::now();
                let event = match item {
                    Ok(e) => e,
                    Err(e) if streamed && !book.listed() && refuses_streamed_lists(&e) => {
                        // Every stream of this cache lists in pages from now on.
                        paged.store(true, Ordering::Relaxed);
                        streamed = false;
                        tracing::info!(%resource, %scope, error = %e, "live: the API server does not stream lists (WatchList); listing in pages");
                        stream = watcher::watcher(api.clone(), config(false)).default_backoff().boxed();
                        continue;
                    }
                    Err(e) => {
                        stats.failed(id);
                        if !book.listed() {
                            errored = true;
                            let error = watch_error(e, &resource, &scope);
                            ready_tx.send_replace(Some(Err(error)));
                            notify(at, None);
                        }
                        continue;
                    }
                };
                stats.works(id);
                // Slimmed and packed before the store is locked: readers wait only for the map's
                // own change.
                let event = entries(event, |obj| {
                    let v = slim(obj, &ar.api_version, &ar.kind, secret);
                    (crate::source::live::object_key(&v), packer.pack(&v))
                });
                let applied = {
                    let mut objects = task_objects.write().expect("store lock");
                    let applied = book.apply(&mut objects, event);
                    if matches!(
                        applied,
                        Applied::Listed { changed: true, .. }
                            | Applied::Upserted { changed: true, .. }
                            | Applied::Deleted { present: true, .. }
                    ) {
                        task_version.fetch_add(1, Ordering::Release);
                    }
                    applied
                };
                // Between lists, objects come one at a time: the deflate state is made for each.
                if !matches!(applied, Applied::ListStarted { .. } | Applied::Buffered) {
                    packer.idle();
                }
                match applied {
                    Applied::ListStarted { relist } => {
                        if relist {
                            stats.relists.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Applied::Buffered => {}
                    Applied::Listed { first, changed } => {
                        ready_tx.send_replace(Some(Ok(())));
                        // The first list: every check that read this stream waited for it, so
                        // none needs telling, unless one read the error the stream reported
                        // before it (that check runs again now). Telling them anyway re-checked
                        // every release right after the first generation: at 2,000 releases the
                        // edits of the next minutes waited for it. A later list (410 Gone, a
                        // resume that failed): whatever it changed.
                        if (first && errored) || (!first && changed) {
                            notify(at, None);
                        }
                    }
                    Applied::Upserted { changed, key } | Applied::Deleted { present: changed, key } => {
                        if changed {
                            notify(at, Some(&key.0));
                        }
                    }
                }
            }
        });
        Store { ready, objects, dictionary, version, snapshots: Mutex::default(), task }
    }

    /// The objects of `kind` in `namespace`, waiting for the first list of a new stream.
    async fn read(&self, kind: &ResolvedKind, namespace: Option<&str>) -> Listing {
        let (store, filter) = self.ready_store(kind, namespace).await?;
        self.keep(snapshot(&store, kind, filter), namespace.is_none())
    }

    /// The objects of `kind` in `namespace` that `wanted` names, waiting as [`LiveCache::read`]
    /// does. Only they are decoded, never the list's others, and nothing is held.
    async fn read_wanted(&self, kind: &ResolvedKind, namespace: Option<&str>, wanted: &Wanted) -> Listing {
        if kind.namespaced && namespace.is_none() {
            // Every namespace's (no check reads such a list): the whole list.
            return self.read(kind, namespace).await;
        }
        let (store, _) = self.ready_store(kind, namespace).await?;
        pick(&store, kind, namespace.unwrap_or_default(), wanted)
    }

    /// The store that serves `kind` in `namespace`, its first list done, and the namespace to
    /// take from it (a store over all namespaces serving one).
    async fn ready_store<'n>(
        &self,
        kind: &ResolvedKind,
        namespace: Option<&'n str>,
    ) -> Result<(Arc<Store>, Option<&'n str>), LiveError> {
        let ar = &kind.resource;
        let id = || (ar.group.clone(), ar.version.clone(), ar.plural.clone());
        let whole = self.scope == WatchScope::AllNamespaces
            && kind.namespaced
            && namespace.is_some()
            && !self.refused.lock().expect("cache lock").contains(&id());
        if whole {
            let store = self.store(kind, None);
            match ready(&store, kind, None).await {
                Ok(()) => return Ok((store, namespace)),
                // Not allowed in every namespace: this kind is watched per namespace from now on.
                Err(LiveError::Forbidden { .. }) => self.refuse(kind, id()),
                Err(e) => return Err(e),
            }
        }
        let store = self.store(kind, namespace);
        ready(&store, kind, namespace).await?;
        Ok((store, None))
    }

    /// Stop the stream of `kind` over all namespaces; it is watched per namespace from now on.
    fn refuse(&self, kind: &ResolvedKind, id: (String, String, String)) {
        self.refused.lock().expect("cache lock").insert(id);
        if let Some(store) = self.stores.lock().expect("cache lock").remove(&list_key(kind, None)) {
            store.task.abort();
        }
    }
}

/// Wait for the first list of `store`'s stream; its error if it failed.
async fn ready(store: &Store, kind: &ResolvedKind, namespace: Option<&str>) -> Result<(), LiveError> {
    let mut ready = store.ready.clone();
    let state = match ready.wait_for(Option::is_some).await {
        Ok(state) => state.clone(),
        Err(_) => Some(Err(LiveError::List {
            resource: kind.resource.plural.clone(),
            scope: namespace.unwrap_or_default().to_string(),
            message: "the watch stream stopped".into(),
        })),
    };
    match state {
        Some(Err(e)) => Err(e),
        _ => Ok(()),
    }
}

/// The objects of `store` (in `namespace` only, when named), decoded: the one a check still
/// holds, or decoded anew.
fn snapshot(store: &Store, kind: &ResolvedKind, namespace: Option<&str>) -> Listing {
    let at = namespace.map(str::to_string);
    let held = store.snapshots.lock().expect("snapshot lock").get(&at).cloned();
    if let Some((version, held)) = held
        && version == store.version.load(Ordering::Acquire)
        && let Some(s) = held.upgrade()
    {
        return Ok(s);
    }
    // Decoded with no lock but the store's read lock: checks reading other namespaces of the
    // same stream do not wait for it. The version is read under that lock: a change after it
    // makes the snapshot stale, never one before.
    let objects = store.objects.read().expect("store lock");
    let version = store.version.load(Ordering::Acquire);
    let scope = namespace.unwrap_or_default();
    let unpacked = match namespace {
        Some(ns) => unpack_all(store, kind, scope, in_namespace(&objects, ns).map(|(_, p)| p)),
        None => unpack_all(store, kind, scope, objects.values()),
    };
    drop(objects);
    let all = Arc::new(unpacked?);
    let mut snapshots = store.snapshots.lock().expect("snapshot lock");
    snapshots.retain(|_, (_, w)| w.strong_count() > 0);
    snapshots.insert(at, (version, Arc::downgrade(&all)));
    Ok(all)
}

/// The objects of `store` in `namespace` (`""`: cluster-scoped) that `wanted` names, decoded, in
/// the store's order: looked up by name, and found by the release hashes packed beside them.
fn pick(store: &Store, kind: &ResolvedKind, namespace: &str, wanted: &Wanted) -> Listing {
    let objects = store.objects.read().expect("store lock");
    let mut keys: BTreeSet<&(String, String)> = BTreeSet::new();
    for name in &wanted.names {
        if let Some((key, _)) = objects.get_key_value(&(namespace.to_string(), name.clone())) {
            keys.insert(key);
        }
    }
    if let Some(release) = &wanted.release {
        let hash = release_hash(release);
        let theirs = in_namespace(&objects, namespace).filter(|(_, p)| p.releases.contains(&hash));
        keys.extend(theirs.map(|(k, _)| k));
    }
    Ok(Arc::new(unpack_all(store, kind, namespace, keys.into_iter().map(|k| &objects[k]))?))
}

/// The entries of `objects` in `namespace` (`""`: cluster-scoped), in order.
fn in_namespace<'a>(
    objects: &'a BTreeMap<(String, String), Packed>,
    namespace: &'a str,
) -> impl Iterator<Item = (&'a (String, String), &'a Packed)> {
    objects.range((namespace.to_string(), String::new())..).take_while(move |((n, _), _)| n == namespace)
}

/// `packed` objects of `store` decoded with one inflate state; a failure names the list
/// (`kind` in `scope`).
fn unpack_all<'a>(
    store: &Store,
    kind: &ResolvedKind,
    scope: &str,
    packed: impl Iterator<Item = &'a Packed>,
) -> Result<Vec<Value>, LiveError> {
    let mut unpacker = Unpacker::new(&store.dictionary);
    packed.map(|p| unpacker.unpack(p)).collect::<Result<_, _>>().map_err(|message| LiveError::List {
        resource: kind.resource.plural.clone(),
        scope: scope.to_string(),
        message: format!("a cached object could not be decoded: {message}"),
    })
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

    fn list_wanted<'a>(
        &'a self,
        kind: &'a ResolvedKind,
        namespace: Option<&'a str>,
        wanted: &'a Wanted,
    ) -> BoxFuture<'a, Listing> {
        Box::pin(self.read_wanted(kind, namespace, wanted))
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

    fn list_wanted<'a>(
        &'a self,
        kind: &'a ResolvedKind,
        namespace: Option<&'a str>,
        wanted: &'a Wanted,
    ) -> BoxFuture<'a, Listing> {
        self.seen.lock().expect("recording lock").insert(list_key(kind, namespace));
        self.inner.list_wanted(kind, namespace, wanted)
    }
}

/// Whether `e` is the API server refusing a watch with `sendInitialEvents`: 422 (Invalid) where
/// the WatchList feature is off (off by default in Kubernetes 1.33 only; before 1.27 the server
/// knows no such watch and refuses its `resourceVersionMatch`), 400 from servers that say so
/// as a bad request.
fn refuses_streamed_lists(e: &watcher::Error) -> bool {
    matches!(e, watcher::Error::WatchStartFailed(kube::Error::Api(status)) if matches!(status.code, 400 | 422))
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

/// A slim object as a store keeps it: its JSON, deflated (raw deflate, fastest level) against
/// its store's dictionary ([`Packer`]). A `serde_json::Value` tree costs about ten times the
/// object's JSON in memory: every map that is not empty is a B-tree node of several hundred
/// bytes, and a managedFields entry nests maps five deep. Packed alone, an object of the scale
/// bench's clusters (1.8 KiB of JSON on average) took about 0.8 KiB, against 14 KiB as a `Value`
/// (measured with heaptrack: `watch --live` at 300 releases kept 105 MiB of `Value`s, docs/live.md
/// "The cache"); against a dictionary, a fraction of that (docs/live.md, "A dictionary per
/// store"). The price is decoding a list when a check reads it, as a round decodes a LIST's
/// answer.
///
/// Equal objects pack to equal bytes within a store (the map's keys are in order, deflate is
/// deterministic and a store's dictionary never changes), so an update that leaves the slim
/// object unchanged is still no change.
///
/// Beside the bytes, a hash of each release name the object carries ([`release_names`]), so a
/// check's read of a list ([`LiveSource::list_wanted`]) decodes only the objects that may be its
/// release's: equal hashes are a superset of equal names, and the check decides from the object.
#[derive(Clone, PartialEq, Eq)]
pub struct Packed {
    bytes: Box<[u8]>,
    releases: [u32; 2],
}

/// The hash of a release name kept beside a packed object; never 0 (no name).
fn release_hash(name: &str) -> u32 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::hash::DefaultHasher::new();
    name.hash(&mut h);
    (h.finish() as u32).max(1)
}

/// The most of a dictionary deflate can use: its window.
const WINDOW: usize = 32 * 1024;

/// A store's dictionary: the end of the JSON of the first object it packed, set once. Objects of
/// one kind share most of their text (keys, labels, managedFields entries, a chart's template),
/// so each is deflated as the continuation of that first one: on the scale bench's cluster the
/// packed objects of a kind took a quarter to a half of their size deflated alone.
#[derive(Clone, Default)]
pub struct Dictionary(Arc<std::sync::OnceLock<Box<[u8]>>>);

impl Dictionary {
    fn bytes(&self) -> &[u8] {
        self.0.get().map_or(&[], |d| &d[..])
    }
}

/// Packs the objects of one store (its watcher's task), reusing one deflate state while a list
/// comes in; between lists the state (about 360 KiB, 6.5 MiB for the 18 streams at 2,000
/// releases in heaptrack) is dropped ([`Packer::idle`]) and made again for the next change.
pub struct Packer {
    dictionary: Dictionary,
    deflate: Option<flate2::Compress>,
}

impl Packer {
    pub fn new(dictionary: Dictionary) -> Packer {
        Packer { dictionary, deflate: None }
    }

    /// Drop the deflate state until the next object.
    pub fn idle(&mut self) {
        self.deflate = None;
    }

    /// `v` packed; the first object packed sets the dictionary.
    pub fn pack(&mut self, v: &Value) -> Packed {
        let json = serde_json::to_vec(v).unwrap_or_default();
        let dictionary = self.dictionary.0.get_or_init(|| json[json.len().saturating_sub(WINDOW)..].into());
        let deflate = self.deflate.get_or_insert_with(|| flate2::Compress::new(flate2::Compression::fast(), false));
        deflate.reset();
        if !dictionary.is_empty() {
            // Cannot fail on a stream just reset (zlib refuses it only once input was taken).
            let _ = deflate.set_dictionary(dictionary);
        }
        let mut out = Vec::with_capacity(json.len() / 2 + 64);
        let mut read = 0;
        loop {
            let before = deflate.total_in();
            let status = deflate.compress_vec(&json[read..], &mut out, flate2::FlushCompress::Finish);
            read += usize::try_from(deflate.total_in() - before).unwrap_or(0);
            match status {
                Ok(flate2::Status::StreamEnd) => break,
                // More room (compressing to a Vec fails on nothing else).
                Ok(_) => out.reserve(json.len() / 4 + 64),
                Err(_) => return Packed { bytes: Box::default(), releases: [0; 2] },
            }
        }
        let mut releases = [0; 2];
        for (slot, name) in releases.iter_mut().zip(release_names(v)) {
            *slot = release_hash(name);
        }
        Packed { bytes: out.into_boxed_slice(), releases }
    }
}

/// Unpacks the objects of one store, reusing one inflate state and buffer.
pub struct Unpacker<'a> {
    dictionary: &'a [u8],
    inflate: flate2::Decompress,
    json: Vec<u8>,
}

impl<'a> Unpacker<'a> {
    pub fn new(dictionary: &'a Dictionary) -> Unpacker<'a> {
        Unpacker { dictionary: dictionary.bytes(), inflate: flate2::Decompress::new(false), json: Vec::new() }
    }

    /// The object again.
    pub fn unpack(&mut self, packed: &Packed) -> Result<Value, String> {
        let input = &packed.bytes[..];
        self.inflate.reset(false);
        if !self.dictionary.is_empty() {
            self.inflate.set_dictionary(self.dictionary).map_err(|e| e.to_string())?;
        }
        self.json.clear();
        self.json.reserve(input.len() * 3 + 64);
        let mut read = 0;
        loop {
            let before = self.inflate.total_in();
            let status = self.inflate.decompress_vec(&input[read..], &mut self.json, flate2::FlushDecompress::Finish);
            read += usize::try_from(self.inflate.total_in() - before).unwrap_or(0);
            match status.map_err(|e| e.to_string())? {
                flate2::Status::StreamEnd => break,
                _ if read >= input.len() && self.json.len() < self.json.capacity() => {
                    return Err("the packed object ends early".into());
                }
                _ => self.json.reserve(input.len() * 3 + 64),
            }
        }
        let v = serde_json::from_slice(&self.json).map_err(|e| e.to_string());
        // A large object's buffer is not kept for the rest of the list.
        if self.json.capacity() > 1 << 20 {
            self.json = Vec::new();
        }
        v
    }
}

impl Packed {
    /// The bytes kept.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether nothing is kept (never, for an object).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packed({} bytes)", self.bytes.len())
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
    fn a_packed_object_unpacks_to_itself_and_equal_objects_pack_equal() {
        let deployment = |name: &str| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop", "labels": {"app": name, "app.kubernetes.io/managed-by": "Helm"},
                "managedFields": [{"manager": "helm", "operation": "Update", "time": "2026-12-05T10:00:00Z",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:app.kubernetes.io/managed-by": {}}},
                        "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}}]},
            "spec": {"replicas": 3, "ratio": 0.1, "big": 18446744073709551615u64, "text": "é ✓ \u{0}", "list": [1, -2, null, true],
                "template": {"spec": {"containers": [{"name": "web", "image": format!("registry.example/{name}:1.0")}]}}}})
        };
        let dictionary = Dictionary::default();
        let mut packer = Packer::new(dictionary.clone());
        let first = packer.pack(&deployment("web"));
        let api = deployment("api");
        let packed = packer.pack(&api);
        // A larger object than deflate's window, and than the first guesses of both buffers.
        let mut big = deployment("big");
        big["spec"]["text"] = json!("x".repeat(100_000) + &"0123456789abcdef".repeat(4_000));
        let big_packed = packer.pack(&big);
        let mut unpacker = Unpacker::new(&dictionary);
        assert_eq!(unpacker.unpack(&first).expect("unpacks"), deployment("web"));
        assert_eq!(unpacker.unpack(&big_packed).expect("unpacks"), big);
        assert_eq!(unpacker.unpack(&packed).expect("unpacks"), api);
        // Equal objects pack equal: "unchanged" is a comparison of bytes; also with a deflate
        // state made afresh after an idle spell.
        assert_eq!(packer.pack(&api.clone()), packed);
        packer.idle();
        assert_eq!(packer.pack(&api), packed);
        let mut other = api.clone();
        other["spec"]["replicas"] = json!(4);
        assert_ne!(packer.pack(&other), packed);
        // Against the first, an object of the same kind packs to far less than alone (in a store
        // of its own, where it is the dictionary's first object itself, so packed alone here by a
        // store of a different first object).
        let mut alone = Packer::new(Dictionary::default());
        alone.pack(&json!({"kind": "Other"}));
        let alone = alone.pack(&api);
        assert!(packed.len() * 2 < alone.len(), "{packed:?} against the dictionary, {alone:?} without");
        // Smaller than its JSON: the point of packing.
        assert!(alone.len() < serde_json::to_vec(&api).unwrap().len(), "{alone:?}");
        assert!(!packed.is_empty());
        // Bytes that are not a packed object, or only the start of one, are an error, not a panic.
        let packed_as = |bytes: &[u8]| Packed { bytes: bytes.into(), releases: [0; 2] };
        assert!(unpacker.unpack(&packed_as(&[1, 2, 3])).is_err());
        assert!(unpacker.unpack(&packed_as(&big_packed.bytes[..big_packed.len() / 2])).is_err());
        assert!(unpacker.unpack(&packed_as(&[])).is_err());
        // The unpacker goes on working after errors.
        assert_eq!(unpacker.unpack(&packed).expect("unpacks"), api);
    }

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
