//! `/metrics` of `serve` and `watch`: one registry (prometheus-client), one set of names.
//!
//! The finding gauges are computed at scrape time from the last scan's (or round's) result
//! ([`Snapshot`], through a [`Source`]), so a release that is gone is gone from the next scrape:
//! nothing to clear, and a scrape never sees half of an update. Counters that move on their own
//! (alerts, histograms) are prometheus-client's own types, registered once.
//!
//! Labels stay few (no label per object or per field): a release's namespace and name, a manifests
//! target's path, orphans by namespace, kind and class, version rows by category and status. The
//! `cluster` label is Prometheus' to add (external labels or the scrape config); `--cluster-name`
//! adds it to every series for those who scrape several clusters from one Prometheus, and a watch
//! over several contexts names each target's cluster. docs/metrics.md lists every metric.

use std::collections::BTreeMap;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use crate::report::Status;
use crate::report::orphans::{EvidenceClass, OrphanItem};
use crate::report::target::{Origin, TargetReport};
use crate::report::versions::{Category, VersionRow, VersionStatus};

/// The content type of the exposition (OpenMetrics text, which Prometheus 2 and 3 read).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The series' label pairs.
pub type Labels = Vec<(&'static str, String)>;

/// One metric family as a scrape shows it.
#[derive(Debug, Clone)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub counter: bool,
    pub rows: Vec<(Labels, f64)>,
}

impl Family {
    pub fn gauge(name: &'static str, help: &'static str) -> Family {
        Family { name, help, counter: false, rows: Vec::new() }
    }

    /// A counter; `name` without `_total` (the exposition adds it).
    pub fn counter(name: &'static str, help: &'static str) -> Family {
        Family { name, help, counter: true, rows: Vec::new() }
    }

    pub fn row(mut self, labels: Labels, value: f64) -> Family {
        self.rows.push((labels, value));
        self
    }

    pub fn push(&mut self, labels: Labels, value: f64) {
        self.rows.push((labels, value));
    }
}

/// The status label of a target: `clean`, `drifted`, `error` or `incomplete`.
pub fn status_word(s: Status) -> &'static str {
    match s {
        Status::Clean => "clean",
        Status::Drifted => "drifted",
        Status::Error => "error",
        Status::Incomplete => "incomplete",
    }
}

/// An evidence class as its JSON names it (`in-use`, not the text's "in use").
fn class_label(c: crate::report::orphans::EvidenceClass) -> &'static str {
    use crate::report::orphans::EvidenceClass as E;
    match c {
        E::Orphan => "orphan",
        E::InUse => "in-use",
        E::Managed => "managed",
        E::Protected => "protected",
        E::Ignored => "ignored",
    }
}

/// `cluster` first when the figure names one (a watch over several contexts), then `rest`.
fn with_cluster(cluster: &str, rest: Labels) -> Labels {
    let mut l = Vec::with_capacity(rest.len() + 1);
    if !cluster.is_empty() {
        l.push(("cluster", cluster.to_string()));
    }
    l.extend(rest);
    l
}

/// Orphans counted by (cluster, namespace, kind, class).
pub type OrphanCounts = BTreeMap<(String, String, String, String), u64>;

/// The `namespace` label of the orphans of every namespace past the bound (see
/// [`fold_orphans`]). Namespace names are DNS labels (lower-case letters, digits and `-`), so no
/// real namespace has this name; cluster-scoped objects keep their empty `namespace`.
pub const OTHER_NAMESPACES: &str = "(other)";

/// How many namespaces keep their own orphans series by default (`serve
/// --metrics-orphan-namespaces`).
pub const DEFAULT_ORPHAN_NAMESPACES: usize = 50;

/// The orphans series after the namespace bound: per cluster, the `keep` namespaces with the most
/// orphans (then the most examined objects, then by name, so the choice is stable between
/// scrapes) keep their own series; every other namespace's counts are added to one
/// `namespace="(other)"` series per kind and class. Cluster-scoped objects (namespace `""`) are
/// always kept and not counted against `keep`. Totals per (cluster, kind, class) are unchanged.
/// Returns the series and, per cluster, how many namespaces were folded.
pub fn fold_orphans(orphans: &OrphanCounts, keep: usize) -> (OrphanCounts, BTreeMap<String, u64>) {
    // (cluster, namespace) -> (orphans, examined)
    let mut per_ns: BTreeMap<(&str, &str), (u64, u64)> = BTreeMap::new();
    for ((cluster, ns, _, class), n) in orphans {
        if ns.is_empty() {
            continue;
        }
        let e = per_ns.entry((cluster.as_str(), ns.as_str())).or_default();
        if class == "orphan" {
            e.0 += n;
        }
        e.1 += n;
    }
    // cluster -> [(namespace, (orphans, examined))]
    type Ranked<'a> = Vec<(&'a str, (u64, u64))>;
    let mut by_cluster: BTreeMap<&str, Ranked> = BTreeMap::new();
    for ((cluster, ns), figures) in per_ns {
        by_cluster.entry(cluster).or_default().push((ns, figures));
    }
    let mut folded_ns: std::collections::BTreeSet<(&str, &str)> = std::collections::BTreeSet::new();
    let mut folded = BTreeMap::new();
    for (cluster, mut namespaces) in by_cluster {
        namespaces.sort_by(|(a, (ao, ae)), (b, (bo, be))| bo.cmp(ao).then(be.cmp(ae)).then(a.cmp(b)));
        let past = namespaces.get(keep..).unwrap_or_default();
        folded.insert(cluster.to_string(), past.len() as u64);
        folded_ns.extend(past.iter().map(|(ns, _)| (cluster, *ns)));
    }
    let mut out = BTreeMap::new();
    for ((cluster, ns, kind, class), n) in orphans {
        let ns = if folded_ns.contains(&(cluster.as_str(), ns.as_str())) { OTHER_NAMESPACES } else { ns.as_str() };
        *out.entry((cluster.clone(), ns.to_string(), kind.clone(), class.clone())).or_default() += n;
    }
    (out, folded)
}

/// What the finding gauges show: the last result of each scope. An empty cluster name means the
/// series carry no `cluster` label of their own.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Findings {
    /// (cluster, namespace, release) -> (status, drifted objects)
    pub releases: BTreeMap<(String, String, String), (Status, u64)>,
    /// (cluster, path) -> (status, drifted objects)
    pub manifests: BTreeMap<(String, String), (Status, u64)>,
    /// (cluster, namespace, kind, class) -> examined objects
    pub orphans: OrphanCounts,
    /// (cluster, category, status) -> rows
    pub versions: BTreeMap<(String, String, String), u64>,
    /// (cluster, namespace, release) -> its chart's status (the worst of its rows)
    pub charts: BTreeMap<(String, String, String), VersionStatus>,
    /// (cluster, namespace, release) -> when its oldest open drift started (Unix seconds), from
    /// the drift history (`--history`; none without one).
    pub drift_since: BTreeMap<(String, String, String), i64>,
}

/// What the versions families read of a row: read from a row, or borrowed from the row in a
/// report's JSON (the dashboard keeps the report as JSON; a scrape reads these four fields of
/// each row, never a copy of the rows).
#[derive(Debug, Clone, Copy, serde::Deserialize)]
pub struct RowFigures<'a> {
    pub category: Category,
    pub status: VersionStatus,
    #[serde(default)]
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

impl<'a> RowFigures<'a> {
    pub fn of(row: &'a VersionRow) -> RowFigures<'a> {
        RowFigures { category: row.category, status: row.status, namespace: row.namespace.as_deref(), name: &row.name }
    }
}

impl Findings {
    /// A checked target: a release or a manifests path (other origins are not targets of their
    /// own here: a whole-cluster error shows in the scan figures).
    pub fn add_target<O>(&mut self, cluster: &str, r: &TargetReport<O>)
    where
        O: Clone + Into<Origin>,
    {
        let drifted = r.objects.iter().filter(|o| o.is_drift()).count() as u64;
        match r.origin.clone().into() {
            Origin::Release(o) => {
                self.releases.insert((cluster.to_string(), o.namespace.clone(), o.name.clone()), (r.status, drifted));
            }
            Origin::Manifests { path } => {
                self.manifests.insert((cluster.to_string(), path), (r.status, drifted));
            }
            // A Flux Kustomization or an Argo CD Application watched as a target of its own.
            Origin::File(f) if f.gitops.is_some() => {
                let target = format!("{}/{}", Origin::File(f.clone()).kind(), f.path);
                self.manifests.insert((cluster.to_string(), target), (r.status, drifted));
            }
            Origin::File(_) | Origin::Extra(_) | Origin::Cluster => {}
        }
    }

    /// An orphans scan: every examined object counted by namespace, kind and evidence class
    /// (counted on borrowed keys first: a scrape of a big cluster walks tens of thousands of items).
    pub fn add_orphans<'a>(&mut self, cluster: &str, items: impl IntoIterator<Item = &'a OrphanItem>) {
        let mut counts: BTreeMap<(&str, &str, EvidenceClass), u64> = BTreeMap::new();
        for item in items {
            *counts
                .entry((item.namespace.as_deref().unwrap_or_default(), item.kind.as_str(), item.class))
                .or_default() += 1;
        }
        for ((ns, kind, class), n) in counts {
            self.add_orphan_count(cluster, ns, kind, class, n);
        }
    }

    /// An orphans scan already counted by namespace (empty: cluster-scoped), kind and class.
    pub fn add_orphan_counts(&mut self, cluster: &str, counts: &[((String, String, EvidenceClass), u64)]) {
        for ((ns, kind, class), n) in counts {
            self.add_orphan_count(cluster, ns, kind, *class, *n);
        }
    }

    fn add_orphan_count(&mut self, cluster: &str, ns: &str, kind: &str, class: EvidenceClass, n: u64) {
        *self
            .orphans
            .entry((cluster.to_string(), ns.to_string(), kind.to_string(), class_label(class).to_string()))
            .or_default() += n;
    }

    /// A versions scan's rows; Helm rows also give each release's chart status.
    pub fn add_versions<'a>(&mut self, cluster: &str, rows: impl IntoIterator<Item = RowFigures<'a>>) {
        for row in rows {
            let status = serde_json::to_value(row.status).ok().and_then(|v| v.as_str().map(str::to_string));
            *self
                .versions
                .entry((cluster.to_string(), row.category.word().to_string(), status.unwrap_or_default()))
                .or_default() += 1;
            if row.category == Category::Helm {
                let key = (cluster.to_string(), row.namespace.unwrap_or_default().to_string(), row.name.to_string());
                let worst = self.charts.get(&key).map_or(row.status, |s| (*s).max(row.status));
                self.charts.insert(key, worst);
            }
        }
    }

    /// `orphan_namespaces`: how many namespaces keep their own orphans series (`None`: all).
    fn families(&self, with_orphans: bool, orphan_namespaces: Option<usize>, with_versions: bool) -> Vec<Family> {
        let mut out = Vec::new();
        let mut status = Family::gauge(
            "kubectl_drift_release_status",
            "1 for each Helm release, labelled with its status in the last scan: clean, drifted, incomplete (a failed or pending Helm operation) or error.",
        );
        let mut drifted = Family::gauge(
            "kubectl_drift_release_drifted_objects",
            "Objects of the release that drifted in the last scan.",
        );
        for ((cluster, ns, name), (st, n)) in &self.releases {
            let l = with_cluster(cluster, vec![("namespace", ns.clone()), ("release", name.clone())]);
            drifted.push(l.clone(), *n as f64);
            let mut l = l;
            l.push(("status", status_word(*st).to_string()));
            status.push(l, 1.0);
        }
        out.extend([status, drifted]);
        if !self.drift_since.is_empty() {
            let mut since = Family::gauge(
                "kubectl_drift_release_drift_since_timestamp_seconds",
                "When the release's oldest open drift started (Unix time), from the drift history; no series while it has none.",
            );
            for ((cluster, ns, name), at) in &self.drift_since {
                since.push(
                    with_cluster(cluster, vec![("namespace", ns.clone()), ("release", name.clone())]),
                    *at as f64,
                );
            }
            out.push(since);
        }
        if !self.manifests.is_empty() {
            let mut status = Family::gauge(
                "kubectl_drift_manifests_status",
                "1 for each manifests target (folder, file or kustomization), labelled with its status in the last round.",
            );
            let mut drifted = Family::gauge(
                "kubectl_drift_manifests_drifted_objects",
                "Objects of the manifests target that drifted in the last round (extra objects included).",
            );
            for ((cluster, path), (st, n)) in &self.manifests {
                let l = with_cluster(cluster, vec![("target", path.clone())]);
                drifted.push(l.clone(), *n as f64);
                let mut l = l;
                l.push(("status", status_word(*st).to_string()));
                status.push(l, 1.0);
            }
            out.extend([status, drifted]);
        }
        if with_orphans {
            let mut f = Family::gauge(
                "kubectl_drift_orphan_objects",
                "Objects the last orphans scan examined, by namespace, kind and evidence class (orphan, in-use, managed, protected, ignored).",
            );
            let (series, folded) = fold_orphans(&self.orphans, orphan_namespaces.unwrap_or(usize::MAX));
            for ((cluster, ns, kind, class), n) in series {
                f.push(with_cluster(&cluster, vec![("namespace", ns), ("kind", kind), ("class", class)]), n as f64);
            }
            out.push(f);
            let mut g = Family::gauge(
                "kubectl_drift_orphan_namespaces_folded",
                "Namespaces whose orphans series are summed into namespace=\"(other)\" (past --metrics-orphan-namespaces).",
            );
            if folded.is_empty() {
                g.push(Vec::new(), 0.0);
            }
            for (cluster, n) in folded {
                g.push(with_cluster(&cluster, Vec::new()), n as f64);
            }
            out.push(g);
        }
        if with_versions {
            let mut rows = Family::gauge(
                "kubectl_drift_version_rows",
                "Rows of the last versions scan by category (cluster, nodes, helm, workloads, apis) and status.",
            );
            for ((cluster, category, st), n) in &self.versions {
                rows.push(
                    with_cluster(cluster, vec![("category", category.clone()), ("status", st.clone())]),
                    *n as f64,
                );
            }
            let mut charts = Family::gauge(
                "kubectl_drift_chart_status",
                "1 for each Helm release, labelled with its chart's status against upstream in the last versions scan.",
            );
            for ((cluster, ns, release), st) in &self.charts {
                let word = serde_json::to_value(st).ok().and_then(|v| v.as_str().map(str::to_string));
                charts.push(
                    with_cluster(
                        cluster,
                        vec![
                            ("namespace", ns.clone()),
                            ("release", release.clone()),
                            ("status", word.unwrap_or_default()),
                        ],
                    ),
                    1.0,
                );
            }
            out.extend([rows, charts]);
        }
        out
    }
}

/// A scope's scan health: serve's releases, orphans and versions; watch's releases and
/// manifests (one round checks both).
#[derive(Debug, Default, Clone)]
pub struct Scan {
    pub scope: &'static str,
    pub cluster: String,
    /// The last scan checked everything (`None`: none finished yet).
    pub success: Option<bool>,
    pub duration_seconds: f64,
    /// When the result the finding gauges show was made (unix seconds; 0: none yet).
    pub timestamp_seconds: f64,
    /// Objects the last successful scan examined.
    pub objects: u64,
    pub total: u64,
    pub errors: u64,
    pub running: bool,
}

/// Everything computed at scrape time.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub findings: Findings,
    /// Whether the orphans and versions families are shown (their scope is on), even while empty.
    pub orphans: bool,
    /// How many namespaces keep their own orphans series; the rest are summed under
    /// [`OTHER_NAMESPACES`] (`None`: no bound).
    pub orphan_namespaces: Option<usize>,
    pub versions: bool,
    pub scans: Vec<Scan>,
    /// A first scan (round) of every scope has finished.
    pub ready: bool,
    /// The families only one command has (HTTP requests, watch streams, ...).
    pub extra: Vec<Family>,
}

impl Snapshot {
    fn families(&self) -> Vec<Family> {
        let mut out = self.findings.families(self.orphans, self.orphan_namespaces, self.versions);
        let mut success = Family::gauge(
            "kubectl_drift_scan_success",
            "1 if the scope's last scan checked everything, 0 if it failed or could not see everything.",
        );
        let mut duration = Family::gauge("kubectl_drift_scan_duration_seconds", "How long the scope's last scan took.");
        let mut timestamp = Family::gauge(
            "kubectl_drift_scan_timestamp_seconds",
            "When the result the finding gauges show was made (unix time; 0 before the first).",
        );
        let mut objects = Family::gauge("kubectl_drift_scan_objects", "Objects the scope's last scan examined.");
        let mut total = Family::counter("kubectl_drift_scans", "Scans finished, by scope.");
        let mut errors =
            Family::counter("kubectl_drift_scan_errors", "Scans that failed or could not see everything, by scope.");
        let mut running = Family::gauge("kubectl_drift_scan_running", "1 while a scan of the scope runs.");
        for s in &self.scans {
            let l = with_cluster(&s.cluster, vec![("scope", s.scope.to_string())]);
            if let Some(ok) = s.success {
                success.push(l.clone(), f64::from(u8::from(ok)));
                duration.push(l.clone(), s.duration_seconds);
            }
            timestamp.push(l.clone(), s.timestamp_seconds);
            objects.push(l.clone(), s.objects as f64);
            total.push(l.clone(), s.total as f64);
            errors.push(l.clone(), s.errors as f64);
            running.push(l, f64::from(u8::from(s.running)));
        }
        out.extend([success, duration, timestamp, objects, total, errors, running]);
        out.push(
            Family::gauge("kubectl_drift_ready", "1 once every scope has finished a first scan.")
                .row(Vec::new(), f64::from(u8::from(self.ready))),
        );
        if let Some(rss) = resident_bytes() {
            out.push(
                Family::gauge("process_resident_memory_bytes", "Resident memory of the process.")
                    .row(Vec::new(), rss as f64),
            );
        }
        out.extend(self.extra.iter().cloned());
        out
    }
}

/// Where the scrape-time figures come from.
pub trait Source: Send + Sync + 'static {
    fn snapshot(&self) -> Snapshot;
}

struct Scrape(Arc<dyn Source>);

impl std::fmt::Debug for Scrape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scrape")
    }
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for family in self.0.snapshot().families() {
            let kind = if family.counter { MetricType::Counter } else { MetricType::Gauge };
            let mut metric = encoder.encode_descriptor(family.name, family.help, None, kind)?;
            for (labels, value) in &family.rows {
                let m = metric.encode_family(labels)?;
                if family.counter {
                    ConstCounter::new(*value).encode(m)?;
                } else {
                    ConstGauge::new(*value).encode(m)?;
                }
            }
        }
        Ok(())
    }
}

/// Who is exposing: the `cluster` label every series gets (`--cluster-name`), and the dashboard's
/// address that alerts and Grafana link to (`--external-url`).
#[derive(Debug, Default, Clone)]
pub struct Identity {
    pub cluster_name: Option<String>,
    pub external_url: Option<String>,
}

/// The registry of one process.
#[derive(Debug)]
pub struct Exporter {
    registry: Registry,
}

impl Exporter {
    /// A registry with the build info, the dashboard's address (when known) and the scrape-time
    /// figures of `source`. Register more metrics with [`Exporter::registry`] before sharing it.
    pub fn new(identity: &Identity, source: Arc<dyn Source>) -> Exporter {
        let mut registry = match identity.cluster_name.as_deref().filter(|n| !n.is_empty()) {
            Some(name) => Registry::with_labels(
                [(std::borrow::Cow::Borrowed("cluster"), std::borrow::Cow::Owned(name.to_string()))].into_iter(),
            ),
            None => Registry::default(),
        };
        registry.register(
            "kubectl_drift_build",
            "The running build: its version",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION").to_string())]),
        );
        if let Some(url) = identity.external_url.as_deref().filter(|u| !u.is_empty()) {
            registry.register(
                "kubectl_drift_dashboard",
                "Where this cluster's kubectl-drift dashboard is (--external-url), for links from alerts and Grafana",
                Info::new(vec![("url", url.trim_end_matches('/').to_string())]),
            );
        }
        registry.register_collector(Box::new(Scrape(source)));
        Exporter { registry }
    }

    pub fn registry(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The exposition, OpenMetrics text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

/// The histogram of a time from a watch event to what it caused (seconds).
pub fn event_histogram() -> prometheus_client::metrics::histogram::Histogram {
    prometheus_client::metrics::histogram::Histogram::new([0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0])
}

/// The watch streams' figures (`watch --live` and `serve --live`).
pub fn stream_families(live: &crate::source::live_cache::StreamStats) -> Vec<Family> {
    use std::sync::atomic::Ordering::Relaxed;
    vec![
        Family::counter("kubectl_drift_watch_events", "Watch events handled (initial list items included).")
            .row(Vec::new(), live.events.load(Relaxed) as f64),
        Family::counter(
            "kubectl_drift_watch_stream_restarts",
            "Watch stream failures, each followed by a reconnect from the last resourceVersion or a relist.",
        )
        .row(Vec::new(), live.restarts.load(Relaxed) as f64),
        Family::counter(
            "kubectl_drift_watch_relists",
            "Watch streams that listed again after their first list (410 Gone).",
        )
        .row(Vec::new(), live.relists.load(Relaxed) as f64),
        Family::gauge(
            "kubectl_drift_watch_streams",
            "Open watch streams (one per watched kind and namespace, plus release storage).",
        )
        .row(Vec::new(), live.streams.load(Relaxed) as f64),
        Family::gauge(
            "kubectl_drift_watch_streams_failing",
            "Watch streams that failed in the last 40s and sent nothing since.",
        )
        .row(Vec::new(), live.failing() as f64),
    ]
}

/// Resident set size from /proc (Linux).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Unix time now, in seconds.
pub fn now_seconds() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ObjectReport;
    use crate::report::ObjectState;
    use crate::report::target::{ReleaseOrigin, ReleaseReport};
    use crate::report::versions::Category;
    use serde::Deserialize;

    struct Fixed(Snapshot);

    impl Source for Fixed {
        fn snapshot(&self) -> Snapshot {
            self.0.clone()
        }
    }

    fn release(ns: &str, name: &str, status: Status, drifted: usize) -> ReleaseReport {
        let mut r = ReleaseReport::new(
            ReleaseOrigin { name: name.into(), namespace: ns.into(), ..ReleaseOrigin::default() },
            status,
        );
        for i in 0..drifted {
            r.objects.push(ObjectReport::new(
                "v1",
                "ConfigMap",
                Some(ns.into()),
                format!("c{i}"),
                ObjectState::Changed,
            ));
        }
        r.objects.push(ObjectReport::new("v1", "Service", None, "s", ObjectState::Ignored));
        r
    }

    /// Every family a serve with all scopes (and a watch of manifests) shows, with its type.
    fn full() -> Snapshot {
        let mut f = Findings::default();
        f.add_target("", &release("shop", "cart", Status::Drifted, 2));
        f.add_target("", &release("shop", "db", Status::Clean, 0));
        f.add_target("", &TargetReport::new(Origin::Manifests { path: "deploy/".into() }, Status::Clean));
        let mut v = VersionRow::new(Category::Helm, "cart", "1.0.0");
        v.namespace = Some("shop".into());
        v.status = VersionStatus::MajorBehind;
        let mut v2 = v.clone();
        v2.status = VersionStatus::PatchBehind;
        let kubernetes = VersionRow::new(Category::Cluster, "kubernetes", "v1.36.3");
        f.add_versions("", [&v, &v2, &kubernetes].into_iter().map(RowFigures::of));
        let live = crate::source::live_cache::StreamStats::default();
        Snapshot {
            findings: f,
            orphans: true,
            orphan_namespaces: Some(DEFAULT_ORPHAN_NAMESPACES),
            versions: true,
            scans: vec![Scan {
                scope: "releases",
                success: Some(true),
                duration_seconds: 1.5,
                timestamp_seconds: 1e9,
                objects: 3,
                total: 2,
                ..Scan::default()
            }],
            ready: true,
            extra: stream_families(&live),
        }
    }

    fn render(identity: &Identity, snap: Snapshot) -> String {
        Exporter::new(identity, Arc::new(Fixed(snap))).render()
    }

    #[test]
    fn row_figures_read_from_a_reports_json_are_the_rows() {
        // The dashboard reads the figures from the report's JSON in place: the same as from the
        // rows themselves, so a renamed field cannot silently empty the versions families.
        let mut helm = VersionRow::new(Category::Helm, "cart", "1.0.0");
        helm.namespace = Some("shop".into());
        helm.status = VersionStatus::MajorBehind;
        let cluster = VersionRow::new(Category::Cluster, "kubernetes", "v1.36.3");
        let rows = vec![helm, cluster];
        let json = serde_json::to_value(&rows).unwrap();
        let read: Vec<RowFigures> =
            json.as_array().unwrap().iter().map(|r| RowFigures::deserialize(r).unwrap()).collect();
        let mut from_json = Findings::default();
        from_json.add_versions("", read);
        let mut from_rows = Findings::default();
        from_rows.add_versions("", rows.iter().map(RowFigures::of));
        assert_eq!(from_json, from_rows);
        assert_eq!(from_json.charts.len(), 1);
        assert_eq!(from_json.versions.len(), 2);
    }

    /// The names are an interface (alert rules, dashboards): this list changes only on purpose,
    /// with docs/metrics.md.
    #[test]
    fn the_metric_names_are_stable() {
        let text =
            render(&Identity { cluster_name: None, external_url: Some("https://drift.example/".into()) }, full());
        let families: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).collect();
        let mut expected = vec![
            "kubectl_drift_build info",
            "kubectl_drift_dashboard info",
            "kubectl_drift_release_status gauge",
            "kubectl_drift_release_drifted_objects gauge",
            "kubectl_drift_manifests_status gauge",
            "kubectl_drift_manifests_drifted_objects gauge",
            "kubectl_drift_orphan_objects gauge",
            "kubectl_drift_orphan_namespaces_folded gauge",
            "kubectl_drift_version_rows gauge",
            "kubectl_drift_chart_status gauge",
            "kubectl_drift_scan_success gauge",
            "kubectl_drift_scan_duration_seconds gauge",
            "kubectl_drift_scan_timestamp_seconds gauge",
            "kubectl_drift_scan_objects gauge",
            "kubectl_drift_scans counter",
            "kubectl_drift_scan_errors counter",
            "kubectl_drift_scan_running gauge",
            "kubectl_drift_ready gauge",
            "process_resident_memory_bytes gauge",
            "kubectl_drift_watch_events counter",
            "kubectl_drift_watch_stream_restarts counter",
            "kubectl_drift_watch_relists counter",
            "kubectl_drift_watch_streams gauge",
            "kubectl_drift_watch_streams_failing gauge",
        ];
        assert_eq!(families, expected, "{text}");
        // Each is documented.
        let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/metrics.md")).unwrap();
        expected.extend([
            "kubectl_drift_rounds counter",
            "kubectl_drift_round_errors counter",
            "kubectl_drift_alerts counter",
            "kubectl_drift_alert_failures counter",
            "kubectl_drift_event_to_alert_seconds histogram",
            "kubectl_drift_http_requests counter",
            "kubectl_drift_live_updates counter",
            "kubectl_drift_event_to_update_seconds histogram",
        ]);
        for family in expected {
            let (name, kind) = family.split_once(' ').unwrap();
            let sample = match kind {
                "counter" => format!("`{name}_total`"),
                "info" => format!("`{name}_info`"),
                _ => format!("`{name}`"),
            };
            assert!(docs.contains(&sample), "docs/metrics.md does not document {sample}");
        }
    }

    #[test]
    fn findings_are_one_series_per_release_and_a_count_per_group() {
        let text = render(&Identity::default(), full());
        assert!(
            text.contains(r#"kubectl_drift_release_status{namespace="shop",release="cart",status="drifted"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"kubectl_drift_release_status{namespace="shop",release="db",status="clean"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"kubectl_drift_release_drifted_objects{namespace="shop",release="cart"} 2"#), "{text}");
        assert!(text.contains(r#"kubectl_drift_release_drifted_objects{namespace="shop",release="db"} 0"#), "{text}");
        assert!(text.contains(r#"kubectl_drift_manifests_status{target="deploy/",status="clean"} 1"#), "{text}");
        // A release's chart: the worst of its rows.
        assert!(
            text.contains(r#"kubectl_drift_chart_status{namespace="shop",release="cart",status="major-behind"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"kubectl_drift_version_rows{category="helm",status="major-behind"} 1"#), "{text}");
        assert!(text.contains(r#"kubectl_drift_version_rows{category="cluster",status="unknown"} 1"#), "{text}");
        assert!(text.contains(r#"kubectl_drift_scans_total{scope="releases"} 2"#), "{text}");
        assert!(text.contains(r#"kubectl_drift_scan_success{scope="releases"} 1"#), "{text}");
        assert!(
            text.contains(&format!("kubectl_drift_build_info{{version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"))),
            "{text}"
        );
        assert!(!text.contains("cluster="), "no cluster label unless asked: {text}");
        assert!(text.ends_with("# EOF\n"), "OpenMetrics ends with EOF");
    }

    #[test]
    fn cluster_name_labels_every_series() {
        let text = render(&Identity { cluster_name: Some("prod-eu".into()), external_url: None }, full());
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(samples.len() > 20);
        for s in samples {
            assert!(s.contains(r#"cluster="prod-eu""#), "{s}");
        }
    }

    #[test]
    fn hostile_label_values_are_escaped() {
        let mut snap = Snapshot::default();
        snap.findings.add_target("", &release("ns", "a\"b\\c\nd", Status::Clean, 0));
        let text = render(&Identity::default(), snap);
        assert!(text.contains(r#"release="a\"b\\c\nd""#), "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("kubectl_drift_release_status")).count(), 1, "{text}");
    }

    #[test]
    fn class_labels_are_the_json_names() {
        use crate::report::orphans::EvidenceClass as E;
        for c in [E::Orphan, E::InUse, E::Managed, E::Protected, E::Ignored] {
            assert_eq!(serde_json::to_value(c).unwrap(), class_label(c), "{c:?}");
        }
    }

    #[test]
    fn orphans_count_by_namespace_kind_and_class() {
        use crate::report::orphan_kinds::ExaminedKind;
        use crate::report::orphans::{EvidenceClass, OrphanItem};
        let items = vec![
            OrphanItem::sample(ExaminedKind::ConfigMap, Some("a"), "x", EvidenceClass::Orphan),
            OrphanItem::sample(ExaminedKind::ConfigMap, Some("a"), "y", EvidenceClass::Orphan),
            OrphanItem::sample(ExaminedKind::Secret, Some("a"), "z", EvidenceClass::InUse),
        ];
        let report = crate::report::orphans::OrphanReport::new(items, true, None, &[], 0);
        let mut snap = Snapshot { orphans: true, ..Snapshot::default() };
        snap.findings.add_orphans("", &report.items);
        let text = render(&Identity::default(), snap);
        assert!(
            text.contains(r#"kubectl_drift_orphan_objects{namespace="a",kind="ConfigMap",class="orphan"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"kubectl_drift_orphan_objects{namespace="a",kind="Secret",class="in-use"} 1"#),
            "{text}"
        );
    }

    /// The orphans samples of an exposition: (namespace, kind, class) -> value.
    fn orphan_samples(text: &str) -> BTreeMap<(String, String, String), f64> {
        let mut out = BTreeMap::new();
        for line in text.lines().filter_map(|l| l.strip_prefix("kubectl_drift_orphan_objects{")) {
            let (labels, value) = line.rsplit_once("} ").unwrap();
            let label = |name: &str| {
                let start =
                    labels.find(&format!("{name}=\"")).unwrap_or_else(|| panic!("{name} in {line}")) + name.len() + 2;
                labels[start..].split('"').next().unwrap().to_string()
            };
            let key = (label("namespace"), label("kind"), label("class"));
            assert!(out.insert(key, value.parse::<f64>().unwrap()).is_none(), "one series per label set: {line}");
        }
        out
    }

    fn gauge(text: &str, name: &str) -> f64 {
        let line = text.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{'])).unwrap();
        line.rsplit_once(' ').unwrap().1.parse().unwrap()
    }

    #[test]
    fn orphans_past_the_namespace_bound_are_summed_and_totals_kept() {
        use crate::report::orphan_kinds::ExaminedKind;
        use crate::report::orphans::EvidenceClass;
        // 2,000 namespaces' worth of counts, built in memory: in each, 6 kinds in 2 or 3 classes;
        // namespace i has i % 7 orphan ConfigMaps, so the ranking has ties to break by name.
        let kinds = [
            ExaminedKind::ConfigMap,
            ExaminedKind::Secret,
            ExaminedKind::ServiceAccount,
            ExaminedKind::Service,
            ExaminedKind::Role,
            ExaminedKind::RoleBinding,
        ];
        let mut findings = Findings::default();
        let mut put = |ns: &str, kind: ExaminedKind, class: EvidenceClass, n: u64| {
            if n > 0 {
                findings.orphans.insert((String::new(), ns.into(), kind.kind().into(), class_label(class).into()), n);
            }
        };
        for i in 0..2000u64 {
            let ns = format!("team-{i:04}");
            for (k, kind) in kinds.iter().enumerate() {
                let k = k as u64;
                put(&ns, *kind, EvidenceClass::InUse, 1 + (i + k) % 5);
                put(&ns, *kind, EvidenceClass::Protected, 1);
                put(&ns, *kind, EvidenceClass::Orphan, if k == 0 { i % 7 } else { (i + k) % 2 });
            }
        }
        put("", ExaminedKind::PersistentVolume, EvidenceClass::Orphan, 3);
        put("", ExaminedKind::ClusterRole, EvidenceClass::Protected, 40);
        let snapshot = |bound| Snapshot {
            findings: findings.clone(),
            orphans: true,
            orphan_namespaces: bound,
            ..Snapshot::default()
        };
        let unbounded = render(&Identity::default(), snapshot(None));
        let all = orphan_samples(&unbounded);
        assert!(all.len() > 30_000, "without a bound the series grow with the namespaces: {}", all.len());
        assert_eq!(gauge(&unbounded, "kubectl_drift_orphan_namespaces_folded"), 0.0);

        let keep = DEFAULT_ORPHAN_NAMESPACES;
        let text = render(&Identity::default(), snapshot(Some(keep)));
        let bounded = orphan_samples(&text);
        // At most (keep + "(other)") namespaces x kinds x classes, plus the cluster-scoped series.
        let limit = (keep + 1) * kinds.len() * 5 + 2;
        assert!(bounded.len() <= limit, "{} series, bound {limit}", bounded.len());
        let namespaces: std::collections::BTreeSet<&str> = bounded.keys().map(|(ns, _, _)| ns.as_str()).collect();
        assert_eq!(namespaces.len(), keep + 2, "{namespaces:?}");
        assert!(namespaces.contains(OTHER_NAMESPACES) && namespaces.contains(""), "{namespaces:?}");
        assert_eq!(gauge(&text, "kubectl_drift_orphan_namespaces_folded"), (2000 - keep) as f64);

        // The sums: per kind and class, per class and in all, the same as before folding.
        let sum_by = |s: &BTreeMap<(String, String, String), f64>, f: fn(&(String, String, String)) -> String| {
            let mut out: BTreeMap<String, f64> = BTreeMap::new();
            for (k, v) in s {
                *out.entry(f(k)).or_default() += v;
            }
            out
        };
        assert_eq!(sum_by(&bounded, |k| format!("{}/{}", k.1, k.2)), sum_by(&all, |k| format!("{}/{}", k.1, k.2)));
        assert_eq!(sum_by(&bounded, |k| k.2.clone()), sum_by(&all, |k| k.2.clone()));
        assert_eq!(bounded.values().sum::<f64>(), all.values().sum::<f64>());
        // A kept namespace's series are its own, unchanged; cluster-scoped ones are never folded.
        for (key, v) in &bounded {
            if key.0 != OTHER_NAMESPACES {
                assert_eq!(all.get(key), Some(v), "{key:?}");
            }
        }

        // Kept: the most orphans first (i % 7 == 6 gives 6 orphan ConfigMaps and 3 others), ties
        // by examined objects, then by name. Recomputed here from the unbounded series.
        let mut ranked: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
        for ((ns, _, class), v) in &all {
            if ns.is_empty() {
                continue;
            }
            let e = ranked.entry(ns.as_str()).or_default();
            e.1 += v;
            if class == "orphan" {
                e.0 += v;
            }
        }
        let mut ranked: Vec<(&str, (f64, f64))> = ranked.into_iter().collect();
        ranked.sort_by(|(a, (ao, ae)), (b, (bo, be))| bo.total_cmp(ao).then(be.total_cmp(ae)).then(a.cmp(b)));
        let expected: std::collections::BTreeSet<&str> = ranked[..keep].iter().map(|(ns, _)| *ns).collect();
        let kept: std::collections::BTreeSet<&str> =
            namespaces.iter().copied().filter(|ns| !ns.is_empty() && *ns != OTHER_NAMESPACES).collect();
        assert_eq!(kept, expected);
        // The same scrape twice: the same series (the order of ties does not move).
        assert_eq!(orphan_samples(&render(&Identity::default(), snapshot(Some(keep)))), bounded);
    }

    #[test]
    fn ties_at_the_bound_are_broken_by_name_and_zero_folds_every_namespace() {
        let mut f = Findings::default();
        for (ns, n) in [("b", 2), ("a", 2), ("c", 2), ("d", 5)] {
            f.orphans.insert((String::new(), ns.into(), "ConfigMap".into(), "orphan".into()), n);
        }
        f.orphans.insert((String::new(), String::new(), "StorageClass".into(), "orphan".into()), 1);
        let (series, folded) = fold_orphans(&f.orphans, 2);
        let names: Vec<&str> = series.keys().map(|k| k.1.as_str()).collect();
        // d has the most; of the tied a, b, c the first by name stays.
        assert_eq!(names, vec!["", "(other)", "a", "d"]);
        assert_eq!(series[&(String::new(), "(other)".into(), "ConfigMap".into(), "orphan".into())], 4);
        assert_eq!(folded[""], 2);
        let (series, folded) = fold_orphans(&f.orphans, 0);
        assert_eq!(series.len(), 2, "{series:?}");
        assert_eq!(series[&(String::new(), "(other)".into(), "ConfigMap".into(), "orphan".into())], 11);
        assert_eq!(folded[""], 4);
        // Per cluster (a watch or a test over several): each cluster keeps its own top namespaces.
        f.orphans.insert(("x".into(), "z".into(), "Secret".into(), "orphan".into()), 1);
        let (series, folded) = fold_orphans(&f.orphans, 2);
        assert!(series.contains_key(&("x".into(), "z".into(), "Secret".into(), "orphan".into())));
        assert_eq!((folded[""], folded["x"]), (2, 0));
    }
}
