//! The HTTP surface of `serve`: the page, the JSON/CSV API, health and metrics. Every response
//! carries `Link: </openapi.json>; rel="service-desc"`, a Content-Security-Policy that allows
//! only the server itself, `X-Content-Type-Options: nosniff` and `X-Frame-Options: DENY`.
//! POSTs must be `application/json` (415), same-origin (403) and at most 64 KiB (413).

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, FromRequest, MatchedPath, Query, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};

use super::auth::Decision;
use super::orphans::{check_id, match_count, parse_rule};
use super::scope::Scope;
use super::store::{Ignore, StoredRule};
use super::{Server, lock};
use crate::app::metrics;
use crate::report::duration::{now, rfc3339_utc};
use crate::report::orphans::EvidenceClass;

const BODY_LIMIT: usize = 64 * 1024;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// An error answer: `{"error": "..."}` with its status.
#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub String);

#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// What was wrong, naming the bad id, rule or parameter.
    pub error: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, axum::Json(ErrorBody { error: self.1 })).into_response()
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg.into())
}

/// A JSON request body: `Content-Type: application/json` exactly (415 otherwise), parsed with a
/// 400 that says what is wrong.
pub struct StrictJson<T>(pub T);

impl<S: Send + Sync, T: for<'de> Deserialize<'de>> FromRequest<S> for StrictJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let ct = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let media = ct.split(';').next().unwrap_or("").trim();
        if !media.eq_ignore_ascii_case("application/json") {
            return Err(ApiError(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("send the body as Content-Type: application/json (got {:?})", ct),
            ));
        }
        let body = Bytes::from_request(req, state).await.map_err(|e| {
            ApiError(e.status(), format!("request body: {} (at most {BODY_LIMIT} bytes)", e.body_text()))
        })?;
        serde_json::from_slice(&body).map(StrictJson).map_err(|e| bad(format!("invalid request body: {e}")))
    }
}

/// A scope's scan, as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScanInfo {
    pub scope: Scope,
    /// Whether this server runs this scope.
    pub available: bool,
    /// When the result shown finished (RFC 3339); null before the first scan.
    pub scanned_at: Option<String>,
    pub duration_seconds: Option<f64>,
    /// The result was read from the data directory at start (an earlier run's).
    pub from_disk: bool,
    /// The scan in progress, if any.
    pub running: Option<Progress>,
    /// The last scan's error (the result shown is then the one before).
    pub last_error: Option<String>,
    pub last_error_at: Option<String>,
    /// Scans finished by this process.
    pub scans: u64,
    /// The result is kept current by watch streams between scans (`serve --live`, releases only);
    /// `GET /api/events` announces each change.
    pub live: bool,
}

/// A running scan's progress: elapsed time against the previous scan's duration.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub started_at: String,
    pub elapsed_seconds: f64,
    /// How long the previous scan took, if known.
    pub expected_seconds: Option<f64>,
    /// Elapsed over expected, at most 99.
    pub percent: Option<u8>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusResponse {
    pub cluster_name: String,
    /// The scanned namespace; null for all.
    pub namespace: Option<String>,
    pub ready: bool,
    pub scopes: Vec<ScanInfo>,
    /// Problems found at start (unreadable saved results).
    pub warnings: Vec<String>,
    /// The drift history this server keeps (`GET /api/history`); null with `--history off`.
    pub history: Option<HistoryInfo>,
}

/// The drift history a server keeps.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryInfo {
    /// `--history-retention` in seconds: how far back the history (and the page's strips) can go.
    pub retention_seconds: u64,
}

/// A scope's result: the scan information and the report (null before the first scan).
#[derive(Serialize, ToSchema)]
pub struct ReportResponse {
    pub scan: ScanInfo,
    /// The same report as the CLI's `-o json` (docs/output.md): `release --all` plus a `diff`
    /// (the text output's line diff) per multi-line field for /api/releases, `orphans --show all`
    /// plus an `id` per item for /api/orphans, the version report for /api/drift.
    #[schema(value_type = Object)]
    pub report: Option<serde_json::Value>,
}

#[derive(Deserialize, ToSchema)]
pub struct IgnoreRequest {
    /// Finding ids from `GET /api/orphans` (`Kind:namespace/name` or `Kind:name`).
    pub ids: Vec<String>,
    #[serde(default)]
    pub note: String,
}

#[derive(Serialize, ToSchema)]
pub struct IgnoresResponse {
    pub ignores: Vec<Ignore>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleRequest {
    /// `orphans --ignore` syntax: `KIND`, `KIND:NAME`, `KIND:NAMESPACE/NAME` (globs), or
    /// `kind=..,namespace=..,name=..,name_regex=..,source=..`.
    pub rule: String,
    #[serde(default)]
    pub note: String,
    /// Only count the matches; save nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// A dashboard rule with how many of the last scan's orphans it matches.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleView {
    /// Null for a dry run.
    pub id: Option<String>,
    pub rule: String,
    pub note: String,
    pub created_at: Option<String>,
    pub matches: usize,
}

/// A rule from the config file (read-only here).
#[derive(Serialize, ToSchema)]
pub struct ConfigRule {
    /// `ignore` or `protect`.
    pub list: String,
    /// Where it comes from and its note.
    pub description: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RulesResponse {
    pub rules: Vec<RuleView>,
    pub config_rules: Vec<ConfigRule>,
    pub ignores: Vec<Ignore>,
}

#[derive(Deserialize, ToSchema)]
pub struct DeleteRuleRequest {
    pub id: String,
}

#[derive(Deserialize, ToSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Export,
    Delete,
}

#[derive(Deserialize, ToSchema)]
pub struct CommandsRequest {
    pub ids: Vec<String>,
    pub action: Action,
}

#[derive(Serialize, ToSchema)]
pub struct Skipped {
    pub id: String,
    pub reason: String,
}

#[derive(Serialize, ToSchema)]
pub struct CommandsResponse {
    /// The bash script `orphans --script` writes, for the selected orphans only.
    pub script: String,
    /// Selected findings left out (protected, in use, managed, ignored), with why.
    pub skipped: Vec<Skipped>,
}

#[derive(Deserialize, ToSchema)]
pub struct RescanQuery {
    /// `versions`, `orphans` or `releases`; every scope when absent.
    pub scope: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RescanResponse {
    pub started: Vec<Scope>,
    /// Scopes whose scan was already running (not started twice).
    pub already_running: Vec<Scope>,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "kubectl-drift dashboard",
        description = "Read-only view of config drift (Helm releases), version drift and orphans. POST bodies are application/json; with --auth kubernetes every request needs a bearer token."
    ),
    paths(
        status,
        releases,
        releases_csv,
        drift,
        drift_csv,
        history,
        history_csv,
        orphans_json,
        orphans_csv,
        rescan,
        ignore,
        unignore,
        rules_list,
        rules_add,
        rules_delete,
        commands,
        super::live::events,
        healthz,
        readyz,
        metrics
    ),
    components(schemas(ErrorBody))
)]
pub struct ApiDoc;

/// The main listener's router. `mounted`: routes served beside the API, behind the same checks
/// (serve's `/mcp`, built by [`super::run`]).
pub fn router(server: Arc<Server>, mounted: Router) -> Router {
    let docs = utoipa_swagger_ui::SwaggerUi::new("/docs")
        .url("/openapi.json", ApiDoc::openapi())
        .config(utoipa_swagger_ui::Config::default().validator_url("none").try_it_out_enabled(true));
    let api = Router::new()
        .route("/", get(page))
        .route("/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
        .route("/api/status", get(status))
        .route("/api/events", get(super::live::events))
        .route("/api/releases", get(releases))
        .route("/api/releases.csv", get(releases_csv))
        .route("/api/history", get(history))
        .route("/api/history.csv", get(history_csv))
        .route("/api/drift", get(drift))
        .route("/api/drift.csv", get(drift_csv))
        .route("/api/orphans", get(orphans_json))
        .route("/api/orphans.csv", get(orphans_csv))
        .route("/api/rescan", post(rescan))
        .route("/api/orphans/ignore", post(ignore))
        .route("/api/orphans/unignore", post(unignore))
        .route("/api/orphans/rules", get(rules_list).post(rules_add))
        .route("/api/orphans/rules/delete", post(rules_delete))
        .route("/api/orphans/commands", post(commands))
        .merge(health_routes())
        .with_state(server.clone())
        .merge(docs)
        .merge(mounted)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn_with_state(server.clone(), authenticate))
        .layer(middleware::from_fn(same_origin));
    api.layer(middleware::from_fn_with_state(server, headers))
}

fn health_routes() -> Router<Arc<Server>> {
    Router::new().route("/healthz", get(healthz)).route("/readyz", get(readyz)).route("/metrics", get(metrics))
}

/// The health listener's router: `/healthz`, `/readyz` and `/metrics` only, no inventory.
pub fn health_router(server: Arc<Server>) -> Router {
    health_routes().with_state(server.clone()).layer(middleware::from_fn_with_state(server, headers))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

async fn page() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

const CSP: &str =
    "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
/// Swagger UI sets style attributes.
const CSP_DOCS: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

async fn headers(State(server): State<Arc<Server>>, req: Request, next: Next) -> Response {
    let docs = req.uri().path().starts_with("/docs");
    let api = req.uri().path().starts_with("/api/");
    let route = route_label(&req);
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(header::LINK, HeaderValue::from_static("</openapi.json>; rel=\"service-desc\""));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(if docs { CSP_DOCS } else { CSP }));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if api {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    *lock(&server.requests_total).entry((route, res.status().as_u16())).or_default() += 1;
    res
}

/// A bounded label for the request metric: the route the router matched (its template, so the
/// label set is the router's own route table, never a client's path), `/docs` for the API
/// browser's files and `other` for what no route matched.
fn route_label(req: &Request) -> String {
    match req.extensions().get::<MatchedPath>().map(MatchedPath::as_str) {
        Some(path) if path.starts_with("/docs") => "/docs".into(),
        Some(path) => path.to_string(),
        None => "other".into(),
    }
}

/// POSTs from another origin are refused (a page elsewhere must not drive this API). The browser's
/// own word comes first: `Sec-Fetch-Site` (sent by every current browser) of `same-origin` or
/// `none` (typed or bookmarked) passes and any other value is refused, whatever the Host: behind
/// `kubectl proxy` and the API server's service proxy the Host that reaches us is the API
/// server's, not the page's, so comparing Origin with Host would refuse the page's own POSTs.
/// Without that header (older browsers, scripts) an Origin must name the Host; a request with
/// neither is not from a browser page and passes (the token check still applies). The same
/// rules as Go's `net/http.CrossOriginProtection`.
async fn same_origin(req: Request, next: Next) -> Response {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let h = req.headers();
        match h.get("sec-fetch-site").map(|v| v.to_str().unwrap_or("?")) {
            Some("same-origin" | "none") => {}
            Some(site) => {
                return ApiError(
                    StatusCode::FORBIDDEN,
                    format!("cross-origin request refused (Sec-Fetch-Site {site:?})"),
                )
                .into_response();
            }
            None => {
                let host = h.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
                if let Some(origin) = h.get(header::ORIGIN) {
                    let origin = origin.to_str().unwrap_or("?");
                    let same = origin == format!("http://{host}") || origin == format!("https://{host}");
                    if !same {
                        return ApiError(
                            StatusCode::FORBIDDEN,
                            format!("cross-origin request refused (Origin {origin:?}, Host {host:?})"),
                        )
                        .into_response();
                    }
                }
            }
        }
    }
    next.run(req).await
}

async fn authenticate(State(server): State<Arc<Server>>, req: Request, next: Next) -> Response {
    let Some(auth) = &server.auth else { return next.run(req).await };
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim);
    // MCP's requests are POSTs, yet every tool only reads: /mcp is authorised as a GET.
    let method = if req.uri().path() == "/mcp" { &Method::GET } else { req.method() };
    match auth.decide(&server.cluster(), token, method).await {
        Decision::Allowed { .. } => next.run(req).await,
        Decision::Unauthenticated(why) => {
            let mut r = ApiError(StatusCode::UNAUTHORIZED, format!("not authenticated: {why}")).into_response();
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            r
        }
        Decision::Forbidden { reason, .. } => {
            ApiError(StatusCode::FORBIDDEN, format!("forbidden: {reason}")).into_response()
        }
        Decision::Unavailable(why) => {
            ApiError(StatusCode::SERVICE_UNAVAILABLE, format!("could not check the token: {why}")).into_response()
        }
    }
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn csv_response(name: &str, body: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
        ],
        body,
    )
        .into_response()
}

/// `{"scan": ..., "report": <bytes>}` without reserialising the report.
fn report_body(scan: &ScanInfo, report: Option<&[u8]>) -> Vec<u8> {
    let mut out = b"{\"scan\":".to_vec();
    out.extend(serde_json::to_vec(scan).expect("serialises"));
    out.extend(b",\"report\":");
    out.extend(report.unwrap_or(b"null"));
    out.push(b'}');
    out
}

fn not_yet(scope: Scope, server: &Server) -> ApiError {
    if !server.enabled().contains(&scope) {
        return ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the {} scope is not available in this server", scope.name()),
        );
    }
    ApiError(StatusCode::SERVICE_UNAVAILABLE, format!("no {} scan has finished yet", scope.name()))
}

#[utoipa::path(get, path = "/api/status", responses((status = 200, body = StatusResponse)))]
async fn status(State(s): State<Arc<Server>>) -> axum::Json<StatusResponse> {
    axum::Json(StatusResponse {
        cluster_name: s.cluster_name.clone(),
        namespace: s.namespace.clone(),
        ready: s.ready(),
        scopes: Scope::ALL.into_iter().map(|x| s.scan_info(x)).collect(),
        warnings: s.warnings.clone(),
        history: s.history_retention.map(|r| HistoryInfo { retention_seconds: r.as_secs() }),
    })
}

/// Config drift of every Helm release (`release --all`), each multi-line field with its line
/// diff (`diff`).
#[utoipa::path(get, path = "/api/releases", responses((status = 200, body = ReportResponse)))]
async fn releases(State(s): State<Arc<Server>>) -> Response {
    let saved = lock(&s.releases).saved.clone();
    let report = saved.map(|x| super::releases::report_json(&x.data));
    json_response(StatusCode::OK, report_body(&s.scan_info(Scope::Releases), report.as_deref()))
}

/// Config drift as CSV, one row per drifted field.
#[utoipa::path(get, path = "/api/releases.csv", responses((status = 200, content_type = "text/csv", body = String), (status = 503, body = ErrorBody)))]
async fn releases_csv(State(s): State<Arc<Server>>) -> Result<Response, ApiError> {
    let saved = lock(&s.releases).saved.clone().ok_or_else(|| not_yet(Scope::Releases, &s))?;
    let mut out = Vec::new();
    crate::render::csv::releases(&mut out, &saved.data).expect("writes to memory");
    Ok(csv_response("releases.csv", out))
}

/// `/api/history` and `/api/history.csv` query parameters.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct HistoryQuery {
    /// Only findings open now or seen within this long (7d, 12h, ...)
    pub since: Option<String>,
    /// Only this release (or target) name
    pub release: Option<String>,
    /// Only targets in this namespace
    pub namespace: Option<String>,
    /// Only this cluster (a history in PostgreSQL may be shared by a fleet; this server records
    /// under its `clusterName` from `/api/status`)
    pub cluster: Option<String>,
}

/// The drift history's entries the query asks for (503 when the server keeps none).
async fn history_report(s: &Server, q: &HistoryQuery) -> Result<crate::report::history::HistoryReport, ApiError> {
    let since = match q.since.as_deref() {
        Some(text) => {
            Some(crate::report::duration::Span::parse(text).map_err(|e| bad(format!("since: {e}")))?.as_secs())
        }
        None => None,
    };
    let filter = crate::report::history::HistoryFilter {
        cluster: q.cluster.clone(),
        namespace: q.namespace.clone(),
        target: q.release.clone(),
        since: since.map(|s| now().saturating_sub(i64::try_from(s).unwrap_or(i64::MAX))),
    };
    let mut history = s.history.lock().await;
    let recorder = history
        .as_mut()
        .ok_or_else(|| ApiError(StatusCode::SERVICE_UNAVAILABLE, "no drift history is kept (--history off)".into()))?;
    let entries =
        recorder.entries(&filter).await.map_err(|e| ApiError(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    Ok(crate::report::history::HistoryReport::new(entries))
}

/// The drift history (as `kubectl drift history -o json`): each finding's first and last seen
/// time, when it was resolved, its episodes and managers, and the intervals it was open (the
/// page's strips), newest first.
#[utoipa::path(get, path = "/api/history", params(HistoryQuery),
    responses((status = 200, description = "{\"schemaVersion\": 1, \"entries\": [{\"cluster\", \"target\": {\"kind\", \"name\", \"namespace\"}, \"object\": {\"kind\", \"namespace\", \"name\"}, \"path\", \"firstSeen\", \"lastSeen\", \"resolvedAt\" (null while open), \"episodes\", \"managers\": [...], \"intervals\": [{\"start\", \"end\" (null while open)}]}]} (times RFC 3339, UTC; docs/history.md)", content_type = "application/json", body = String),
              (status = 400, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn history(State(s): State<Arc<Server>>, Query(q): Query<HistoryQuery>) -> Result<Response, ApiError> {
    let report = history_report(&s, &q).await?;
    Ok(json_response(StatusCode::OK, serde_json::to_vec(&report).expect("serialises")))
}

/// The drift history as CSV, one row per finding (as `kubectl drift history -o csv`).
#[utoipa::path(get, path = "/api/history.csv", params(HistoryQuery),
    responses((status = 200, content_type = "text/csv", body = String), (status = 400, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn history_csv(State(s): State<Arc<Server>>, Query(q): Query<HistoryQuery>) -> Result<Response, ApiError> {
    let report = history_report(&s, &q).await?;
    let mut out = Vec::new();
    crate::render::history::csv(&report, &mut out).expect("writes to memory");
    Ok(csv_response("history.csv", out))
}

/// Version drift.
#[utoipa::path(get, path = "/api/drift", responses((status = 200, body = ReportResponse)))]
async fn drift(State(s): State<Arc<Server>>) -> Response {
    let saved = lock(&s.versions).saved.clone();
    let report = saved.map(|x| serde_json::to_vec(&x.data.report).expect("serialises"));
    json_response(StatusCode::OK, report_body(&s.scan_info(Scope::Versions), report.as_deref()))
}

/// Version drift as CSV.
#[utoipa::path(get, path = "/api/drift.csv", responses((status = 200, content_type = "text/csv", body = String), (status = 503, body = ErrorBody)))]
async fn drift_csv(State(s): State<Arc<Server>>) -> Result<Response, ApiError> {
    let saved = lock(&s.versions).saved.clone().ok_or_else(|| not_yet(Scope::Versions, &s))?;
    Ok(csv_response("drift.csv", saved.data.csv.clone().into_bytes()))
}

/// The orphans view (saved scan + dashboard ignores and rules), rebuilt when either changed.
pub(super) fn orphans_view(
    s: &Server,
) -> Option<(Arc<super::orphans::View>, Arc<super::Saved<super::orphans::OrphansData>>)> {
    let saved = lock(&s.orphans).saved.clone()?;
    let mut cache = lock(&s.orphans_view);
    // A view reads its scan's items by position: only the scan it was built from will do (a
    // scan may have finished since the cached one was built).
    if let Some((built_of, v)) = cache.as_ref()
        && std::ptr::eq(built_of.as_ptr(), Arc::as_ptr(&saved))
    {
        return Some((v.clone(), saved));
    }
    let v = Arc::new(super::orphans::view(&saved.data, &s.state(), &s.orphans_cli_flags()));
    *cache = Some((Arc::downgrade(&saved), v.clone()));
    Some((v, saved))
}

/// Orphans: every examined object with its class, after the config's and the dashboard's rules.
#[utoipa::path(get, path = "/api/orphans", responses((status = 200, body = ReportResponse)))]
async fn orphans_json(State(s): State<Arc<Server>>) -> Response {
    let Some((view, _)) = orphans_view(&s) else {
        return json_response(StatusCode::OK, report_body(&s.scan_info(Scope::Orphans), None));
    };
    // The body is streamed: the view's items are inflated a piece at a time as they are sent.
    let head = report_body(&s.scan_info(Scope::Orphans), Some(b""));
    let (head, tail) = head.split_at(head.len() - 1);
    let pieces = std::iter::once(Bytes::copy_from_slice(head))
        .chain(view.items_json_chunks())
        .chain(std::iter::once(Bytes::copy_from_slice(tail)))
        .map(Ok::<_, std::convert::Infallible>);
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], Body::from_stream(futures::stream::iter(pieces)))
        .into_response()
}

#[derive(Deserialize, ToSchema)]
pub struct ShowQuery {
    /// `orphans` (the default, as `orphans -o csv`) or `all` (every examined object, as `--show all`).
    pub show: Option<String>,
}

/// Orphans as CSV (the columns of `orphans -o csv`): the orphans, as the CLI, or with `?show=all`
/// every examined object with its class.
#[utoipa::path(get, path = "/api/orphans.csv", params(("show" = Option<String>, Query, description = "orphans (default) or all")),
    responses((status = 200, content_type = "text/csv", body = String), (status = 400, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn orphans_csv(State(s): State<Arc<Server>>, Query(q): Query<ShowQuery>) -> Result<Response, ApiError> {
    let all = match q.show.as_deref() {
        None | Some("" | "orphans") => false,
        Some("all") => true,
        Some(x) => return Err(bad(format!("unknown show {x:?}: use orphans or all"))),
    };
    let (view, saved) = orphans_view(&s).ok_or_else(|| not_yet(Scope::Orphans, &s))?;
    let mut out = Vec::new();
    let items = view.items(&saved.data).filter(|i| all || i.class == EvidenceClass::Orphan);
    crate::render::orphans::csv_items(&mut out, items, None, true).expect("writes to memory");
    Ok(csv_response("orphans.csv", out))
}

/// Start scans now (never a second one of a scope that is running).
#[utoipa::path(post, path = "/api/rescan", params(("scope" = Option<String>, Query, description = "versions, orphans or releases; all when absent")),
    responses((status = 202, body = RescanResponse), (status = 400, body = ErrorBody)))]
async fn rescan(State(s): State<Arc<Server>>, Query(q): Query<RescanQuery>) -> Result<Response, ApiError> {
    let scopes = match q.scope.as_deref() {
        None | Some("") => s.enabled(),
        Some(x) => {
            let scope = Scope::parse(x)
                .ok_or_else(|| bad(format!("unknown scope {x:?}: use versions, orphans or releases")))?;
            if !s.enabled().contains(&scope) {
                return Err(not_yet(scope, &s));
            }
            vec![scope]
        }
    };
    // Asked for in the order the scans take turns; answered in the scopes' own order.
    let triggered: Vec<(Scope, bool)> =
        s.scan_order().into_iter().filter(|x| scopes.contains(x)).map(|x| (x, s.trigger(x))).collect();
    let mut started = Vec::new();
    let mut already_running = Vec::new();
    for scope in scopes {
        let now = triggered.iter().any(|(x, started)| *x == scope && *started);
        if now { started.push(scope) } else { already_running.push(scope) }
    }
    Ok((StatusCode::ACCEPTED, axum::Json(RescanResponse { started, already_running })).into_response())
}

/// Change the state under the write lock, save it atomically, then publish it.
async fn change_state<T>(
    s: &Server,
    f: impl FnOnce(&mut super::store::State) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let _guard = s.state_write.lock().await;
    let mut state = (*s.state()).clone();
    let out = f(&mut state)?;
    s.data.save_state(&state).map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    *s.state.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(state);
    *lock(&s.orphans_view) = None;
    Ok(out)
}

fn check_ids(s: &Server, ids: &[String]) -> Result<(), ApiError> {
    if ids.is_empty() {
        return Err(bad("ids is empty: give the ids of findings from GET /api/orphans"));
    }
    if ids.len() > 20_000 {
        return Err(bad("more than 20000 ids"));
    }
    let view = orphans_view(s);
    for id in ids {
        check_id(id).map_err(bad)?;
        let known = view.as_ref().is_some_and(|(v, _)| v.position(id).is_some());
        if !known {
            return Err(bad(format!("unknown finding id {id:?}: not in the last orphans scan")));
        }
    }
    Ok(())
}

fn check_note(note: &str) -> Result<(), ApiError> {
    if note.len() > 1000 { Err(bad("note: longer than 1000 characters")) } else { Ok(()) }
}

/// Ignore findings by id (kept across scans and restarts).
#[utoipa::path(post, path = "/api/orphans/ignore", request_body = IgnoreRequest,
    responses((status = 200, body = IgnoresResponse), (status = 400, body = ErrorBody), (status = 415, body = ErrorBody), (status = 403, body = ErrorBody)))]
async fn ignore(
    State(s): State<Arc<Server>>,
    StrictJson(req): StrictJson<IgnoreRequest>,
) -> Result<axum::Json<IgnoresResponse>, ApiError> {
    check_ids(&s, &req.ids)?;
    check_note(&req.note)?;
    let now = rfc3339_utc(now());
    let ignores = change_state(&s, |st| {
        for id in &req.ids {
            st.ignores.retain(|i| i.id != *id);
            st.ignores.push(Ignore { id: id.clone(), note: req.note.clone(), created_at: now.clone() });
        }
        Ok(st.ignores.clone())
    })
    .await?;
    Ok(axum::Json(IgnoresResponse { ignores }))
}

/// Stop ignoring findings.
#[utoipa::path(post, path = "/api/orphans/unignore", request_body = IgnoreRequest,
    responses((status = 200, body = IgnoresResponse), (status = 400, body = ErrorBody), (status = 415, body = ErrorBody)))]
async fn unignore(
    State(s): State<Arc<Server>>,
    StrictJson(req): StrictJson<IgnoreRequest>,
) -> Result<axum::Json<IgnoresResponse>, ApiError> {
    if req.ids.is_empty() {
        return Err(bad("ids is empty"));
    }
    let ignores = change_state(&s, |st| {
        for id in &req.ids {
            if !st.ignores.iter().any(|i| i.id == *id) {
                return Err(bad(format!("finding {id:?} is not ignored")));
            }
        }
        st.ignores.retain(|i| !req.ids.contains(&i.id));
        Ok(st.ignores.clone())
    })
    .await?;
    Ok(axum::Json(IgnoresResponse { ignores }))
}

fn rule_view(s: &Server, r: &StoredRule) -> RuleView {
    let saved = lock(&s.orphans).saved.clone();
    let matches = match (saved, parse_rule(&r.id, &r.rule)) {
        (Some(x), Ok(rule)) => match_count(&x.data, &rule),
        _ => 0,
    };
    RuleView {
        id: Some(r.id.clone()),
        rule: r.rule.clone(),
        note: r.note.clone(),
        created_at: Some(r.created_at.clone()),
        matches,
    }
}

/// The dashboard's rules (with their matches), the config's rules (read-only) and the ignores.
#[utoipa::path(get, path = "/api/orphans/rules", responses((status = 200, body = RulesResponse)))]
async fn rules_list(State(s): State<Arc<Server>>) -> axum::Json<RulesResponse> {
    let state = s.state();
    let config_rules = s
        .config_rules
        .ignore
        .iter()
        .map(|r| ConfigRule { list: "ignore".into(), description: r.describe() })
        .chain(s.config_rules.protect.iter().map(|r| ConfigRule { list: "protect".into(), description: r.describe() }))
        .collect();
    axum::Json(RulesResponse {
        rules: state.rules.iter().map(|r| rule_view(&s, r)).collect(),
        config_rules,
        ignores: state.ignores.clone(),
    })
}

/// Add an ignore rule (it also covers future findings); the answer says how many of the last
/// scan's orphans it matches. With `dryRun`, only count.
#[utoipa::path(post, path = "/api/orphans/rules", request_body = RuleRequest,
    responses((status = 201, body = RuleView), (status = 200, description = "dry run", body = RuleView), (status = 400, body = ErrorBody), (status = 415, body = ErrorBody)))]
async fn rules_add(
    State(s): State<Arc<Server>>,
    StrictJson(req): StrictJson<RuleRequest>,
) -> Result<Response, ApiError> {
    check_note(&req.note)?;
    let rule = req.rule.trim().to_string();
    let parsed = parse_rule("(new)", &rule).map_err(|e| bad(format!("invalid rule {rule:?}: {e}")))?;
    if req.dry_run {
        let matches = lock(&s.orphans).saved.clone().map(|x| match_count(&x.data, &parsed)).unwrap_or(0);
        let v = RuleView { id: None, rule, note: req.note, created_at: None, matches };
        return Ok((StatusCode::OK, axum::Json(v)).into_response());
    }
    let now = rfc3339_utc(now());
    let stored = change_state(&s, |st| {
        if st.rules.len() >= 1000 {
            return Err(bad("there are 1000 rules already"));
        }
        st.last_rule += 1;
        let r = StoredRule { id: format!("r{}", st.last_rule), rule, note: req.note, created_at: now };
        st.rules.push(r.clone());
        Ok(r)
    })
    .await?;
    Ok((StatusCode::CREATED, axum::Json(rule_view(&s, &stored))).into_response())
}

/// Delete a dashboard rule (config rules cannot be deleted here).
#[utoipa::path(post, path = "/api/orphans/rules/delete", request_body = DeleteRuleRequest,
    responses((status = 200, body = RulesResponse), (status = 400, body = ErrorBody), (status = 415, body = ErrorBody)))]
async fn rules_delete(
    State(s): State<Arc<Server>>,
    StrictJson(req): StrictJson<DeleteRuleRequest>,
) -> Result<Response, ApiError> {
    change_state(&s, |st| {
        let before = st.rules.len();
        st.rules.retain(|r| r.id != req.id);
        if st.rules.len() == before {
            return Err(bad(format!("unknown rule id {:?}", req.id)));
        }
        Ok(())
    })
    .await?;
    Ok(rules_list(State(s)).await.into_response())
}

/// The cleanup script for the selected orphans (the same script as `orphans --script`).
#[utoipa::path(post, path = "/api/orphans/commands", request_body = CommandsRequest,
    responses((status = 200, body = CommandsResponse), (status = 400, body = ErrorBody), (status = 415, body = ErrorBody)))]
async fn commands(
    State(s): State<Arc<Server>>,
    StrictJson(req): StrictJson<CommandsRequest>,
) -> Result<axum::Json<CommandsResponse>, ApiError> {
    use crate::render::orphans_script::{ScriptMode, Target, script};
    check_ids(&s, &req.ids)?;
    let (view, saved) = orphans_view(&s).ok_or_else(|| not_yet(Scope::Orphans, &s))?;
    let mut items = Vec::new();
    let mut skipped = Vec::new();
    let found: Vec<(&String, usize)> = req.ids.iter().filter_map(|id| Some((id, view.position(id)?))).collect();
    let picked = view.items_at(&saved.data, &found.iter().map(|(_, i)| *i).collect::<Vec<_>>());
    for ((id, _), item) in found.into_iter().zip(picked) {
        if item.class == EvidenceClass::Orphan {
            items.push(item);
        } else {
            skipped.push(Skipped {
                id: id.clone(),
                reason: format!("{}: {}", item.class.word(), item.reasons.join("; ")),
            });
        }
    }
    let report = view.report(&saved.data, items);
    let mode = match req.action {
        Action::Export => ScriptMode::Export,
        Action::Delete => ScriptMode::Delete,
    };
    // The script runs where the reader is: pin the context, not this server's kubeconfig path.
    let target = Target { kubeconfig: None, ..crate::app::context::script_target(s.cluster().target()) };
    let text = script(&report, mode, &target, &rfc3339_utc(now()));
    Ok(axum::Json(CommandsResponse { script: text, skipped }))
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", responses((status = 200, content_type = "text/plain", body = String)))]
async fn healthz() -> &'static str {
    "ok\n"
}

/// 200 once every scope has finished a scan in this process, 503 before.
#[utoipa::path(get, path = "/readyz", responses((status = 200, content_type = "text/plain", body = String), (status = 503, content_type = "text/plain", body = String)))]
async fn readyz(State(s): State<Arc<Server>>) -> Response {
    if s.ready() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready: the first scans have not finished\n").into_response()
    }
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", responses((status = 200, content_type = "text/plain", body = String)))]
async fn metrics(State(s): State<Arc<Server>>) -> Response {
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], s.metrics().render()).into_response()
}

/// The scrape-time figures of a server: its scopes' last results and scans. Holds the server
/// weakly (the server holds the exporter).
pub struct ServeSource(pub std::sync::Weak<Server>);

impl metrics::Source for ServeSource {
    fn snapshot(&self) -> metrics::Snapshot {
        let Some(s) = self.0.upgrade() else { return metrics::Snapshot::default() };
        let mut snap = metrics::Snapshot::default();
        let enabled = s.enabled();
        snap.orphans = enabled.contains(&Scope::Orphans);
        snap.orphan_namespaces = Some(s.orphan_namespaces);
        snap.versions = enabled.contains(&Scope::Versions);
        snap.ready = s.ready();
        for scope in enabled {
            let (st, objects) = match scope {
                Scope::Releases => {
                    let st = lock(&s.releases);
                    let objects = st.saved.as_ref().map_or(0, |r| r.data.summary.objects as u64);
                    if let Some(r) = &st.saved {
                        for rel in &r.data.releases {
                            snap.findings.add_target("", rel);
                        }
                        for target in &r.data.gitops {
                            snap.findings.add_target("", target);
                        }
                        for ((ns, name), at) in lock(&s.drift_since).iter() {
                            snap.findings.drift_since.insert((String::new(), ns.clone(), name.clone()), *at);
                        }
                    }
                    (scan_figures(scope, &st, |r| r.summary.errors > 0), objects)
                }
                Scope::Orphans => {
                    let st = lock(&s.orphans);
                    let figures = scan_figures(scope, &st, |o| !o.head().summary.skipped_kinds.is_empty());
                    drop(st);
                    let objects = match orphans_view(&s) {
                        Some((v, _)) => {
                            // Counted when the view was built: a scrape decodes no item.
                            snap.findings.add_orphan_counts("", &v.counts);
                            v.summary.counts.examined as u64
                        }
                        None => 0,
                    };
                    (figures, objects)
                }
                Scope::Versions => {
                    let st = lock(&s.versions);
                    let mut objects = 0;
                    if let Some(v) = &st.saved {
                        // Read in place: a scrape never copies the rows (on a big cluster a copy
                        // per scrape kept the process's memory high).
                        let rows = v.data.report["rows"].as_array().map_or(&[][..], Vec::as_slice);
                        objects = rows.len() as u64;
                        snap.findings
                            .add_versions("", rows.iter().filter_map(|r| metrics::RowFigures::deserialize(r).ok()));
                    }
                    (scan_figures(scope, &st, |v| v.incomplete), objects)
                }
            };
            snap.scans.push(metrics::Scan { objects, ..st });
        }
        let mut requests = metrics::Family::counter(
            "kubectl_drift_http_requests",
            "HTTP requests answered, by route and status code.",
        );
        for ((route, code), n) in lock(&s.requests_total).iter() {
            requests.push(vec![("route", route.clone()), ("code", code.to_string())], *n as f64);
        }
        snap.extra.push(requests);
        if let Some(live) = &s.live {
            snap.extra.extend(live.families());
        }
        snap
    }
}

/// A scope's scan health (its objects are filled by the caller).
/// `incomplete`: the shown result could not see everything (a scan that did is a failure too).
fn scan_figures<T>(scope: Scope, st: &super::ScopeState<T>, incomplete: impl Fn(&T) -> bool) -> metrics::Scan {
    let saw_everything = st.saved.as_ref().is_some_and(|x| !incomplete(&x.data));
    metrics::Scan {
        scope: scope.name(),
        cluster: String::new(),
        // Known once this process finished a scan (a result read from disk says nothing of now).
        success: st.finished_once.then_some(st.last_error.is_none() && saw_everything),
        duration_seconds: st.last_duration.unwrap_or(0.0),
        timestamp_seconds: st.saved.as_ref().map_or(0.0, |x| x.finished_unix as f64),
        objects: 0,
        total: st.scans_total,
        errors: st.errors_total,
        running: st.running_since.is_some(),
    }
}

#[cfg(test)]
mod tests;
