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
    pub drifted_objects: BTreeMap<(String, String, String), u64>,
    /// (target type, namespace, name) -> 0 clean, 1 drifted, 2 error.
    pub target_status: BTreeMap<(String, String, String), u8>,
    pub ready: bool,
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
        for ((t, ns, name), v) in &self.drifted_objects {
            let _ = writeln!(
                o,
                "kubectl_drift_drifted_objects{{type=\"{}\",namespace=\"{}\",name=\"{}\"}} {v}",
                esc(t),
                esc(ns),
                esc(name)
            );
        }
        let _ = writeln!(
            o,
            "# HELP kubectl_drift_status Per watched target: 0 clean, 1 drifted, 2 error, 3 incomplete (a failed or pending Helm release).\n# TYPE kubectl_drift_status gauge"
        );
        for ((t, ns, name), v) in &self.target_status {
            let _ = writeln!(
                o,
                "kubectl_drift_status{{type=\"{}\",namespace=\"{}\",name=\"{}\"}} {v}",
                esc(t),
                esc(ns),
                esc(name)
            );
        }
        o
    }
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

/// Bind `addr` and serve until the process ends.
pub async fn serve(addr: SocketAddr, metrics: Arc<Mutex<Metrics>>) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    Ok(tokio::spawn(async move {
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
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let mut m = Metrics { rounds_total: 2, last_round_success: true, ..Default::default() };
        m.drifted_objects.insert(("release".into(), "shop".into(), "shop".into()), 3);
        m.alerts_total.insert("drift".into(), 1);
        let t = m.render();
        assert!(t.contains("kubectl_drift_rounds_total 2"));
        assert!(t.contains("kubectl_drift_last_round_success 1"));
        assert!(t.contains(r#"kubectl_drift_drifted_objects{type="release",namespace="shop",name="shop"} 3"#), "{t}");
        assert!(t.contains(r#"kubectl_drift_alerts_total{kind="drift"} 1"#));
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
