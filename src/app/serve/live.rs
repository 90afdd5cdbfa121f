//! `serve --live`: the releases scope kept current by WATCH streams, and the page told of every
//! change by Server-Sent Events (`GET /api/events`).
//!
//! - One `LiveCache` per generation of the process and one [`LiveView`] over it, in the live loop
//!   that `watch --live` runs too ([`crate::engine::live`]); this file is the page's side of it,
//!   [`Page`]. A change in a watched list re-checks only the releases
//!   whose last check read that list; a change in release storage re-reads that release.
//! - Each change replaces the releases result (and its file in the data directory) and is
//!   announced on `/api/events`; the page then fetches `/api/releases` again. No rescan.
//! - The timer (`--interval`) and `POST /api/rescan?scope=releases` rebuild the cache from fresh
//!   LISTs and check every release again: the safety net for anything a watch could have missed.
//! - Events carry the scope, the reason, release names and statuses, and the summary counts;
//!   never an object, a diff or a value (Secrets are only fingerprints in the cache anyway).

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::{Notify, broadcast};

use super::scope::Scope;
use super::{Saved, Server, lock};
use crate::engine::compare::rules::IgnoreRule;
use crate::engine::drift::ReleaseSelection;
use crate::engine::live::{
    Batch, Generation, LiveLoop, LiveSink, LiveView, OUTAGE_GRACE, Outage, Stop, StorageWatch, TICK, TickOrder, Update,
};
use crate::report::duration::{now, rfc3339_utc};
use crate::report::{DriftReport, FileReport, ReleaseReport};
use crate::source::cluster::Cluster;
use crate::source::live_cache::StreamStats;

/// The page's event stream: one JSON text per event, shared by every `/api/events` listener.
pub struct Events(broadcast::Sender<Arc<str>>);

impl Default for Events {
    fn default() -> Events {
        Events(broadcast::channel(64).0)
    }
}

impl Events {
    /// Announce that `scope`'s result changed (`reason`: `scan` or `watch`), with the releases
    /// it changed (names and statuses only).
    pub fn publish(&self, scope: Scope, reason: &str, changed: &[&ReleaseReport], summary: Option<serde_json::Value>) {
        let changed: Vec<_> = changed
            .iter()
            .map(|r| json!({"namespace": r.origin.namespace, "name": r.origin.name, "status": r.status}))
            .collect();
        let mut body = json!({"scope": scope, "reason": reason, "at": rfc3339_utc(now())});
        if !changed.is_empty() {
            body["changed"] = json!(changed);
        }
        if let Some(s) = summary {
            body["summary"] = s;
        }
        // No listener is not an error.
        let _ = self.0.send(Arc::from(body.to_string()));
    }
}

/// The live mode's handles, kept in [`Server::live`].
pub struct Live {
    /// The watch streams' counters (the same as `watch --live`'s).
    pub stats: Arc<StreamStats>,
    /// A rescan of the releases scope was asked for: rebuild the cache.
    resync: Notify,
    /// Time from a watch event to the changed releases result that includes it.
    event_to_update: prometheus_client::metrics::histogram::Histogram,
    /// Results changed by watch events (not by a rebuild).
    updates_total: AtomicU64,
}

impl Default for Live {
    fn default() -> Live {
        Live {
            stats: Arc::default(),
            resync: Notify::new(),
            event_to_update: crate::app::metrics::event_histogram(),
            updates_total: AtomicU64::new(0),
        }
    }
}

impl Live {
    /// Ask the live loop to rebuild the cache and check every release again.
    pub fn resync(&self) {
        self.resync.notify_one();
    }

    /// The live families of `/metrics` read at scrape time.
    pub fn families(&self) -> Vec<crate::app::metrics::Family> {
        let mut out = crate::app::metrics::stream_families(&self.stats);
        out.push(
            crate::app::metrics::Family::counter(
                "kubectl_drift_live_updates",
                "Releases results updated by watch events (not by a rebuild).",
            )
            .row(Vec::new(), self.updates_total.load(Ordering::Relaxed) as f64),
        );
        out
    }

    /// The live metrics that are prometheus-client's own types.
    pub fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.register(
            "kubectl_drift_event_to_update_seconds",
            "Time from receiving a watch event to the releases result (and its /api/events event) that includes it",
            self.event_to_update.clone(),
        );
    }
}

/// A log line of the live loop (also given as `fn(&str)` to the live parts below `app`): a line
/// starting with `error: ` is logged at error level, the others at info.
fn log(msg: &str) {
    match msg.strip_prefix("error: ") {
        Some(error) => tracing::error!("{error}"),
        None => tracing::info!("{msg}"),
    }
}

/// The live loop of the releases scope: runs for the life of the process.
pub async fn run(server: Arc<Server>, live: Arc<Live>) {
    // The timer's first trigger starts it.
    live.resync.notified().await;
    let cluster = server.cluster();
    let selection = ReleaseSelection {
        names: Vec::new(),
        all: true,
        all_namespaces: server.namespace.is_none(),
        namespace: cluster.namespace().to_string(),
        revision: None,
        chart_crds: true,
        // Read again by each scan; a file that does not read is reported by the first one.
        admission_changes: server.read_config().map(|c| c.admission_changes(None)).unwrap_or_default(),
    };
    // serve refuses --live with storage outside the cluster (SQL) before it starts.
    let Some(objects) = cluster.store().objects() else {
        log("live: release storage outside the cluster has no watch; the live releases scope does not run");
        return;
    };
    let storage = StorageWatch {
        objects,
        namespace: server.namespace.clone(),
        // A storage list that keeps failing (RBAC) is reported by the first load.
        ready_timeout: Some(Duration::from_secs(30)),
    };
    let mut sink = Page {
        server: server.clone(),
        live: live.clone(),
        cluster: cluster.clone(),
        selection: selection.clone(),
        span: tracing::Span::none(),
        rules: Vec::new(),
        gitops: Vec::new(),
        disk: SaveGate::default(),
    };
    let live = LiveLoop {
        cluster,
        selection: Some(selection),
        storage: Some(storage),
        stats: live.stats.clone(),
        // The timer resyncs through `Live::resync`.
        resync: None,
        retry: TICK * 4,
        tick_order: TickOrder::BeforeApply,
        log,
        return_freed_memory: crate::app::allocator::return_freed_memory,
    };
    crate::engine::live::run(live, &mut sink).await;
}

/// `serve --live`'s side of the live loop: each generation is the releases scope's scan, each
/// change replaces its result (in memory at once, on disk when [`SaveGate`] says) and is announced
/// on `/api/events`.
struct Page {
    server: Arc<Server>,
    live: Arc<Live>,
    cluster: Cluster,
    selection: ReleaseSelection,
    /// The generation's `scan` span.
    span: tracing::Span,
    /// The generation's ignore rules (its GitOps objects are checked with them too).
    rules: Vec<IgnoreRule>,
    /// The Flux Kustomizations and Argo CD Applications, checked once a generation (LISTs, not
    /// the watch-fed cache): they change with their controllers' reconciles, not per edit.
    gitops: Vec<FileReport>,
    disk: SaveGate,
}

impl Page {
    /// The view's releases as the scope's result.
    fn report(&self, view: &LiveView) -> DriftReport {
        let (reports, objects) = view.reports();
        let mut report = named(DriftReport::new(reports, objects), &self.cluster);
        report.gitops = self.gitops.clone();
        report
    }
}

impl LiveSink for Page {
    fn begin(&mut self) -> tracing::Span {
        super::begin(&self.server.releases, (now(), Instant::now()));
        // The generation's first check is the releases scope's scan (its span, as a timer's scan).
        self.span = tracing::info_span!(
            "scan",
            scope = Scope::Releases.name(),
            cluster = %self.server.cluster_name,
            live = true
        );
        self.gitops = Vec::new();
        self.span.clone()
    }

    fn rules(&mut self) -> Result<Vec<IgnoreRule>, String> {
        let rules = self.server.read_config().and_then(|c| c.ignore_rules(&[])).map_err(|e| e.to_string())?;
        self.rules = rules.clone();
        Ok(rules)
    }

    async fn generation(&mut self, loaded: Result<&LiveView, &str>, generation: Generation<'_>) {
        let (server, span) = (&self.server, &self.span);
        let view = match loaded {
            Ok(view) => view,
            Err(e) => {
                span.in_scope(|| server.finish(&server.releases, Scope::Releases, Err(e.to_string())));
                server.events.publish(Scope::Releases, "scan", &[], None);
                return;
            }
        };
        self.gitops = super::scan_gitops(&self.cluster.fresh(), &self.selection, self.rules.clone()).await;
        let report = self.report(view);
        self.server.record_history(&report).await;
        let (server, span, cache) = (&self.server, &self.span, generation.cache);
        span.in_scope(|| server.finish(&server.releases, Scope::Releases, Ok(report)));
        span.in_scope(|| {
            tracing::info!(
                cluster = self.cluster.name(),
                duration_ms = crate::app::log::millis(generation.started),
                releases = view.targets.len(),
                lists = cache.watched(),
                objects = cache.objects(),
                packed_bytes = cache.packed_bytes(),
                "live: every release checked"
            )
        });
        publish_summary(server, "scan", &[]);
    }

    async fn tick(&mut self, _view: &LiveView, _batch: &Batch, outage: Outage) {
        self.outage(outage);
        if self.disk.tick(Instant::now()) {
            save(&self.server);
        }
    }

    async fn updates(&mut self, view: &LiveView, batch: &Batch, updates: Vec<Update>) {
        if updates.is_empty() {
            return;
        }
        let server = &self.server;
        let report = self.report(view);
        let before = lock(&server.releases).saved.clone();
        if before.as_ref().is_some_and(|s| s.data == report) {
            // Re-checked, and nothing changed (an edit that kept its values, a status update
            // seen by a list the comparison reads): the page has it already.
            return;
        }
        let keys: BTreeSet<&str> = updates
            .iter()
            .filter_map(|u| match u {
                Update::Checked(k) => Some(k.as_str()),
                Update::Gone { .. } => None,
            })
            .collect();
        // The releases whose report changed (a gone release is simply no longer listed).
        let unchanged = |r: &ReleaseReport| before.as_ref().is_some_and(|b| b.data.releases.contains(r));
        let changed_reports: Vec<&ReleaseReport> = view
            .targets
            .iter()
            .filter(|(k, _)| keys.contains(k.as_str()))
            .filter_map(|(_, w)| w.last.as_ref().map(|(r, _)| r))
            .filter(|r| !unchanged(r))
            .collect();
        server.record_history(&report).await;
        update(server, report);
        if self.disk.changed(Instant::now()) {
            save(server);
        }
        publish_summary(server, "watch", &changed_reports);
        self.live.updates_total.fetch_add(1, Ordering::Relaxed);
        if let Some(at) = batch.first {
            self.live.event_to_update.observe(at.elapsed().as_secs_f64());
        }
    }

    fn relisted(&mut self) {
        log("live: release storage listed again; checking everything again");
    }

    async fn interrupt(&self) -> Stop {
        self.live.resync.notified().await;
        Stop::Resync
    }
}

impl Page {
    /// Streams or storage down for longer than [`OUTAGE_GRACE`]: the releases scope shows an
    /// error (its result may be stale) until they are readable again.
    fn outage(&self, outage: Outage) {
        const WHY: &str = "live: watch streams or release storage unreadable";
        let server = &self.server;
        match outage {
            Outage::Recovered => {
                let mut st = lock(&server.releases);
                if st.last_error.as_ref().is_some_and(|(e, _)| e.starts_with(WHY)) {
                    st.last_error = None;
                    drop(st);
                    publish_summary(server, "watch", &[]);
                }
            }
            Outage::Down => {
                let mut st = lock(&server.releases);
                if st.last_error.is_none() {
                    let message =
                        format!("{WHY} for more than {}s; the result shown may be stale", OUTAGE_GRACE.as_secs());
                    st.last_error = Some((message, now()));
                    drop(st);
                    publish_summary(server, "watch", &[]);
                }
            }
            Outage::Up | Outage::Brief => {}
        }
    }
}

/// Replace the releases result by one from the live view (not a scan: the counters stay). It is
/// written to the data directory by [`save`], when [`SaveGate`] says.
fn update(server: &Server, report: DriftReport) {
    let mut st = lock(&server.releases);
    let duration = st.saved.as_ref().map(|s| s.duration_seconds).unwrap_or(0.0);
    let saved =
        Saved { cluster: server.cluster_name.clone(), finished_unix: now(), duration_seconds: duration, data: report };
    st.saved = Some(Arc::new(saved));
    st.from_disk = false;
}

/// Write the releases result held in memory to the data directory (what a restart serves first).
fn save(server: &Server) {
    let saved = lock(&server.releases).saved.clone();
    if let Some(saved) = saved
        && let Err(e) = server.data.save_result(&Scope::Releases.file(), &*saved)
    {
        tracing::warn!("{e}");
    }
}

/// How often at most the live releases result is written to disk. The page and the API read the
/// result in memory at once; the file is only what a restarted server shows until its first check.
/// A cluster whose drift changes many times a second (a flapping autoscaler on an ignored-not
/// field) would otherwise rewrite the whole report (megabytes on a big cluster) on every change.
pub const SAVE_EVERY: Duration = TICK;

/// Decides when a changed live result is written: at once when the last write is older than
/// [`SAVE_EVERY`], else at the first tick after that (so the file is at most one tick behind).
#[derive(Debug, Default)]
struct SaveGate {
    last: Option<Instant>,
    pending: bool,
}

impl SaveGate {
    /// The result changed: write it now?
    fn changed(&mut self, now: Instant) -> bool {
        self.pending = true;
        self.due(now)
    }

    /// A tick: write a change held back?
    fn tick(&mut self, now: Instant) -> bool {
        self.pending && self.due(now)
    }

    fn due(&mut self, now: Instant) -> bool {
        if self.last.is_some_and(|l| now.duration_since(l) < SAVE_EVERY) {
            return false;
        }
        self.last = Some(now);
        self.pending = false;
        true
    }
}

fn publish_summary(server: &Server, reason: &str, changed: &[&ReleaseReport]) {
    let summary = lock(&server.releases).saved.as_ref().and_then(|s| serde_json::to_value(&s.data.summary).ok());
    server.events.publish(Scope::Releases, reason, changed, summary);
}

/// Changes as Server-Sent Events: first `ready`, then an `update` event (JSON: `scope`,
/// `reason` `scan` or `watch`, `at`, and for releases the `changed` releases' names and statuses
/// and the `summary` counts) each time a scope's result changes; fetch that scope's endpoint
/// again. A listener too slow to keep up gets an `update` with `scope` null: fetch everything.
#[utoipa::path(get, path = "/api/events", responses((status = 200, content_type = "text/event-stream", body = String,
    description = "event: ready, then event: update with data {\"scope\": \"releases\", \"reason\": \"watch\", \"at\": ..., \"changed\": [{\"namespace\", \"name\", \"status\"}], \"summary\": {...}}")))]
pub async fn events(State(s): State<Arc<Server>>) -> Response {
    let rx = s.events.0.subscribe();
    let ready = futures::stream::once(async { Ok::<_, Infallible>(Event::default().event("ready").data("{}")) });
    let updates = futures::stream::unfold(rx, |mut rx| async move {
        let data: Arc<str> = match rx.recv().await {
            Ok(d) => d,
            Err(broadcast::error::RecvError::Lagged(_)) => Arc::from(r#"{"scope":null,"reason":"lagged"}"#),
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok(Event::default().event("update").data(&*data)), rx))
    });
    // The stream ends at shutdown, so that the graceful shutdown does not wait for the page.
    let stream = ready.chain(updates).take_until(Box::pin(super::shutdown_signal()));
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

/// `report` naming the server's cluster.
fn named(mut report: DriftReport, cluster: &Cluster) -> DriftReport {
    report.cluster = cluster.name().to_string();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changing_live_result_is_written_at_most_once_a_tick_and_never_left_unwritten() {
        let mut gate = SaveGate::default();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        assert!(gate.changed(at(0)), "the first change is written at once");
        assert!(!gate.changed(at(100)) && !gate.changed(at(900)), "changes within a tick are held back");
        assert!(!gate.tick(at(4_000)), "not yet a tick since the last write");
        assert!(gate.tick(at(5_000)), "the held-back change is written at the next tick");
        assert!(!gate.tick(at(10_000)), "nothing held back: no write");
        assert!(gate.changed(at(20_000)), "a change after a quiet spell is written at once");
    }

    #[test]
    fn events_carry_names_statuses_and_counts_only() {
        let events = Events::default();
        let mut rx = events.0.subscribe();
        let mut r = ReleaseReport::failed_release("shop".into(), "ns".into(), 3, "storage said s3cr3t".into());
        r.status = crate::report::Status::Drifted;
        events.publish(Scope::Releases, "watch", &[&r], Some(json!({"drifted": 1})));
        let text = rx.try_recv().unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["scope"], "releases");
        assert_eq!(v["reason"], "watch");
        assert_eq!(v["changed"], json!([{"namespace": "ns", "name": "shop", "status": "drifted"}]));
        assert_eq!(v["summary"], json!({"drifted": 1}));
        assert!(!text.contains("s3cr3t"), "only names and statuses: {text}");
        // A scan of another scope: no release list.
        events.publish(Scope::Orphans, "scan", &[], None);
        let v: serde_json::Value = serde_json::from_str(&rx.try_recv().unwrap()).unwrap();
        assert_eq!(v.get("changed"), None);
        assert_eq!(v["scope"], "orphans");
    }
}
