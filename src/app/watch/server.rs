//! `--listen`: `/healthz` (the process is up), `/readyz` (a first round has finished) and
//! `/metrics` (Prometheus text format) over plain HTTP/1.1.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// Figures the watcher exposes.
#[derive(Debug, Default, Clone)]
pub struct Metrics {
    pub rounds_total: u64,
    pub round_errors_total: u64,
    pub last_round_success: bool,
    pub last_round_duration_seconds: f64,
    pub last_round_timestamp_seconds: f64,
    pub alerts_total: BTreeMap<String, u64>,
    pub alert_failures_total: u64,
    /// (target type, namespace, name) -> drifted objects.
    pub drifted_objects: BTreeMap<(String, String, String, String), u64>,
    /// (target type, namespace, name) -> 0 clean, 1 drifted, 2 error.
    pub target_status: BTreeMap<(String, String, String, String), u8>,
    /// Several clusters are watched: target series carry a `cluster` label (with one, Prometheus'
    /// own labels say which cluster it is).
    pub by_cluster: bool,
    pub ready: bool,
    /// `watch --live`: the watch streams' counters, and the time from a watch event to the
    /// delivery of the alert it caused.
    pub live: Option<Arc<crate::source::live_cache::StreamStats>>,
    pub event_to_alert: Histogram,
}

/// A Prometheus histogram (seconds).
#[derive(Debug, Clone)]
pub struct Histogram {
    /// (upper bound, observations at or below it)
    pub buckets: Vec<(f64, u64)>,
    pub sum: f64,
    pub count: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        let bounds = [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];
        Histogram { buckets: bounds.iter().map(|b| (*b, 0)).collect(), sum: 0.0, count: 0 }
    }
}

impl Histogram {
    pub fn observe(&mut self, seconds: f64) {
        for (bound, n) in &mut self.buckets {
            if seconds <= *bound {
                *n += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }

    pub fn render(&self, o: &mut String, name: &str, help: &str) {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (bound, n) in &self.buckets {
            let _ = writeln!(o, "{name}_bucket{{le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(
            o,
            "{name}_bucket{{le=\"+Inf\"}} {}\n{name}_sum {:.6}\n{name}_count {}",
            self.count, self.sum, self.count
        );
    }
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Metrics {
    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "# HELP kubectl_drift_rounds_total Check rounds run.\n# TYPE kubectl_drift_rounds_total counter\nkubectl_drift_rounds_total {}",
            self.rounds_total
        );
        let _ = writeln!(
            o,
            "# HELP kubectl_drift_round_errors_total Rounds that could not check everything.\n# TYPE kubectl_drift_round_errors_total counter\nkubectl_drift_round_errors_total {}",
            self.round_errors_total
        );
        let _ = writeln!(
            o,
            "# HELP kubectl_drift_last_round_success 1 if the last round checked everything.\n# TYPE kubectl_drift_last_round_success gauge\nkubectl_drift_last_round_success {}",
            u8::from(self.last_round_success)
        );
        let _ = writeln!(
            o,
            "# HELP kubectl_drift_last_round_duration_seconds Duration of the last round.\n# TYPE kubectl_drift_last_round_duration_seconds gauge\nkubectl_drift_last_round_duration_seconds {:.3}",
            self.last_round_duration_seconds
        );
        let _ = writeln!(
            o,
            "# HELP kubectl_drift_last_round_timestamp_seconds When the last round ended (unix time).\n# TYPE kubectl_drift_last_round_timestamp_seconds gauge\nkubectl_drift_last_round_timestamp_seconds {:.0}",
            self.last_round_timestamp_seconds
        );
        let _ = writeln!(
            o,
            "# HELP kubectl_drift_alerts_total Alerts delivered, by kind.\n# TYPE kubectl_drift_alerts_total counter"
        );
        for (k, v) in &self.alerts_total {
            let _ = writeln!(o, "kubectl_drift_alerts_total{{kind=\"{}\"}} {v}", esc(k));
        }
        let _ = writeln!(
            o,
            "# HELP kubectl_drift_alert_failures_total Alerts that could not be delivered (retried next round).\n# TYPE kubectl_drift_alert_failures_total counter\nkubectl_drift_alert_failures_total {}",
            self.alert_failures_total
        );
        let _ = writeln!(
            o,
            "# HELP kubectl_drift_drifted_objects Drifted objects per watched target.\n# TYPE kubectl_drift_drifted_objects gauge"
        );
        for ((cluster, t, ns, name), v) in &self.drifted_objects {
            let _ = writeln!(
                o,
                "kubectl_drift_drifted_objects{{{}type=\"{}\",namespace=\"{}\",name=\"{}\"}} {v}",
                cluster_label(cluster),
                esc(t),
                esc(ns),
                esc(name)
            );
        }
        let _ = writeln!(
            o,
            "# HELP kubectl_drift_status Per watched target: 0 clean, 1 drifted, 2 error, 3 incomplete (a failed or pending Helm release).\n# TYPE kubectl_drift_status gauge"
        );
        for ((cluster, t, ns, name), v) in &self.target_status {
            let _ = writeln!(
                o,
                "kubectl_drift_status{{{}type=\"{}\",namespace=\"{}\",name=\"{}\"}} {v}",
                cluster_label(cluster),
                esc(t),
                esc(ns),
                esc(name)
            );
        }
        if let Some(live) = &self.live {
            render_streams(&mut o, live);
            self.event_to_alert.render(
                &mut o,
                "kubectl_drift_event_to_alert_seconds",
                "Time from receiving a watch event to delivering the alert it caused.",
            );
        }
        o
    }
}

/// `cluster="NAME",` for a target of a watch over several clusters, else nothing.
fn cluster_label(cluster: &str) -> String {
    if cluster.is_empty() { String::new() } else { format!("cluster=\"{}\",", esc(cluster)) }
}

/// The watch streams' counters (`watch --live` and `serve --live`), in Prometheus text.
pub fn render_streams(o: &mut String, live: &crate::source::live_cache::StreamStats) {
    use std::sync::atomic::Ordering::Relaxed;
    let counters = [
        (
            "kubectl_drift_watch_events_total",
            "counter",
            "Watch events handled (initial list items included).",
            &live.events,
        ),
        (
            "kubectl_drift_watch_stream_restarts_total",
            "counter",
            "Watch stream failures, each followed by a reconnect from the last resourceVersion or a relist.",
            &live.restarts,
        ),
        (
            "kubectl_drift_watch_relists_total",
            "counter",
            "Watch streams that listed again after their first list (410 Gone).",
            &live.relists,
        ),
        (
            "kubectl_drift_watch_streams",
            "gauge",
            "Open watch streams (one per watched kind and namespace, plus release storage).",
            &live.streams,
        ),
    ];
    for (name, kind, help, v) in counters {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}", v.load(Relaxed));
    }
    let _ = writeln!(
        o,
        "# HELP kubectl_drift_watch_streams_failing Watch streams that failed in the last 40s and sent nothing since.\n# TYPE kubectl_drift_watch_streams_failing gauge\nkubectl_drift_watch_streams_failing {}",
        live.failing()
    );
}

fn respond(metrics: &Mutex<Metrics>, path: &str) -> Response<Full<Bytes>> {
    let m = metrics.lock().expect("metrics lock is never poisoned");
    let (status, body, ctype) = match path {
        "/healthz" => (StatusCode::OK, "ok\n".to_string(), "text/plain"),
        "/readyz" if m.ready => (StatusCode::OK, "ready\n".to_string(), "text/plain"),
        "/readyz" => (StatusCode::SERVICE_UNAVAILABLE, "first round not finished\n".to_string(), "text/plain"),
        "/metrics" => (StatusCode::OK, m.render(), "text/plain; version=0.0.4"),
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
pub async fn serve(addr: SocketAddr, metrics: Arc<Mutex<Metrics>>) -> std::io::Result<SocketAddr> {
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

    #[test]
    fn renders_prometheus_text() {
        let mut m = Metrics { rounds_total: 2, last_round_success: true, ..Default::default() };
        m.drifted_objects.insert((String::new(), "release".into(), "shop".into(), "shop".into()), 3);
        m.alerts_total.insert("drift".into(), 1);
        let t = m.render();
        assert!(t.contains("kubectl_drift_rounds_total 2"));
        assert!(t.contains("kubectl_drift_last_round_success 1"));
        assert!(t.contains(r#"kubectl_drift_drifted_objects{type="release",namespace="shop",name="shop"} 3"#), "{t}");
        assert!(t.contains(r#"kubectl_drift_alerts_total{kind="drift"} 1"#));
        assert!(!t.contains("kubectl_drift_watch_events_total"), "rounds have no watch streams");
    }

    #[test]
    fn live_mode_renders_stream_counters_and_the_latency_histogram() {
        let live = Arc::new(crate::source::live_cache::StreamStats::default());
        live.events.store(7, std::sync::atomic::Ordering::Relaxed);
        let mut m = Metrics { live: Some(live), ..Default::default() };
        m.event_to_alert.observe(0.3);
        m.event_to_alert.observe(3.0);
        let t = m.render();
        assert!(t.contains("kubectl_drift_watch_events_total 7"), "{t}");
        assert!(t.contains("kubectl_drift_watch_stream_restarts_total 0"), "{t}");
        assert!(t.contains(r#"kubectl_drift_event_to_alert_seconds_bucket{le="0.25"} 0"#), "{t}");
        assert!(t.contains(r#"kubectl_drift_event_to_alert_seconds_bucket{le="0.5"} 1"#), "{t}");
        assert!(t.contains(r#"kubectl_drift_event_to_alert_seconds_bucket{le="5"} 2"#), "{t}");
        assert!(t.contains("kubectl_drift_event_to_alert_seconds_count 2"), "{t}");
    }

    #[test]
    fn readiness_follows_the_first_round() {
        let m = Mutex::new(Metrics::default());
        assert_eq!(respond(&m, "/readyz").status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(respond(&m, "/healthz").status(), StatusCode::OK);
        m.lock().unwrap().ready = true;
        assert_eq!(respond(&m, "/readyz").status(), StatusCode::OK);
        assert_eq!(respond(&m, "/nope").status(), StatusCode::NOT_FOUND);
    }
}
