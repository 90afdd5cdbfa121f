//! `--listen`: `/healthz` (the process is up), `/readyz` (a first round has finished) and
//! `/metrics` (Prometheus text format) over plain HTTP/1.1.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

use crate::app::metrics::{self, Exporter, Findings, Identity, Scan, Snapshot, Source};
use crate::app::watch::TargetResult;
use crate::report::Status;
use crate::source::live_cache::StreamStats;

/// The watcher's metrics: counters it moves, and the last round's results that a scrape reads.
#[derive(Debug)]
pub struct Metrics {
    exporter: Exporter,
    round: Arc<Mutex<Round>>,
    pub rounds: Counter,
    pub round_errors: Counter,
    /// Alerts delivered, by kind.
    pub alerts: Family<Vec<(&'static str, String)>, Counter>,
    pub alert_failures: Counter,
    /// `watch --live`: the time from a watch event to the delivery of the alert it caused.
    pub event_to_alert: Histogram,
}

/// What the last rounds found, per cluster and target.
#[derive(Debug, Default)]
struct Round {
    /// Several clusters are watched: their series carry a `cluster` label (with one, Prometheus'
    /// own labels say which cluster it is).
    by_cluster: bool,
    /// (cluster, state key) -> the target's last result.
    targets: BTreeMap<(String, String), (String, crate::report::target::TargetReport)>,
    /// (cluster, target key) -> when its oldest open finding's episode started (`--history`).
    drift_since: BTreeMap<(String, String), i64>,
    /// (cluster, scope) -> its scan figures.
    scans: BTreeMap<(String, &'static str), Scan>,
    ready: bool,
    live: Option<Arc<StreamStats>>,
}

struct RoundSource(Arc<Mutex<Round>>);

impl Source for RoundSource {
    fn snapshot(&self) -> Snapshot {
        let round = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut findings = Findings::default();
        for (key, (cluster, report)) in &round.targets {
            findings.add_target(cluster, report);
            if let (Some(since), Some(release)) = (round.drift_since.get(key), report.origin.release()) {
                findings.drift_since.insert((cluster.clone(), release.namespace.clone(), release.name.clone()), *since);
            }
        }
        Snapshot {
            findings,
            orphans: false,
            orphan_namespaces: None,
            versions: false,
            scans: round.scans.values().cloned().collect(),
            ready: round.ready,
            extra: round.live.as_deref().map(metrics::stream_families).unwrap_or_default(),
        }
    }
}

/// The scope a target belongs to: releases or manifests (a round checks both).
fn scope_of(r: &TargetResult) -> Option<&'static str> {
    if r.key.starts_with("release/") {
        Some("releases")
    } else if r.key.starts_with("manifests/") {
        Some("manifests")
    } else {
        None
    }
}

impl Metrics {
    /// `by_cluster`: several clusters are watched (each series names its own).
    pub fn new(identity: &Identity, by_cluster: bool, live: Option<Arc<StreamStats>>) -> Metrics {
        let with_live = live.is_some();
        let round = Arc::new(Mutex::new(Round { by_cluster, live, ..Default::default() }));
        let mut exporter = Exporter::new(identity, Arc::new(RoundSource(round.clone())));
        let (rounds, round_errors, alert_failures) = (Counter::default(), Counter::default(), Counter::default());
        let alerts = Family::<Vec<(&'static str, String)>, Counter>::default();
        let event_to_alert = metrics::event_histogram();
        let r = exporter.registry();
        r.register("kubectl_drift_rounds", "Check rounds run", rounds.clone());
        r.register("kubectl_drift_round_errors", "Rounds that could not check everything", round_errors.clone());
        r.register("kubectl_drift_alerts", "Alerts delivered, by kind", alerts.clone());
        r.register(
            "kubectl_drift_alert_failures",
            "Alerts that could not be delivered (retried next round)",
            alert_failures.clone(),
        );
        if with_live {
            r.register(
                "kubectl_drift_event_to_alert_seconds",
                "Time from receiving a watch event to delivering the alert it caused",
                event_to_alert.clone(),
            );
        }
        Metrics { exporter, round, rounds, round_errors, alerts, alert_failures, event_to_alert }
    }

    pub fn render(&self) -> String {
        self.exporter.render()
    }

    pub fn ready(&self) -> bool {
        self.round.lock().unwrap_or_else(|e| e.into_inner()).ready
    }

    /// A round ended: every target's result, and each scope's scan figures per cluster.
    pub fn record_round(&self, duration_seconds: f64, status: Status, results: &[TargetResult]) {
        self.rounds.inc();
        if status == Status::Error {
            self.round_errors.inc();
        }
        let now = metrics::now_seconds();
        let mut round = self.round.lock().unwrap_or_else(|e| e.into_inner());
        let clusters: std::collections::BTreeSet<&str> = results.iter().map(|r| r.report.cluster.as_str()).collect();
        // What a cluster's round listed replaces what its last round listed (an uninstalled
        // release is gone), unless the round could not list them at all.
        for cluster in &clusters {
            let listed = !results.iter().any(|r| r.report.cluster == *cluster && r.key == "cluster");
            if listed {
                round.targets.retain(|(c, _), _| c != cluster);
            }
        }
        self.record_targets_locked(&mut round, results);
        for cluster in clusters {
            let of = || results.iter().filter(move |r| r.report.cluster == cluster);
            let cluster_failed = of().any(|r| r.key == "cluster");
            let label = if round.by_cluster { cluster.to_string() } else { String::new() };
            let mut scopes: Vec<&'static str> = of().filter_map(scope_of).collect();
            if cluster_failed {
                // The round could not list its targets: every scope it had failed.
                scopes.extend(round.scans.keys().filter(|(c, _)| c == cluster).map(|(_, s)| *s));
            }
            scopes.sort_unstable();
            scopes.dedup();
            for scope in scopes {
                let targets: Vec<&TargetResult> = of().filter(|r| scope_of(r) == Some(scope)).collect();
                let ok = !cluster_failed && targets.iter().all(|r| r.report.status != Status::Error);
                let scan = round.scans.entry((cluster.to_string(), scope)).or_insert_with(|| Scan {
                    scope,
                    cluster: label.clone(),
                    ..Default::default()
                });
                scan.success = Some(ok);
                scan.duration_seconds = duration_seconds;
                scan.total += 1;
                if ok {
                    scan.timestamp_seconds = now;
                    scan.objects = targets.iter().map(|r| r.report.objects.len() as u64).sum();
                } else {
                    scan.errors += 1;
                }
            }
        }
        round.ready = true;
    }

    /// Targets checked again between rounds (`watch --live`): their results replace the old.
    pub fn record_targets(&self, results: &[TargetResult]) {
        let mut round = self.round.lock().unwrap_or_else(|e| e.into_inner());
        self.record_targets_locked(&mut round, results);
    }

    /// A release that is gone (uninstalled) between rounds.
    pub fn forget(&self, cluster: &str, key: &str) {
        self.round.lock().unwrap_or_else(|e| e.into_inner()).targets.remove(&(cluster.to_string(), key.to_string()));
    }

    fn record_targets_locked(&self, round: &mut Round, results: &[TargetResult]) {
        for r in results.iter().filter(|r| scope_of(r).is_some()) {
            let label = if round.by_cluster { r.report.cluster.clone() } else { String::new() };
            round.targets.insert((r.report.cluster.clone(), r.key.clone()), (label, r.report.clone()));
            let key = (r.report.cluster.clone(), r.key.clone());
            match r.drift_since {
                Some(since) => round.drift_since.insert(key, since),
                None => round.drift_since.remove(&key),
            };
        }
    }

    /// An alert of `kind` was delivered.
    pub fn alert_sent(&self, kind: &str) {
        self.alerts.get_or_create(&vec![("kind", kind.to_string())]).inc();
    }
}

fn respond(m: &Metrics, path: &str) -> Response<Full<Bytes>> {
    let (status, body, ctype) = match path {
        "/healthz" => (StatusCode::OK, "ok\n".to_string(), "text/plain"),
        "/readyz" if m.ready() => (StatusCode::OK, "ready\n".to_string(), "text/plain"),
        "/readyz" => (StatusCode::SERVICE_UNAVAILABLE, "first round not finished\n".to_string(), "text/plain"),
        "/metrics" => (StatusCode::OK, m.render(), metrics::CONTENT_TYPE),
        _ => (StatusCode::NOT_FOUND, "not found\n".to_string(), "text/plain"),
    };
    Response::builder()
        .status(status)
        .header("content-type", ctype)
        .body(Full::new(Bytes::from(body)))
        .expect("static response parts are valid")
}

/// Bind `addr` and serve until the process ends. Returns the address bound (with port 0 the
/// system picks the port; the caller logs it, so tests and scripts can read it).
pub async fn serve(addr: SocketAddr, metrics: Arc<Metrics>) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let metrics = metrics.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let resp = respond(&metrics, req.uri().path());
                    async move { Ok::<_, Infallible>(resp) }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::target::{ReleaseOrigin, ReleaseReport};

    fn target(cluster: &str, ns: &str, name: &str, status: Status) -> TargetResult {
        let mut report =
            ReleaseReport::new(ReleaseOrigin { name: name.into(), namespace: ns.into(), ..Default::default() }, status);
        report.cluster = cluster.into();
        let mut r = TargetResult::from_release(&report);
        r.report.cluster = cluster.into();
        r
    }

    #[test]
    fn a_round_sets_the_findings_and_the_scan_figures() {
        let m = Metrics::new(&Identity::default(), false, None);
        m.record_round(0.5, Status::Drifted, &[target("k", "shop", "cart", Status::Drifted)]);
        m.alert_sent("drift");
        let t = m.render();
        assert!(t.contains("kubectl_drift_rounds_total 1"), "{t}");
        assert!(t.contains(r#"kubectl_drift_alerts_total{kind="drift"} 1"#), "{t}");
        assert!(
            t.contains(r#"kubectl_drift_release_status{namespace="shop",release="cart",status="drifted"} 1"#),
            "{t}"
        );
        assert!(t.contains(r#"kubectl_drift_scan_success{scope="releases"} 1"#), "{t}");
        assert!(!t.contains("kubectl_drift_watch_events_total"), "rounds have no watch streams: {t}");
        // The next round no longer lists it (uninstalled): gone from the gauges.
        m.record_round(0.5, Status::Clean, &[target("k", "shop", "db", Status::Clean)]);
        let t = m.render();
        assert!(!t.contains(r#"release="cart""#), "{t}");
        assert!(t.contains(r#"release="db",status="clean""#), "{t}");
        // A round that could not list its targets keeps the last known ones and fails the scope.
        let mut failed = TargetResult::round_error("connection refused".into());
        failed.report.cluster = "k".into();
        m.record_round(0.5, Status::Error, &[failed]);
        let t = m.render();
        assert!(t.contains(r#"release="db",status="clean""#), "{t}");
        assert!(t.contains(r#"kubectl_drift_scan_success{scope="releases"} 0"#), "{t}");
        assert!(t.contains(r#"kubectl_drift_scan_errors_total{scope="releases"} 1"#), "{t}");
        assert!(t.contains("kubectl_drift_round_errors_total 1"), "{t}");
    }

    #[test]
    fn several_clusters_name_their_series() {
        let m = Metrics::new(&Identity::default(), true, None);
        m.record_round(
            0.5,
            Status::Drifted,
            &[target("east", "shop", "cart", Status::Drifted), target("west", "shop", "cart", Status::Clean)],
        );
        let t = m.render();
        assert!(
            t.contains(
                r#"kubectl_drift_release_status{cluster="east",namespace="shop",release="cart",status="drifted"} 1"#
            ),
            "{t}"
        );
        assert!(
            t.contains(
                r#"kubectl_drift_release_status{cluster="west",namespace="shop",release="cart",status="clean"} 1"#
            ),
            "{t}"
        );
        assert!(t.contains(r#"kubectl_drift_scan_success{cluster="west",scope="releases"} 1"#), "{t}");
    }

    #[test]
    fn live_mode_has_stream_counters_and_the_latency_histogram() {
        let live = Arc::new(StreamStats::default());
        live.events.store(7, std::sync::atomic::Ordering::Relaxed);
        let m = Metrics::new(&Identity::default(), false, Some(live));
        m.event_to_alert.observe(0.3);
        m.event_to_alert.observe(3.0);
        let t = m.render();
        assert!(t.contains("kubectl_drift_watch_events_total 7"), "{t}");
        assert!(t.contains("kubectl_drift_watch_stream_restarts_total 0"), "{t}");
        assert!(t.contains(r#"kubectl_drift_event_to_alert_seconds_bucket{le="0.25"} 0"#), "{t}");
        assert!(t.contains(r#"kubectl_drift_event_to_alert_seconds_bucket{le="0.5"} 1"#), "{t}");
        assert!(t.contains(r#"kubectl_drift_event_to_alert_seconds_bucket{le="5.0"} 2"#), "{t}");
        assert!(t.contains("kubectl_drift_event_to_alert_seconds_count 2"), "{t}");
    }

    #[test]
    fn readiness_follows_the_first_round() {
        let m = Metrics::new(&Identity::default(), false, None);
        assert_eq!(respond(&m, "/readyz").status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(respond(&m, "/healthz").status(), StatusCode::OK);
        m.record_round(0.1, Status::Clean, &[]);
        assert_eq!(respond(&m, "/readyz").status(), StatusCode::OK);
        assert_eq!(respond(&m, "/nope").status(), StatusCode::NOT_FOUND);
    }
}
