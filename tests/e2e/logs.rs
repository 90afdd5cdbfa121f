//! Logs end to end (docs/logs.md): the JSON lines of a `serve` run (each scan's span and its
//! duration) and of `watch` rounds (a round's line, each alert's delivery outcome), and `-v`
//! showing the API requests of a one-shot command while stdout stays the report.

use serde_json::Value;

use crate::common::{Cluster, unique_ns};
use crate::watch::{Receiver, install};

/// Every line of `log` as JSON, each with what a log pipeline needs: a UTC RFC 3339 timestamp,
/// a level and one of our targets.
fn json_lines(log: &str) -> Vec<Value> {
    log.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}"));
            let ts = v["timestamp"].as_str().unwrap_or_else(|| panic!("no timestamp: {l}"));
            assert!(ts.ends_with('Z') && ts.parse::<jiff::Timestamp>().is_ok(), "not UTC RFC 3339: {l}");
            assert!(matches!(v["level"].as_str(), Some("ERROR" | "WARN" | "INFO" | "DEBUG" | "TRACE")), "{l}");
            assert!(v["target"].as_str().is_some_and(|t| t.starts_with("kubectl_drift")), "{l}");
            v
        })
        .collect()
}

/// The spans of a line named `name` (the line's own span list, outermost first).
fn span<'a>(line: &'a Value, name: &str) -> Option<&'a Value> {
    line["spans"].as_array()?.iter().find(|s| s["name"] == name)
}

#[ignore = "needs the local control plane"]
#[test]
fn serve_logs_each_scan_as_json_with_its_span_and_duration() {
    let c = crate::needs_cluster!("serve_logs_each_scan_as_json_with_its_span_and_duration");
    let ns = unique_ns("logs-serve");
    c.create_namespace(&ns);
    let data = c.scratch.join("logs-serve-data");
    let args = ["-n", ns.as_str(), "--data-dir", data.to_str().unwrap(), "--interval", "1h", "--cluster-name", "logs"];
    let served = crate::serve::serve_env(&c, &args, &c.kubeconfig, &[("DRIFT_LOG_FORMAT", "json")]);
    served.wait_ready();
    served.wait_log(r#""message":"releases scan finished""#);
    let log = served.wait_log(r#""message":"orphans scan finished""#);
    let lines = json_lines(&log);
    for scope in ["releases", "orphans"] {
        let line = lines
            .iter()
            .find(|l| l["message"] == format!("{scope} scan finished"))
            .unwrap_or_else(|| panic!("no {scope} scan line:\n{log}"));
        assert_eq!(line["level"], "INFO", "{line}");
        assert_eq!((&line["scope"], &line["cluster"], &line["outcome"]), (&scope.into(), &"logs".into(), &"ok".into()));
        assert!(line["duration_ms"].is_u64(), "{line}");
        let scan = span(line, "scan").unwrap_or_else(|| panic!("not inside the scan's span: {line}"));
        assert_eq!((&scan["scope"], &scan["cluster"]), (&scope.into(), &"logs".into()), "{line}");
    }
    let serving = lines.iter().find(|l| l["message"].as_str().is_some_and(|m| m.starts_with("serving the dashboard")));
    assert_eq!(serving.map(|l| l["address"] == served.addr.as_str()), Some(true), "{log}");
    // Default level (info): no API request lines, no debug.
    assert!(lines.iter().all(|l| l["level"] != "DEBUG" && l["level"] != "TRACE"), "{log}");
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn serve_live_logs_each_generation_as_a_releases_scan() {
    let c = crate::needs_cluster!("serve_live_logs_each_generation_as_a_releases_scan");
    let ns = unique_ns("logs-live");
    c.create_namespace(&ns);
    let data = c.scratch.join("logs-live-data");
    let args = ["-n", ns.as_str(), "--data-dir", data.to_str().unwrap(), "--interval", "1h", "--live"];
    let served = crate::serve::serve_env(&c, &args, &c.kubeconfig, &[("DRIFT_LOG_FORMAT", "json")]);
    let log = served.wait_log(r#""message":"live: every release checked""#);
    let lines = json_lines(&log);
    let scan = lines
        .iter()
        .find(|l| l["message"] == "releases scan finished")
        .unwrap_or_else(|| panic!("no releases scan line:\n{log}"));
    assert_eq!((&scan["outcome"], &scan["scope"]), (&"ok".into(), &"releases".into()), "{scan}");
    assert_eq!(span(scan, "scan").map(|s| &s["live"]), Some(&true.into()), "{scan}");
    let generation = lines.iter().find(|l| l["message"] == "live: every release checked").unwrap();
    assert!(generation["duration_ms"].is_u64() && generation["lists"].is_u64(), "{generation}");
    assert!(generation["packed_bytes"].is_u64(), "{generation}");
    assert!(span(generation, "scan").is_some(), "{generation}");
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// One `watch --once` round with JSON logs: its exit code and its log lines.
fn json_round(c: &Cluster, ns: &str, rx: &Receiver, state: &str) -> (i32, String, Vec<Value>) {
    let run = c.drift_with_env(
        &["watch", "shop", "-n", ns, "--once", "--state", state, "--webhook", &rx.url("/hook")],
        &[("DRIFT_LOG_FORMAT", "json")],
    );
    let log = run.stderr();
    assert!(!log.contains(&format!(":{}", rx.port())), "the webhook URL leaked into the log: {log}");
    let lines = json_lines(&log);
    (run.code(), log, lines)
}

#[ignore = "needs the local control plane"]
#[test]
fn watch_logs_rounds_and_each_alerts_delivery_outcome_as_json() {
    let c = crate::needs_cluster!("watch_logs_rounds_and_each_alerts_delivery_outcome_as_json");
    let ns = unique_ns("logs-watch");
    install(&c, &ns);
    let rx = Receiver::start();
    let state = c.scratch.join("state/logs-watch.json");
    let state = state.to_str().unwrap();

    // Drift, delivered.
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=5"]).ok();
    let (code, log, lines) = json_round(&c, &ns, &rx, state);
    assert_eq!(code, 1, "{log}");
    let alert = lines.iter().find(|l| span(l, "alert").is_some()).unwrap_or_else(|| panic!("no alert line:\n{log}"));
    assert_eq!((&alert["level"], &alert["outcome"]), (&"INFO".into(), &"delivered".into()), "{alert}");
    assert!(alert["duration_ms"].is_u64(), "{alert}");
    let s = span(alert, "alert").unwrap();
    assert_eq!(
        (&s["kind"], &s["about"], &s["namespace"], &s["release"]),
        (&"drift".into(), &"release".into(), &ns.as_str().into(), &"shop".into()),
        "{alert}"
    );
    assert!(span(alert, "round").is_some(), "an alert is part of its round: {alert}");
    let round = lines.iter().find(|l| l["message"] == "round finished").unwrap_or_else(|| panic!("{log}"));
    assert_eq!((&round["targets"], &round["drifted"], &round["outcome"]), (&1.into(), &1.into(), &"drifted".into()));
    assert!(round["duration_ms"].is_u64() && span(round, "round").is_some(), "{round}");
    assert_eq!(rx.events().len(), 1);

    // Changed drift, refused by the receiver: the failed delivery is an error line with its cause.
    rx.answer(500);
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=6"]).ok();
    let (code, log, lines) = json_round(&c, &ns, &rx, state);
    assert_eq!(code, 2, "an undelivered alert fails the round: {log}");
    let failed =
        lines.iter().find(|l| l["outcome"] == "failed").unwrap_or_else(|| panic!("no failed delivery:\n{log}"));
    assert_eq!(failed["level"], "ERROR", "{failed}");
    assert!(failed["error"].as_str().is_some_and(|e| e.contains("HTTP status 500")), "{failed}");
    assert_eq!(span(failed, "alert").map(|s| &s["kind"]), Some(&"drift".into()), "{failed}");
    let round = lines.iter().find(|l| l["message"] == "round finished").unwrap_or_else(|| panic!("{log}"));
    assert_eq!((&round["undelivered"], &round["outcome"]), (&1.into(), &"drifted".into()), "{round}");

    // An error that stops the watch (its --listen port is taken) is its last line, as JSON too.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let run =
        c.drift_with_env(&["watch", "shop", "-n", &ns, "--once", "--listen", &addr], &[("DRIFT_LOG_FORMAT", "json")]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    let lines = json_lines(&run.stderr());
    let last = lines.last().unwrap_or_else(|| panic!("no log line: {}", run.stderr()));
    assert_eq!(last["level"], "ERROR", "{last}");
    assert!(last["message"].as_str().is_some_and(|m| m.contains(&format!("failed to listen on {addr}"))), "{last}");
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn v_logs_the_api_requests_of_a_one_shot_command_on_stderr() {
    let c = crate::needs_cluster!("v_logs_the_api_requests_of_a_one_shot_command_on_stderr");
    let ns = unique_ns("logs-v");
    install(&c, &ns);
    // Without -v: the report, and no log line.
    let quiet = c.drift(&["release", "shop", "-n", &ns, "-o", "json"]);
    assert_eq!(quiet.code(), 0, "{}", quiet.stderr());
    assert_eq!(quiet.stderr(), "", "a clean one-shot run logs nothing");
    // -v, text: one line per request with its verb, path, status and duration.
    let text = c.drift(&["release", "shop", "-n", &ns, "-o", "json", "-v"]);
    assert_eq!(text.code(), 0, "{}", text.stderr());
    assert_eq!(text.report()["summary"], quiet.report()["summary"], "stdout stays the report");
    assert!(!text.stdout().contains("API request"));
    let secrets_list = text
        .stderr()
        .lines()
        .find(|l| l.contains(&format!("path=\"/api/v1/namespaces/{ns}/secrets\"")))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no request for the release's Secrets:\n{}", text.stderr()));
    for field in
        [" DEBUG kubectl_drift::api: API request ", "verb=\"list", "method=\"GET\"", "status=200", "duration_ms="]
    {
        assert!(secrets_list.contains(field), "{field:?} missing: {secrets_list}");
    }
    // -v, JSON: every line a request; no header or body, and no span of ours yet (that is -vv).
    let json = c.drift_with_env(&["release", "shop", "-n", &ns, "-o", "json", "-v"], &[("DRIFT_LOG_FORMAT", "json")]);
    assert_eq!(json.code(), 0, "{}", json.stderr());
    let lines = json_lines(&json.stderr());
    assert!(lines.len() >= 3, "{}", json.stderr());
    for l in &lines {
        assert_eq!((&l["target"], &l["message"]), (&"kubectl_drift::api".into(), &"API request".into()), "{l}");
        assert!(
            l["verb"].is_string() && l["path"].is_string() && l["status"].is_u64() && l["duration_ms"].is_u64(),
            "{l}"
        );
        assert!(l.get("spans").is_none_or(|s| s.as_array().is_some_and(Vec::is_empty)), "{l}");
    }
    let env_dir = std::path::PathBuf::from(std::env::var("DRIFT_ENV_DIR").unwrap());
    let token = std::fs::read_to_string(env_dir.join("admin.token")).unwrap();
    assert!(!json.stderr().contains(token.trim()) && !json.stderr().contains("Bearer"), "{}", json.stderr());
    // -vv adds the release check's span, with the release's fields and how it went.
    let vv = c.drift_with_env(&["release", "shop", "-n", &ns, "-o", "json", "-vv"], &[("DRIFT_LOG_FORMAT", "json")]);
    let lines = json_lines(&vv.stderr());
    let checked = lines.iter().find(|l| l["message"] == "release checked").unwrap_or_else(|| panic!("{}", vv.stderr()));
    assert_eq!((&checked["outcome"], &checked["level"]), (&"clean".into(), &"DEBUG".into()), "{checked}");
    let s = span(checked, "release_check").unwrap_or_else(|| panic!("{checked}"));
    assert_eq!((&s["namespace"], &s["release"]), (&ns.as_str().into(), &"shop".into()), "{checked}");
    assert!(
        lines.iter().any(|l| l["target"] == "kubectl_drift::api" && span(l, "release_check").is_some()),
        "a release's requests are inside its span:\n{}",
        vv.stderr()
    );
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
