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

use crate::source::cluster::Cluster;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::notify::Notifier;
use super::{TargetResult, WatchError, WatchOptions, log, server, state};
use crate::engine::live::{Inbox, LiveView, TICK, Update};
use crate::report::Status;
use crate::source::helm::watch::{StorageChange, watch_storage};
use crate::source::live_cache::{Change, ListKey, LiveCache, StreamStats};

/// How long streams may be down, or storage unreadable, before it is alerted.
/// Longer than the window a stream counts as failing after its last failure, so that a short
/// API server restart is not alerted.
pub const OUTAGE_GRACE: Duration = Duration::from_secs(60);

/// Run `watch --live` until stopped.
///
/// Watch streams use the cluster's stream client, one-off requests its client.
pub async fn run(
    cluster: Cluster,
    notifier: Notifier,
    opts: WatchOptions,
    resync: Duration,
) -> Result<Status, WatchError> {
    let (client, streams) = (cluster.client().clone(), cluster.streams().clone());
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
    let state_client = matches!(opts.state, state::StateLocation::ConfigMap { .. }).then(|| client.clone());
    let mut memory = state::load(&opts.state, state_client.as_ref()).await?;
    memory.adopt_unnamed(cluster.name());
    if !notifier.enabled() {
        tracing::warn!("no --slack-webhook or --webhook: alerts are only logged");
    }
    let (storage_tx, storage_rx) = mpsc::unbounded_channel::<StorageChange>();
    // Release storage is watched when releases are (not for --manifests alone).
    // (Storage outside the cluster, SQL, has no stream: `watch --live` refuses it for releases.)
    let _storage = match (&selection, cluster.store().objects()) {
        (Some(sel), Some(objects)) => {
            let scope = if sel.all && sel.all_namespaces { None } else { Some(sel.namespace.clone()) };
            let (storage_ready_tx, storage_ready) = tokio::sync::oneshot::channel();
            let storage_task = tokio::spawn(watch_storage(
                streams.clone(),
                objects,
                scope,
                storage_tx,
                storage_ready_tx,
                stats.clone(),
                log,
            ));
            // Targets are read once the storage stream has listed, so no change falls between the two.
            let _ = storage_ready.await;
            (Some(tokio_util::task::AbortOnDropHandle::new(storage_task)), None)
        }
        // Kept open, so the inbox waits on it as on a quiet storage stream.
        _ => (None, Some(storage_tx)),
    };
    let (change_tx, change_rx) = mpsc::unbounded_channel::<Change>();
    let mut inbox = Inbox::new(change_rx, storage_rx);
    let store = cluster.store().clone();
    let mut outage_since: Option<Instant> = None;
    // The event that made the loop start a new generation, if one did.
    let mut resync_cause: Option<Instant> = None;
    loop {
        // One generation: a fresh cache (initial LISTs), every target checked, then events.
        let started = Instant::now();
        let cache = Arc::new(LiveCache::new(streams.clone(), change_tx.clone(), stats.clone()));
        let loaded = LiveView::load(&cluster, cache.clone(), selection.clone(), opts.rules.clone(), log).await;
        // `--manifests` PATH key -> the lists its last check read and its result.
        let mut manifests: BTreeMap<String, (BTreeSet<ListKey>, TargetResult)> = BTreeMap::new();
        let mut results: Vec<TargetResult> = match &loaded {
            Ok(view) => {
                let mut results: Vec<TargetResult> = view.reports().0.iter().map(TargetResult::from_release).collect();
                for path in &opts.manifests {
                    let (r, deps) = check_manifests(&cluster, view, &opts, path).await;
                    manifests.insert(r.key.clone(), (deps, r.clone()));
                    results.push(r);
                }
                results
            }
            Err(message) => vec![TargetResult::round_error(message.clone())],
        };
        name_cluster(&mut results, &cluster);
        super::note_values_changes(&store, &memory, &mut results).await;
        let status = super::round_status(&results);
        let (failures, sent) = super::deliver(&notifier, &results, &mut memory, &metrics).await;
        if let Some(at) = resync_cause.take().filter(|_| sent > 0) {
            // Alerts found by a resync that an event caused (release storage listed again, as
            // after an API server restart) count from that event too.
            observe(&metrics, at, sent);
        }
        save(&opts, state_client.as_ref(), &memory).await;
        super::record_round(&metrics, started, status, failures, &results);
        tracing::info!(
            cluster = cluster.name(),
            duration_ms = crate::app::log::millis(started),
            targets = results.len(),
            lists = cache.watched(),
            objects = cache.objects(),
            outcome = %status.name(),
            "live: every target checked"
        );
        let Ok(mut view) = loaded else {
            // Discovery or storage failed: try again shortly (as a round would next interval).
            tokio::select! {
                _ = tokio::time::sleep(TICK * 2) => continue,
                _ = super::shutdown_signal() => return Ok(status),
            }
        };
        let last = |view: &LiveView, key: &str| {
            view.targets.get(key).and_then(|w| w.last.as_ref()).map(|(r, _)| TargetResult::from_release(r))
        };
        let paths: BTreeMap<String, &std::path::PathBuf> =
            opts.manifests.iter().map(|p| (format!("manifests/{}", p.display()), p)).collect();
        let mut undelivered: BTreeSet<String> = BTreeSet::new();
        let deadline = tokio::time::Instant::now() + resync;
        enum Stop {
            Resync,
            Shutdown,
        }
        loop {
            let stop = async {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => Stop::Resync,
                    _ = super::shutdown_signal() => Stop::Shutdown,
                }
            };
            let batch = match inbox.next(stop).await {
                Ok(b) => b,
                Err(Stop::Resync) => {
                    log("live: periodic full resync");
                    break;
                }
                Err(Stop::Shutdown) => {
                    log("stopping");
                    let releases = view.targets.values().filter_map(|w| w.last.as_ref()).map(|(r, _)| r.status);
                    return Ok(Status::worst(releases.chain(manifests.values().map(|(_, r)| r.report.status))));
                }
            };
            if batch.all_storage {
                log("live: release storage listed again; resyncing");
                resync_cause = batch.first;
                break;
            }
            let (first, ticked) = (batch.first, batch.tick);
            let mut checked: BTreeSet<String> = BTreeSet::new();
            let mut results: Vec<TargetResult> = Vec::new();
            for u in view.apply(&batch).await {
                match u {
                    Update::Checked(key) => {
                        results.extend(last(&view, &key));
                        checked.insert(key);
                    }
                    Update::Gone { key, .. } => {
                        memory.remove(cluster.name(), &key);
                        metrics.forget(cluster.name(), &key);
                    }
                }
            }
            // Manifests targets whose lists changed (their files are read again too).
            for (key, (deps, last)) in manifests.iter_mut() {
                if let Some(path) = paths.get(key)
                    && deps.iter().any(|k| batch.changed.contains(k))
                {
                    let (r, d) = check_manifests(&cluster, &view, &opts, path).await;
                    (*deps, *last) = (d, r.clone());
                    results.push(r);
                    checked.insert(key.clone());
                }
            }
            if ticked {
                // Retry what could not be delivered.
                for key in std::mem::take(&mut undelivered) {
                    if !checked.contains(&key) {
                        results.extend(last(&view, &key).or_else(|| manifests.get(&key).map(|(_, r)| r.clone())));
                    }
                }
                // A long outage is an error for the whole watch; its end clears it (as rounds do).
                let down = stats.failing() > 0 || view.storage_unreadable();
                match (down, outage_since) {
                    (true, None) => outage_since = Some(Instant::now()),
                    (false, Some(_)) => {
                        outage_since = None;
                        if memory.remove(cluster.name(), "cluster").is_some() {
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
            name_cluster(&mut results, &cluster);
            super::note_values_changes(&store, &memory, &mut results).await;
            let before = memory.clone();
            let (failures, sent) = super::deliver_targets(&notifier, &results, &mut memory, &metrics).await;
            for r in &results {
                if memory.get(&r.report.cluster, &r.key) != before.get(&r.report.cluster, &r.key) || failures == 0 {
                    undelivered.remove(&r.key);
                }
            }
            if failures > 0 {
                // Which targets failed: those whose memory did not advance although they had alerts.
                for r in &results {
                    let (events, _) = super::decide(memory.get(&r.report.cluster, &r.key), r);
                    if !events.is_empty() {
                        undelivered.insert(r.key.clone());
                    }
                }
            }
            if memory != before {
                save(&opts, state_client.as_ref(), &memory).await;
            }
            metrics.alert_failures.inc_by(failures);
            metrics.record_targets(&results);
            if let Some(at) = first.filter(|_| sent > 0) {
                observe(&metrics, at, sent);
            }
        }
    }
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
