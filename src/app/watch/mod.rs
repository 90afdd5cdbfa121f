//! `kubectl drift watch`: scheduled checks that alert only on new drift.
//!
//! Each round runs the release check (the same engine as `kubectl drift release`), turns every
//! watched target into a [`TargetResult`], and [`decide`]s against the remembered state what to
//! post: new or changed drift once, one "resolved" when it is gone, errors once, and a note when
//! a release's values changed. A target's state advances only when its alerts were delivered, so
//! an alert is never lost: a failed post is retried next round.

pub mod error;
pub mod live;
pub mod notify;
pub mod server;
pub mod signature;
pub mod state;

use crate::engine::drift::ReleaseSelection;
use crate::source::cluster::Cluster;
use futures::StreamExt;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Instrument;

use crate::report::{Origin, ReleaseReport, Status, TargetReport};
use error::WatchError;
use notify::{Event, EventKind, Notifier};
use state::{TargetState, WatchState};

/// One watched target's result in a round: its report, and what only the watcher needs.
#[derive(Debug, Clone)]
pub struct TargetResult {
    /// What was found (the cluster it is about is set: the state keeps targets per cluster).
    pub report: TargetReport,
    /// State key: `release/NS/NAME`, `manifests/PATH`, or `cluster` for round-level errors.
    pub key: String,
    /// The revision remembered from the last round when its values differ from this one's (a
    /// values change, not only a chart change), found by [`note_values_changes`].
    pub values_changed_since: Option<u32>,
    /// What the drift history says of its open findings (since when, and a finding that came
    /// back: someone fighting the controller), added to its drift alert; empty without `--history`.
    pub history: Vec<String>,
    /// When its oldest open finding's episode started (the history's gauge); `None` without
    /// `--history` or open findings.
    pub drift_since: Option<i64>,
}

impl TargetResult {
    /// The result of `report`, keyed by what it is about.
    pub fn new(report: TargetReport) -> TargetResult {
        let key = match &report.origin {
            Origin::Release(r) => format!("release/{}/{}", r.namespace, r.name),
            Origin::File(f) if f.gitops.is_some() => format!("{}/{}", report.origin.kind(), f.path),
            Origin::File(crate::report::FileOrigin { path, .. }) | Origin::Manifests { path } => {
                format!("manifests/{path}")
            }
            Origin::Extra(e) => format!("extra/{}", e.selectors.join(",")),
            Origin::Cluster => "cluster".into(),
        };
        TargetResult { report, key, values_changed_since: None, history: Vec::new(), drift_since: None }
    }

    pub fn from_release(r: &ReleaseReport) -> TargetResult {
        TargetResult::new(r.to_any())
    }

    /// One watched manifests PATH: all its files together.
    pub fn from_manifests(path: &str, report: &crate::report::ManifestsReport) -> TargetResult {
        TargetResult::new(report.as_one_target(path))
    }

    /// A round that could not even list what to check (API down, forbidden).
    pub fn round_error(message: String) -> TargetResult {
        TargetResult::new(TargetReport::failed(Origin::Cluster, message))
    }

    /// The release it is about, if it is one.
    fn release(&self) -> Option<&crate::report::ReleaseOrigin> {
        self.report.origin.release()
    }

    /// `cluster NAME: ` for log lines (nothing when the cluster has no name).
    fn log_cluster(&self) -> String {
        let cluster = &self.report.cluster;
        if cluster.is_empty() { String::new() } else { format!("cluster {cluster}: ") }
    }

    /// `release NS/NAME`, `manifests PATH`, ...: the target as log lines name it.
    fn log_name(&self) -> String {
        format!("{} {}", self.report.origin.kind(), self.key.trim_start_matches("release/"))
    }

    /// The span of one alert's delivery, with the fields an operator filters on: the alert's
    /// kind, the cluster, what it is about (`release`, `manifests`, ...), the namespace, and the
    /// release or the manifests path.
    fn alert_span(&self, event: &Event) -> tracing::Span {
        let span = tracing::info_span!(
            "alert",
            kind = %event.kind.name(),
            cluster = %self.report.cluster,
            about = %self.report.origin.kind(),
            namespace = self.report.origin.namespace(),
            release = tracing::field::Empty,
            path = tracing::field::Empty,
        );
        match &self.report.origin {
            Origin::Release(r) => {
                span.record("release", r.name.as_str());
            }
            Origin::File(crate::report::FileOrigin { path, .. }) | Origin::Manifests { path } => {
                span.record("path", path.as_str());
            }
            Origin::Extra(_) | Origin::Cluster => {}
        }
        span
    }

    /// `STATUS@REVISION` while a release's last Helm operation has not completed (failed or
    /// pending), else `None`: what the watcher remembers to alert once on entering and leaving.
    fn incomplete_key(&self) -> Option<String> {
        let release = self.release()?;
        let status = release.helm_status.as_deref()?;
        (!crate::source::helm::storage::is_settled(status))
            .then(|| format!("{status}@{}", release.latest_revision.unwrap_or_default()))
    }

    /// The alert for a change of Helm state: entering a failed or pending state (or another
    /// one), or leaving it (`was` is the remembered `STATUS@REVISION`).
    fn status_event(&self, was: Option<&str>) -> Event {
        let release = self.release().cloned().unwrap_or_default();
        let status = release.helm_status.clone().unwrap_or_default();
        let latest = release.latest_revision.unwrap_or_default();
        let mut notes = Vec::new();
        let mut event = self.event(EventKind::Status, Vec::new());
        event.revision = release.latest_revision;
        if self.incomplete_key().is_some() {
            let desc = release.helm_description.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
            notes.push(format!("revision {latest} is {status}{desc}"));
            let from_newer = self
                .report
                .objects
                .iter()
                .filter(|o| o.from_revision.is_some() || o.fields.iter().any(|f| f.from_revision.is_some()))
                .count();
            match self.report.origin.revision().filter(|r| *r != latest) {
                Some(r) => notes.push(format!(
                    "deployed revision {r} is still the desired state; {from_newer} object(s) hold what revision {latest} applied"
                )),
                None => notes.push("no revision of this release was ever deployed".to_string()),
            }
            event.reconcile = self.report.reconcile.clone();
        } else {
            let (was_status, was_rev) = was.and_then(|w| w.split_once('@')).unwrap_or(("incomplete", "?"));
            notes
                .push(format!("the release is {status} at revision {latest} (was {was_status} at revision {was_rev})"));
        }
        event.notes = notes;
        event
    }

    fn event(&self, kind: EventKind, notes: Vec<String>) -> Event {
        Event::new(kind, &self.report, notes)
    }
}

/// What to post for one target, and the state to keep once it is posted.
pub fn decide(prev: Option<&TargetState>, cur: &TargetResult) -> (Vec<Event>, TargetState) {
    let mut next = prev.cloned().unwrap_or_default();
    let mut notes = Vec::new();
    let status = cur.report.status;
    let revision = cur.report.origin.revision();
    if status != Status::Error {
        if let (Some(r0), Some(r1)) = (cur.values_changed_since, revision)
            && prev.and_then(|p| p.revision) == Some(r0)
            && r0 != r1
        {
            notes.push(format!(
                "values changed since the last check (revision {r0} → {r1}): a helm upgrade or --set, not drift"
            ));
        }
        next.revision = revision;
    }
    let mut events = Vec::new();
    // Helm's state: one alert on entering a failed or pending state, one on leaving it. An
    // error round says nothing about it.
    if status != Status::Error {
        let was = prev.and_then(|p| p.incomplete.clone());
        let now = cur.incomplete_key();
        if was != now && (now.is_some() || was.is_some()) {
            events.push(cur.status_event(was.as_deref()));
        }
        next.incomplete = now;
    }
    match status {
        Status::Error => {
            let sig = signature::error_signature(&cur.report.error().unwrap_or_default());
            if prev.and_then(|p| p.error.as_ref()) != Some(&sig) {
                events.push(cur.event(EventKind::Error, notes));
            }
            // An error says nothing about drift: the drift memory is kept as it was.
            next.error = Some(sig);
        }
        Status::Drifted => {
            let sig = signature::drift_signature(&cur.report.objects);
            if prev.and_then(|p| p.drift.as_ref()) != Some(&sig) {
                notes.extend(cur.history.iter().cloned());
                events.push(cur.event(EventKind::Drift, notes));
            } else if !notes.is_empty() {
                events.push(cur.event(EventKind::Info, notes));
            }
            next.drift = Some(sig);
            next.error = None;
        }
        Status::Clean | Status::Incomplete => {
            if prev.is_some_and(|p| p.drift.is_some() || p.error.is_some()) {
                if status == Status::Incomplete {
                    notes.push(format!(
                        "no drift by hand is left; the release is still {}",
                        cur.release().and_then(|r| r.helm_status.as_deref()).unwrap_or("incomplete")
                    ));
                }
                events.push(cur.event(EventKind::Resolved, notes));
            } else if !notes.is_empty() {
                events.push(cur.event(EventKind::Info, notes));
            }
            next.drift = None;
            next.error = None;
        }
    }
    (events, next)
}

/// Parse `30m`, `1h30m`, `45s`, `2d`, `500ms` ([`crate::report::duration::Span`], the one parser).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    crate::report::duration::Span::parse(s).map(|d| d.as_duration()).map_err(|e| e.to_string())
}

/// Settings of a watch run.
pub struct WatchOptions {
    /// Releases to check (None: only manifests are watched).
    pub selection: Option<crate::engine::drift::ReleaseSelection>,
    /// Manifests paths to check, each its own target.
    pub manifests: Vec<std::path::PathBuf>,
    /// Flux Kustomizations and Argo CD Applications to check, each object its own target (the
    /// selection's namespace is set per cluster).
    pub gitops: Vec<(crate::engine::gitops::GitOpsKind, crate::engine::gitops::GitOpsSelection)>,
    pub rules: Vec<crate::engine::compare::rules::IgnoreRule>,
    pub interval: Option<Duration>,
    pub state: state::StateLocation,
    pub listen: Option<std::net::SocketAddr>,
    /// What a `--manifests -` reads: standard input, read once at the start.
    pub stdin: Option<crate::source::manifest_files::Stdin>,
    /// `--cluster-name` and `--external-url`, for /metrics.
    pub identity: crate::app::metrics::Identity,
    /// The kubectl that renders kustomizations in manifests folders.
    pub kubectl: std::path::PathBuf,
    /// `--history`: where to keep the drift history, and its retention.
    pub history: Option<(crate::source::history::HistoryLocation, Duration)>,
}

/// A log line of the watch (also given as `fn(&str)` to the live parts below `app`): a line
/// starting with `error: ` is logged at error level, the others at info.
fn log(msg: &str) {
    match msg.strip_prefix("error: ") {
        Some(error) => tracing::error!("{error}"),
        None => tracing::info!("{msg}"),
    }
}

/// One watched cluster: built, or why it could not be (its rounds then report that error).
pub type Watched = (String, Result<Cluster, String>);

/// Run rounds until stopped (or once) over every cluster, at most `parallel` at once. Returns the
/// last round's status for `--once`. ConfigMap state lives in the first cluster.
pub async fn run(
    clusters: Vec<Watched>,
    parallel: usize,
    notifier: Notifier,
    opts: WatchOptions,
) -> Result<Status, WatchError> {
    let metrics = Arc::new(server::Metrics::new(&opts.identity, clusters.len() > 1, None));
    if let Some(addr) = opts.listen {
        let bound = server::serve(addr, metrics.clone()).await.map_err(|source| WatchError::Listen { addr, source })?;
        tracing::info!(address = %bound, "serving /healthz, /readyz and /metrics on http://{bound}");
    }
    let state_client = match (&opts.state, clusters.first()) {
        (state::StateLocation::ConfigMap { .. }, Some((name, Err(e)))) => {
            return Err(WatchError::StateCluster { cluster: name.clone(), message: e.clone() });
        }
        (state::StateLocation::ConfigMap { .. }, Some((_, Ok(c)))) => Some(c.client().clone()),
        _ => None,
    };
    let mut memory = state::load(&opts.state, state_client.as_ref()).await?;
    if let Some((first, _)) = clusters.first() {
        memory.adopt_unnamed(first);
    }
    let mut history = open_history(&opts).await?;
    if !notifier.enabled() {
        tracing::warn!("no --slack-webhook or --webhook: alerts are only logged");
    }
    let mut round: u64 = 0;
    loop {
        round += 1;
        let span = tracing::info_span!("round", round, clusters = clusters.len());
        let started = Instant::now();
        let rounds = futures::stream::iter(clusters.iter().map(|(name, cluster)| {
            let (opts, memory) = (&opts, &memory);
            async move {
                let mut results = match cluster {
                    Ok(cluster) => round_results(&cluster.fresh(), opts).await,
                    Err(e) => vec![TargetResult::round_error(e.clone())],
                };
                // Named before the state is read for them: it is kept per cluster.
                for r in &mut results {
                    r.report.cluster = name.clone();
                }
                if let Ok(cluster) = cluster {
                    note_values_changes(cluster.store(), memory, &mut results).await;
                }
                results
            }
        }));
        let results: Vec<TargetResult> = rounds
            .buffered(parallel.max(1))
            .collect::<Vec<_>>()
            .instrument(span.clone())
            .await
            .into_iter()
            .flatten()
            .collect();
        // The history first (its "since" and episodes are the alerts' notes); a failure to write
        // it is logged and fails the round, and the alerts still go out.
        let mut results = results;
        let history_failed = record_history(&mut history, &mut results).await;
        let (status, failures) = async {
            let status = round_status(&results);
            let (failures, _) = deliver(&notifier, &results, &mut memory, &metrics).await;
            if let Err(e) = state::save(&opts.state, state_client.as_ref(), &memory).await {
                tracing::error!(error = %e, "the watch state could not be saved");
            }
            tracing::info!(
                duration_ms = crate::app::log::millis(started),
                targets = results.len(),
                drifted = results.iter().filter(|r| r.report.status == Status::Drifted).count(),
                errors = results.iter().filter(|r| r.report.status == Status::Error).count(),
                undelivered = failures,
                outcome = %status.name(),
                "round finished"
            );
            // After its line: whoever sees /readyz answer can read the round's line.
            record_round(&metrics, started, status, failures, &results);
            (status, failures)
        }
        .instrument(span)
        .await;
        let Some(interval) = opts.interval else {
            return Ok(if failures > 0 || history_failed { Status::Error } else { status });
        };
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown_signal() => {
                log("stopping");
                return Ok(status);
            }
        }
    }
}

/// Open `--history` to write, if given (the errors no retry mends stop the watch).
async fn open_history(opts: &WatchOptions) -> Result<Option<crate::app::recorder::Recorder>, WatchError> {
    match &opts.history {
        Some((location, retention)) => {
            Ok(Some(crate::app::recorder::Recorder::open(location.clone(), *retention).await?))
        }
        None => Ok(None),
    }
}

/// Record the results in the history, if one is kept, and note on each what it says; `true` when
/// it could not be written.
async fn record_history(history: &mut Option<crate::app::recorder::Recorder>, results: &mut [TargetResult]) -> bool {
    let Some(h) = history else { return false };
    match h.record(results.iter().map(|r| &r.report)).await {
        Ok(recorded) => {
            let now = crate::report::duration::now();
            for r in results.iter_mut() {
                r.history = history_notes(&r.report, &recorded, now);
                r.drift_since = crate::app::recorder::oldest_open(&r.report, &recorded);
            }
            false
        }
        Err(_) => true,
    }
}

/// The history's notes on one target: since when its oldest open finding is drifted, and each
/// finding that came back this round (episode 2 or more).
fn history_notes(
    report: &crate::report::TargetReport,
    recorded: &crate::engine::history::Recorded,
    now: i64,
) -> Vec<String> {
    use crate::report::history::elapsed;
    let open = crate::app::recorder::open_of(report, recorded);
    let mut notes = Vec::new();
    if let Some(oldest) = open.iter().min_by_key(|f| f.since) {
        let by = oldest.manager.as_deref().map(|m| format!(", by {m}")).unwrap_or_default();
        notes.push(format!(
            "drifted since {} ({}){by}",
            crate::report::duration::rfc3339_utc(oldest.since),
            elapsed(now - oldest.since)
        ));
    }
    for f in open.iter().filter(|f| recorded.reopened.contains(&f.key)) {
        let o = &f.key.object;
        let ns = o.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default();
        let path = if f.key.path.is_empty() { String::new() } else { format!(" {}", f.key.path) };
        notes.push(format!(
            "flapping: {} {ns}{}{path} is back (episode {}): someone is fighting the controller",
            o.kind, o.name, f.episodes
        ));
    }
    notes
}

/// Count a round (all targets checked) in the metrics.
fn record_round(metrics: &server::Metrics, started: Instant, status: Status, failures: u64, results: &[TargetResult]) {
    metrics.alert_failures.inc_by(failures);
    metrics.record_round(started.elapsed().as_secs_f64(), status, results);
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn round_status(results: &[TargetResult]) -> Status {
    Status::worst(results.iter().map(|r| r.report.status))
}

/// Find which releases' values changed since the revision remembered in `memory`. The state
/// keeps revision numbers only, nothing derived from values (a digest of the values, Secrets
/// included, would let whoever reads the state check guessed values offline): when a release's
/// revision differs from the remembered one, that revision is read again from Helm's storage (one
/// read by its `name`/`version` labels, once per upgrade) and its values compared in memory
/// with this revision's. A remembered revision Helm no longer keeps (`--history-max`), or one
/// that cannot be read, gives no note. docs/drift.md "Watch state".
pub async fn note_values_changes(
    store: &crate::source::helm::ReleaseStore,
    memory: &WatchState,
    results: &mut [TargetResult],
) {
    for r in results.iter_mut().filter(|r| r.report.status != Status::Error) {
        let Some(release) = r.release().cloned() else { continue };
        let (Some(r1), Some(v1)) = (r.report.origin.revision(), release.values_digest.as_deref()) else {
            continue;
        };
        let Some(r0) = memory.get(&r.report.cluster, &r.key).and_then(|p| p.revision).filter(|r0| *r0 != r1) else {
            continue;
        };
        if let Ok(stored) = store.get(&release.namespace, &release.name, Some(r0)).await
            && let Ok(release) = stored.release.decode()
            && crate::engine::drift::values_digest(&release) != v1
        {
            r.values_changed_since = Some(r0);
        }
    }
}

/// Run the checks of one round.
/// Run the checks of one round on `cluster` (fresh for the round: discovery once, one LIST cache,
/// for releases and manifests).
async fn round_results(cluster: &Cluster, opts: &WatchOptions) -> Vec<TargetResult> {
    let mut out = Vec::new();
    if let Some(selection) = &opts.selection {
        let selection = ReleaseSelection { namespace: cluster.namespace().to_string(), ..selection.clone() };
        match crate::engine::drift::check_releases(
            cluster,
            &selection,
            opts.rules.clone(),
            false,
            &crate::report::progress::NoProgress,
        )
        .await
        {
            Ok(report) => out.extend(report.releases.iter().map(TargetResult::from_release)),
            Err(e) => out.push(TargetResult::round_error(e.to_string())),
        }
    }
    if !opts.manifests.is_empty() {
        let reconciler = crate::engine::reconcile::Reconciler::from(cluster.target());
        match crate::engine::drift::Engine::connect(cluster, opts.rules.clone(), false).await {
            Ok(engine) => {
                for path in &opts.manifests {
                    let options = crate::engine::manifests::ManifestsOptions {
                        stdin: opts.stdin.clone(),
                        ..crate::engine::manifests::ManifestsOptions::for_paths(
                            vec![path.clone()],
                            cluster.namespace().to_string(),
                            opts.kubectl.clone(),
                        )
                    };
                    let report = crate::engine::manifests::check_paths(
                        Ok(engine.clone_shared()),
                        &options,
                        None,
                        &reconciler,
                        &crate::report::progress::NoProgress,
                    )
                    .await;
                    out.push(TargetResult::from_manifests(&path.display().to_string(), &report));
                }
            }
            Err(e) => out.push(TargetResult::round_error(e.to_string())),
        }
    }
    for (kind, selection) in &opts.gitops {
        let selection =
            crate::engine::gitops::GitOpsSelection { namespace: cluster.namespace().to_string(), ..selection.clone() };
        match crate::engine::gitops::check(
            cluster,
            *kind,
            &selection,
            opts.rules.clone(),
            false,
            &crate::report::progress::NoProgress,
        )
        .await
        {
            Ok(report) => out.extend(report.files.iter().map(|f| TargetResult::new(f.to_any()))),
            Err(e) => out.push(TargetResult::round_error(e.to_string())),
        }
    }
    out
}

/// Post what each target needs; advance a target's memory only when all its posts succeeded.
/// Returns the number of undelivered alerts.
async fn deliver(
    notifier: &Notifier,
    results: &[TargetResult],
    memory: &mut WatchState,
    metrics: &server::Metrics,
) -> (u64, u64) {
    let (failures, sent) = deliver_targets(notifier, results, memory, metrics).await;
    let clusters: BTreeSet<&str> = results.iter().map(|r| r.report.cluster.as_str()).collect();
    for cluster in clusters {
        let of_cluster = || results.iter().filter(move |r| r.report.cluster == cluster);
        let seen: BTreeSet<&str> = of_cluster().map(|r| r.key.as_str()).collect();
        // Targets no longer listed (an uninstalled release) are forgotten, unless the cluster's
        // round failed and could not list them at all. A round that works again clears the
        // round-level error.
        if !of_cluster().any(|r| r.key == "cluster") {
            memory.retain(cluster, |k| seen.contains(k) || k.starts_with("manifests/"));
        }
    }
    (failures, sent)
}

/// Post what each of `results` needs and advance each target's memory once its posts
/// succeeded (the other targets' memory is left alone). Returns (undelivered alerts, delivered
/// alerts).
async fn deliver_targets(
    notifier: &Notifier,
    results: &[TargetResult],
    memory: &mut WatchState,
    metrics: &server::Metrics,
) -> (u64, u64) {
    let mut failures = 0;
    let mut sent = 0;
    for r in results {
        // Every round says what failed, not only the round that first alerts it.
        if let Some(err) = r.report.error() {
            tracing::error!(cluster = %r.report.cluster, "{}{}: {err}", r.log_cluster(), r.log_name());
        }
        for o in r.report.objects.iter().filter(|o| o.error.is_some()) {
            tracing::error!(cluster = %r.report.cluster, "{}: {}", o.title(), o.error.as_deref().unwrap_or_default());
        }
        let (events, next) = decide(memory.get(&r.report.cluster, &r.key), r);
        let mut delivered = true;
        for e in &events {
            let started = Instant::now();
            let span = r.alert_span(e);
            let kind = e.kind.name();
            let what = format!("{kind} alert for {}{}", r.log_cluster(), r.log_name());
            // Inside the span (entered, not only named as parent: JSON lists the entered ones).
            if !notifier.enabled() {
                span.in_scope(|| tracing::info!(outcome = "logged", "{what}"));
            }
            if notifier.enabled() {
                let posted = async {
                    let posted = notifier.send(e).await;
                    let duration_ms = crate::app::log::millis(started);
                    match &posted {
                        Ok(()) => tracing::info!(outcome = "delivered", duration_ms, "{what} delivered"),
                        Err(err) => tracing::error!(
                            outcome = "failed",
                            duration_ms,
                            error = %err,
                            "{what} not delivered (retried next round)"
                        ),
                    }
                    posted
                }
                .instrument(span)
                .await;
                match posted {
                    Ok(()) => {
                        sent += 1;
                        metrics.alert_sent(&format!("{:?}", e.kind).to_lowercase());
                    }
                    Err(_) => {
                        failures += 1;
                        delivered = false;
                        break;
                    }
                }
            }
        }
        if delivered {
            memory.insert(&r.report.cluster, r.key.clone(), next);
        }
    }
    (failures, sent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{ObjectReport, ObjectState, ReleaseOrigin};

    fn result(status: Status, revision: u32, values: &str, drift_name: &str) -> TargetResult {
        let objects = if status == Status::Drifted {
            vec![ObjectReport::new("v1", "ConfigMap", Some("shop".into()), drift_name, ObjectState::Missing)]
        } else {
            vec![]
        };
        let origin = ReleaseOrigin {
            name: "shop".into(),
            namespace: "shop".into(),
            revision,
            helm_status: Some("deployed".into()),
            latest_revision: Some(revision),
            values_digest: Some(values.into()),
            ..ReleaseOrigin::default()
        };
        let mut report = TargetReport { objects, ..TargetReport::new(Origin::Release(origin), status) };
        report.cluster = "prod".into();
        if status == Status::Error {
            report.problem = Some(crate::report::Problem::failed("API down"));
        }
        TargetResult::new(report)
    }

    /// The release a test result is about.
    fn release(r: &mut TargetResult) -> &mut ReleaseOrigin {
        match &mut r.report.origin {
            Origin::Release(release) => release,
            _ => unreachable!("test results are releases"),
        }
    }

    fn kinds(events: &[Event]) -> Vec<EventKind> {
        events.iter().map(|e| e.kind).collect()
    }

    #[test]
    fn alerts_once_then_resolves() {
        let (e, s1) = decide(None, &result(Status::Drifted, 1, "v", "a"));
        assert_eq!(kinds(&e), vec![EventKind::Drift]);
        let (e, s2) = decide(Some(&s1), &result(Status::Drifted, 1, "v", "a"));
        assert!(e.is_empty(), "unchanged drift stays quiet");
        let (e, s3) = decide(Some(&s2), &result(Status::Drifted, 1, "v", "b"));
        assert_eq!(kinds(&e), vec![EventKind::Drift], "changed drift alerts again");
        let (e, s4) = decide(Some(&s3), &result(Status::Clean, 1, "v", ""));
        assert_eq!(kinds(&e), vec![EventKind::Resolved]);
        let (e, _) = decide(Some(&s4), &result(Status::Clean, 1, "v", ""));
        assert!(e.is_empty());
    }

    #[test]
    fn errors_alert_once_and_never_resolve_drift() {
        let (_, s1) = decide(None, &result(Status::Drifted, 1, "v", "a"));
        let (e, s2) = decide(Some(&s1), &result(Status::Error, 1, "v", ""));
        assert_eq!(kinds(&e), vec![EventKind::Error]);
        assert_eq!(s2.drift, s1.drift, "an error keeps the drift memory");
        let (e, s3) = decide(Some(&s2), &result(Status::Error, 1, "v", ""));
        assert!(e.is_empty(), "the same error alerts once");
        let (e, _) = decide(Some(&s3), &result(Status::Drifted, 1, "v", "a"));
        assert!(e.is_empty(), "the same drift after an error is not new");
    }

    #[test]
    fn values_change_is_information_not_drift() {
        let (_, s1) = decide(None, &result(Status::Clean, 1, "v1", ""));
        // note_values_changes found revision 1's values differ from revision 2's.
        let upgraded = TargetResult { values_changed_since: Some(1), ..result(Status::Clean, 2, "v2", "") };
        let (e, s2) = decide(Some(&s1), &upgraded);
        assert_eq!(kinds(&e), vec![EventKind::Info]);
        assert!(e[0].notes[0].contains("revision 1 → 2"));
        // A chart-only upgrade (same values) says nothing.
        let (e, s3) = decide(Some(&s2), &result(Status::Clean, 3, "v2", ""));
        assert!(e.is_empty());
        // Nothing derived from the values is kept, only the revision.
        let mut saved = WatchState::default();
        saved.insert("prod", "k".to_string(), s3);
        let saved = serde_json::to_string(&saved).unwrap();
        assert!(!saved.contains("v2") && !saved.contains("\"values\""), "{saved}");
        // A comparison with another revision than the remembered one is not this change.
        let (e, _) =
            decide(Some(&s1), &TargetResult { values_changed_since: Some(7), ..result(Status::Clean, 2, "v2", "") });
        assert!(e.is_empty());
    }

    #[test]
    fn state_with_a_values_digest_is_read_without_losing_alert_memory() {
        // As written by earlier versions: `values` held a 64-bit digest of the Helm values.
        let drifted = result(Status::Drifted, 4, "v", "a");
        let sig = signature::drift_signature(&drifted.report.objects);
        let old = format!(
            r#"{{"version":1,"targets":{{"release/shop/shop":{{"drift":"{sig}","error":null,
            "revision":4,"values":"89abcdef01234567"}}}}}}"#
        );
        let mut state: WatchState = serde_json::from_str(&old).unwrap();
        state.adopt_unnamed("prod");
        let t = state.get("prod", "release/shop/shop").unwrap();
        assert_eq!((t.drift.as_deref(), t.revision), (Some(sig.as_str()), Some(4)));
        // The drift alerted before stays quiet; the digest is not written again.
        let (e, next) = decide(Some(t), &drifted);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(next.drift.as_deref(), Some(sig.as_str()));
        let mut saved = WatchState::default();
        saved.insert("prod", "k".to_string(), next);
        let saved = serde_json::to_string(&saved).unwrap();
        assert!(!saved.contains("89abcdef01234567") && !saved.contains("\"values\""), "{saved}");
    }

    /// A release whose upgrade to revision 2 failed: the image is what revision 2 applied;
    /// `hand` adds a field changed by hand on top.
    fn failed_upgrade(status: &str, hand: bool) -> TargetResult {
        let field = |path: &str, from: Option<u32>| crate::report::FieldReport {
            history: None,
            path: path.parse().unwrap(),
            change: crate::report::field::Change::Changed,
            desired: Some(serde_json::json!("a")),
            live: Some(serde_json::json!("b")),
            manager: Some("helm".into()),
            time: None,
            reason: None,
            from_revision: from,
            admission: None,
        };
        let mut fields = vec![field("spec.template.spec.containers[name=web].image", Some(2))];
        if hand {
            fields.push(field("spec.template.spec.containers[name=web].env[name=LOG_LEVEL].value", None));
        }
        let mut r = result(Status::Clean, 1, "v", "");
        r.report.status = if hand { Status::Drifted } else { Status::Incomplete };
        release(&mut r).helm_status = Some(status.into());
        release(&mut r).latest_revision = Some(2);
        release(&mut r).helm_description = Some("Upgrade \"shop\" failed: context deadline exceeded".into());
        r.report.reconcile = vec!["helm rollback shop 1 -n shop".into()];
        r.report.objects = vec![ObjectReport {
            fields,
            ..ObjectReport::new("apps/v1", "Deployment", Some("shop".into()), "web", ObjectState::Changed)
        }];
        r
    }

    #[test]
    fn a_failed_release_alerts_once_on_entering_and_once_on_leaving() {
        let (e, s1) = decide(None, &failed_upgrade("failed", false));
        assert_eq!(kinds(&e), vec![EventKind::Status], "what the failed upgrade applied is not drift by hand");
        assert_eq!(e[0].helm_status.as_deref(), Some("failed"));
        assert_eq!(e[0].revision, Some(2));
        assert!(e[0].notes[0].contains("revision 2 is failed: Upgrade"), "{:?}", e[0].notes);
        assert!(
            e[0].notes[1].contains("deployed revision 1 is still the desired state; 1 object(s)"),
            "{:?}",
            e[0].notes
        );
        assert_eq!(e[0].reconcile, vec!["helm rollback shop 1 -n shop".to_string()]);
        assert_eq!(s1.incomplete.as_deref(), Some("failed@2"));
        let (e, s2) = decide(Some(&s1), &failed_upgrade("failed", false));
        assert!(e.is_empty(), "still failed: quiet");
        // A hand edit on top is drift, alerted as such, with only the hand-made field.
        let (e, s3) = decide(Some(&s2), &failed_upgrade("failed", true));
        assert_eq!(kinds(&e), vec![EventKind::Drift]);
        assert_eq!(e[0].objects[0].fields.len(), 1);
        assert!(e[0].objects[0].fields[0].path.to_string().contains("LOG_LEVEL"));
        // The hand edit undone: resolved, and the release is still failed.
        let (e, s4) = decide(Some(&s3), &failed_upgrade("failed", false));
        assert_eq!(kinds(&e), vec![EventKind::Resolved]);
        assert!(e[0].notes.iter().any(|n| n.contains("still failed")), "{:?}", e[0].notes);
        // Rolled back: revision 3 deployed and clean. One status alert, then quiet.
        let mut back = result(Status::Clean, 3, "v", "");
        release(&mut back).latest_revision = Some(3);
        let (e, s5) = decide(Some(&s4), &back);
        assert_eq!(kinds(&e), vec![EventKind::Status]);
        assert_eq!(e[0].helm_status.as_deref(), Some("deployed"));
        assert!(e[0].notes[0].contains("deployed at revision 3 (was failed at revision 2)"), "{:?}", e[0].notes);
        assert_eq!(s5.incomplete, None);
        let (e, _) = decide(Some(&s5), &back);
        assert!(e.is_empty());
    }

    #[test]
    fn another_incomplete_state_alerts_again_and_errors_do_not_touch_it() {
        let (_, s1) = decide(None, &failed_upgrade("pending-upgrade", false));
        assert_eq!(s1.incomplete.as_deref(), Some("pending-upgrade@2"));
        let mut err = result(Status::Error, 1, "v", "");
        release(&mut err).helm_status = None;
        let (e, s2) = decide(Some(&s1), &err);
        assert_eq!(kinds(&e), vec![EventKind::Error]);
        assert_eq!(s2.incomplete, s1.incomplete, "an error round keeps the Helm state memory");
        let (e, _) = decide(Some(&s2), &failed_upgrade("failed", false));
        // The state changed (one status alert) and the check works again (the error is resolved).
        assert_eq!(kinds(&e), vec![EventKind::Status, EventKind::Resolved], "pending-upgrade became failed");
    }

    #[test]
    fn huge_durations_are_errors_not_overflow_panics() {
        // Found by the fuzzer (tests/fuzz): `n * 60` and the sum overflowed and panicked.
        assert!(parse_duration("999999999999999999m").is_err());
        assert!(parse_duration("18446744073709551615d").is_err());
        assert!(parse_duration("18446744073709551615s18446744073709551615s").is_err());
        assert!(parse_duration("99999999999999999999s").is_err(), "more than u64");
        assert_eq!(parse_duration("18446744073709551615s").unwrap(), Duration::from_secs(u64::MAX));
    }
}
