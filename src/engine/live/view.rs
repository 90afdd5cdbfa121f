//! The live view of Helm releases: the selected releases' decoded revisions, each release's last
//! check against a watch-fed [`LiveCache`], and which (kind, namespace) lists each check read.
//!
//! - [`LiveView::load`] reads every selected release and checks each once (which starts the
//!   watches its checks need). One view lives as long as its cache (a generation); a resync
//!   builds both anew.
//! - [`LiveView::apply`] takes what changed since (lists of live objects, releases whose storage
//!   changed) and re-checks only the releases that read those lists, in memory (no API request),
//!   or re-reads the releases whose storage changed (a new revision, a rollback, an uninstall).
//! - The release-storage watch ([`crate::source::helm::watch`]) says which releases' storage
//!   changed; [`Inbox`](super::Inbox) gathers its changes and the cache's into batches for
//!   [`LiveView::apply`].
//!
//! What a caller does with a result is its own: `watch` alerts, `serve` updates its page.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::inbox::Batch;

use futures::StreamExt;

use crate::engine::compare::rules::IgnoreRule;
use crate::engine::drift::release::{DecodedRelease, DesiredRelease, check_release};
use crate::engine::drift::{Engine, ReleaseSelection};
use crate::engine::reconcile::Reconciler;
use crate::report::{ObjectState, ReleaseReport};
use crate::source::cluster::Cluster;
use crate::source::helm::storage::ReleaseRevisions;
use crate::source::helm::{ReleaseStore, StorageError};
use crate::source::live_cache::{ListKey, LiveCache, Recording};

/// How long a release may stay pending-install/upgrade/rollback before live mode reads it as
/// such (and reports it, as a round that met it would): longer than Helm's default `--timeout`
/// (5m), so a Helm command at work is not reported, and a killed one is.
pub const PENDING_GRACE: Duration = Duration::from_secs(6 * 60);

/// What a watched release is checked against.
enum Target {
    /// Its revisions, decoded: re-checked in memory on every change it depends on (never read
    /// from storage or decoded from Helm's encoding again).
    Release(Box<Kept>),
    /// A result that no live change alters (its storage could not be found or decoded): kept
    /// until the next storage event or resync.
    Fixed(Box<ReleaseReport>),
}

/// A release's decoded revisions as the view keeps them between checks: their manifests, most
/// of what a decoded revision holds (the bench's chart: 9.8 KB of about 11), deflated (to about a
/// fifth), and put back for each check.
struct Kept {
    /// The revisions, their manifests empty.
    decoded: DecodedRelease,
    manifest: Box<[u8]>,
    newer_manifest: Option<Box<[u8]>>,
}

impl Kept {
    fn new(mut decoded: DecodedRelease) -> Kept {
        let manifest = deflate(&std::mem::take(&mut decoded.release.manifest));
        let newer_manifest = match &mut decoded.newer {
            Some(Ok(newer)) => Some(deflate(&std::mem::take(&mut newer.manifest))),
            _ => None,
        };
        Kept { decoded, manifest, newer_manifest }
    }

    /// The revisions as they were decoded.
    fn unpack(&self) -> DecodedRelease {
        let mut decoded = self.decoded.clone();
        decoded.release.manifest = inflate(&self.manifest);
        if let (Some(Ok(newer)), Some(packed)) = (&mut decoded.newer, &self.newer_manifest) {
            newer.manifest = inflate(packed);
        }
        decoded
    }
}

fn deflate(text: &str) -> Box<[u8]> {
    use std::io::Write;
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    deflate.write_all(text.as_bytes()).expect("deflating into memory");
    deflate.finish().expect("deflating into memory").into_boxed_slice()
}

fn inflate(packed: &[u8]) -> String {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::DeflateDecoder::new(packed).read_to_string(&mut text).expect("the view's own deflated text inflates");
    text
}

/// A batch re-checking at most this many releases holds every list it decodes until it ends.
const HOLD_EVERY_LIST_UP_TO: usize = 64;

/// One release of the view.
pub struct Watched {
    target: Target,
    /// The lists its last check read.
    deps: BTreeSet<ListKey>,
    /// Its last check's report, and how many objects it checked.
    pub last: Option<(ReleaseReport, usize)>,
}

/// The state key of a release (`watch`'s state and the view's map).
pub fn release_key(namespace: &str, name: &str) -> String {
    format!("release/{namespace}/{name}")
}

/// What [`LiveView::apply`] did to a release.
pub enum Update {
    /// Checked again: its new report is in `targets[key].last`.
    Checked(String),
    /// Uninstalled or deleted (under `--all`): forgotten.
    Gone { key: String, namespace: String, name: String },
}

/// The releases of one generation (see the module documentation).
pub struct LiveView {
    /// The generation's cluster: whole LISTs answered by the cache, its own discovery (run again
    /// when a new revision uses a kind this generation did not know), release storage.
    cluster: Cluster,
    /// `None`: no releases (`watch --live --manifests` only).
    selection: Option<ReleaseSelection>,
    reconciler: Reconciler,
    engine: Engine,
    cache: Arc<LiveCache>,
    /// `release/NS/NAME` -> the release.
    pub targets: BTreeMap<String, Watched>,
    /// Releases whose storage could not be read: read again on the next tick.
    unread: BTreeSet<(String, String)>,
    /// Releases seen pending, and since when.
    pending: BTreeMap<(String, String), Instant>,
    log: fn(&str),
}

impl LiveView {
    /// Read every selected release and check each once against `cache` (starting the watches
    /// its checks need); `return_freed_memory` is called between the two. An `Err` is discovery
    /// or release storage that could not be read.
    pub async fn load(
        cluster: &Cluster,
        cache: Arc<LiveCache>,
        selection: Option<ReleaseSelection>,
        rules: Vec<IgnoreRule>,
        log: fn(&str),
        return_freed_memory: fn(),
    ) -> Result<LiveView, String> {
        let cluster = cluster.fresh().with_lists(cache.clone());
        let reconciler = Reconciler::from(cluster.target());
        let store = cluster.store();
        let found = match &selection {
            Some(sel) => {
                let scope = if sel.all && sel.all_namespaces { None } else { Some(sel.namespace.as_str()) };
                let names: &[String] = if sel.all { &[] } else { &sel.names };
                store.releases_to_check(scope, names, sel.revision).await.map_err(|e| e.to_string())?
            }
            None => Vec::new(),
        };
        let mut engine = Engine::connect(&cluster, rules, false).await.map_err(|e| e.to_string())?;
        engine.admission_changes = selection.as_ref().map(|s| s.admission_changes).unwrap_or_default();
        let mut targets = BTreeMap::new();
        for f in found {
            let (key, target) = match (f, &selection) {
                (Ok(revs), _) => (release_key(&revs.summary.namespace, &revs.summary.name), keep(revs)),
                (Err((name, e)), Some(sel)) => {
                    (release_key(&sel.namespace, &name), Target::Fixed(Box::new(failed(&name, sel, &e))))
                }
                // Nothing is found without a selection.
                (Err(_), None) => continue,
            };
            targets.insert(key, Watched { target, deps: BTreeSet::new(), last: None });
        }
        // Release storage is read and each release kept (its manifests deflated): what reading it
        // decoded is freed, and given back now, before the checks start. Kept until the
        // generation's end, the freed pages stacked under the checks' peak: `serve --live` at
        // 2,000 releases held 160-184 MiB through its first generation against 90 with the
        // pages given back (docs/live.md, "Freed memory").
        return_freed_memory();
        // Eight checks at a time, each one's future made only when it starts: made all at once,
        // the 2,000 futures of the bench's releases were 20 MiB of the first generation's peak
        // (heaptrack, debug build). A loop, not a lazy `map` over borrows, which is not `Send`
        // for `tokio::spawn`.
        cache.hold(false);
        let mut done: Vec<(String, Checked)> = Vec::with_capacity(targets.len());
        {
            let mut waiting = targets.iter();
            let mut running: futures::stream::FuturesOrdered<futures::future::BoxFuture<'_, (String, Checked)>> =
                futures::stream::FuturesOrdered::new();
            loop {
                while running.len() < 8
                    && let Some((key, w)) = waiting.next()
                {
                    let (engine, cache, reconciler) = (&engine, &cache, &reconciler);
                    running.push_back(Box::pin(async move {
                        (key.clone(), check(engine, cache, &w.target, reconciler).await)
                    }));
                }
                match running.next().await {
                    Some(checked) => done.push(checked),
                    None => break,
                }
            }
        }
        cache.release();
        for (key, (report, objects, deps)) in done {
            if let Some(w) = targets.get_mut(&key) {
                w.deps = deps;
                w.last = Some((report, objects));
            }
        }
        Ok(LiveView {
            cluster,
            selection,
            reconciler,
            engine,
            cache,
            targets,
            unread: BTreeSet::new(),
            pending: BTreeMap::new(),
            log,
        })
    }

    /// The cache the view reads.
    pub fn cache(&self) -> &Arc<LiveCache> {
        &self.cache
    }

    /// An engine whose fetch step reads the cache through a [`Recording`] (what a check read,
    /// for checks that are not releases: `watch --live --manifests`).
    pub fn recording_engine(&self) -> (Engine, Arc<Recording>) {
        recording(&self.engine, &self.cache)
    }

    /// Some release's storage could not be read at its last event (read again every tick).
    pub fn storage_unreadable(&self) -> bool {
        !self.unread.is_empty()
    }

    /// Every release's last report (in key order) and the objects checked in all.
    pub fn reports(&self) -> (Vec<ReleaseReport>, usize) {
        let mut objects = 0;
        let reports = self
            .targets
            .values()
            .filter_map(|w| w.last.as_ref())
            .map(|(r, n)| {
                objects += n;
                r.clone()
            })
            .collect();
        (reports, objects)
    }

    /// Re-read the releases whose storage changed and re-check those whose lists changed.
    /// On a tick, also read again the releases whose storage could not be read, and those pending
    /// for longer than [`PENDING_GRACE`].
    pub async fn apply(&mut self, batch: &Batch) -> Vec<Update> {
        let mut releases = batch.releases.clone();
        if batch.tick {
            releases.extend(self.unread.iter().cloned());
            releases.extend(self.pending.iter().filter(|(_, t)| t.elapsed() >= PENDING_GRACE).map(|(r, _)| r.clone()));
        }
        let mut updates = Vec::new();
        let mut reread = BTreeSet::new();
        let mut to_check: BTreeSet<String> = self
            .targets
            .iter()
            .filter(|(_, w)| w.deps.iter().any(|k| batch.touches(k)))
            .map(|(k, _)| k.clone())
            .collect();
        for (ns, name) in &releases {
            let r = (ns.clone(), name.clone());
            let Some(selection) = &self.selection else { break };
            match refresh_release(self.cluster.store(), selection, ns, name).await {
                Ok(Refresh::Ignore) => {
                    self.unread.remove(&r);
                }
                Ok(Refresh::Gone) => {
                    self.unread.remove(&r);
                    let key = release_key(ns, name);
                    if self.targets.remove(&key).is_some() {
                        (self.log)(&format!("live: release {ns}/{name} is gone; forgetting it"));
                    }
                    to_check.remove(&key);
                    updates.push(Update::Gone { key, namespace: ns.clone(), name: name.clone() });
                }
                Ok(Refresh::Target(t)) if is_pending(&t) && !pending_too_long(&mut self.pending, ns, name) => {
                    // A Helm command is working on it: wait for the storage event that ends it.
                    self.unread.remove(&r);
                }
                Ok(Refresh::Target(t)) => {
                    self.pending.remove(&r);
                    self.unread.remove(&r);
                    let key = release_key(ns, name);
                    self.targets.insert(key.clone(), Watched { target: *t, deps: BTreeSet::new(), last: None });
                    reread.insert(key.clone());
                    to_check.insert(key);
                }
                Err(e) => {
                    (self.log)(&format!("error: live: release {ns}/{name}: {e}"));
                    self.unread.insert(r);
                }
            }
        }
        // Every list held for a few checks (an edit re-checks the releases of its namespace); for
        // many (a list over all namespaces read again) only the whole kinds', or the batch would
        // hold the whole cluster decoded.
        self.cache.hold(to_check.len() <= HOLD_EVERY_LIST_UP_TO);
        for key in to_check {
            if let Some(w) = self.targets.get_mut(&key) {
                let (report, objects, deps) = check(&self.engine, &self.cache, &w.target, &self.reconciler).await;
                w.deps = deps;
                w.last = Some((report, objects));
                updates.push(Update::Checked(key));
            }
        }
        self.discover_new_kinds(&reread).await;
        self.cache.release();
        updates
    }

    /// A new revision may use a kind installed after this generation's discovery (a CRD applied
    /// before the upgrade that adds its first custom resource). Its check then says "not served"
    /// though the API server serves it: discover again (two requests) and check those releases
    /// once more, instead of showing an error until the resync. A kind still unknown after that
    /// stays an error, as in rounds.
    async fn discover_new_kinds(&mut self, reread: &BTreeSet<String>) {
        let unknown = |w: &Watched| {
            w.last.as_ref().is_some_and(|(r, _)| {
                r.objects.iter().any(|o| {
                    o.state == ObjectState::Error && self.engine.kinds.resolve(&o.api_version, &o.kind).is_err()
                })
            })
        };
        let again: Vec<String> = reread.iter().filter(|k| self.targets.get(*k).is_some_and(unknown)).cloned().collect();
        if again.is_empty() {
            return;
        }
        match self.cluster.rediscover().await {
            Ok(kinds) => self.engine.kinds = kinds,
            Err(e) => {
                (self.log)(&format!("error: live: discovery: {e}"));
                return;
            }
        }
        for key in again {
            if let Some(w) = self.targets.get_mut(&key) {
                let (report, objects, deps) = check(&self.engine, &self.cache, &w.target, &self.reconciler).await;
                w.deps = deps;
                w.last = Some((report, objects));
            }
        }
    }
}

fn failed(name: &str, sel: &ReleaseSelection, e: &StorageError) -> ReleaseReport {
    ReleaseReport::failed_release(name.to_string(), sel.namespace.clone(), sel.revision.unwrap_or(0), e.to_string())
}

/// Keep a release's decoded revisions; one whose compared revision did not decode is reported
/// so until its storage changes.
fn keep(revs: ReleaseRevisions) -> Target {
    match DecodedRelease::decode(revs) {
        Ok(decoded) => Target::Release(Box::new(Kept::new(decoded))),
        Err(failed) => Target::Fixed(failed),
    }
}

/// A check's report, the objects it checked and the lists it read.
type Checked = (ReleaseReport, usize, BTreeSet<ListKey>);

/// `engine` reading `cache` through a new [`Recording`].
fn recording(engine: &Engine, cache: &Arc<LiveCache>) -> (Engine, Arc<Recording>) {
    let recording = Arc::new(Recording::new(cache.clone()));
    let mut engine = engine.clone_shared();
    engine.lists = recording.clone();
    (engine, recording)
}

/// Check one target against the cache, recording the lists it read.
async fn check(engine: &Engine, cache: &Arc<LiveCache>, target: &Target, reconciler: &Reconciler) -> Checked {
    match target {
        Target::Fixed(r) => ((**r).clone(), 0, BTreeSet::new()),
        Target::Release(kept) => {
            let (engine, recording) = recording(engine, cache);
            let decoded = kept.unpack();
            let check = check_release(&engine, &DesiredRelease::build(&decoded), reconciler).await;
            (check.report, check.objects, recording.keys())
        }
    }
}

fn is_pending(t: &Target) -> bool {
    matches!(t, Target::Release(kept) if kept.decoded.summary.status.starts_with("pending-"))
}

/// Whether the release has been pending for [`PENDING_GRACE`] (remembering when it was first
/// seen pending).
fn pending_too_long(pending: &mut BTreeMap<(String, String), Instant>, ns: &str, name: &str) -> bool {
    pending.entry((ns.to_string(), name.to_string())).or_insert_with(Instant::now).elapsed() >= PENDING_GRACE
}

enum Refresh {
    /// Not a selected release.
    Ignore,
    /// Uninstalled or deleted: forget it.
    Gone,
    Target(Box<Target>),
}

/// Read one release's storage again after a storage event.
async fn refresh_release(
    store: &ReleaseStore,
    sel: &ReleaseSelection,
    namespace: &str,
    name: &str,
) -> Result<Refresh, StorageError> {
    let in_scope = (sel.all && sel.all_namespaces) || namespace == sel.namespace;
    if !in_scope || (!sel.all && !sel.names.iter().any(|n| n == name)) {
        return Ok(Refresh::Ignore);
    }
    let names = [name.to_string()];
    let found = store.releases_to_check(Some(namespace), &names, if sel.all { None } else { sel.revision }).await?;
    let Some(f) = found.into_iter().next() else {
        return Ok(if sel.all { Refresh::Gone } else { Refresh::Ignore });
    };
    Ok(match f {
        Ok(revs) => Refresh::Target(Box::new(keep(revs))),
        // With --all, an uninstalled or deleted release is no longer watched (as rounds forget it).
        Err((_, StorageError::NotFound { .. })) if sel.all => Refresh::Gone,
        Err((n, e)) => Refresh::Target(Box::new(Target::Fixed(Box::new(failed(&n, sel, &e))))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::live::test_cluster::{release, test_cluster};
    use crate::source::helm::memory::MemoryDriver;

    #[test]
    fn a_kept_release_holds_its_manifests_deflated_and_gives_them_back_whole() {
        let revision = |n: u32, manifest: &str| -> crate::source::helm::Release {
            serde_json::from_value(serde_json::json!({"name": "web", "namespace": "shop", "version": n,
                "config": {"replicas": 2}, "manifest": manifest}))
            .unwrap()
        };
        let manifest =
            "---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"
                .repeat(50);
        let decoded = DecodedRelease {
            summary: crate::source::helm::driver::ReleaseSummary {
                namespace: "shop".into(),
                name: "web".into(),
                revision: 2,
                status: "failed".into(),
                deployed: Some(1),
            },
            release: revision(1, &manifest),
            newer: Some(Ok(revision(2, &manifest.replace("web", "web2")))),
        };
        let kept = Kept::new(decoded.clone());
        assert!(kept.decoded.release.manifest.is_empty());
        assert!(matches!(&kept.decoded.newer, Some(Ok(n)) if n.manifest.is_empty()));
        assert!(kept.manifest.len() * 5 < manifest.len(), "{} of {}", kept.manifest.len(), manifest.len());
        let back = kept.unpack();
        assert_eq!(back.release, decoded.release);
        assert_eq!(back.summary, decoded.summary);
        match (&back.newer, &decoded.newer) {
            (Some(Ok(a)), Some(Ok(b))) => assert_eq!(a, b),
            other => panic!("{other:?}"),
        }
        // A newer revision that did not decode stays as it was.
        let failed = DecodedRelease { newer: Some(Err("revision 2: bad gzip".into())), ..decoded };
        let back = Kept::new(failed).unpack();
        assert!(matches!(back.newer, Some(Err(e)) if e == "revision 2: bad gzip"));
        assert_eq!(back.release.manifest, manifest);
    }

    fn every_release_in_shop() -> Option<ReleaseSelection> {
        Some(ReleaseSelection {
            names: Vec::new(),
            all: true,
            all_namespaces: false,
            namespace: "shop".into(),
            revision: None,
            chart_crds: true,
            admission_changes: crate::engine::compare::AdmissionChanges::default(),
        })
    }

    fn cache(cluster: &Cluster) -> Arc<LiveCache> {
        let (tx, _) = tokio::sync::mpsc::unbounded_channel();
        Arc::new(LiveCache::new(cluster.streams().clone(), tx, Arc::default()))
    }

    fn storage_event(names: &[(&str, &str)]) -> Batch {
        Batch {
            releases: names.iter().map(|(ns, n)| (ns.to_string(), n.to_string())).collect(),
            first: Some(Instant::now()),
            ..Batch::default()
        }
    }

    fn revision(view: &LiveView, key: &str) -> Option<u32> {
        view.targets.get(key).and_then(|w| w.last.as_ref()).map(|(r, _)| r.origin.revision)
    }

    fn checked(updates: &[Update]) -> Vec<&str> {
        updates
            .iter()
            .map(|u| match u {
                Update::Checked(k) => k.as_str(),
                Update::Gone { .. } => "gone",
            })
            .collect()
    }

    #[tokio::test]
    async fn a_storage_event_reads_that_release_again_and_a_pending_one_waits_for_the_next() {
        let memory = Arc::new(MemoryDriver::new());
        memory.create(release("web", 1, "deployed"), "deployed");
        memory.create(release("db", 4, "deployed"), "deployed");
        let (cluster, _server) = test_cluster(memory.clone()).await;
        let mut view = LiveView::load(&cluster, cache(&cluster), every_release_in_shop(), Vec::new(), |_| {}, || {})
            .await
            .expect("loaded");
        assert_eq!(view.targets.keys().collect::<Vec<_>>(), ["release/shop/db", "release/shop/web"]);
        assert_eq!(revision(&view, "release/shop/web"), Some(1));
        let (reports, _) = view.reports();
        assert_eq!(reports.len(), 2);

        // `helm upgrade` at work: storage shows a pending revision; nothing is read as it yet.
        memory.create(release("web", 2, "pending-upgrade"), "pending-upgrade");
        let updates = view.apply(&storage_event(&[("shop", "web")])).await;
        assert!(updates.is_empty() && revision(&view, "release/shop/web") == Some(1));
        // Nor at a tick before PENDING_GRACE.
        let tick = Batch { tick: true, ..Batch::default() };
        assert!(view.apply(&tick).await.is_empty());

        // The event that ends it: that release only is checked again, at its new revision.
        memory.create(release("web", 3, "deployed"), "deployed");
        let updates = view.apply(&storage_event(&[("shop", "web")])).await;
        assert_eq!(checked(&updates), ["release/shop/web"]);
        assert_eq!(revision(&view, "release/shop/web"), Some(3));
        assert_eq!(revision(&view, "release/shop/db"), Some(4));
        assert!(!view.storage_unreadable());
    }

    #[tokio::test]
    async fn releases_outside_the_selection_are_ignored() {
        let memory = Arc::new(MemoryDriver::new());
        memory.create(release("web", 1, "deployed"), "deployed");
        let (cluster, _server) = test_cluster(memory).await;
        let selection =
            Some(ReleaseSelection { all: false, names: vec!["web".into()], ..every_release_in_shop().unwrap() });
        let mut view =
            LiveView::load(&cluster, cache(&cluster), selection, Vec::new(), |_| {}, || {}).await.expect("loaded");
        let updates = view.apply(&storage_event(&[("shop", "api"), ("other", "web")])).await;
        assert!(updates.is_empty());
        assert_eq!(view.targets.len(), 1);
    }

    #[tokio::test]
    async fn without_a_selection_no_release_is_read() {
        let (cluster, server) = test_cluster(Arc::new(MemoryDriver::new())).await;
        let mut view =
            LiveView::load(&cluster, cache(&cluster), None, Vec::new(), |_| {}, || {}).await.expect("loaded");
        assert!(view.targets.is_empty());
        assert!(view.apply(&storage_event(&[("shop", "web")])).await.is_empty());
        // Only discovery went on the wire (a `--manifests` check reads through the view's engine).
        assert!(server.seen().iter().all(|t| t == "/api" || t == "/apis"), "{:?}", server.seen());
        let (_engine, recording) = view.recording_engine();
        assert!(recording.keys().is_empty());
    }
}
