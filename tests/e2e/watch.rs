//! `kubectl drift watch` end to end: real releases and edits, a webhook receiver on 127.0.0.1
//! inside the test, state in a file and in a ConfigMap, the metrics endpoint, and the in-cluster
//! manifests in deploy/ against the real API server (server-side dry run).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Cluster, Helm, Run, fixture, unique_ns};

/// A webhook receiver: records (path, body) of each POST and answers with `status`.
pub struct Receiver {
    port: u16,
    posts: Arc<Mutex<Vec<(String, String)>>>,
    status: Arc<AtomicU16>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let posts = Arc::new(Mutex::new(Vec::new()));
        let status = Arc::new(AtomicU16::new(200));
        let (p, s) = (posts.clone(), status.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
                let mut len = 0usize;
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                        break;
                    }
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0u8; len];
                let _ = reader.read_exact(&mut body);
                p.lock().unwrap().push((path, String::from_utf8_lossy(&body).into_owned()));
                let code = s.load(Ordering::SeqCst);
                let _ = write!(stream, "HTTP/1.1 {code} X\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
            }
        });
        Receiver { port, posts, status }
    }

    /// Answer every POST from now on with `status`.
    pub fn answer(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Events delivered to the generic webhook so far.
    pub fn events(&self) -> Vec<Value> {
        self.posts
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == "/hook")
            .map(|(_, b)| serde_json::from_str(b).unwrap())
            .collect()
    }

    pub fn slack_texts(&self) -> Vec<String> {
        self.posts
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == "/slack")
            .map(|(_, b)| serde_json::from_str::<Value>(b).unwrap()["text"].as_str().unwrap().to_string())
            .collect()
    }

    /// A reader of every body posted so far, for use after the receiver is borrowed elsewhere.
    pub fn bodies_reader(&self) -> impl Fn() -> String + 'static {
        let posts = self.posts.clone();
        move || posts.lock().unwrap().iter().map(|(_, b)| b.clone()).collect::<Vec<_>>().join("\n")
    }

    fn all_bodies(&self) -> String {
        (self.bodies_reader())()
    }
}

fn round(c: &Cluster, ns: &str, rx: &Receiver, state: &str) -> Run {
    c.drift_with_env(
        &["watch", "shop", "-n", ns, "--once", "--state", state, "--webhook", &rx.url("/hook")],
        &[("DRIFT_SLACK_WEBHOOK_URL", &rx.url("/slack"))],
    )
}

pub fn install(c: &Cluster, ns: &str) {
    c.create_namespace(ns);
    let chart = fixture("charts/shop");
    c.helm(Helm::V4, &["install", "shop", chart.to_str().unwrap(), "-n", ns, "--set", "worker.minReplicas=1"]).ok();
}

fn kinds(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect()
}

#[ignore = "needs the local control plane"]
#[test]
fn watch_alerts_once_resolves_and_never_loses_an_alert() {
    let c = crate::needs_cluster!("watch_alerts_once_resolves_and_never_loses_an_alert");
    let ns = unique_ns("watch");
    install(&c, &ns);
    let rx = Receiver::start();
    let state = c.scratch.join("state/watch.json");
    let state = state.to_str().unwrap();
    let check_logs = |r: &Run| {
        assert!(!r.stderr().contains(&rx.port.to_string()), "the webhook URL leaked into the log: {}", r.stderr());
        assert!(!r.stdout().contains(&rx.port.to_string()));
    };

    // Clean: nothing to say.
    let r = round(&c, &ns, &rx, state);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    check_logs(&r);
    assert!(rx.events().is_empty());

    // Drift (including a Secret value): one alert, in both forms.
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=5"]).ok();
    c.kubectl(&[
        "-n",
        &ns,
        "patch",
        "secret",
        "shop-secret",
        "--type",
        "merge",
        "-p",
        r#"{"stringData":{"password":"watch-secret-value-xyz"}}"#,
    ])
    .ok();
    let r = round(&c, &ns, &rx, state);
    assert_eq!(r.code(), 1, "{}", r.stderr());
    check_logs(&r);
    assert_eq!(kinds(&rx.events()), vec!["drift"]);
    let slack = rx.slack_texts();
    assert_eq!(slack.len(), 1);
    assert!(
        slack[0].contains("*Drift detected* in release *shop*") && slack[0].contains("`spec.replicas` 2 → 5"),
        "{}",
        slack[0]
    );
    assert!(slack[0].contains("helm rollback shop 1"), "{}", slack[0]);

    // The same drift again, in a new process (state from the file): quiet.
    let r = round(&c, &ns, &rx, state);
    assert_eq!(r.code(), 1);
    assert_eq!(rx.events().len(), 1, "unchanged drift must not alert again");

    // New drift: alerts again.
    c.kubectl(&[
        "-n",
        &ns,
        "patch",
        "configmap",
        "shop-config",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"added":"by-hand"}}"#,
    ])
    .ok();
    round(&c, &ns, &rx, state);
    assert_eq!(kinds(&rx.events()), vec!["drift", "drift"]);

    // Fixed by hand: one "resolved".
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=2"]).ok();
    c.kubectl(&["-n", &ns, "patch", "configmap", "shop-config", "--type", "merge", "-p", r#"{"data":{"added":null}}"#])
        .ok();
    c.kubectl(&[
        "-n",
        &ns,
        "patch",
        "secret",
        "shop-secret",
        "--type",
        "merge",
        "-p",
        r#"{"stringData":{"password":"s3cr3t-Pa55w0rd-do-not-print"}}"#,
    ])
    .ok();
    let r = round(&c, &ns, &rx, state);
    assert_eq!(r.code(), 0, "{}", r.stdout());
    assert_eq!(kinds(&rx.events()), vec!["drift", "drift", "resolved"]);
    round(&c, &ns, &rx, state);
    assert_eq!(rx.events().len(), 3, "resolved is said once");

    // A values-only upgrade is mentioned, not alerted as drift.
    let chart = fixture("charts/shop");
    c.helm(
        Helm::V4,
        &["upgrade", "shop", chart.to_str().unwrap(), "-n", &ns, "--reuse-values", "--set", "logLevel=warn"],
    )
    .ok();
    let r = round(&c, &ns, &rx, state);
    assert_eq!(r.code(), 0, "{}", r.stdout());
    let events = rx.events();
    assert_eq!(kinds(&events), vec!["drift", "drift", "resolved", "info"]);
    assert!(
        events[3]["notes"][0].as_str().unwrap().contains("values changed since the last check (revision 1 → 2)"),
        "{}",
        events[3]
    );
    // The state keeps the revision, nothing derived from the values (no offline check of guesses).
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap();
    let shop = &saved["clusters"]["admin"][format!("release/{ns}/shop")];
    assert_eq!(shop["revision"], 2, "{saved:#}");
    assert!(shop.get("values").is_none(), "{saved:#}");
    // A chart-only upgrade (same values) is not called a values change.
    c.helm(Helm::V4, &["upgrade", "shop", chart.to_str().unwrap(), "-n", &ns, "--reuse-values"]).ok();
    let r = round(&c, &ns, &rx, state);
    assert_eq!(r.code(), 0, "{}", r.stdout());
    assert_eq!(rx.events().len(), 4, "{:#?}", rx.events());

    // The receiver fails: the alert is retried, not lost, and the round says so (exit 2).
    rx.status.store(500, Ordering::SeqCst);
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=4"]).ok();
    let posts_before = rx.posts.lock().unwrap().len();
    let r = round(&c, &ns, &rx, state);
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(r.stderr().contains("HTTP status 500"), "{}", r.stderr());
    check_logs(&r);
    assert!(rx.posts.lock().unwrap().len() >= posts_before + 2, "the post is retried");
    rx.status.store(200, Ordering::SeqCst);
    let delivered_before = rx.events().iter().filter(|e| e["kind"] == "drift").count();
    let r = round(&c, &ns, &rx, state);
    assert_eq!(r.code(), 1, "{}", r.stderr());
    let drift_events: Vec<Value> = rx.events().into_iter().filter(|e| e["kind"] == "drift").collect();
    assert!(drift_events.len() > delivered_before, "the alert arrives once the receiver recovers");
    let last = drift_events.last().unwrap();
    assert_eq!(last["revision"], 3);
    // Quiet afterwards.
    let n = rx.events().len();
    round(&c, &ns, &rx, state);
    assert_eq!(rx.events().len(), n);

    // Secret values and the webhook URL never appear in what was posted.
    let bodies = rx.all_bodies();
    use base64::Engine;
    for s in ["watch-secret-value-xyz", "s3cr3t-Pa55w0rd-do-not-print"] {
        assert!(!bodies.contains(s));
        assert!(!bodies.contains(&base64::engine::general_purpose::STANDARD.encode(s)));
    }
    assert!(bodies.contains("<redacted, "), "the Secret change is reported, redacted");
    assert!(!bodies.contains(&format!("127.0.0.1:{}", rx.port)));
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn watch_state_in_a_configmap_survives_restarts() {
    let c = crate::needs_cluster!("watch_state_in_a_configmap_survives_restarts");
    let ns = unique_ns("watch-cm");
    install(&c, &ns);
    let rx = Receiver::start();
    let state = format!("configmap:{ns}/drift-watch-state");
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=3"]).ok();
    assert_eq!(round(&c, &ns, &rx, &state).code(), 1);
    assert_eq!(kinds(&rx.events()), vec!["drift"]);
    let stored =
        c.kubectl(&["-n", &ns, "get", "configmap", "drift-watch-state", "-o", "jsonpath={.data.state\\.json}"]).ok();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert!(stored["clusters"]["admin"][format!("release/{ns}/shop")]["drift"].is_string(), "{stored}");
    // A new process (a restart) remembers.
    assert_eq!(round(&c, &ns, &rx, &state).code(), 1);
    assert_eq!(rx.events().len(), 1);
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn watch_serves_health_and_metrics() {
    let c = crate::needs_cluster!("watch_serves_health_and_metrics");
    let ns = unique_ns("watch-m");
    install(&c, &ns);
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=3"]).ok();
    let port = crate::common::free_port();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-drift"));
    c.apply_env(&mut cmd, Helm::V4);
    cmd.args(["watch", "shop", "-n", &ns, "--interval", "1h", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let get = |path: &str| http_get(port, path);
    let start = Instant::now();
    let ready = loop {
        if let Some((200, _)) = get("/readyz") {
            break true;
        }
        if start.elapsed() > Duration::from_secs(60) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    let health = get("/healthz");
    let metrics = get("/metrics");
    let _ = child.kill();
    let _ = child.wait();
    assert!(ready, "/readyz never became ready");
    assert_eq!(health.map(|h| h.0), Some(200));
    let (code, body) = metrics.expect("metrics answered");
    assert_eq!(code, 200);
    assert!(
        body.contains(&format!("kubectl_drift_release_drifted_objects{{namespace=\"{ns}\",release=\"shop\"}} 1")),
        "{body}"
    );
    assert!(body.contains("kubectl_drift_scan_success{scope=\"releases\"} 1"), "{body}");
    assert!(body.contains("kubectl_drift_scan_duration_seconds{scope=\"releases\"}"), "{body}");
    assert!(
        body.contains(&format!(
            "kubectl_drift_release_status{{namespace=\"{ns}\",release=\"shop\",status=\"drifted\"}} 1"
        )),
        "{body}"
    );
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// The in-cluster deployment is accepted by the real API server.
#[ignore = "needs the local control plane"]
#[test]
fn deploy_manifests_pass_server_dry_run() {
    let c = crate::needs_cluster!("deploy_manifests_pass_server_dry_run");
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    // Namespaced objects need their namespace to exist for a server-side dry run.
    let exists = c.kubectl(&["get", "namespace", "kubectl-drift"]).code() == 0;
    if !exists {
        c.kubectl(&["create", "namespace", "kubectl-drift"]).ok();
    }
    let out = c.kubectl(&["apply", "-k", deploy.to_str().unwrap(), "--dry-run=server"]).ok();
    for what in [
        "serviceaccount/kubectl-drift",
        "clusterrole.rbac.authorization.k8s.io/kubectl-drift-read",
        "role.rbac.authorization.k8s.io/kubectl-drift-state",
        "deployment.apps/kubectl-drift",
    ] {
        assert!(out.contains(what), "{what} missing from: {out}");
    }
    // The watcher's ClusterRole only reads.
    let rendered = c.kubectl(&["kustomize", deploy.to_str().unwrap()]).ok();
    let docs: Vec<&str> = rendered.split("\n---\n").collect();
    let cr = docs.iter().find(|d| d.contains("kind: ClusterRole\n")).unwrap();
    for verb in ["create", "update", "patch", "delete"] {
        assert!(!cr.contains(&format!("- {verb}")), "ClusterRole must be read-only: {cr}");
    }
}

/// `--manifests PATH` is watched like a release: one alert per new drift, one "resolved".
#[ignore = "needs the local control plane"]
#[test]
fn watch_manifests_path() {
    let c = crate::needs_cluster!("watch_manifests_path");
    let ns = unique_ns("watch-mf");
    c.create_namespace(&ns);
    let dir = c.scratch.join("manifests");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("cm.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {ns}\ndata:\n  mode: fast\n"
        ),
    )
    .unwrap();
    c.kubectl(&["apply", "-f", dir.to_str().unwrap()]).ok();
    let rx = Receiver::start();
    let state = c.scratch.join("mf-state.json");
    let run = || {
        c.drift(&[
            "watch",
            "--manifests",
            dir.to_str().unwrap(),
            "-n",
            &ns,
            "--once",
            "--state",
            state.to_str().unwrap(),
            "--webhook",
            &rx.url("/hook"),
        ])
    };
    assert_eq!(run().code(), 0);
    c.kubectl(&["-n", &ns, "patch", "configmap", "settings", "--type", "merge", "-p", r#"{"data":{"mode":"slow"}}"#])
        .ok();
    assert_eq!(run().code(), 1);
    assert_eq!(run().code(), 1);
    c.kubectl(&["-n", &ns, "patch", "configmap", "settings", "--type", "merge", "-p", r#"{"data":{"mode":"fast"}}"#])
        .ok();
    assert_eq!(run().code(), 0);
    let events = rx.events();
    assert_eq!(kinds(&events), vec!["drift", "resolved"]);
    assert_eq!(events[0]["targetType"], "manifests");
    assert_eq!(events[0]["objects"][0]["fields"][0]["path"], "data.mode");
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// `watch --manifests -`: the stream piped in is read once and is a target named `-`; its
/// alert says which field drifted. Nothing piped in is an error, not a quiet watch.
#[ignore = "needs the local control plane"]
#[test]
fn watch_manifests_from_standard_input() {
    let c = crate::needs_cluster!("watch_manifests_from_standard_input");
    let ns = unique_ns("watch-stdin");
    c.create_namespace(&ns);
    let manifest =
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: piped\n  namespace: {ns}\ndata:\n  mode: fast\n");
    let file = c.scratch.join("piped.yaml");
    std::fs::write(&file, &manifest).unwrap();
    c.kubectl(&["apply", "-f", file.to_str().unwrap()]).ok();
    c.kubectl(&["-n", &ns, "patch", "configmap", "piped", "--type", "merge", "-p", r#"{"data":{"mode":"slow"}}"#]).ok();
    let rx = Receiver::start();
    let state = c.scratch.join("stdin-state.json");
    let cmd = format!(
        "cat {} | {} watch --manifests - -n {ns} --once --state {} --webhook {}",
        file.display(),
        env!("CARGO_BIN_EXE_kubectl-drift"),
        state.display(),
        rx.url("/hook")
    );
    let run = c.shell(crate::common::Helm::V4, &cmd, &[]);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    let events = rx.events();
    assert_eq!(kinds(&events), vec!["drift"]);
    assert_eq!(events[0]["targetType"], "manifests");
    assert_eq!(events[0]["objects"][0]["fields"][0]["path"], "data.mode", "{:#}", events[0]);

    let empty = c.drift(&["watch", "--manifests", "-", "-n", &ns, "--once"]);
    assert_eq!(empty.code(), 2, "{}", empty.stdout());
    assert!(empty.stderr().contains("-: standard input is empty"), "{}", empty.stderr());
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// GET `path` from 127.0.0.1:`port` (watch --listen): the status code and the whole response.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let code = out.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, out))
}

/// A changed multi-line value (a ConfigMap's app.yaml) is alerted as its changed lines with their
/// context, the same lines `release` prints, in the Slack text and the webhook's `text`; not as
/// two cut-off copies of the value's first characters.
#[ignore = "needs the local control plane"]
#[test]
fn watch_alerts_a_multi_line_change_as_its_changed_lines() {
    let c = crate::needs_cluster!("watch_alerts_a_multi_line_change_as_its_changed_lines");
    let ns = unique_ns("watch-lines");
    install(&c, &ns);
    let rx = Receiver::start();
    let state = c.scratch.join("state/lines.json");
    let state = state.to_str().unwrap();
    let cm = c.kubectl(&["-n", &ns, "get", "configmap", "shop-config", "-o", "json"]).ok();
    let edited = cm.replace("timeout: 30s", "timeout: 120s").replace("search: true", "search: false");
    assert_ne!(cm, edited, "the chart's app.yaml changed: {cm}");
    c.kubectl_stdin(&["replace", "-f", "-"], &edited).ok();

    let r = round(&c, &ns, &rx, state);
    assert_eq!(r.code(), 1, "{}", r.stderr());
    let slack = rx.slack_texts();
    assert_eq!(slack.len(), 1, "{slack:?}");
    let text = &slack[0];
    assert!(
        text.contains("ConfigMap ") && text.contains("`data[\"app.yaml\"]` changed _by kubectl-replace_:\n```\n@@"),
        "{text}"
    );
    // Every line of the CLI's diff of that field (its ---/+++ header aside) is in the alert.
    let cli = c.drift_with_env(&["release", "shop", "-n", &ns], &[("NO_COLOR", "1")]);
    let cli = cli.stdout();
    let diff: Vec<&str> = cli
        .lines()
        .skip_while(|l| !l.contains("data[\"app.yaml\"]"))
        .skip(1)
        .take_while(|l| l.starts_with("        "))
        .map(|l| &l[8..])
        .filter(|l| !l.starts_with("--- ") && !l.starts_with("+++ "))
        .collect();
    assert!(diff.contains(&"-  timeout: 30s") && diff.contains(&"+  search: false"), "{cli}");
    for line in &diff {
        assert!(text.lines().any(|l| l == *line), "{line:?} of the CLI's diff is not in the alert:\n{text}\n{cli}");
    }
    // The webhook JSON carries the same text beside the event.
    let events = rx.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["text"].as_str(), Some(text.as_str()));
}
