//! `kubectl drift watch`: scheduled checks that alert only on new drift.
//!
//! Each round runs the release check (the same engine as `kubectl drift release`), turns every
//! watched target into a [`TargetResult`], and [`decide`]s against the remembered state what to
//! post: new or changed drift once, one "resolved" when it is gone, errors once, and a note when
//! a release's values changed. A target's state advances only when its alerts were delivered, so
//! an alert is never lost: a failed post is retried next round.

pub mod notify;
pub mod server;
pub mod signature;
pub mod state;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::report::{ObjectReport, ReleaseReport, Status};
use notify::{Event, EventKind, Notifier};
use state::{TargetState, WatchState};

/// One watched target's result in a round.
#[derive(Debug, Clone)]
pub struct TargetResult {
    /// State key: `release/NS/NAME`, `manifests/PATH`, or `cluster` for round-level errors.
    pub key: String,
    pub target_type: String,
    pub target: String,
    pub namespace: Option<String>,
    pub revision: Option<u32>,
    pub values_digest: Option<String>,
    pub status: Status,
    pub objects: Vec<ObjectReport>,
    pub reconcile: Vec<String>,
    pub error: Option<String>,
}

impl TargetResult {
    pub fn from_release(r: &ReleaseReport) -> TargetResult {
        TargetResult {
            key: format!("release/{}/{}", r.namespace, r.name),
            target_type: "release".into(),
            target: r.name.clone(),
            namespace: Some(r.namespace.clone()),
            revision: (r.revision > 0).then_some(r.revision),
            values_digest: r.values_digest.clone(),
            status: r.status,
            objects: r.objects.clone(),
            reconcile: r.reconcile.clone(),
            error: r.error.clone(),
        }
    }

    /// One watched manifests PATH: all its files together.
    pub fn from_manifests(path: &str, report: &crate::report::ManifestsReport) -> TargetResult {
        let status = Status::worst(report.files.iter().map(|f| f.status));
        let errors: Vec<String> =
            report.files.iter().filter_map(|f| f.error.as_ref().map(|e| format!("{}: {e}", f.path))).collect();
        TargetResult {
            key: format!("manifests/{path}"),
            target_type: "manifests".into(),
            target: path.to_string(),
            namespace: None,
            revision: None,
            values_digest: None,
            status,
            objects: report.files.iter().flat_map(|f| f.objects.iter().cloned()).collect(),
            reconcile: report.files.iter().flat_map(|f| f.reconcile.iter().cloned()).collect(),
            error: (!errors.is_empty()).then(|| errors.join("; ")),
        }
    }

    /// A round that could not even list what to check (API down, forbidden).
    pub fn round_error(message: String) -> TargetResult {
        TargetResult {
            key: "cluster".into(),
            target_type: "cluster".into(),
            target: "(all watched targets)".into(),
            namespace: None,
            revision: None,
            values_digest: None,
            status: Status::Error,
            objects: Vec::new(),
            reconcile: Vec::new(),
            error: Some(message),
        }
    }

    fn event(&self, kind: EventKind, notes: Vec<String>) -> Event {
        Event {
            kind,
            target_type: self.target_type.clone(),
            target: self.target.clone(),
            namespace: self.namespace.clone(),
            revision: self.revision,
            objects: if kind == EventKind::Drift {
                self.objects.iter().filter(|o| o.is_drift()).cloned().collect()
            } else {
                Vec::new()
            },
            reconcile: if kind == EventKind::Drift { self.reconcile.clone() } else { Vec::new() },
            error: if kind == EventKind::Error { self.error.clone() } else { None },
            notes,
        }
    }
}

/// What to post for one target, and the state to keep once it is posted.
pub fn decide(prev: Option<&TargetState>, cur: &TargetResult) -> (Vec<Event>, TargetState) {
    let mut next = prev.cloned().unwrap_or_default();
    let mut notes = Vec::new();
    if cur.status != Status::Error {
        if let (Some(p), Some(r1), Some(v1)) = (prev, cur.revision, &cur.values_digest)
            && let (Some(r0), Some(v0)) = (p.revision, &p.values)
            && r0 != r1
            && v0 != v1
        {
            notes.push(format!(
                "values changed since the last check (revision {r0} → {r1}): a helm upgrade or --set, not drift"
            ));
        }
        next.revision = cur.revision;
        next.values = cur.values_digest.clone();
    }
    let mut events = Vec::new();
    match cur.status {
        Status::Error => {
            let sig = signature::error_signature(cur.error.as_deref().unwrap_or(""));
            if prev.and_then(|p| p.error.as_ref()) != Some(&sig) {
                events.push(cur.event(EventKind::Error, notes));
            }
            // An error says nothing about drift: the drift memory is kept as it was.
            next.error = Some(sig);
        }
        Status::Drifted => {
            let sig = signature::drift_signature(&cur.objects);
            if prev.and_then(|p| p.drift.as_ref()) != Some(&sig) {
                events.push(cur.event(EventKind::Drift, notes));
            } else if !notes.is_empty() {
                events.push(cur.event(EventKind::Info, notes));
            }
            next.drift = Some(sig);
            next.error = None;
        }
        Status::Clean => {
            if prev.is_some_and(|p| p.drift.is_some() || p.error.is_some()) {
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

/// Parse `30m`, `1h30m`, `45s`, `2d`, `500ms`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?}: use a number with a unit, like 30s, 30m, 1h30m, 2d");
    let mut total = Duration::ZERO;
    let mut num = String::new();
    let mut chars = s.trim().chars().peekable();
    if s.trim().is_empty() {
        return Err(bad());
    }
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let n: u64 = num.parse().map_err(|_| bad())?;
        num.clear();
        let unit = match (c, chars.peek()) {
            ('m', Some('s')) => {
                chars.next();
                Duration::from_millis(n)
            }
            ('s', _) => Duration::from_secs(n),
            ('m', _) => Duration::from_secs(n * 60),
            ('h', _) => Duration::from_secs(n * 3600),
            ('d', _) => Duration::from_secs(n * 86400),
            _ => return Err(bad()),
        };
        total += unit;
    }
    if !num.is_empty() {
        return Err(bad());
    }
    Ok(total)
}

/// Settings of a watch run.
pub struct WatchOptions {
    /// Releases to check (None: only manifests are watched).
    pub selection: Option<crate::drift::ReleaseSelection>,
    /// Manifests paths to check, each its own target.
    pub manifests: Vec<std::path::PathBuf>,
    /// Namespace for manifest objects without one.
    pub default_namespace: String,
    pub rules: Vec<crate::compare::rules::IgnoreRule>,
    pub interval: Option<Duration>,
    pub state: state::StateLocation,
    pub listen: Option<std::net::SocketAddr>,
    pub driver: crate::helm::Driver,
    pub reconciler: crate::reconcile::Reconciler,
}

/// Why the watcher stopped.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(transparent)]
    State(#[from] state::StateError),
    #[error("failed to listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

fn log(msg: &str) {
    eprintln!("kubectl-drift watch: {msg}");
}

/// Run rounds until stopped (or once). Returns the last round's status for `--once`.
pub async fn run(client: kube::Client, notifier: Notifier, opts: WatchOptions) -> Result<Status, WatchError> {
    let metrics = Arc::new(Mutex::new(server::Metrics::default()));
    if let Some(addr) = opts.listen {
        server::serve(addr, metrics.clone()).await.map_err(|source| WatchError::Listen { addr, source })?;
        log(&format!("serving /healthz, /readyz and /metrics on http://{addr}"));
    }
    let state_client = matches!(opts.state, state::StateLocation::ConfigMap { .. }).then(|| client.clone());
    let mut memory = state::load(&opts.state, state_client.as_ref()).await?;
    if !notifier.enabled() {
        log("no --slack-webhook or --webhook: alerts are only logged");
    }
    loop {
        let started = Instant::now();
        let results = round_results(&client, &opts).await;
        let status = round_status(&results);
        let failures = deliver(&notifier, &results, &mut memory, &metrics).await;
        if let Err(e) = state::save(&opts.state, state_client.as_ref(), &memory).await {
            log(&format!("error: {e}"));
        }
        {
            let mut m = metrics.lock().expect("metrics lock is never poisoned");
            m.rounds_total += 1;
            m.last_round_success = status != Status::Error;
            if status == Status::Error {
                m.round_errors_total += 1;
            }
            m.last_round_duration_seconds = started.elapsed().as_secs_f64();
            m.last_round_timestamp_seconds = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            m.alert_failures_total += failures;
            m.drifted_objects.clear();
            m.target_status.clear();
            for r in &results {
                let key = (r.target_type.clone(), r.namespace.clone().unwrap_or_default(), r.target.clone());
                m.drifted_objects.insert(key.clone(), r.objects.iter().filter(|o| o.is_drift()).count() as u64);
                m.target_status.insert(
                    key,
                    match r.status {
                        Status::Clean => 0,
                        Status::Drifted => 1,
                        Status::Error => 2,
                    },
                );
            }
            m.ready = true;
        }
        log(&format!(
            "round done in {:.1}s: {} target(s), {} drifted, {} error(s){}",
            started.elapsed().as_secs_f64(),
            results.len(),
            results.iter().filter(|r| r.status == Status::Drifted).count(),
            results.iter().filter(|r| r.status == Status::Error).count(),
            if failures > 0 {
                format!(", {failures} alert(s) not delivered (retried next round)")
            } else {
                String::new()
            }
        ));
        let Some(interval) = opts.interval else {
            return Ok(if failures > 0 { Status::Error } else { status });
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
    Status::worst(results.iter().map(|r| r.status))
}

/// Run the checks of one round.
async fn round_results(client: &kube::Client, opts: &WatchOptions) -> Vec<TargetResult> {
    let mut out = Vec::new();
    if let Some(selection) = &opts.selection {
        match crate::drift::check_releases(
            client,
            opts.driver.clone(),
            selection,
            opts.rules.clone(),
            false,
            opts.reconciler.clone(),
        )
        .await
        {
            Ok(report) => out.extend(report.releases.iter().map(TargetResult::from_release)),
            Err(e) => out.push(TargetResult::round_error(e.to_string())),
        }
    }
    if !opts.manifests.is_empty() {
        let engine = crate::live::Kinds::discover(client).await.map(|kinds| crate::drift::Engine {
            kinds: Arc::new(kinds),
            reader: Arc::new(crate::live::LiveReader::new(client.clone(), crate::live::DEFAULT_CONCURRENCY)),
            rules: opts.rules.clone(),
            show_secrets: false,
        });
        match engine {
            Ok(engine) => {
                for path in &opts.manifests {
                    let options = crate::manifests::ManifestsOptions {
                        paths: vec![path.clone()],
                        default_namespace: opts.default_namespace.clone(),
                        field_manager: None,
                        timeout: None,
                    };
                    let report =
                        crate::manifests::check_paths(Ok(engine.clone_shared()), &options, None, &opts.reconciler)
                            .await;
                    out.push(TargetResult::from_manifests(&path.display().to_string(), &report));
                }
            }
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
    metrics: &Mutex<server::Metrics>,
) -> u64 {
    let mut failures = 0;
    let seen: BTreeSet<String> = results.iter().map(|r| r.key.clone()).collect();
    let round_failed = results.iter().any(|r| r.key == "cluster");
    for r in results {
        let (events, next) = decide(memory.targets.get(&r.key), r);
        let mut delivered = true;
        for e in &events {
            log(&format!("{:?} for {} {}", e.kind, r.target_type, r.key.trim_start_matches("release/")));
            if notifier.enabled() {
                match notifier.send(e).await {
                    Ok(()) => {
                        *metrics
                            .lock()
                            .expect("metrics lock")
                            .alerts_total
                            .entry(format!("{:?}", e.kind).to_lowercase())
                            .or_default() += 1;
                    }
                    Err(err) => {
                        log(&format!("error: {err}"));
                        failures += 1;
                        delivered = false;
                        break;
                    }
                }
            }
        }
        if delivered {
            memory.targets.insert(r.key.clone(), next);
        }
    }
    // Targets no longer listed (an uninstalled release) are forgotten, unless the round failed
    // and could not list them at all. A round that works again clears the round-level error.
    if !round_failed {
        memory.targets.retain(|k, _| seen.contains(k) || k.starts_with("manifests/"));
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ObjectState;

    fn result(status: Status, revision: u32, values: &str, drift_name: &str) -> TargetResult {
        let objects = if status == Status::Drifted {
            vec![ObjectReport {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("shop".into()),
                name: drift_name.into(),
                state: ObjectState::Missing,
                fields: vec![],
                error: None,
                source: None,
            }]
        } else {
            vec![]
        };
        TargetResult {
            key: "release/shop/shop".into(),
            target_type: "release".into(),
            target: "shop".into(),
            namespace: Some("shop".into()),
            revision: Some(revision),
            values_digest: Some(values.into()),
            status,
            objects,
            reconcile: vec![],
            error: (status == Status::Error).then(|| "API down".to_string()),
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
        let (e, s2) = decide(Some(&s1), &result(Status::Clean, 2, "v2", ""));
        assert_eq!(kinds(&e), vec![EventKind::Info]);
        assert!(e[0].notes[0].contains("revision 1 → 2"));
        // A chart-only upgrade (same values) says nothing.
        let (e, _) = decide(Some(&s2), &result(Status::Clean, 3, "v2", ""));
        assert!(e.is_empty());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2d").unwrap(), Duration::from_secs(172800));
        assert!(parse_duration("30").is_err());
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("").is_err());
    }
}
