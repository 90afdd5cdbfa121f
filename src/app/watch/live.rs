//! `watch --live`: the same targets, alerts and state as rounds, kept current by WATCH streams
//! instead of re-listing every `--interval`.
//!
//! - Live objects come from a [`LiveCache`] (one watch per kind and namespace the checks read);
//!   the drift engine's fetch step reads it through the `LiveSource` seam, so compare is the
//!   same code as in rounds.
//! - Release storage is watched too (metadata only, label `owner=helm`): a new revision, a status
//!   change or an uninstall re-reads that one release.
//! - Each release remembers which (kind, namespace) lists its check read; a change in one of
//!   them re-runs the checks that read it (in memory: no API request), after a short batching
//!   pause, and their results go through the same [`decide`](super::decide) and delivery as
//!   rounds (alert once, resolved, never lost: a failed post is retried every few seconds).
//! - Every `--resync` the cache is thrown away and rebuilt from fresh LISTs, and every target is
//!   checked again: a safety net for anything a watch could have missed.
//! - Streams or storage reads failing for longer than [`OUTAGE_GRACE`] are alerted as one
//!   cluster-level error (as a round that cannot list is); a short API server restart is not.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc;

use super::notify::Notifier;
use super::{TargetResult, WatchError, WatchOptions, log, server, state};
use crate::drift::{Engine, ReleaseSelection, check_release};
use crate::helm::storage::{ReleaseRevisions, ReleaseSummary, StoredRevision};
use crate::helm::{Driver, Release, ReleaseStore, StorageError};
use crate::live::Cluster;
use crate::report::{ReleaseReport, Status};
use crate::source::live_cache::{Change, Ended, ListKey, LiveCache, Recording, StreamStats};

/// How long streams may be down, or storage unreadable, before it is alerted.
/// Longer than the window a stream counts as failing after its last failure, so that a short
/// API server restart is not alerted.
pub const OUTAGE_GRACE: Duration = Duration::from_secs(60);
/// How long a release may stay pending-install/upgrade/rollback before live mode reads it as
/// such (and alerts it, as a round that met it would): longer than Helm's default `--timeout`
/// (5m), so a Helm command at work is not alerted, and a killed one is.
const PENDING_GRACE: Duration = Duration::from_secs(6 * 60);
/// How long to gather events before re-checking (one edit often sends several events).
const BATCH: Duration = Duration::from_millis(100);
/// How often undelivered alerts, failed storage reads and outages are looked at again.
const TICK: Duration = Duration::from_secs(5);

/// A decoded revision kept in memory (the manifest is the desired state).
#[derive(Clone)]
struct Kept {
    object: String,
    status: String,
    release: Arc<Release>,
}

impl Kept {
    fn stored(&self) -> StoredRevision {
        StoredRevision {
            object: self.object.clone(),
            namespace: self.release.namespace.clone(),
            name: self.release.name.clone(),
            revision: self.release.revision,
            status: self.status.clone(),
            release: Ok(Release::clone(&self.release)),
        }
    }

    fn from_stored(s: StoredRevision) -> Result<Kept, Box<StoredRevision>> {
        match s.release {
            Ok(release) => Ok(Kept { object: s.object, status: s.status, release: Arc::new(release) }),
            Err(e) => Err(Box::new(StoredRevision { release: Err(e), ..s })),
        }
    }
}

/// What a watched release is checked against.
enum Target {
    /// Its revisions, decoded: re-checked in memory on every change it depends on.
    Release { summary: ReleaseSummary, desired: Kept, newer: Option<Kept> },
    /// A result that no live change alters (its storage could not be found or decoded): kept
    /// until the next storage event or resync.
    Fixed(TargetResult),
}

struct Watched {
    target: Target,
    /// The lists its last check read.
    deps: BTreeSet<ListKey>,
    /// Its last result, to retry an undelivered alert.
    last: Option<TargetResult>,
}

fn release_key(namespace: &str, name: &str) -> String {
    format!("release/{namespace}/{name}")
}

/// A change in release storage: `Some((namespace, release))`, or `None` after the storage
/// stream listed again (anything may have changed).
type StorageChange = (Option<(String, String)>, Instant);

/// Run `watch --live` until stopped.
pub async fn run(
    client: kube::Client,
    notifier: Notifier,
    opts: WatchOptions,
    resync: Duration,
) -> Result<Status, WatchError> {
    let selection = opts.selection.clone().expect("--live watches releases (checked by the caller)");
    let stats = Arc::new(StreamStats::default());
    let metrics = Arc::new(Mutex::new(server::Metrics { live: Some(stats.clone()), ..Default::default() }));
    if let Some(addr) = opts.listen {
        server::serve(addr, metrics.clone()).await.map_err(|source| WatchError::Listen { addr, source })?;
        log(&format!("serving /healthz, /readyz and /metrics on http://{addr}"));
    }
    let state_client = matches!(opts.state, state::StateLocation::ConfigMap { .. }).then(|| client.clone());
    let mut memory = state::load(&opts.state, state_client.as_ref()).await?;
    if !notifier.enabled() {
        log("no --slack-webhook or --webhook: alerts are only logged");
    }
    let scope = if selection.all && selection.all_namespaces { None } else { Some(selection.namespace.clone()) };
    let (storage_tx, mut storage_rx) = mpsc::unbounded_channel::<StorageChange>();
    let (storage_ready_tx, storage_ready) = tokio::sync::oneshot::channel();
    let storage_task = tokio::spawn(watch_storage(
        client.clone(),
        opts.driver.clone(),
        scope.clone(),
        storage_tx,
        storage_ready_tx,
        stats.clone(),
    ));
    let _stop_storage = AbortOnDrop(storage_task);
    // Targets are read once the storage stream has listed, so no change falls between the two.
    let _ = storage_ready.await;
    let (change_tx, mut change_rx) = mpsc::unbounded_channel::<Change>();
    let store = ReleaseStore::new(client.clone(), opts.driver.clone());
    let mut outage_since: Option<Instant> = None;
    loop {
        // One generation: a fresh cache (initial LISTs), every target checked, then events.
        let started = Instant::now();
        let cache = Arc::new(LiveCache::new(client.clone(), change_tx.clone(), stats.clone()));
        let cluster = Cluster::new(client.clone()).with_lists(cache.clone());
        let mut targets: BTreeMap<String, Watched> = BTreeMap::new();
        let (engine, mut results) = match full_load(&cluster, &store, &selection, &opts, &mut targets, &cache).await {
            Ok((engine, results)) => (Some(engine), results),
            Err(message) => (None, vec![TargetResult::round_error(message)]),
        };
        super::note_values_changes(&store, &memory, &mut results).await;
        let status = super::round_status(&results);
        let failures = super::deliver(&notifier, &results, &mut memory, &metrics).await;
        save(&opts, state_client.as_ref(), &memory).await;
        super::record_round(&metrics, started, status, failures, &results);
        log(&format!(
            "live: {} target(s) checked in {:.1}s, watching {} list(s) ({} objects)",
            results.len(),
            started.elapsed().as_secs_f64(),
            cache.watched(),
            cache.objects()
        ));
        let Some(engine) = engine else {
            // Discovery or storage failed: try again shortly (as a round would next interval).
            tokio::select! {
                _ = tokio::time::sleep(TICK * 2) => continue,
                _ = super::shutdown_signal() => return Ok(status),
            }
        };
        for r in &results {
            if let Some(w) = targets.get_mut(&r.key) {
                w.last = Some(r.clone());
            }
        }
        let mut undelivered: BTreeSet<String> = BTreeSet::new();
        let mut unread: BTreeSet<(String, String)> = BTreeSet::new();
        let mut pending: BTreeMap<(String, String), Instant> = BTreeMap::new();
        let deadline = tokio::time::Instant::now() + resync;
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let mut changed: BTreeSet<ListKey> = BTreeSet::new();
            let mut releases: BTreeSet<(String, String)> = BTreeSet::new();
            let mut all_storage = false;
            let mut first: Option<Instant> = None;
            let mut ticked = false;
            tokio::select! {
                Some(c) = change_rx.recv() => { first = Some(c.at); changed.insert(c.key); }
                Some((r, at)) = storage_rx.recv() => {
                    first = Some(at);
                    match r { Some(r) => { releases.insert(r); } None => all_storage = true }
                }
                _ = tick.tick() => ticked = true,
                _ = tokio::time::sleep_until(deadline) => {
                    log("live: periodic full resync");
                    break;
                }
                _ = super::shutdown_signal() => {
                    log("stopping");
                    return Ok(Status::worst(targets.values().filter_map(|w| w.last.as_ref()).map(|r| r.status)));
                }
            }
            if first.is_some() {
                // Gather what else arrives in the batching pause.
                tokio::time::sleep(BATCH).await;
                while let Ok(c) = change_rx.try_recv() {
                    first = first.min(Some(c.at));
                    changed.insert(c.key);
                }
                while let Ok((r, at)) = storage_rx.try_recv() {
                    first = first.min(Some(at));
                    match r {
                        Some(r) => {
                            releases.insert(r);
                        }
                        None => all_storage = true,
                    }
                }
            }
            if all_storage {
                log("live: release storage listed again; resyncing");
                break;
            }
            if ticked {
                releases.extend(unread.iter().cloned());
                releases.extend(pending.iter().filter(|(_, t)| t.elapsed() >= PENDING_GRACE).map(|(r, _)| r.clone()));
            }
            let mut to_check: BTreeSet<String> = targets
                .iter()
                .filter(|(_, w)| w.deps.iter().any(|k| changed.contains(k)))
                .map(|(k, _)| k.clone())
                .collect();
            let mut results: Vec<TargetResult> = Vec::new();
            for (ns, name) in &releases {
                match refresh_release(&store, &selection, ns, name).await {
                    Ok(Refresh::Ignore) => {
                        unread.remove(&(ns.clone(), name.clone()));
                    }
                    Ok(Refresh::Gone) => {
                        unread.remove(&(ns.clone(), name.clone()));
                        let key = release_key(ns, name);
                        if targets.remove(&key).is_some() {
                            log(&format!("live: release {ns}/{name} is gone; forgetting it"));
                        }
                        memory.targets.remove(&key);
                        to_check.remove(&key);
                        metrics
                            .lock()
                            .expect("metrics lock")
                            .target_status
                            .retain(|(_, n, t), _| !(n == ns && t == name));
                    }
                    Ok(Refresh::Target(t)) if is_pending(&t) && !pending_too_long(&mut pending, ns, name) => {
                        // A Helm command is working on it: wait for the storage event that ends it.
                        unread.remove(&(ns.clone(), name.clone()));
                    }
                    Ok(Refresh::Target(t)) => {
                        pending.remove(&(ns.clone(), name.clone()));
                        unread.remove(&(ns.clone(), name.clone()));
                        let key = release_key(ns, name);
                        targets.insert(key.clone(), Watched { target: *t, deps: BTreeSet::new(), last: None });
                        to_check.insert(key);
                    }
                    Err(e) => {
                        log(&format!("error: live: release {ns}/{name}: {e}"));
                        unread.insert((ns.clone(), name.clone()));
                    }
                }
            }
            for key in &to_check {
                if let Some(w) = targets.get_mut(key) {
                    let (r, deps) = check(&engine, &cache, &w.target, &opts.reconciler).await;
                    w.deps = deps;
                    w.last = Some(r.clone());
                    results.push(r);
                }
            }
            if ticked {
                // Retry what could not be delivered.
                for key in std::mem::take(&mut undelivered) {
                    if !to_check.contains(&key)
                        && let Some(r) = targets.get(&key).and_then(|w| w.last.clone())
                    {
                        results.push(r);
                    }
                }
                // A long outage is an error for the whole watch; its end clears it (as rounds do).
                let down = stats.failing() > 0 || !unread.is_empty();
                match (down, outage_since) {
                    (true, None) => outage_since = Some(Instant::now()),
                    (false, Some(_)) => {
                        outage_since = None;
                        if memory.targets.remove("cluster").is_some() {
                            log("live: watch streams and release storage are readable again");
                            save(&opts, state_client.as_ref(), &memory).await;
                        }
                    }
                    _ => {}
                }
                if outage_since.is_some_and(|t| t.elapsed() >= OUTAGE_GRACE) {
                    results.push(TargetResult::round_error(format!(
                        "live: watch streams or release storage unreadable for more than {}s; alerts may be late",
                        OUTAGE_GRACE.as_secs()
                    )));
                }
            }
            if results.is_empty() {
                continue;
            }
            super::note_values_changes(&store, &memory, &mut results).await;
            let before = memory.clone();
            let (failures, sent) = super::deliver_targets(&notifier, &results, &mut memory, &metrics).await;
            for r in &results {
                if memory.targets.get(&r.key) != before.targets.get(&r.key) || failures == 0 {
                    undelivered.remove(&r.key);
                }
            }
            if failures > 0 {
                // Which targets failed: those whose memory did not advance although they had alerts.
                for r in &results {
                    let (events, _) = super::decide(memory.targets.get(&r.key), r);
                    if !events.is_empty() {
                        undelivered.insert(r.key.clone());
                    }
                }
            }
            if memory != before {
                save(&opts, state_client.as_ref(), &memory).await;
            }
            let mut m = metrics.lock().expect("metrics lock");
            m.alert_failures_total += failures;
            super::record_targets(&mut m, &results);
            if let Some(at) = first.filter(|_| sent > 0) {
                let seconds = at.elapsed().as_secs_f64();
                for _ in 0..sent {
                    m.event_to_alert.observe(seconds);
                }
                log(&format!("live: {sent} alert(s) delivered {seconds:.2}s after the event"));
            }
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn save(opts: &WatchOptions, client: Option<&kube::Client>, memory: &state::WatchState) {
    if let Err(e) = state::save(&opts.state, client, memory).await {
        log(&format!("error: {e}"));
    }
}

/// Read every selected release and check each once (starting the watches its checks need).
async fn full_load(
    cluster: &Cluster,
    store: &ReleaseStore,
    sel: &ReleaseSelection,
    opts: &WatchOptions,
    targets: &mut BTreeMap<String, Watched>,
    cache: &Arc<LiveCache>,
) -> Result<(Engine, Vec<TargetResult>), String> {
    let scope = if sel.all && sel.all_namespaces { None } else { Some(sel.namespace.as_str()) };
    let names: &[String] = if sel.all { &[] } else { &sel.names };
    let found = store.releases_to_check(scope, names, sel.revision).await.map_err(|e| e.to_string())?;
    let engine = Engine::connect(cluster, opts.rules.clone(), false).await.map_err(|e| e.to_string())?;
    for f in found {
        let (key, target) = match f {
            Ok(revs) => {
                (release_key(&revs.summary.namespace, &revs.summary.name), keep(revs, &engine, &opts.reconciler).await)
            }
            Err((name, e)) => (release_key(&sel.namespace, &name), Target::Fixed(failed(&name, sel, &e))),
        };
        targets.insert(key, Watched { target, deps: BTreeSet::new(), last: None });
    }
    let checks = targets.iter().map(|(key, w)| {
        let engine = &engine;
        async move { (key.clone(), check(engine, cache, &w.target, &opts.reconciler).await) }
    });
    let done: Vec<(String, (TargetResult, BTreeSet<ListKey>))> =
        futures::stream::iter(checks).buffered(8).collect().await;
    let mut results = Vec::new();
    for (key, (r, deps)) in done {
        if let Some(w) = targets.get_mut(&key) {
            w.deps = deps;
        }
        results.push(r);
    }
    Ok((engine, results))
}

fn failed(name: &str, sel: &ReleaseSelection, e: &StorageError) -> TargetResult {
    TargetResult::from_release(&ReleaseReport::failed(
        name.to_string(),
        sel.namespace.clone(),
        sel.revision.unwrap_or(0),
        e.to_string(),
    ))
}

/// Keep a release's decoded revisions; one that did not decode is checked once, now.
async fn keep(revs: ReleaseRevisions, engine: &Engine, reconciler: &crate::reconcile::Reconciler) -> Target {
    let ReleaseRevisions { summary, desired, newer } = revs;
    let desired = Kept::from_stored(desired);
    let newer = newer.map(Kept::from_stored).transpose();
    match (desired, newer) {
        (Ok(desired), Ok(newer)) => Target::Release { summary, desired, newer },
        (desired, newer) => {
            let revs = ReleaseRevisions {
                summary,
                desired: desired.map(|k| k.stored()).unwrap_or_else(|s| *s),
                newer: match newer {
                    Ok(n) => n.map(|k| k.stored()),
                    Err(s) => Some(*s),
                },
            };
            let (report, _) = check_release(engine, revs, reconciler).await;
            Target::Fixed(TargetResult::from_release(&report))
        }
    }
}

/// Check one target against the cache, recording the lists it read.
async fn check(
    engine: &Engine,
    cache: &Arc<LiveCache>,
    target: &Target,
    reconciler: &crate::reconcile::Reconciler,
) -> (TargetResult, BTreeSet<ListKey>) {
    match target {
        Target::Fixed(r) => (r.clone(), BTreeSet::new()),
        Target::Release { summary, desired, newer } => {
            let recording = Arc::new(Recording::new(cache.clone()));
            let mut engine = engine.clone_shared();
            engine.lists = recording.clone();
            let revs = ReleaseRevisions {
                summary: summary.clone(),
                desired: desired.stored(),
                newer: newer.as_ref().map(Kept::stored),
            };
            let (report, _) = check_release(&engine, revs, reconciler).await;
            (TargetResult::from_release(&report), recording.keys())
        }
    }
}

fn is_pending(t: &Target) -> bool {
    matches!(t, Target::Release { summary, .. } if summary.status.starts_with("pending-"))
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
        Ok(revs) => {
            let ReleaseRevisions { summary, desired, newer } = revs;
            match (Kept::from_stored(desired), newer.map(Kept::from_stored).transpose()) {
                (Ok(desired), Ok(newer)) => Refresh::Target(Box::new(Target::Release { summary, desired, newer })),
                (Err(s), _) | (_, Err(s)) => {
                    let e = s.release.err().map(|e| e.to_string()).unwrap_or_default();
                    Refresh::Target(Box::new(Target::Fixed(TargetResult::from_release(&ReleaseReport::failed(
                        name.to_string(),
                        namespace.to_string(),
                        s.revision,
                        format!("revision {} ({}): {e}", s.revision, s.status),
                    )))))
                }
            }
        }
        // With --all, an uninstalled or deleted release is no longer watched (as rounds forget it).
        Err((_, StorageError::NotFound { .. })) if sel.all => Refresh::Gone,
        Err((n, e)) => Refresh::Target(Box::new(Target::Fixed(failed(&n, sel, &e)))),
    })
}

/// Watch release storage (metadata only) and report each release whose storage changed.
async fn watch_storage(
    client: kube::Client,
    driver: Driver,
    namespace: Option<String>,
    tx: mpsc::UnboundedSender<StorageChange>,
    ready: tokio::sync::oneshot::Sender<()>,
    stats: Arc<StreamStats>,
) {
    let config = watcher::Config::default().labels("owner=helm");
    let mut stream = match driver {
        Driver::ConfigMap => metadata_stream::<ConfigMap>(client, namespace.as_deref(), config),
        _ => metadata_stream::<Secret>(client, namespace.as_deref(), config),
    };
    stats.streams.fetch_add(1, Ordering::Relaxed);
    let id = stats.stream_id();
    let _ended = Ended(stats.clone(), id);
    let mut ready = Some(ready);
    let mut listed = false;
    while let Some(item) = stream.next().await {
        let at = Instant::now();
        let event = match item {
            Ok(e) => e,
            Err(e) => {
                stats.failed(id);
                log(&format!("live: release storage stream failed, reconnecting: {e}"));
                continue;
            }
        };
        stats.works(id);
        let release_of = |m: &ObjectMeta| {
            let name = m.labels.as_ref().and_then(|l| l.get("name")).cloned()?;
            Some((m.namespace.clone().unwrap_or_default(), name))
        };
        match event {
            Event::Apply(m) | Event::Delete(m) => {
                if let Some(r) = release_of(&m) {
                    let _ = tx.send((Some(r), at));
                }
            }
            Event::Init => {
                if listed {
                    stats.relists.fetch_add(1, Ordering::Relaxed);
                }
            }
            Event::InitApply(_) => {}
            Event::InitDone => {
                if let Some(r) = ready.take() {
                    let _ = r.send(());
                } else {
                    let _ = tx.send((None, at));
                }
                listed = true;
            }
        }
    }
}

type MetaEvent = Result<Event<ObjectMeta>, watcher::Error>;

/// A metadata-only watch of `K` (the release bodies never leave the API server).
fn metadata_stream<K>(
    client: kube::Client,
    namespace: Option<&str>,
    config: watcher::Config,
) -> futures::stream::BoxStream<'static, MetaEvent>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope> + Clone + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default,
    PartialObjectMeta<K>: serde::de::DeserializeOwned,
{
    let api: Api<PartialObjectMeta<K>> = match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    watcher::watcher(api, config)
        .default_backoff()
        .map(|r| {
            r.map(|e| match e {
                Event::Apply(m) => Event::Apply(m.metadata),
                Event::Delete(m) => Event::Delete(m.metadata),
                Event::Init => Event::Init,
                Event::InitApply(m) => Event::InitApply(m.metadata),
                Event::InitDone => Event::InitDone,
            })
        })
        .boxed()
}
