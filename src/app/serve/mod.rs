//! `kubectl drift serve`: the dashboard. Runs the same engines as the CLI (release drift,
//! orphans, version drift) on a timer and on request, keeps each scope's last result in the data
//! directory, and serves one page plus a JSON/CSV API (see [`api`]). Read-only against the
//! cluster; with `--auth kubernetes` it also creates TokenReviews and SubjectAccessReviews
//! ([`auth`]), which store nothing.

pub mod api;
pub mod auth;
pub mod error;
pub mod live;
pub mod orphans;
pub mod releases;
pub mod scope;
pub mod store;
pub mod versions;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Instrument;

use crate::app::cli::{ServeArgs, ServeAuth};
use crate::app::config::{Config, ConfigError};
use crate::app::context::Settings;
use crate::engine::drift::{ReleaseSelection, check_releases};
use crate::report::duration::{now, rfc3339_utc};
use crate::report::{DriftReport, Status};
use crate::source::cluster::Cluster;

use error::ServeError;
use orphans::OrphansData;
use scope::Scope;
use store::{DataDir, State};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The version drift engine, as the server calls it. Kept behind a trait so the server does not
/// depend on how that engine is built; `None` in [`run`] serves the versions scope as not
/// available (503 with a reason) while the other two scopes work.
pub trait VersionsScan: Send + Sync {
    /// One scan: the report as its JSON (the CLI's `-o json`), its CSV, and how many findings
    /// it has. An `Err` is a scan that could not run.
    /// `namespace`: the scan's (`None`: the whole cluster).
    fn scan<'a>(
        &'a self,
        cluster: &'a Cluster,
        namespace: Option<String>,
    ) -> BoxFuture<'a, Result<VersionsResult, String>>;
}

/// A finished version scan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VersionsResult {
    pub report: Value,
    pub csv: String,
    pub findings: usize,
    /// The scan could not see everything (some lookups failed).
    pub incomplete: bool,
}

/// The releases scope's GitOps targets: every Flux Kustomization and Argo CD Application in the
/// releases' scope. A cluster without Flux or Argo CD has none; any other failure is a failed
/// target of its own, so the scope is never clean without them.
pub(crate) async fn scan_gitops(
    cluster: &Cluster,
    releases: &ReleaseSelection,
    rules: Vec<crate::engine::compare::rules::IgnoreRule>,
) -> Vec<crate::report::FileReport> {
    use crate::engine::gitops::{GitOpsKind, GitOpsSelection, check};
    let selection = GitOpsSelection {
        names: Vec::new(),
        all: true,
        all_namespaces: releases.all_namespaces,
        namespace: releases.namespace.clone(),
        ..Default::default()
    };
    let mut out = Vec::new();
    for (kind, name) in
        [(GitOpsKind::FluxKustomization, "Flux Kustomizations"), (GitOpsKind::ArgoApplication, "Argo CD Applications")]
    {
        match check(cluster, kind, &selection, rules.clone(), false, &crate::report::progress::NoProgress).await {
            Ok(report) => out.extend(report.files),
            Err(crate::engine::drift::DriftError::Live(crate::source::live::LiveError::NotServed { .. })) => {}
            Err(e) => out.push(crate::report::FileReport::failed(
                crate::report::FileOrigin { path: name.to_string(), ..Default::default() },
                format!("{name}: {e}"),
            )),
        }
    }
    out
}

/// A scope's result as kept in the data directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Saved<T> {
    /// The cluster it is about: a data directory's results are shown only by a server of the same
    /// cluster (empty in files written before results named their cluster: taken as this one's).
    #[serde(default)]
    pub cluster: String,
    pub finished_unix: i64,
    pub duration_seconds: f64,
    pub data: T,
}

/// One scope: its last good result, the scan in progress, the last error, counters.
#[derive(Debug)]
pub struct ScopeState<T> {
    pub saved: Option<Arc<Saved<T>>>,
    /// `saved` was read from the data directory at start, not scanned by this process.
    pub from_disk: bool,
    /// Unix time the running scan started.
    pub running_since: Option<(i64, Instant)>,
    /// The last scan's error and when (cleared by a good scan).
    pub last_error: Option<(String, i64)>,
    /// A scan finished (well or not) in this process.
    pub finished_once: bool,
    pub scans_total: u64,
    pub errors_total: u64,
    pub last_duration: Option<f64>,
}

impl<T> Default for ScopeState<T> {
    fn default() -> Self {
        ScopeState {
            saved: None,
            from_disk: false,
            running_since: None,
            last_error: None,
            finished_once: false,
            scans_total: 0,
            errors_total: 0,
            last_duration: None,
        }
    }
}

/// The orphans view and the saved scan it was built from (see [`Server::orphans_view`]).
type OrphansView = (std::sync::Weak<Saved<orphans::OrphansData>>, Arc<orphans::View>);

/// Everything the handlers share.
pub struct Server {
    pub settings: Settings,
    /// The one cluster this server shows, kept for its lifetime: a scan asks it for a fresh
    /// discovery and LIST cache ([`Server::scan_cluster`]); after a scan that failed, its clients
    /// are built again ([`Server::reconnect`]), so connections a failure left broken are not reused.
    cluster: RwLock<Cluster>,
    pub cluster_name: String,
    /// The scanned namespace, or `None` for all.
    pub namespace: Option<String>,
    /// `--config`: read again for the release and orphans rules of each scan.
    pub config: Option<PathBuf>,
    pub older_than: crate::report::duration::Span,
    /// `--metrics-orphan-namespaces`: the namespaces that keep their own orphans series.
    pub orphan_namespaces: usize,
    pub data: DataDir,
    pub releases: Mutex<ScopeState<DriftReport>>,
    pub orphans: Mutex<ScopeState<OrphansData>>,
    pub versions: Mutex<ScopeState<VersionsResult>>,
    pub versions_engine: Option<Arc<dyn VersionsScan>>,
    /// The scopes the config's `serve.scopes` turns on (default: all).
    pub scopes: Vec<Scope>,
    /// The scopes' scans take turns, in the order they were asked for, so their peaks (each
    /// holding its LISTs) never add up (docs/drift.md, Sizing). A scan asked for while another
    /// runs waits for its turn, shown as running.
    pub turns: Turns,
    /// Held by every state change, across its write to disk: POSTs are serialised.
    pub state_write: tokio::sync::Mutex<()>,
    pub state: RwLock<Arc<State>>,
    /// The orphans as the API shows them (saved scan + ignores + rules), rebuilt when either changes.
    /// The orphans view, with the saved scan it was built from (held weakly: the allocation
    /// stays, so no later scan can take its address).
    pub orphans_view: Mutex<Option<OrphansView>>,
    pub config_rules: crate::engine::orphans::rules::OrphanRules,
    pub auth: Option<auth::Authenticator>,
    pub requests_total: Mutex<std::collections::BTreeMap<(String, u16), u64>>,
    pub warnings: Vec<String>,
    /// `--live`: the releases scope is kept current by watch streams ([`live`]).
    pub live: Option<Arc<live::Live>>,
    /// What `/api/events` sends.
    pub events: live::Events,
    /// `/metrics`: set once the server is shared ([`Server::metrics`]).
    metrics: std::sync::OnceLock<crate::app::metrics::Exporter>,
    pub identity: crate::app::metrics::Identity,
    /// The drift history each releases result is recorded in (`--history`, default
    /// `history.db` in the data directory; `None` with `--history off`). Set by [`run`].
    pub history: tokio::sync::Mutex<Option<crate::app::recorder::Recorder>>,
    /// (namespace, release) -> when its oldest open drift started, from the last recorded
    /// result (the metrics gauge).
    pub drift_since: Mutex<std::collections::BTreeMap<(String, String), i64>>,
    /// `--history-retention` when a history is kept (`None` with `--history off`): `/api/status`
    /// tells the page how far back its strips can go.
    pub history_retention: Option<std::time::Duration>,
}

/// Give the heap pages freed by a scan of `scope` back to the system, and log at debug level
/// what the heaps hold (bytes in use, and in free chunks: [`crate::app::allocator::heap_figures`]),
/// the figures that tell growing data from the heaps' holes when resident memory climbs over scans.
fn give_back_freed_memory(scope: Scope) {
    crate::app::allocator::return_freed_memory();
    if let Some((in_use, free)) = crate::app::allocator::heap_figures() {
        tracing::debug!(scope = scope.name(), heap_in_use = in_use, heap_free = free, "heap after the scan");
    }
}

/// Lock a mutex, ignoring poisoning (a panicking handler must not stop the others).
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Server {
    pub fn enabled(&self) -> Vec<Scope> {
        Scope::ALL
            .into_iter()
            .filter(|s| self.scopes.contains(s) && (*s != Scope::Versions || self.versions_engine.is_some()))
            .collect()
    }

    /// The enabled scopes in the order their scans take turns when all are asked for at once:
    /// the two that only read the cluster first, the version scan (which also waits for
    /// upstreams, up to their timeouts) last, so it never holds the others back.
    pub fn scan_order(&self) -> Vec<Scope> {
        let enabled = self.enabled();
        [Scope::Releases, Scope::Orphans, Scope::Versions].into_iter().filter(|s| enabled.contains(s)).collect()
    }

    /// Every enabled scope has finished a scan in this process.
    pub fn ready(&self) -> bool {
        self.enabled().into_iter().all(|s| match s {
            Scope::Releases => lock(&self.releases).finished_once,
            Scope::Orphans => lock(&self.orphans).finished_once,
            Scope::Versions => lock(&self.versions).finished_once,
        })
    }

    /// The one metrics registry of this server (built at the first scrape: it reads the server).
    pub fn metrics(self: &Arc<Self>) -> &crate::app::metrics::Exporter {
        self.metrics.get_or_init(|| {
            let mut exporter =
                crate::app::metrics::Exporter::new(&self.identity, Arc::new(api::ServeSource(Arc::downgrade(self))));
            if let Some(live) = &self.live {
                live.register(exporter.registry());
            }
            exporter
        })
    }

    pub fn state(&self) -> Arc<State> {
        self.state.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Start a scan of `scope` unless one is running (or the scope is not available). Returns
    /// whether one was started.
    pub fn trigger(self: &Arc<Self>, scope: Scope) -> bool {
        if !self.enabled().contains(&scope) {
            return false;
        }
        let start = (now(), Instant::now());
        let started = match scope {
            Scope::Releases => begin(&self.releases, start),
            Scope::Orphans => begin(&self.orphans, start),
            Scope::Versions => begin(&self.versions, start),
        };
        if started {
            let me = self.clone();
            let span = tracing::info_span!("scan", scope = scope.name(), cluster = %self.cluster_name);
            // A live releases scope is no scan of its own (its loop resyncs): it takes no turn.
            let ticket = (scope != Scope::Releases || self.live.is_none()).then(|| self.turns.ticket());
            tokio::spawn(async move { me.scan(scope, ticket).await }.instrument(span));
        }
        started
    }

    async fn scan(self: Arc<Self>, scope: Scope, ticket: Option<u64>) {
        let Some(ticket) = ticket else {
            // The live loop rebuilds its cache, checks everything and finishes the scan.
            if let Some(live) = &self.live {
                live.resync();
            }
            return;
        };
        // One scan at a time; its duration counts from its turn.
        let _turn = self.turns.wait(ticket).await;
        match scope {
            Scope::Releases => restart_clock(&self.releases),
            Scope::Orphans => restart_clock(&self.orphans),
            Scope::Versions => restart_clock(&self.versions),
        }
        match scope {
            Scope::Releases => {
                let r = self.scan_releases().await;
                if let Ok(report) = &r {
                    self.record_history(report).await;
                }
                // New clients before the result is out: a rescan asked for on seeing it (or
                // /readyz) must not reuse the failed scan's connections.
                if r.is_err() {
                    self.reconnect().await;
                }
                self.finish(&self.releases, scope, r);
                let summary =
                    lock(&self.releases).saved.as_ref().and_then(|s| serde_json::to_value(&s.data.summary).ok());
                self.events.publish(scope, "scan", &[], summary);
                return;
            }
            Scope::Orphans => {
                let r = self.scan_orphans().await;
                if r.is_err() {
                    self.reconnect().await;
                }
                self.finish(&self.orphans, scope, r);
                *lock(&self.orphans_view) = None;
                // The view of the new result is built now, not by the first request after it, and
                // what building it allocated on the way is given back: between scans the process
                // holds the result and its view, nothing more.
                let _ = api::orphans_view(&self);
                give_back_freed_memory(scope);
            }
            Scope::Versions => {
                let engine = self.versions_engine.clone().expect("enabled");
                let r = engine.scan(&self.scan_cluster(), self.namespace.clone()).await;
                if r.is_err() {
                    self.reconnect().await;
                }
                self.finish(&self.versions, scope, r);
            }
        }
        self.events.publish(scope, "scan", &[], None);
    }

    /// The config file, read again (each scan takes its release and orphans rules as the file
    /// says then), by the one reader.
    fn read_config(&self) -> Result<Config, ConfigError> {
        Config::read(self.config.as_deref())
    }

    /// The flags that make `kubectl drift orphans` read what this server's scans read: its kube
    /// context, and its config file when that has orphans rules (the scans apply them).
    pub fn orphans_cli_flags(&self) -> orphans::CliFlags {
        let has_rules = !self.config_rules.ignore.is_empty() || !self.config_rules.protect.is_empty();
        orphans::CliFlags {
            context: self.cluster().target().context.clone(),
            config: self.config.as_ref().filter(|_| has_rules).map(|p| p.display().to_string()),
        }
    }

    /// The server's cluster (its clients, name and the target its commands name).
    pub fn cluster(&self) -> Cluster {
        self.cluster.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The cluster for one scan: the kept clients, a fresh discovery and LIST cache.
    fn scan_cluster(&self) -> Cluster {
        self.cluster().fresh()
    }

    /// Build the cluster's clients again (same context, name and target) after a failed scan: a
    /// connection a stalled or restarted API server left half-open is then never reused. When the
    /// kubeconfig cannot be read now, the kept cluster stays.
    async fn reconnect(&self) {
        let kept = self.cluster();
        match self.settings.cluster().await {
            Ok(c) => {
                let fresh = c.with_name(kept.name()).with_target(kept.target().clone());
                *self.cluster.write().unwrap_or_else(|e| e.into_inner()) = fresh;
            }
            Err(e) => tracing::warn!(cluster = kept.name(), "keeping the connection to cluster {}: {e}", kept.name()),
        }
    }

    async fn scan_releases(&self) -> Result<DriftReport, String> {
        let config = self.read_config().map_err(|e| e.to_string())?;
        let rules = config.ignore_rules(&[]).map_err(|e| e.to_string())?;
        let cluster = self.scan_cluster();
        let selection = ReleaseSelection {
            names: Vec::new(),
            all: true,
            all_namespaces: self.namespace.is_none(),
            namespace: cluster.namespace().to_string(),
            revision: None,
            chart_crds: true,
            admission_changes: config.admission_changes(None),
        };
        let mut report =
            check_releases(&cluster, &selection, rules.clone(), false, &crate::report::progress::NoProgress)
                .await
                .map_err(|e| e.to_string())?;
        report.gitops = scan_gitops(&cluster, &selection, rules).await;
        Ok(report)
    }

    async fn scan_orphans(&self) -> Result<OrphansData, String> {
        let options = crate::engine::orphans::ScanOptions {
            kinds: Vec::new(),
            older_than: self.older_than,
            config: if self.config_rules.ignore.is_empty() && self.config_rules.protect.is_empty() {
                None
            } else {
                self.read_config().and_then(|c| c.orphans()).map_err(|e| e.to_string())?
            },
            ignore: Vec::new(),
            show_all: true,
            max_custom_objects: crate::engine::orphans::custom::DEFAULT_CAP,
        };
        let scan = options.prepare(self.namespace.is_none()).map_err(|e| e.to_string())?;
        let report = crate::engine::orphans::scan(
            &self.scan_cluster(),
            self.namespace.clone(),
            &scan,
            &crate::report::progress::NoProgress,
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(OrphansData::new(report))
    }

    fn finish<T: Serialize>(&self, slot: &Mutex<ScopeState<T>>, scope: Scope, result: Result<T, String>) {
        let now = now();
        let mut st = lock(slot);
        let duration = st.running_since.take().map(|(_, i)| i.elapsed().as_secs_f64()).unwrap_or(0.0);
        st.finished_once = true;
        st.scans_total += 1;
        st.last_duration = Some(duration);
        let duration_ms = (duration * 1000.0) as u64;
        let (scope_name, cluster) = (scope.name(), self.cluster_name.as_str());
        match result {
            Ok(data) => {
                let saved =
                    Saved { cluster: self.cluster_name.clone(), finished_unix: now, duration_seconds: duration, data };
                tracing::info!(scope = scope_name, cluster, duration_ms, outcome = "ok", "{scope_name} scan finished");
                if let Err(e) = self.data.save_result(&scope.file(), &saved) {
                    tracing::warn!("{e}");
                }
                st.saved = Some(Arc::new(saved));
                st.from_disk = false;
                st.last_error = None;
            }
            Err(e) => {
                tracing::error!(scope = scope_name, cluster, duration_ms, outcome = "error", "{scope_name} scan: {e}");
                st.errors_total += 1;
                st.last_error = Some((e, now));
            }
        }
        drop(st);
        // The scan's lists and the previous result are freed: give their pages back.
        give_back_freed_memory(scope);
    }

    /// Record a releases result (each release and GitOps target) in the drift history, if one is
    /// kept; a failure is logged by the recorder and the result is served all the same.
    pub async fn record_history(&self, report: &DriftReport) {
        let mut history = self.history.lock().await;
        let Some(recorder) = history.as_mut() else { return };
        let named = |mut t: crate::report::TargetReport| {
            t.cluster = self.cluster_name.clone();
            t
        };
        let targets: Vec<crate::report::TargetReport> = report
            .releases
            .iter()
            .map(|r| named(r.to_any()))
            .chain(report.gitops.iter().map(|f| named(f.to_any())))
            .collect();
        if let Ok(recorded) = recorder.record(targets.iter()).await {
            let since = targets
                .iter()
                .filter_map(|t| {
                    let release = t.origin.release()?;
                    let at = crate::app::recorder::oldest_open(t, &recorded)?;
                    Some(((release.namespace.clone(), release.name.clone()), at))
                })
                .collect();
            *lock(&self.drift_since) = since;
        }
    }

    /// The scan information of one scope, as the API shows it.
    pub fn scan_info(&self, scope: Scope) -> api::ScanInfo {
        fn info<T>(scope: Scope, st: &ScopeState<T>, available: bool) -> api::ScanInfo {
            let now = Instant::now();
            api::ScanInfo {
                scope,
                available,
                scanned_at: st.saved.as_ref().map(|s| rfc3339_utc(s.finished_unix)),
                duration_seconds: st.saved.as_ref().map(|s| s.duration_seconds),
                from_disk: st.from_disk,
                running: st.running_since.map(|(unix, i)| {
                    let elapsed = now.duration_since(i).as_secs_f64();
                    let expected = st.last_duration.or(st.saved.as_ref().map(|s| s.duration_seconds));
                    api::Progress {
                        started_at: rfc3339_utc(unix),
                        elapsed_seconds: (elapsed * 10.0).round() / 10.0,
                        expected_seconds: expected,
                        percent: expected.filter(|e| *e > 0.0).map(|e| ((elapsed / e * 100.0).min(99.0)) as u8),
                    }
                }),
                last_error: st.last_error.as_ref().map(|(e, _)| e.clone()),
                last_error_at: st.last_error.as_ref().map(|(_, t)| rfc3339_utc(*t)),
                scans: st.scans_total,
                live: false,
            }
        }
        let available = self.enabled().contains(&scope);
        match scope {
            Scope::Releases => {
                api::ScanInfo { live: self.live.is_some(), ..info(scope, &lock(&self.releases), available) }
            }
            Scope::Orphans => info(scope, &lock(&self.orphans), available),
            Scope::Versions => info(scope, &lock(&self.versions), available),
        }
    }
}

/// What serve's `/mcp` reads of the server: its cluster and its scopes' last scans.
impl crate::app::mcp::Dashboard for Server {
    fn cluster(&self) -> Cluster {
        Server::cluster(self)
    }

    fn cluster_name(&self) -> String {
        self.cluster_name.clone()
    }

    fn scopes(&self) -> Vec<Scope> {
        self.enabled()
    }

    fn last_scan(&self, scope: Scope) -> crate::app::mcp::LastScan {
        use crate::app::mcp::ScopeReport;
        let report = match scope {
            Scope::Releases => lock(&self.releases).saved.clone().map(|s| ScopeReport::Releases(s.data.clone())),
            Scope::Orphans => lock(&self.orphans).saved.clone().map(|s| ScopeReport::Orphans(s.data.report())),
            Scope::Versions => lock(&self.versions).saved.clone().map(|s| ScopeReport::Versions(s.data.report.clone())),
        };
        let scan = serde_json::to_value(self.scan_info(scope)).expect("the scan information serialises");
        crate::app::mcp::LastScan { scan, report }
    }
}

/// Scans taking turns: each takes a ticket when it is asked for ([`Turns::ticket`], in that
/// order) and runs when the scans before it are done ([`Turns::wait`]); its [`Turn`] passes the
/// turn on when dropped, a scan that panicked included.
pub struct Turns {
    issued: std::sync::atomic::AtomicU64,
    serving: tokio::sync::watch::Sender<u64>,
}

impl Default for Turns {
    fn default() -> Self {
        Turns { issued: std::sync::atomic::AtomicU64::new(0), serving: tokio::sync::watch::Sender::new(0) }
    }
}

impl Turns {
    /// The next place in the line.
    pub fn ticket(&self) -> u64 {
        self.issued.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }

    /// Wait until it is `ticket`'s turn.
    pub async fn wait(&self, ticket: u64) -> Turn<'_> {
        let mut serving = self.serving.subscribe();
        // The sender lives as long as `self`: the wait ends only with the turn.
        let _ = serving.wait_for(|now| *now >= ticket).await;
        Turn(self)
    }
}

/// A scan's turn: the next one's begins when it is dropped.
pub struct Turn<'a>(&'a Turns);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.serving.send_modify(|now| *now += 1);
    }
}

/// A scan that waited for its turn starts its clock again when it gets it.
fn restart_clock<T>(slot: &Mutex<ScopeState<T>>) {
    if let Some(since) = &mut lock(slot).running_since {
        *since = (now(), Instant::now());
    }
}

fn begin<T>(slot: &Mutex<ScopeState<T>>, start: (i64, Instant)) -> bool {
    let mut st = lock(slot);
    if st.running_since.is_some() {
        return false;
    }
    st.running_since = Some(start);
    true
}

fn load_saved<T: for<'de> Deserialize<'de>>(
    data: &DataDir,
    scope: Scope,
    cluster: &str,
    warnings: &mut Vec<String>,
) -> ScopeState<T> {
    let (saved, warning) = data.load_result::<Saved<T>>(&scope.file());
    warnings.extend(warning);
    let saved = saved.filter(|s| {
        let ours = s.cluster.is_empty() || s.cluster == cluster;
        if !ours {
            warnings.push(format!(
                "saved result {} is of cluster {}, not {cluster}: not shown (the next scan replaces it)",
                data.file(&scope.file()).display(),
                s.cluster
            ));
        }
        ours
    });
    ScopeState { from_disk: saved.is_some(), saved: saved.map(Arc::new), ..ScopeState::default() }
}

/// Parse a listen address that may be `off`.
fn parse_addr(flag: &str, s: &str) -> Result<Option<SocketAddr>, ServeError> {
    if s == "off" {
        return Ok(None);
    }
    s.parse().map(Some).map_err(|_| ServeError::Usage(format!("{flag} {s:?}: use HOST:PORT (an IP address), or off")))
}

/// The server's settings from its flags, checked.
pub struct Prepared {
    pub server: Arc<Server>,
    pub listen: SocketAddr,
    pub health_listen: Option<SocketAddr>,
    pub interval: Duration,
}

/// Check the flags and the config file (read by the caller), open the data directory (a corrupt
/// state file stops here), read the saved results.
pub fn prepare(
    mut settings: Settings,
    cluster: Cluster,
    args: ServeArgs,
    config: Config<ServeSection>,
    versions_engine: Option<Arc<dyn VersionsScan>>,
) -> Result<Prepared, ServeError> {
    let interval = args.interval.as_duration();
    if interval < Duration::from_secs(10) {
        return Err(ServeError::Usage(format!("--interval {}s: at least 10s", args.interval.as_secs())));
    }
    let health_listen = parse_addr("--health-listen", &args.health_listen)?;
    if args.live && matches!(settings.driver, crate::source::helm::Driver::Sql(_)) {
        return Err(ServeError::Usage(
            "--live watches release storage through the API server: it needs HELM_DRIVER secret or configmap, not sql"
                .into(),
        ));
    }
    let auth_mode = match args.auth {
        Some(a) => a,
        None if args.listen.ip().is_loopback() => ServeAuth::None,
        None => {
            return Err(ServeError::Usage(format!(
                "--listen {}: not a loopback address, so anyone who reaches it could read the cluster's inventory; add --auth kubernetes (callers need a token the cluster accepts) or --auth none (you protect it some other way)",
                args.listen
            )));
        }
    };
    // The whole cluster unless -n names a namespace.
    settings.all_namespaces = settings.explicit_namespace.is_none();
    let namespace = settings.explicit_namespace.clone();
    let serve_config = ServeConfig::of(&config);
    // The release ignore rules are checked now so a bad file stops the start, not every scan.
    config.ignore_rules(&[])?;
    let config_rules = if serve_config.has_orphans { config.orphan_rules(&[])? } else { Default::default() };
    let data = DataDir::open(&args.data_dir)?;
    let state = data.load_state()?;
    let mut warnings = Vec::new();
    // --cluster-name, else the cluster's own name (its context, else in-cluster). Commands shown
    // on the page name the context, never the server's kubeconfig.
    let cluster_name =
        args.cluster_name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| cluster.name().to_string());
    let releases = load_saved::<DriftReport>(&data, Scope::Releases, &cluster_name, &mut warnings);
    let orphans = load_saved::<OrphansData>(&data, Scope::Orphans, &cluster_name, &mut warnings);
    let versions = load_saved::<VersionsResult>(&data, Scope::Versions, &cluster_name, &mut warnings);
    let cluster = cluster.with_name(&cluster_name).with_target(crate::source::cluster::Target {
        context: settings.context().map(str::to_string),
        kubeconfig: None,
    });
    let auth = match auth_mode {
        ServeAuth::None => None,
        ServeAuth::Kubernetes => Some(auth::Authenticator::new(serve_config.authorization.clone(), namespace.clone())),
    };
    let server = Server {
        settings,
        cluster: RwLock::new(cluster),
        cluster_name,
        namespace,
        config: args.config.clone(),
        older_than: args.older_than,
        orphan_namespaces: args.metrics_orphan_namespaces,
        data,
        releases: Mutex::new(releases),
        orphans: Mutex::new(orphans),
        versions: Mutex::new(versions),
        versions_engine,
        scopes: serve_config.scopes.clone().unwrap_or_else(|| Scope::ALL.to_vec()),
        turns: Turns::default(),
        state_write: tokio::sync::Mutex::new(()),
        state: RwLock::new(Arc::new(state)),
        orphans_view: Mutex::new(None),
        config_rules,
        auth,
        requests_total: Mutex::new(Default::default()),
        warnings,
        live: args.live.then(|| Arc::new(live::Live::default())),
        events: live::Events::default(),
        metrics: std::sync::OnceLock::new(),
        identity: crate::app::metrics::Identity {
            cluster_name: args.cluster_name.clone(),
            external_url: args.external_url.clone(),
        },
        history: tokio::sync::Mutex::new(None),
        drift_since: Mutex::new(Default::default()),
        history_retention: history_location(&args).map(|_| args.history.retention.as_duration()),
    };
    Ok(Prepared { server: Arc::new(server), listen: args.listen, health_listen, interval })
}

/// The `serve:` section of the config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeSection {
    /// What `--auth kubernetes` asks SubjectAccessReview.
    #[serde(default)]
    pub authorization: Option<auth::ResourceCheck>,
    /// The scopes to scan (default: all three). A scope left out is not scanned; a result of
    /// it saved by an earlier run is still served, marked `available: false`.
    #[serde(default)]
    pub scopes: Option<Vec<Scope>>,
    /// How many releases a releases scan checks at once (`--releases-in-flight` wins; default 24).
    #[serde(default)]
    pub releases_in_flight: Option<std::num::NonZeroU16>,
}

#[derive(Debug, Default)]
struct ServeConfig {
    has_orphans: bool,
    authorization: Option<auth::ResourceCheck>,
    scopes: Option<Vec<Scope>>,
    releases_in_flight: Option<std::num::NonZeroU16>,
}

impl ServeConfig {
    /// The `serve:` section, as the one config reader typed it (with the line and column of a
    /// key nobody knows).
    fn of(config: &Config<ServeSection>) -> ServeConfig {
        let section = config.serve().unwrap_or_default();
        ServeConfig {
            has_orphans: config.has_orphans(),
            authorization: section.authorization,
            scopes: section.scopes,
            releases_in_flight: section.releases_in_flight,
        }
    }

    /// How many releases a scan checks at once: `--releases-in-flight` (or its variable), else
    /// the file's `serve.releases_in_flight`, else `None` (the check's default).
    fn releases_in_flight(&self, flag: crate::app::cli::InFlightArg) -> Option<usize> {
        flag.releases_in_flight.or(self.releases_in_flight.map(std::num::NonZeroU16::get)).map(usize::from)
    }
}

/// The history serve keeps: `--history`, else `history.db` in the data directory ("off": none).
fn history_location(args: &ServeArgs) -> Option<crate::source::history::HistoryLocation> {
    let default = crate::source::history::HistoryLocation::File(args.data_dir.join("history.db"));
    crate::app::recorder::location(&args.history.at, Some(default))
}

/// Run the server until interrupted (SIGINT or SIGTERM).
pub async fn run(
    mut settings: Settings,
    args: ServeArgs,
    config: Config<ServeSection>,
    versions_engine: Option<Arc<dyn VersionsScan>>,
) -> Result<(), ServeError> {
    // Before the cluster is built: it (and each one a reconnect builds) carries it.
    settings.releases_in_flight = ServeConfig::of(&config).releases_in_flight(args.in_flight);
    if settings.many_clusters() {
        return Err(ServeError::Usage(
            "serve shows one cluster: give it one --context (run one server per cluster; Prometheus gathers them)"
                .into(),
        ));
    }
    let cluster = settings.cluster().await?;
    let history = history_location(&args);
    let retention = args.history.retention.as_duration();
    let p = prepare(settings, cluster, args, config, versions_engine)?;
    if let Some(location) = history {
        *p.server.history.lock().await = Some(crate::app::recorder::Recorder::open(location, retention).await?);
    }
    for w in &p.server.warnings {
        tracing::warn!("{w}");
    }
    let bind = |addr: SocketAddr| async move {
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Listen { addr: addr.to_string(), source })
    };
    let main = bind(p.listen).await?;
    let health = match p.health_listen {
        Some(a) => Some(bind(a).await?),
        None => None,
    };
    // Tests and scripts read the bound ports from these lines (with port 0 the system picks).
    let address = main.local_addr().map_err(|source| ServeError::Listen { addr: p.listen.to_string(), source })?;
    tracing::info!(%address, "serving the dashboard on http://{address}/");
    if let Some(h) = &health
        && let Ok(address) = h.local_addr()
    {
        tracing::info!(%address, "serving /healthz, /readyz and /metrics on http://{address}/");
    }
    if let Some(l) = &p.server.live {
        tokio::spawn(live::run(p.server.clone(), l.clone()));
    }
    let server = p.server.clone();
    let interval = p.interval;
    tokio::spawn(async move {
        loop {
            for scope in server.scan_order() {
                server.trigger(scope);
            }
            tokio::time::sleep(interval).await;
        }
    });
    // The MCP tools over streamable HTTP, behind the same authentication as the API (docs/mcp.md).
    let mcp = crate::app::mcp::http_service(p.server.clone(), p.server.config.as_deref(), p.server.namespace.clone())?;
    let app = api::router(p.server.clone(), axum::Router::new().route_service("/mcp", mcp));
    let shutdown = shutdown_signal();
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(async move { axum::serve(main, app).with_graceful_shutdown(shutdown).await });
    if let Some(h) = health {
        let app = api::health_router(p.server.clone());
        tasks.spawn(async move { axum::serve(h, app).with_graceful_shutdown(shutdown_signal()).await });
    }
    if let Some(Ok(Err(e))) = tasks.join_next().await {
        return Err(ServeError::Listen { addr: p.listen.to_string(), source: e });
    }
    Ok(())
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// The overall status of a release drift report (for metrics).
pub fn releases_status(r: &DriftReport) -> Status {
    Status::worst(r.releases.iter().map(|x| x.status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_results_are_shown_only_by_a_server_of_their_cluster() {
        let dir = std::env::temp_dir().join(format!("drift-serve-saved-{}", std::process::id()));
        let data = DataDir::open(&dir).unwrap();
        let saved = |cluster: &str| Saved {
            cluster: cluster.into(),
            finished_unix: 1,
            duration_seconds: 0.5,
            data: DriftReport::new(Vec::new(), 0),
        };
        data.save_result(&Scope::Releases.file(), &saved("prod-eu")).unwrap();
        let mut warnings = Vec::new();
        let ours = load_saved::<DriftReport>(&data, Scope::Releases, "prod-eu", &mut warnings);
        assert!(ours.from_disk && warnings.is_empty(), "{warnings:?}");
        let theirs = load_saved::<DriftReport>(&data, Scope::Releases, "prod-us", &mut warnings);
        assert!(!theirs.from_disk && theirs.saved.is_none());
        assert!(warnings[0].contains("of cluster prod-eu, not prod-us"), "{warnings:?}");
        // Written before results named their cluster: this server's.
        data.save_result(&Scope::Releases.file(), &saved("")).unwrap();
        let old = load_saved::<DriftReport>(&data, Scope::Releases, "prod-us", &mut Vec::new());
        assert!(old.from_disk);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn scratch() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("drift-serve-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("drift.yaml")
    }

    fn load(text: &str) -> Result<ServeConfig, ServeError> {
        let path = scratch();
        std::fs::write(&path, text).unwrap();
        Ok(ServeConfig::of(&Config::read_as(Some(&path))?))
    }

    #[tokio::test]
    async fn scans_take_turns_in_the_order_they_were_asked_for() {
        let turns = Arc::new(Turns::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tickets: Vec<u64> = (0..4).map(|_| turns.ticket()).collect();
        let mut tasks = Vec::new();
        // Spawned last first: the turns still go by ticket.
        for (i, ticket) in tickets.into_iter().enumerate().rev() {
            let (turns, order, running) = (turns.clone(), order.clone(), running.clone());
            tasks.push(tokio::spawn(async move {
                let _turn = turns.wait(ticket).await;
                assert_eq!(running.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0, "two scans at once");
                tokio::time::sleep(Duration::from_millis(5)).await;
                lock(&order).push(i);
                running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                // A scan that fails by panicking still passes the turn on.
                if i == 1 {
                    panic!("scan {i} panicked");
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        assert_eq!(*lock(&order), vec![0, 1, 2, 3]);
        // The next scan asked for runs at once.
        let next = turns.ticket();
        tokio::time::timeout(Duration::from_secs(5), turns.wait(next)).await.expect("its turn came");
    }

    #[test]
    fn the_serve_section_is_read_typed_by_the_one_loader() {
        let c =
            load("orphans:\n  ignore: []\nserve:\n  scopes: [releases, orphans]\n  authorization:\n    verb: list\n")
                .unwrap();
        assert!(c.has_orphans);
        assert_eq!(c.scopes, Some(vec![Scope::Releases, Scope::Orphans]));
        assert_eq!(c.authorization.unwrap().verb.as_deref(), Some("list"));
        let c = load("ignore: []\n").unwrap();
        assert!(!c.has_orphans && c.scopes.is_none() && c.authorization.is_none());
        assert_eq!(c.releases_in_flight(Default::default()), None);

        // Releases in flight: the flag (or its variable) wins over the file; 0 is refused.
        let c = load("serve:\n  releases_in_flight: 6\n").unwrap();
        assert_eq!(c.releases_in_flight(Default::default()), Some(6));
        let flag = crate::app::cli::InFlightArg { releases_in_flight: Some(2) };
        assert_eq!(c.releases_in_flight(flag), Some(2));
        let e = load("serve:\n  releases_in_flight: 0\n").err().unwrap().to_string();
        assert!(e.contains("drift.yaml") && e.contains("releases_in_flight"), "{e}");

        // A wrong key or value in serve: names the file and where, as in the other sections.
        let e = load("serve:\n  scope: [releases]\n").err().unwrap().to_string();
        assert!(e.contains("drift.yaml") && e.contains("scope") && e.contains("line 2"), "{e}");
        let e = load("serve:\n  scopes: [release]\n").err().unwrap().to_string();
        assert!(e.contains("drift.yaml") && e.contains("release"), "{e}");
        // Other subcommands skip the section but still refuse an unknown top-level key.
        let path = scratch();
        std::fs::write(&path, "serve:\n  anything: [1, 2]\n").unwrap();
        assert!(Config::read(Some(&path)).is_ok());
        std::fs::write(&path, "serv:\n  scopes: []\n").unwrap();
        assert!(Config::read(Some(&path)).is_err());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
