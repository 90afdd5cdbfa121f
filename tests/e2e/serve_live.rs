//! `kubectl drift serve --live` end to end: the releases result follows out-of-band edits and new
//! release revisions within seconds, without a rescan, and `/api/events` (Server-Sent Events)
//! announces each change; no Secret value in the API, the events or the log.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Cluster, Helm, fixture, unique_ns};
use crate::serve::{Served, assert_no_canary, http, serve};

/// An open `GET /api/events`, its lines collected by a thread.
struct Events {
    text: Arc<Mutex<String>>,
    _stream: TcpStream,
}

impl Events {
    fn open(addr: &str) -> Events {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n").unwrap();
        let text = Arc::new(Mutex::new(String::new()));
        let t2 = text.clone();
        let reader = s.try_clone().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(reader).lines() {
                let Ok(line) = line else { break };
                let mut t = t2.lock().unwrap();
                t.push_str(&line);
                t.push('\n');
            }
        });
        let e = Events { text, _stream: s };
        e.wait("the ready event", Duration::from_secs(10), |t| t.contains("event: ready"));
        e
    }

    fn text(&self) -> String {
        self.text.lock().unwrap().clone()
    }

    /// The `update` events' data so far.
    fn updates(&self) -> Vec<Value> {
        let text = self.text();
        let mut out = Vec::new();
        let mut update = false;
        for line in text.lines() {
            if line.starts_with("event: ") {
                update = line == "event: update";
            } else if let Some(d) = line.strip_prefix("data: ")
                && update
            {
                out.push(serde_json::from_str(d).unwrap_or_else(|e| panic!("event data {d:?}: {e}")));
            }
        }
        out
    }

    fn wait(&self, what: &str, limit: Duration, ok: impl Fn(&str) -> bool) {
        let t = Instant::now();
        while !ok(&self.text()) {
            assert!(t.elapsed() < limit, "no {what} within {limit:?} on /api/events:\n{}", self.text());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn release(s: &Served) -> (Value, Value) {
    let r = s.get("/api/releases").json();
    let rel = r["report"]["releases"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "shop").cloned())
        .unwrap_or_else(|| panic!("no release shop: {r:#}"));
    (rel, r["scan"].clone())
}

/// Poll /api/releases until the release `ok`s; returns how long it took from `since`.
fn wait_release(s: &Served, since: Instant, limit: Duration, ok: impl Fn(&Value) -> bool) -> (Duration, Value) {
    loop {
        let (rel, _) = release(s);
        if ok(&rel) {
            return (since.elapsed(), rel);
        }
        assert!(since.elapsed() < limit, "not within {limit:?}: {rel:#}\nserve log:\n{}", s.log.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn metric(s: &Served, name: &str) -> f64 {
    let body = http(&s.health, "GET", "/metrics", &[], None).body;
    body.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{body}"))
}

fn scans(scan: &Value) -> u64 {
    scan["scans"].as_u64().unwrap()
}

/// A namespace `prefix-*` with the shop chart installed as `shop`, and `serve --live` on it
/// (ready); returns the namespace, the data directory and the server.
fn start(c: &Cluster, prefix: &str) -> (String, std::path::PathBuf, Served) {
    let ns = unique_ns(prefix);
    c.create_namespace(&ns);
    let chart = fixture("charts/shop");
    c.helm(Helm::V4, &["install", "shop", chart.to_str().unwrap(), "-n", &ns, "--set", "worker.minReplicas=1"]).ok();
    let data = c.scratch.join(format!("{prefix}-data"));
    let s = serve(c, &["-n", &ns, "--live", "--interval", "1h", "--data-dir", data.to_str().unwrap()]);
    s.wait_ready();
    (ns, data, s)
}

#[ignore = "needs the local control plane"]
#[test]
fn serve_live_follows_edits_and_new_revisions_without_a_rescan() {
    let c: Cluster = crate::needs_cluster!("serve_live_follows_edits_and_new_revisions_without_a_rescan");
    let (ns, data, s) = start(&c, "serve-live");
    let chart = fixture("charts/shop");
    let chart = chart.to_str().unwrap();
    let (rel, scan) = release(&s);
    assert_eq!(rel["status"], "clean", "{rel:#}");
    assert_eq!(scan["live"], true, "{scan:#}");
    let first_scans = scans(&scan);
    let events = Events::open(&s.addr);
    let k = |args: &[&str]| {
        let mut v = vec!["-n", ns.as_str()];
        v.extend_from_slice(args);
        c.kubectl(&v).ok();
    };

    // An edit by hand: the result shows it within 5 s, and an event says so.
    let t = Instant::now();
    k(&["scale", "deploy/shop-web", "--replicas=5"]);
    let (took, rel) = wait_release(&s, t, Duration::from_secs(5), |r| r["status"] == "drifted");
    assert!(rel.to_string().contains("spec.replicas"), "{rel:#}");
    events.wait("a drifted update", Duration::from_secs(5).saturating_sub(t.elapsed()), |e| e.contains("\"drifted\""));
    eprintln!("edit -> /api/releases: {took:?}; event after {:?}", t.elapsed());

    // Fixed: clean within 5 s.
    let t = Instant::now();
    k(&["scale", "deploy/shop-web", "--replicas=2"]);
    let (took, _) = wait_release(&s, t, Duration::from_secs(5), |r| r["status"] == "clean");
    eprintln!("fix -> clean: {took:?}");

    // A Secret edited and put back: seen through the cache's fingerprints, its values never shown.
    let patch = |v: &str| format!(r#"{{"stringData":{{"password":"{v}"}}}}"#);
    let t = Instant::now();
    k(&["patch", "secret", "shop-secret", "--type", "merge", "-p", &patch("changed-by-hand-pw")]);
    let (_, rel) = wait_release(&s, t, Duration::from_secs(5), |r| r["status"] == "drifted");
    assert!(rel.to_string().contains("data.password"), "{rel:#}");
    assert_no_canary(&s.get("/api/releases").body, "/api/releases");
    assert_no_canary(&s.get("/api/releases.csv").body, "/api/releases.csv");
    let t = Instant::now();
    k(&["patch", "secret", "shop-secret", "--type", "merge", "-p", &patch("s3cr3t-Pa55w0rd-do-not-print")]);
    wait_release(&s, t, Duration::from_secs(5), |r| r["status"] == "clean");

    // Drift made by hand, then a new revision that makes it the desired state: picked up
    // without a restart or a rescan.
    k(&["scale", "deploy/shop-web", "--replicas=4"]);
    wait_release(&s, Instant::now(), Duration::from_secs(5), |r| r["status"] == "drifted");
    c.helm(Helm::V4, &["upgrade", "shop", chart, "-n", &ns, "--reuse-values", "--set", "replicaCount=4"]).ok();
    let t = Instant::now();
    let (_, rel) = wait_release(&s, t, Duration::from_secs(10), |r| r["status"] == "clean");
    assert_eq!(rel["revision"], 2, "{rel:#}");

    // A new release appears, and an uninstalled one goes, without a rescan.
    let note = fixture("charts/note");
    c.helm(Helm::V4, &["install", "note", note.to_str().unwrap(), "-n", &ns]).ok();
    let listed = |name: &str| {
        let r = s.get("/api/releases").json();
        r["report"]["releases"].as_array().unwrap().iter().any(|x| x["name"] == name)
    };
    let t = Instant::now();
    while !listed("note") {
        assert!(t.elapsed() < Duration::from_secs(10), "note not listed:\n{}", s.log.lock().unwrap());
        std::thread::sleep(Duration::from_millis(50));
    }
    c.helm(Helm::V4, &["uninstall", "note", "-n", &ns]).ok();
    let t = Instant::now();
    while listed("note") {
        assert!(t.elapsed() < Duration::from_secs(10), "note still listed:\n{}", s.log.lock().unwrap());
        std::thread::sleep(Duration::from_millis(50));
    }

    // No rescan happened: every change came from the watch streams.
    let (_, scan) = release(&s);
    assert_eq!(scans(&scan), first_scans, "{scan:#}");
    let updates = events.updates();
    let statuses: Vec<&str> = updates
        .iter()
        .filter(|u| u["scope"] == "releases" && u["reason"] == "watch")
        .filter_map(|u| u["changed"].as_array())
        .flatten()
        .filter(|r| r["name"] == "shop")
        .filter_map(|r| r["status"].as_str())
        .collect();
    let mut transitions: Vec<&str> = statuses.clone();
    transitions.dedup();
    assert_eq!(transitions, ["drifted", "clean", "drifted", "clean", "drifted", "clean"], "{updates:#?}");
    assert_no_canary(&events.text(), "/api/events");
    assert_no_canary(&s.log.lock().unwrap(), "the serve log");
    let head = events.text().to_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(head.contains("content-security-policy: default-src 'self'"), "{head}");

    let openapi = s.get("/openapi.json").json();
    assert!(openapi["paths"]["/api/events"]["get"].is_object(), "/api/events is documented");

    // Metrics: the watch streams' counters and the event-to-update time of each update.
    assert!(metric(&s, "kubectl_drift_watch_events_total") > 0.0);
    assert!(metric(&s, "kubectl_drift_watch_streams") >= 2.0, "release storage and at least one kind");
    let updates_total = metric(&s, "kubectl_drift_live_updates_total");
    assert!(updates_total >= 6.0, "{updates_total}");
    assert_eq!(metric(&s, "kubectl_drift_event_to_update_seconds_count"), updates_total);
    assert!(metric(&s, "kubectl_drift_event_to_update_seconds_sum") < updates_total * 5.0);

    // Release storage in SQL cannot be watched: refused before anything starts.
    let r = c.drift_with_env(
        &["serve", "--live", "--listen", "127.0.0.1:0", "--health-listen", "off", "--data-dir", data.to_str().unwrap()],
        &[("HELM_DRIVER", "sql"), ("HELM_DRIVER_SQL_CONNECTION_STRING", "postgres://x@127.0.0.1:1/x")],
    );
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(r.stderr().contains("--live") && r.stderr().contains("sql"), "{}", r.stderr());

    // A rescan rebuilds the cache and checks everything again (the safety net).
    let r = s.post("/api/rescan?scope=releases", &serde_json::json!({}));
    assert_eq!(r.status, 202, "{}", r.body);
    s.wait_scans("releases", first_scans + 1);
    assert_eq!(release(&s).0["status"], "clean");
    drop(s);
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// The page in a real browser follows an edit through `/api/events` alone: its status polling is
/// switched off in the page first, so only the pushed event can bring the change.
#[ignore = "needs the local control plane"]
#[test]
fn serve_live_page_updates_from_events_without_polling() {
    let c: Cluster = crate::needs_cluster!("serve_live_page_updates_from_events_without_polling");
    let (ns, _, s) = start(&c, "serve-live-page");
    let b = crate::browser::Browser::start(&c);
    b.go(&format!("http://{}/?tab=releases", s.addr));
    let badge = format!(
        "const d = document.querySelector('details.release[data-release=\"{ns}/shop\"] .badge'); return d ? d.textContent : null"
    );
    let t = Instant::now();
    while b.js(&badge, serde_json::json!([])) != "clean" {
        assert!(t.elapsed() < Duration::from_secs(30), "no clean release on the page");
        std::thread::sleep(Duration::from_millis(100));
    }
    b.wait("the live tag", "return [...document.querySelectorAll('#scans .tag')].some(t => t.textContent === 'live')");
    // No more polling: the timers already set are cleared, and any set from now on never fires.
    b.js(
        "const last = setTimeout(() => 0, 0); for (let i = 0; i <= last; i++) clearTimeout(i); window.setTimeout = () => 0; return true",
        serde_json::json!([]),
    );
    let t = Instant::now();
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=5"]).ok();
    loop {
        let v = b.js(&badge, serde_json::json!([]));
        if v == "drifted" {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "the page still shows {v} after 5 s\n{}", s.log.lock().unwrap());
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("edit -> page: {:?}", t.elapsed());
    drop(b);
    drop(s);
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
