//! The API's handlers in process: each request goes through the router `serve` builds
//! (`tower::ServiceExt::oneshot`), on a server made the way `serve` makes it (`prepare`) from
//! scope results saved in its data directory as a scan leaves them. Its cluster is a recorded API
//! server that answers discovery and nothing else, so no test needs a cluster, and one that
//! reached the cluster by mistake would see an error.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::router;
use crate::app::cli::{Cli, Command};
use crate::app::config::Config;
use crate::app::context::Settings;
use crate::app::environment::Environment;
use crate::app::serve::orphans::OrphansData;
use crate::app::serve::store::DataDir;
use crate::app::serve::{BoxFuture, Saved, Server, VersionsResult, VersionsScan, prepare};
use crate::report::field::{Change, Drift};
use crate::report::orphan_kinds::ExaminedKind;
use crate::report::orphans::{EvidenceClass, OrphanItem, OrphanReport};
use crate::report::target::ReleaseOrigin;
use crate::report::{DriftReport, ObjectReport, ObjectState, ReleaseReport, Status, field_report};
use crate::source::cluster::{Cluster, ClusterParts, Target};
use crate::source::helm::ReleaseStore;
use crate::source::helm::memory::MemoryDriver;
use crate::source::recorded::Recorded;

/// When the saved results finished: 2023-11-14T22:13:20Z.
const FINISHED: i64 = 1_700_000_000;
/// The Secret's values in the saved release result, as the cluster and the chart hold them.
const SECRET_DESIRED: &str = "hunter2-from-the-chart";
const SECRET_LIVE: &str = "hunter2-set-by-hand";

fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A release `shop` with a ConfigMap and a Secret edited by hand, built as the drift engine
/// builds its report (`field_report`, which redacts the Secret's values).
fn drift_report() -> DriftReport {
    let drift = |path: &str, desired: Value, live: Value| Drift {
        path: path.parse().unwrap(),
        change: Change::Changed,
        desired: Some(desired),
        live: Some(live),
        owner: None,
        ignored: None,
    };
    let object = |kind: &str, name: &str, drifts: &[Drift]| ObjectReport {
        fields: drifts.iter().map(|d| field_report(kind, d, false)).collect(),
        ..ObjectReport::new("v1", kind, Some("shop".into()), name, ObjectState::Changed)
    };
    let config = object("ConfigMap", "shop-config", &[drift("data.LOG_LEVEL", json!("info"), json!("debug"))]);
    let secret = object(
        "Secret",
        "shop-credentials",
        &[
            drift("data.password", json!(base64(SECRET_DESIRED)), json!(base64(SECRET_LIVE))),
            drift("stringData.token", json!(SECRET_DESIRED), json!(SECRET_LIVE)),
        ],
    );
    let origin = ReleaseOrigin {
        name: "shop".into(),
        namespace: "shop".into(),
        revision: 3,
        chart: "shop".into(),
        chart_version: "1.2.0".into(),
        helm_status: Some("deployed".into()),
        latest_revision: Some(3),
        ..ReleaseOrigin::default()
    };
    let release = ReleaseReport { objects: vec![config, secret], ..ReleaseReport::new(origin, Status::Drifted) };
    DriftReport::new(vec![release], 2)
}

/// One ConfigMap nothing uses, one in use.
fn orphan_report() -> OrphanReport {
    let kind = ExaminedKind::of_kind("ConfigMap").unwrap();
    let item = |name: &str, class: EvidenceClass, reason: &str| OrphanItem {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some("shop".into()),
        name: name.into(),
        class,
        reasons: vec![reason.into()],
        used_by: Vec::new(),
        age_seconds: Some(86_400 * 40),
        helm_release: None,
        sources: Vec::new(),
        examined: kind,
        leftover: false,
    };
    let items = vec![
        item("old-settings", EvidenceClass::Orphan, "no pod, workload or ingress references it"),
        item("shop-config", EvidenceClass::InUse, "mounted by Deployment shop/shop"),
    ];
    OrphanReport::new(items, true, None, &[kind], 3600)
}

fn versions_result() -> VersionsResult {
    VersionsResult {
        report: json!({"schemaVersion": 1, "rows": [{"name": "ingress-nginx", "installed": "4.7.0", "latest": "4.11.2"}]}),
        csv: "name,installed,latest\ningress-nginx,4.7.0,4.11.2\n".into(),
        findings: 1,
        incomplete: false,
    }
}

/// The version engine of these tests: a scan that never ends (a rescan finds it running).
struct Endless;

impl VersionsScan for Endless {
    fn scan<'a>(&'a self, _: &'a Cluster, _: Option<String>) -> BoxFuture<'a, Result<VersionsResult, String>> {
        Box::pin(std::future::pending())
    }
}

/// A server of cluster `test` whose data directory holds a saved result of each scope, started
/// with `flags` (after `serve --data-dir DIR --cluster-name test`).
fn server(name: &str, flags: &[&str]) -> (Arc<Server>, PathBuf) {
    let dir = std::env::temp_dir().join(format!("drift-api-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = DataDir::open(&dir).unwrap();
    fn saved<T>(data: T) -> Saved<T> {
        Saved { cluster: "test".into(), finished_unix: FINISHED, duration_seconds: 2.5, data }
    }
    data.save_result("releases.json", &saved(drift_report())).unwrap();
    data.save_result("orphans.json", &saved(OrphansData::new(orphan_report()))).unwrap();
    data.save_result("versions.json", &saved(versions_result())).unwrap();

    let dir_arg = dir.display().to_string();
    let mut args = vec!["kubectl-drift", "serve", "--data-dir", &dir_arg, "--cluster-name", "test"];
    args.extend(flags);
    let cli = <Cli as clap::Parser>::try_parse_from(args).unwrap();
    let settings = Settings::resolve(&cli.global, &Environment::default()).unwrap();
    let Command::Serve(serve_args) = cli.command else { panic!("not serve") };
    let client = Recorded::with_discovery().client();
    let cluster = Cluster::new(ClusterParts {
        name: "kind-test".into(),
        client: client.clone(),
        streams: client,
        namespace: "default".into(),
        store: ReleaseStore::new(Arc::new(MemoryDriver::new())),
        target: Target::default(),
    });
    let config = Config::read_as(None).unwrap();
    let prepared = prepare(settings, cluster, serve_args, config, Some(Arc::new(Endless))).unwrap();
    assert!(prepared.server.warnings.is_empty(), "{:?}", prepared.server.warnings);
    (prepared.server, dir)
}

/// Answer one request through the main listener's router (`mounted` beside the API).
async fn ask_with(server: &Arc<Server>, mounted: Router, request: Request<Body>) -> (Response<Body>, String) {
    let response = router(server.clone(), mounted).oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    (Response::from_parts(parts, Body::empty()), String::from_utf8(bytes.to_vec()).unwrap())
}

async fn get(server: &Arc<Server>, uri: &str) -> (Response<Body>, String) {
    ask_with(server, Router::new(), Request::get(uri).body(Body::empty()).unwrap()).await
}

async fn post(server: &Arc<Server>, uri: &str) -> (Response<Body>, String) {
    ask_with(server, Router::new(), Request::post(uri).body(Body::empty()).unwrap()).await
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn header_of(response: &Response<Body>, name: header::HeaderName) -> &str {
    response.headers().get(&name).map_or("", |v| v.to_str().unwrap())
}

#[tokio::test]
async fn status_shows_each_scope_read_from_the_data_directory() {
    let (s, dir) = server("status", &[]);
    let (r, body) = get(&s, "/api/status").await;
    assert_eq!(r.status(), StatusCode::OK, "{body}");
    assert_eq!(header_of(&r, header::CONTENT_TYPE), "application/json");
    assert_eq!(header_of(&r, header::CACHE_CONTROL), "no-store");
    assert_eq!(header_of(&r, header::X_FRAME_OPTIONS), "DENY");
    assert_eq!(header_of(&r, header::LINK), "</openapi.json>; rel=\"service-desc\"");
    let status = json_of(&body);
    assert_eq!(status["clusterName"], "test");
    assert_eq!(status["namespace"], Value::Null);
    // No scan has finished in this process yet.
    assert_eq!(status["ready"], false);
    assert_eq!(status["history"]["retentionSeconds"], 90 * 86_400);
    let scopes = status["scopes"].as_array().unwrap();
    let names: Vec<&str> = scopes.iter().map(|x| x["scope"].as_str().unwrap()).collect();
    assert_eq!(names, ["releases", "versions", "orphans"]);
    for scope in scopes {
        assert_eq!(scope["available"], true, "{scope}");
        assert_eq!(scope["fromDisk"], true, "{scope}");
        assert_eq!(scope["scannedAt"], "2023-11-14T22:13:20Z", "{scope}");
        assert_eq!(scope["durationSeconds"], 2.5, "{scope}");
        assert_eq!(scope["running"], Value::Null, "{scope}");
        assert_eq!(scope["scans"], 0, "{scope}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn releases_as_json_and_csv() {
    let (s, dir) = server("releases", &[]);
    let (r, body) = get(&s, "/api/releases").await;
    assert_eq!(r.status(), StatusCode::OK, "{body}");
    let json = json_of(&body);
    assert_eq!(json["scan"]["scope"], "releases");
    assert_eq!(json["scan"]["fromDisk"], true);
    // The report as `release --all -o json` writes it (no multi-line field here, so no diff).
    assert_eq!(json["report"], serde_json::to_value(drift_report()).unwrap());
    assert_eq!(json["report"]["releases"][0]["name"], "shop");
    assert_eq!(json["report"]["releases"][0]["objects"][0]["fields"][0]["live"], "debug");

    let (r, csv) = get(&s, "/api/releases.csv").await;
    assert_eq!(r.status(), StatusCode::OK, "{csv}");
    assert_eq!(header_of(&r, header::CONTENT_TYPE), "text/csv; charset=utf-8");
    assert_eq!(header_of(&r, header::CONTENT_DISPOSITION), "attachment; filename=\"releases.csv\"");
    let rows: Vec<&str> = csv.lines().collect();
    // A header, then one row per drifted field.
    assert_eq!(rows.len(), 4, "{csv}");
    assert!(rows[1..].iter().any(|r| r.contains("shop-config") && r.contains("data.LOG_LEVEL")), "{csv}");
    assert!(rows[1..].iter().any(|r| r.contains("shop-credentials") && r.contains("data.password")), "{csv}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn orphans_with_ids_and_as_csv() {
    let (s, dir) = server("orphans", &[]);
    let (r, body) = get(&s, "/api/orphans").await;
    assert_eq!(r.status(), StatusCode::OK, "{body}");
    let json = json_of(&body);
    assert_eq!(json["scan"]["scope"], "orphans");
    let items = json["report"]["items"].as_array().unwrap();
    let ids: Vec<(&str, &str)> =
        items.iter().map(|i| (i["id"].as_str().unwrap(), i["class"].as_str().unwrap())).collect();
    assert_eq!(ids, [("ConfigMap:shop/old-settings", "orphan"), ("ConfigMap:shop/shop-config", "in-use")]);
    assert_eq!(json["report"]["summary"]["orphan"], 1);

    // The orphans only, as `orphans -o csv`; every examined object with ?show=all.
    let (r, csv) = get(&s, "/api/orphans.csv").await;
    assert_eq!(r.status(), StatusCode::OK, "{csv}");
    assert_eq!(header_of(&r, header::CONTENT_DISPOSITION), "attachment; filename=\"orphans.csv\"");
    assert!(csv.contains("old-settings") && !csv.contains("shop-config"), "{csv}");
    let (_, all) = get(&s, "/api/orphans.csv?show=all").await;
    assert!(all.contains("old-settings") && all.contains("shop-config"), "{all}");
    let (r, body) = get(&s, "/api/orphans.csv?show=some").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{body}");
    assert!(json_of(&body)["error"].as_str().unwrap().contains("\"some\""), "{body}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn versions_as_saved() {
    let (s, dir) = server("versions", &[]);
    let (r, body) = get(&s, "/api/drift").await;
    assert_eq!(r.status(), StatusCode::OK, "{body}");
    let json = json_of(&body);
    assert_eq!(json["scan"]["scope"], "versions");
    assert_eq!(json["report"], versions_result().report);
    let (r, csv) = get(&s, "/api/drift.csv").await;
    assert_eq!(r.status(), StatusCode::OK, "{csv}");
    assert_eq!(header_of(&r, header::CONTENT_DISPOSITION), "attachment; filename=\"drift.csv\"");
    assert_eq!(csv, versions_result().csv);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn history_is_served_from_the_recorder_and_refused_without_one() {
    let (s, dir) = server("history", &[]);
    // `run` opens the history; until then the server keeps none.
    let (r, body) = get(&s, "/api/history").await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(json_of(&body)["error"].as_str().unwrap().contains("no drift history"), "{body}");

    let location = crate::source::history::HistoryLocation::File(dir.join("history.db"));
    let recorder =
        crate::app::recorder::Recorder::open(location, std::time::Duration::from_secs(86_400)).await.unwrap();
    *s.history.lock().await = Some(recorder);
    s.record_history(&drift_report()).await;

    let (r, body) = get(&s, "/api/history").await;
    assert_eq!(r.status(), StatusCode::OK, "{body}");
    let entries = json_of(&body)["entries"].as_array().unwrap().clone();
    // One entry per drifted field, each under this server's cluster name, all open.
    assert_eq!(entries.len(), 3, "{body}");
    for e in &entries {
        assert_eq!(e["cluster"], "test", "{e}");
        assert_eq!(e["target"]["name"], "shop", "{e}");
        assert_eq!(e["resolvedAt"], Value::Null, "{e}");
    }
    assert!(entries.iter().any(|e| e["object"]["name"] == "shop-config" && e["path"] == "data.LOG_LEVEL"), "{body}");

    // Filtered by release: another release has none.
    let (_, body) = get(&s, "/api/history?release=cart").await;
    assert_eq!(json_of(&body)["entries"], json!([]));
    let (r, body) = get(&s, "/api/history?since=soon").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("since"), "{body}");

    let (r, csv) = get(&s, "/api/history.csv").await;
    assert_eq!(r.status(), StatusCode::OK, "{csv}");
    assert_eq!(header_of(&r, header::CONTENT_DISPOSITION), "attachment; filename=\"history.csv\"");
    assert_eq!(csv.lines().count(), 4, "a header and a row per finding: {csv}");
    assert!(csv.contains("data.LOG_LEVEL"), "{csv}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn openapi_describes_the_routes_served() {
    let (s, dir) = server("openapi", &[]);
    let (r, body) = get(&s, "/openapi.json").await;
    assert_eq!(r.status(), StatusCode::OK, "{body}");
    let doc = json_of(&body);
    assert_eq!(doc["info"]["title"], "kubectl-drift dashboard");
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 19, "{:?}", paths.keys());
    for path in ["/api/status", "/api/releases", "/api/releases.csv", "/api/history", "/api/drift", "/api/orphans"] {
        assert!(paths[path]["get"].is_object(), "{path}: {}", paths[path]);
    }
    assert!(paths["/api/rescan"]["post"]["responses"]["202"].is_object(), "{}", paths["/api/rescan"]);
    // Each path documented with a GET is one the router answers (the body is not read: the
    // events stream never ends).
    for (path, operations) in paths.iter().filter(|(_, o)| o["get"].is_object()) {
        let request = Request::get(path.as_str()).body(Body::empty()).unwrap();
        let response = router(s.clone(), Router::new()).oneshot(request).await.unwrap();
        assert_ne!(response.status(), StatusCode::NOT_FOUND, "{path}: {operations}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn rescan_starts_a_scan_once_and_is_accepted() {
    let (s, dir) = server("rescan", &[]);
    let (r, body) = post(&s, "/api/rescan?scope=versions").await;
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{body}");
    assert_eq!(json_of(&body), json!({"started": ["versions"], "alreadyRunning": []}));
    // The scan runs on (this engine's never ends): asked again, it is not started twice.
    let (r, body) = post(&s, "/api/rescan?scope=versions").await;
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{body}");
    assert_eq!(json_of(&body), json!({"started": [], "alreadyRunning": ["versions"]}));
    let (_, body) = get(&s, "/api/status").await;
    assert!(json_of(&body)["scopes"][1]["running"]["startedAt"].is_string(), "{body}");

    let (r, body) = post(&s, "/api/rescan?scope=everything").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("unknown scope \\\"everything\\\""), "{body}");
    // A page of another site may not drive it.
    let request =
        Request::post("/api/rescan?scope=versions").header("sec-fetch-site", "cross-site").body(Body::empty());
    let (r, body) = ask_with(&s, Router::new(), request.unwrap()).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "{body}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn without_a_token_every_route_is_refused_when_auth_is_required() {
    let (s, dir) = server("auth", &["--auth", "kubernetes"]);
    // A route mounted beside the API (as serve mounts /mcp) is behind the same check.
    let mounted = Router::new().route("/mcp", axum::routing::post(|| async { "reached" }));
    for request in [
        Request::get("/api/status").body(Body::empty()),
        Request::get("/api/releases").body(Body::empty()),
        Request::post("/api/rescan").body(Body::empty()),
        Request::post("/mcp").body(Body::empty()),
    ] {
        let (r, body) = ask_with(&s, mounted.clone(), request.unwrap()).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{body}");
        assert_eq!(header_of(&r, header::WWW_AUTHENTICATE), "Bearer");
        assert!(json_of(&body)["error"].as_str().unwrap().starts_with("not authenticated: no bearer token"), "{body}");
        assert!(!body.contains("shop") && !body.contains("reached"), "{body}");
    }
    // Without --auth the mounted route answers.
    let (open, dir2) = server("auth-none", &[]);
    let (r, body) = ask_with(&open, mounted, Request::post("/mcp").body(Body::empty()).unwrap()).await;
    assert_eq!((r.status(), body.as_str()), (StatusCode::OK, "reached"));
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(dir2);
}

#[tokio::test]
async fn an_unknown_path_is_not_found() {
    let (s, dir) = server("missing", &[]);
    for uri in ["/api/nothing", "/api/releases.json", "/api/orphans/rules/42"] {
        let (r, body) = get(&s, uri).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{uri}: {body}");
        assert!(!body.contains("shop"), "{uri}: {body}");
    }
    // A known path with a method it does not take is not a 404.
    let (r, _) = post(&s, "/api/releases").await;
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_request_metric_labels_each_route_by_the_router_table() {
    let (s, dir) = server("routes", &[]);
    for uri in ["/api/history", "/api/history.csv", "/app.js", "/api/nothing/at/all", "/docs/"] {
        get(&s, uri).await;
    }
    let (_, body) = get(&s, "/metrics").await;
    let label = |route: &str, code: u16| format!("route=\"{route}\",code=\"{code}\"}} 1.0");
    // /api/history has no recorder here: refused, and counted under its own route.
    let requests = body.lines().filter(|l| l.starts_with("kubectl_drift_http_requests_total{")).collect::<Vec<_>>();
    for line in [
        label("/api/history", 503),
        label("/api/history.csv", 503),
        label("/app.js", 200),
        label("other", 404),
        label("/docs", 200),
    ] {
        assert!(requests.iter().any(|l| l.ends_with(&line)), "no {line:?} in:\n{}", requests.join("\n"));
    }
    // A client's own path never becomes a label.
    assert!(!body.contains("/api/nothing"), "{body}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_secret_value_never_appears_in_any_answer() {
    let (s, dir) = server("secret", &[]);
    let location = crate::source::history::HistoryLocation::File(dir.join("history.db"));
    let recorder =
        crate::app::recorder::Recorder::open(location, std::time::Duration::from_secs(86_400)).await.unwrap();
    *s.history.lock().await = Some(recorder);
    s.record_history(&drift_report()).await;
    let hidden = [SECRET_DESIRED.to_string(), SECRET_LIVE.to_string(), base64(SECRET_DESIRED), base64(SECRET_LIVE)];
    let mut redacted = 0;
    for uri in ["/api/status", "/api/releases", "/api/releases.csv", "/api/history", "/api/history.csv", "/metrics"] {
        let (r, body) = get(&s, uri).await;
        assert_eq!(r.status(), StatusCode::OK, "{uri}: {body}");
        for value in &hidden {
            assert!(!body.contains(value.as_str()), "{uri} shows {value}: {body}");
        }
        redacted += body.matches("<redacted, ").count();
    }
    // The Secret's fields are there, redacted (desired and live of two fields, in the JSON and
    // in the CSV): the test looked where the values would be.
    assert!(redacted >= 8, "{redacted} redactions");
    let (_, body) = get(&s, "/api/releases").await;
    let fields = &json_of(&body)["report"]["releases"][0]["objects"][1]["fields"];
    assert_eq!(fields[0]["path"], "data.password", "{fields}");
    assert!(fields[0]["live"].as_str().unwrap().starts_with("<redacted, 19 bytes, sha256:"), "{fields}");
    let _ = std::fs::remove_dir_all(dir);
}
