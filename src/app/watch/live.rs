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
//!
//! The loop itself (storage watch, generations, outages, resyncs) is the engine's
//! ([`crate::engine::live::run`]); this file is the watch's side of it, [`Alerts`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::error::WatchError;
use super::notify::Notifier;
use super::{TargetResult, WatchOptions, log, server, state};
use crate::engine::compare::rules::IgnoreRule;
use crate::engine::live::{
    Batch, Generation, LiveLoop, LiveSink, LiveView, OUTAGE_GRACE, Outage, Stop, StorageWatch, TICK, TickOrder, Update,
};
use crate::report::Status;
use crate::source::cluster::Cluster;
use crate::source::helm::ReleaseStore;
use crate::source::live_cache::{ListKey, StreamStats};

/// Run `watch --live` until stopped.
///
/// Watch streams use the cluster's stream client, one-off requests its client.
pub async fn run(
    cluster: Cluster,
    notifier: Notifier,
    opts: WatchOptions,
    resync: Duration,
) -> Result<Status, WatchError> {
    // The selection's namespace is the cluster's (-n, else its context's).
    let selection = opts
        .selection
        .clone()
        .map(|sel| crate::engine::drift::ReleaseSelection { namespace: cluster.namespace().to_string(), ..sel });
    let stats = Arc::new(StreamStats::default());
    let metrics = Arc::new(server::Metrics::new(&opts.identity, false, Some(stats.clone())));
    if let Some(addr) = opts.listen {
        let bound = server::serve(addr, metrics.clone()).await.map_err(|source| WatchError::Listen { addr, source })?;
        tracing::info!(address = %bound, "serving /healthz, /readyz and /metrics on http://{bound}");
    }
    let state_client = matches!(opts.state, state::StateLocation::ConfigMap { .. }).then(|| cluster.client().clone());
    let mut memory = state::load(&opts.state, state_client.as_ref()).await?;
    memory.adopt_unnamed(cluster.name());
    let history = super::open_history(&opts).await?;
    if !notifier.enabled() {
        tracing::warn!("no --slack-webhook or --webhook: alerts are only logged");
    }
    // Release storage is watched when releases are (not for --manifests alone).
    // (Storage outside the cluster, SQL, has no stream: `watch --live` refuses it for releases.)
    let storage = match (&selection, cluster.store().objects()) {
        (Some(sel), Some(objects)) => {
            let namespace = if sel.all && sel.all_namespaces { None } else { Some(sel.namespace.clone()) };
            Some(StorageWatch { objects, namespace, ready_timeout: None })
        }
        _ => None,
    };
    let live = LiveLoop {
        cluster: cluster.clone(),
        selection,
        storage,
        stats,
        resync: Some(resync),
        retry: TICK * 2,
        tick_order: TickOrder::AfterApply,
        log,
        return_freed_memory: crate::app::allocator::return_freed_memory,
    };
    let paths = opts.manifests.iter().map(|p| (format!("manifests/{}", p.display()), p.clone())).collect();
    let mut sink = Alerts {
        store: cluster.store().clone(),
        cluster,
        notifier,
        opts,
        metrics,
        state_client,
        memory,
        paths,
        manifests: BTreeMap::new(),
        undelivered: BTreeSet::new(),
        status: Status::Clean,
        results: Vec::new(),
        checked: BTreeSet::new(),
        history,
    };
    Ok(match crate::engine::live::run(live, &mut sink).await {
        Some(view) => {
            log("stopping");
            let releases = view.targets.values().filter_map(|w| w.last.as_ref()).map(|(r, _)| r.status);
            Status::worst(releases.chain(sink.manifests.values().map(|(_, r)| r.report.status)))
        }
        // Stopped while waiting after a generation that failed: that generation's status.
        None => sink.status,
    })
}

/// `watch --live`'s side of the live loop: results become alerts through the same
/// [`decide`](super::decide) and delivery as rounds, and the state advances once they are posted.
struct Alerts {
    cluster: Cluster,
    store: ReleaseStore,
    notifier: Notifier,
    opts: WatchOptions,
    metrics: Arc<server::Metrics>,
    state_client: Option<kube::Client>,
    memory: state::WatchState,
    /// `--manifests` PATH key -> the PATH.
    paths: BTreeMap<String, PathBuf>,
    /// `--manifests` PATH key -> the lists its last check read and its result (per generation).
    manifests: BTreeMap<String, (BTreeSet<ListKey>, TargetResult)>,
    /// Targets whose alerts could not be posted: sent again at the next tick.
    undelivered: BTreeSet<String>,
    /// The status of the last generation's full check.
    status: Status,
    /// The batch's results, delivered at its end (after its tick, if it is one).
    results: Vec<TargetResult>,
    /// The targets the batch checked.
    checked: BTreeSet<String>,
    /// `--history`: written with each batch's results, before its alerts.
    history: Option<crate::app::recorder::Recorder>,
}

impl LiveSink for Alerts {
    fn rules(&mut self) -> Result<Vec<IgnoreRule>, String> {
        Ok(self.opts.rules.clone())
    }

    async fn generation(&mut self, loaded: Result<&LiveView, &str>, generation: Generation<'_>) {
        let Generation { cache, started, cause } = generation;
        self.manifests.clear();
        self.undelivered.clear();
        let mut results: Vec<TargetResult> = match loaded {
            Ok(view) => {
                let mut results: Vec<TargetResult> = view.reports().0.iter().map(TargetResult::from_release).collect();
                for path in &self.opts.manifests {
                    let (r, deps) = check_manifests(&self.cluster, view, &self.opts, path).await;
                    self.manifests.insert(r.key.clone(), (deps, r.clone()));
                    results.push(r);
                }
                results
            }
            Err(message) => vec![TargetResult::round_error(message.to_string())],
        };
        name_cluster(&mut results, &self.cluster);
        super::note_values_changes(&self.store, &self.memory, &mut results).await;
        let history_failed = super::record_history(&mut self.history, &mut results).await;
        let status = if history_failed { Status::Error } else { super::round_status(&results) };
        let (failures, sent) = super::deliver(&self.notifier, &results, &mut self.memory, &self.metrics).await;
        if let Some(at) = cause.filter(|_| sent > 0) {
            // Alerts found by a resync that an event caused (release storage listed again, as
            // after an API server restart) count from that event too.
            observe(&self.metrics, at, sent);
        }
        save(&self.opts, self.state_client.as_ref(), &self.memory).await;
        super::record_round(&self.metrics, started, status, failures, &results);
        tracing::info!(
            cluster = self.cluster.name(),
            duration_ms = crate::app::log::millis(started),
            targets = results.len(),
            lists = cache.watched(),
            objects = cache.objects(),
            packed_bytes = cache.packed_bytes(),
            outcome = %status.name(),
            "live: every target checked"
        );
        self.status = status;
    }

    async fn updates(&mut self, view: &LiveView, batch: &Batch, updates: Vec<Update>) {
        self.checked.clear();
        self.results.clear();
        for u in updates {
            match u {
                Update::Checked(key) => {
                    self.results.extend(last(view, &key));
                    self.checked.insert(key);
                }
                Update::Gone { key, .. } => {
                    self.memory.remove(self.cluster.name(), &key);
                    self.metrics.forget(self.cluster.name(), &key);
                }
            }
        }
        // Manifests targets whose lists changed (their files are read again too).
        for (key, (deps, last)) in self.manifests.iter_mut() {
            if let Some(path) = self.paths.get(key)
                && deps.iter().any(|k| batch.touches(k))
            {
                let (r, d) = check_manifests(&self.cluster, view, &self.opts, path).await;
                (*deps, *last) = (d, r.clone());
                self.results.push(r);
                self.checked.insert(key.clone());
            }
        }
        if !batch.tick {
            self.deliver(batch.first).await;
        }
    }

    async fn tick(&mut self, view: &LiveView, batch: &Batch, outage: Outage) {
        // Retry what could not be delivered.
        for key in std::mem::take(&mut self.undelivered) {
            if !self.checked.contains(&key) {
                let retry = last(view, &key).or_else(|| self.manifests.get(&key).map(|(_, r)| r.clone()));
                self.results.extend(retry);
            }
        }
        // A long outage is an error for the whole watch; its end clears it (as rounds do).
        match outage {
            Outage::Recovered => {
                if self.memory.remove(self.cluster.name(), "cluster").is_some() {
                    log("live: watch streams and release storage are readable again");
                    save(&self.opts, self.state_client.as_ref(), &self.memory).await;
                }
            }
            Outage::Down => self.results.push(TargetResult::round_error(format!(
                "live: watch streams or release storage unreadable for more than {}s; alerts may be late",
                OUTAGE_GRACE.as_secs()
            ))),
            Outage::Up | Outage::Brief => {}
        }
        self.deliver(batch.first).await;
    }

    fn relisted(&mut self) {
        log("live: release storage listed again; resyncing");
    }

    async fn interrupt(&self) -> Stop {
        super::shutdown_signal().await;
        Stop::Shutdown
    }
}

impl Alerts {
    /// Deliver the batch's results (`first`: when its first event came).
    async fn deliver(&mut self, first: Option<Instant>) {
        let mut results = std::mem::take(&mut self.results);
        if results.is_empty() {
            return;
        }
        let memory = &mut self.memory;
        name_cluster(&mut results, &self.cluster);
        super::note_values_changes(&self.store, memory, &mut results).await;
        super::record_history(&mut self.history, &mut results).await;
        let before = memory.clone();
        let (failures, sent) = super::deliver_targets(&self.notifier, &results, memory, &self.metrics).await;
        for r in &results {
            if memory.get(&r.report.cluster, &r.key) != before.get(&r.report.cluster, &r.key) || failures == 0 {
                self.undelivered.remove(&r.key);
            }
        }
        if failures > 0 {
            // Which targets failed: those whose memory did not advance although they had alerts.
            for r in &results {
                let (events, _) = super::decide(memory.get(&r.report.cluster, &r.key), r);
                if !events.is_empty() {
                    self.undelivered.insert(r.key.clone());
                }
            }
        }
        if *memory != before {
            save(&self.opts, self.state_client.as_ref(), memory).await;
        }
        self.metrics.alert_failures.inc_by(failures);
        self.metrics.record_targets(&results);
        if let Some(at) = first.filter(|_| sent > 0) {
            observe(&self.metrics, at, sent);
        }
    }
}

/// A release's last result.
fn last(view: &LiveView, key: &str) -> Option<TargetResult> {
    view.targets.get(key).and_then(|w| w.last.as_ref()).map(|(r, _)| TargetResult::from_release(r))
}

/// Every result is about `cluster` (the state keeps targets per cluster; alerts name it).
fn name_cluster(results: &mut [TargetResult], cluster: &Cluster) {
    for r in results {
        r.report.cluster = cluster.name().to_string();
    }
}

/// Check one `--manifests` PATH against the cache (as a round does), recording the lists it read.
async fn check_manifests(
    cluster: &Cluster,
    view: &LiveView,
    opts: &WatchOptions,
    path: &std::path::Path,
) -> (TargetResult, BTreeSet<ListKey>) {
    let (engine, recording) = view.recording_engine();
    let options = crate::engine::manifests::ManifestsOptions {
        stdin: opts.stdin.clone(),
        ..crate::engine::manifests::ManifestsOptions::for_paths(
            vec![path.to_path_buf()],
            cluster.namespace().to_string(),
            opts.kubectl.clone(),
        )
    };
    let report = crate::engine::manifests::check_paths(
        Ok(engine),
        &options,
        None,
        &crate::engine::reconcile::Reconciler::from(cluster.target()),
        &crate::report::progress::NoProgress,
    )
    .await;
    (TargetResult::from_manifests(&path.display().to_string(), &report), recording.keys())
}

/// `sent` alerts delivered after the event received at `at`.
fn observe(metrics: &server::Metrics, at: Instant, sent: u64) {
    let seconds = at.elapsed().as_secs_f64();
    for _ in 0..sent {
        metrics.event_to_alert.observe(seconds);
    }
    tracing::info!(alerts = sent, seconds, "live: alerts delivered {seconds:.2}s after the event");
}

async fn save(opts: &WatchOptions, client: Option<&kube::Client>, memory: &state::WatchState) {
    if let Err(e) = state::save(&opts.state, client, memory).await {
        tracing::error!(error = %e, "the watch state could not be saved");
    }
}
