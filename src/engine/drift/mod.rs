//! The drift engine: a set of desired objects against the live cluster, producing object reports.
//! Release drift ([`check_release`]) and manifests drift use the same [`check_objects`].
//!
//! Steps per set: [`plan`] resolves each kind by discovery and lists the LISTs needed; [`fetch`]
//! reads them through the shared connection ([`Cluster`]: discovery and the LIST cache, or a
//! watch-fed cache); [`compare`] compares each pair (pure: it sees only the fetched objects),
//! marks replicas owned by an HPA and user-ignored fields as ignored, and finds extra objects
//! carrying the release's labels. Nothing here prints.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

pub mod compare;
pub mod crds;
pub mod fetch;
pub mod flux;
pub mod plan;
#[cfg(test)]
mod tests;

use crate::engine::compare::CompareContext;
use crate::engine::compare::rules::IgnoreRule;
use crate::report::progress::{Counter, Progress};
use crate::report::{ObjectReport, ObjectState, ReleaseOrigin, ReleaseReport, Status};
use crate::source::cluster::Cluster;
use crate::source::helm::Release;
use crate::source::helm::storage::ReleaseRevisions;
use crate::source::helm::storage::is_settled;
use crate::source::live::{Kinds, LiveError, LiveReader, LiveSource, ResolvedKind};
use crate::source::manifest::{DesiredObject, parse_stream};

/// Settings shared by every check in a run: one connection (discovery, the LIST cache, where
/// whole LISTs come from), the ignore rules, and whether Secret values may be shown.
pub struct Engine {
    pub kinds: Arc<Kinds>,
    pub reader: Arc<LiveReader>,
    /// Where the fetch step reads whole LISTs (the cached LISTs of `reader`, or a watch-fed cache).
    pub lists: Arc<dyn LiveSource>,
    pub rules: Vec<IgnoreRule>,
    pub show_secrets: bool,
    /// Indexes of the large listings the checks read, shared by them.
    pub indexes: Arc<fetch::Indexes>,
    /// The cluster's Flux HelmReleases, read on first need (one LIST), shared by the checks.
    pub flux: Arc<tokio::sync::OnceCell<flux::FluxIndex>>,
    /// Compare each release chart's `crds/` with the live CRDs ([`crds`]; off: `--no-crds`).
    pub chart_crds: bool,
}

impl Engine {
    /// An engine on `cluster` (running its discovery if no caller has yet).
    pub async fn connect(cluster: &Cluster, rules: Vec<IgnoreRule>, show_secrets: bool) -> Result<Engine, LiveError> {
        Ok(Engine {
            kinds: cluster.kinds().await?,
            reader: cluster.reader(),
            lists: cluster.lists(),
            rules,
            show_secrets,
            indexes: Arc::default(),
            flux: Arc::default(),
            chart_crds: true,
        })
    }

    /// Another handle on the same discovery, LIST cache and rules.
    pub fn clone_shared(&self) -> Engine {
        Engine {
            kinds: self.kinds.clone(),
            reader: self.reader.clone(),
            lists: self.lists.clone(),
            rules: self.rules.clone(),
            show_secrets: self.show_secrets,
            indexes: self.indexes.clone(),
            flux: self.flux.clone(),
            chart_crds: self.chart_crds,
        }
    }
}

/// Who labelled objects as belonging to a release (for finding extra objects).
#[derive(Debug, Clone)]
pub struct ReleaseIdentity {
    pub name: String,
    pub namespace: String,
    /// Kinds (apiVersion, kind) to search for extra objects beyond the desired objects' own:
    /// those of a newer, incomplete revision, which may have created objects of other kinds.
    pub also_kinds: Vec<(String, String)>,
}

/// Result of checking a set of desired objects.
#[derive(Debug, Default)]
pub struct ObjectsOutcome {
    /// Objects with drift, ignored differences, or errors (clean objects are left out).
    pub objects: Vec<ObjectReport>,
    /// Number of desired objects checked.
    pub checked: usize,
    /// Problems that made the check incomplete.
    pub errors: Vec<String>,
    /// The live objects that were compared, keyed like the reports (for reconcile commands).
    pub live: HashMap<(String, String, String), Value>,
}

impl Engine {
    /// Check desired objects against the cluster: [`plan::plan`] the LISTs, [`fetch::fetch`]
    /// them, [`compare::compare`] each pair. Objects without a namespace take
    /// `default_namespace` when their kind is namespaced. With `release`, also look for extra
    /// objects labelled for it in its namespace.
    pub async fn check_objects(
        &self,
        desired: &[DesiredObject],
        default_namespace: &str,
        ctx: &CompareContext,
        release: Option<&ReleaseIdentity>,
    ) -> ObjectsOutcome {
        let plan = plan::plan(&self.kinds, desired, default_namespace, release);
        let fetched = fetch::fetch(&plan, self.lists.as_ref(), &self.indexes).await;
        let judge = compare::Judge { ctx, rules: &self.rules, show_secrets: self.show_secrets };
        compare::compare(desired, &plan, &fetched, &judge)
    }

    /// Kinds to search for extra objects: the common ones plus every kind in the manifest.
    pub(crate) fn extra_kinds(&self, desired: &[DesiredObject], also: &[(String, String)]) -> Vec<ResolvedKind> {
        plan::extra_kinds(&self.kinds, desired, also)
    }
}

/// Whether a live object carries the release's labels or annotations and is not owned by
/// another object (controllers' children are never extra) nor a Helm hook.
pub fn belongs_to(o: &Value, rel: &ReleaseIdentity) -> bool {
    let Some(meta) = o.get("metadata") else { return false };
    if meta.get("ownerReferences").and_then(Value::as_array).is_some_and(|a| !a.is_empty()) {
        return false;
    }
    let annotations = meta.get("annotations");
    let ann = |k: &str| annotations.and_then(|a| a.get(k)).and_then(Value::as_str);
    if ann("helm.sh/hook").is_some() {
        return false;
    }
    let ns = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
    let by_annotation = ann("meta.helm.sh/release-name") == Some(rel.name.as_str())
        && ann("meta.helm.sh/release-namespace") == Some(rel.namespace.as_str());
    if by_annotation {
        return true;
    }
    let instance = meta.get("labels").and_then(|l| l.get("app.kubernetes.io/instance")).and_then(Value::as_str);
    // The instance label alone is trusted in the release's namespace, or on cluster-scoped
    // objects not claimed by another release namespace.
    instance == Some(rel.name.as_str())
        && (ns == rel.namespace
            || (ns.is_empty() && ann("meta.helm.sh/release-namespace").is_none_or(|n| n == rel.namespace)))
}

pub(crate) fn error_object(d: &DesiredObject, namespace: Option<String>, error: String) -> ObjectReport {
    ObjectReport {
        error: Some(error),
        source: Some(d.source.clone()),
        ..ObjectReport::new(d.api_version.clone(), d.kind.clone(), namespace, d.name.clone(), ObjectState::Error)
    }
}

/// What Helm itself writes on every object of a release as it installs or upgrades it, over
/// whatever the template set (its metadata visitor, the same in Helm 3 and Helm 4): the label
/// `app.kubernetes.io/managed-by: Helm` and the annotations `meta.helm.sh/release-name` and
/// `meta.helm.sh/release-namespace`. The stored manifest is the template's output: where the
/// template set one of them to something else (an operator's name in `managed-by`, say), the
/// desired value is Helm's, so a fresh install is not drift and a hand edit of it is. Where the
/// template left one out, nothing is added: releases installed before Helm 3.2 (which had no
/// visitor) lack them, and a missing value there is not drift.
pub fn helm_metadata(desired: &mut [DesiredObject], release: &str, namespace: &str) {
    for d in desired {
        let Some(metadata) = d.body.get_mut("metadata").and_then(Value::as_object_mut) else { continue };
        for (map, key, value) in [
            ("labels", "app.kubernetes.io/managed-by", "Helm"),
            ("annotations", "meta.helm.sh/release-name", release),
            ("annotations", "meta.helm.sh/release-namespace", namespace),
        ] {
            if let Some(set) = metadata.get_mut(map).and_then(|m| m.get_mut(key)) {
                *set = Value::String(value.to_string());
            }
        }
    }
}

/// The field managers that count as "the deployer" of a Helm release.
pub fn helm_deployers() -> Vec<String> {
    vec!["helm".to_string(), "Helm".to_string()]
}

/// Which releases a run checks.
#[derive(Debug, Clone)]
pub struct ReleaseSelection {
    /// Release names (in `namespace`); ignored with `all`.
    pub names: Vec<String>,
    /// Every deployed release in `namespace`, or everywhere with `all_namespaces`.
    pub all: bool,
    pub all_namespaces: bool,
    pub namespace: String,
    pub revision: Option<u32>,
    /// Also compare each release chart's `crds/` with the live CRDs (`--no-crds` turns it off).
    pub chart_crds: bool,
}

/// Why a whole run could not start.
#[derive(Debug, thiserror::Error)]
pub enum DriftError {
    /// Release storage could not be listed (unreachable API, forbidden).
    #[error(transparent)]
    Storage(#[from] crate::source::helm::StorageError),
    /// Discovery failed.
    #[error(transparent)]
    Live(#[from] LiveError),
}

/// How many releases are checked at once. Releases go namespace by namespace (a namespace's
/// releases share its LISTs), so with 8 in flight and about 10 releases a namespace the API
/// server idled while the tool compared one namespace before reading the next: at 2,000 releases
/// 20.9 s against a LIST floor of 16.8 s. With 24 (two to three namespaces in flight) the reads of
/// the next namespaces overlap the compares: 13.3 s, for 93 MiB of peak memory against 75 MiB
/// (docs/drift.md, "Big clusters").
const RELEASES_IN_FLIGHT: usize = 24;

/// Check the selected releases: read their storage, discover kinds, compare every release (at
/// most [`RELEASES_IN_FLIGHT`] at once, each a task of its own, sharing LISTs), and build the
/// report. A release that cannot be found or decoded is reported as an error; the others are
/// still checked. `progress` hears of each release checked (by its namespace) and the objects
/// it had.
pub async fn check_releases(
    cluster: &Cluster,
    sel: &ReleaseSelection,
    rules: Vec<IgnoreRule>,
    show_secrets: bool,
    progress: &dyn Progress,
) -> Result<crate::report::DriftReport, DriftError> {
    use futures::StreamExt;
    progress.start("reading releases", None);
    let store = cluster.store();
    let scope = if sel.all && sel.all_namespaces { None } else { Some(sel.namespace.as_str()) };
    let names: &[String] = if sel.all { &[] } else { &sel.names };
    let mut revisions = Vec::new();
    let mut lookup_errors = Vec::new();
    // Storage and discovery at the same time (neither needs the other); a storage error first.
    let (found, engine) = futures::join!(
        store.releases_to_check(scope, names, sel.revision),
        Engine::connect(cluster, rules, show_secrets)
    );
    for found in found? {
        match found {
            Ok(r) => revisions.push(r),
            Err(e) => lookup_errors.push(e),
        }
    }
    let mut engine = engine?;
    engine.chart_crds = sel.chart_crds;
    let engine = Arc::new(engine);
    let reconciler = Arc::new(crate::engine::reconcile::Reconciler::from(cluster.target()));
    progress.start("releases", Some(revisions.len() as u64));
    // Namespace by namespace (the releases of one share its LISTs), and a namespace's cached
    // lists are dropped once its last release is checked: with -A on a big cluster, memory then
    // follows the namespaces in flight rather than every object of the cluster.
    revisions.sort_by(|a, b| (&a.summary.namespace, &a.summary.name).cmp(&(&b.summary.namespace, &b.summary.name)));
    let mut left: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for r in &revisions {
        *left.entry(r.summary.namespace.clone()).or_default() += 1;
    }
    let mut checks = futures::stream::iter(revisions.into_iter().map(|rev| {
        let engine = engine.clone();
        let reconciler = reconciler.clone();
        let namespace = rev.summary.namespace.clone();
        // The fields an operator filters on; the line at its end says how it went (-vv).
        let span = tracing::debug_span!(
            "release_check",
            cluster = cluster.name(),
            namespace = %rev.summary.namespace,
            release = %rev.summary.name,
        );
        let check = async move {
            let started = std::time::Instant::now();
            let (report, objects) = check_release(&engine, rev, &reconciler).await;
            tracing::debug!(
                outcome = report.status.name(),
                objects,
                duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                "release checked"
            );
            (namespace, (report, objects))
        };
        // Each check is a task of its own, so the parsing and comparing of the releases in
        // flight run on every core while others wait for their LISTs (in one task they took
        // turns on one core). A run that is dropped (a scan cancelled) aborts its checks, and a
        // panic in a check is the run's panic, as it was.
        let task = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(tracing::Instrument::instrument(check, span)));
        async move { task.await.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())) }
    }))
    .buffered(RELEASES_IN_FLIGHT);
    let mut results: Vec<(ReleaseReport, usize)> = Vec::new();
    while let Some((namespace, result)) = checks.next().await {
        if let Some(n) = left.get_mut(&namespace) {
            *n -= 1;
            if *n == 0 {
                engine.reader.forget_namespace(&namespace);
            }
        }
        progress.add(Counter::Objects, result.1 as u64);
        progress.step(&namespace);
        results.push(result);
    }
    let checked = results.iter().map(|(_, n)| n).sum();
    let mut releases: Vec<ReleaseReport> = results.into_iter().map(|(r, _)| r).collect();
    for (name, e) in lookup_errors {
        releases.push(ReleaseReport::failed_release(
            name,
            sel.namespace.clone(),
            sel.revision.unwrap_or(0),
            e.to_string(),
        ));
    }
    let mut report = crate::report::DriftReport::new(releases, checked);
    report.cluster = cluster.name().to_string();
    Ok(report)
}

/// Check one release: live against its desired revision and, after a failed or interrupted
/// upgrade or rollback, against the newer revision too (see [`crate::engine::lifecycle`]).
pub async fn check_release(
    engine: &Engine,
    revisions: ReleaseRevisions,
    reconcile: &crate::engine::reconcile::Reconciler,
) -> (ReleaseReport, usize) {
    let check = check_release_full(engine, revisions, reconcile).await;
    (check.report, check.objects)
}

/// One release checked, with what the check compared: the decoded revision, its desired objects
/// (as compared: Helm's metadata set) and the live objects they were compared with, keyed
/// (kind, namespace, name). `compare` (`engine::envdiff`) reads two of these side by side.
pub struct ReleaseCheck {
    pub report: ReleaseReport,
    /// How many objects were compared.
    pub objects: usize,
    /// The revision compared; `None` when it could not be decoded (the report says why).
    pub release: Option<Release>,
    pub desired: Vec<DesiredObject>,
    pub live: HashMap<(String, String, String), Value>,
}

/// [`check_release`], keeping the revision, the desired and the live objects.
pub async fn check_release_full(
    engine: &Engine,
    revisions: ReleaseRevisions,
    reconcile: &crate::engine::reconcile::Reconciler,
) -> ReleaseCheck {
    let ReleaseRevisions { summary, desired: stored, newer } = revisions;
    let helm_description = |r: Option<&Release>| {
        r.map(|r| r.info.description.clone()).filter(|d| !d.is_empty() && !is_settled(&summary.status))
    };
    let release = match stored.release.decode() {
        Ok(r) => r,
        Err(e) => {
            let mut report =
                ReleaseReport::failed_release(stored.name, stored.namespace, stored.revision, e.to_string());
            report.origin.helm_status = Some(summary.status.clone());
            report.origin.latest_revision = Some(summary.revision);
            return ReleaseCheck { report, objects: 0, release: None, desired: Vec::new(), live: HashMap::new() };
        }
    };
    let mut errors: Vec<String> = Vec::new();
    let newer = newer.and_then(|n| match n.release.decode() {
        Ok(r) => Some(r),
        Err(e) => {
            errors.push(format!("revision {} ({}): {e}", n.revision, n.status));
            None
        }
    });
    let origin = format!("release {}/{} revision {}", release.namespace, release.name, release.revision);
    let (mut desired, parse_errors) = parse_stream(&release.manifest, &origin);
    errors.extend(parse_errors.iter().map(|e| e.to_string()));
    helm_metadata(&mut desired, &release.name, &release.namespace);
    let newer_objects = newer.as_ref().map(|n| {
        let origin = format!("release {}/{} revision {}", n.namespace, n.name, n.revision);
        let (mut objects, parse_errors) = parse_stream(&n.manifest, &origin);
        errors.extend(parse_errors.iter().map(|e| e.to_string()));
        helm_metadata(&mut objects, &n.name, &n.namespace);
        objects
    });
    let identity = ReleaseIdentity {
        name: release.name.clone(),
        namespace: release.namespace.clone(),
        also_kinds: newer_objects.iter().flatten().map(|d| (d.api_version.clone(), d.kind.clone())).collect(),
    };
    let ctx = CompareContext { deployers: helm_deployers(), ..Default::default() };
    let mut outcome = engine.check_objects(&desired, &release.namespace, &ctx, Some(&identity)).await;
    if let (Some(n), Some(objects)) = (&newer, &newer_objects) {
        crate::engine::lifecycle::attribute_newer(
            &mut outcome.objects,
            objects,
            n.revision,
            &release.namespace,
            &outcome.live,
            &ctx,
        );
    }
    errors.extend(outcome.errors.iter().cloned());
    let (chart_crds, crds_checked) = if engine.chart_crds {
        engine.chart_crd_reports(&release, &desired, &mut errors).await
    } else {
        (Vec::new(), 0)
    };
    // A release helm-controller manages: its HelmRelease's ignore rules, state and advice.
    let flux_index = engine.flux.get_or_init(|| flux::FluxIndex::read(&engine.kinds, &engine.reader)).await;
    let flux = flux::flux_release(flux_index, &release.name, &release.namespace, &outcome.live);
    if let Some(hr) = flux.as_ref().and_then(|f| f.helm_release.as_ref()) {
        flux::apply_flux_ignore(hr, &mut outcome.objects, &outcome.live, &desired);
    }
    // Helm's and kubectl's commands are for the templated objects; the chart's CRDs get their own
    // (a rollback never touches them), and join the report after.
    let mut report = build_release_report(&release, outcome.objects, errors, &summary.status);
    report.origin.gitops = flux.as_ref().map(flux::FluxMatch::gitops);
    report.origin.latest_revision = Some(summary.revision);
    report.origin.helm_description = helm_description(newer.as_ref().or(Some(&release)));
    if let (Some(f), true) = (&flux, matches!(report.status, Status::Drifted | Status::Incomplete)) {
        report.reconcile = reconcile.for_flux_release(&f.namespace, &f.name, &report.objects, &outcome.live);
    } else if report.status != Status::Error {
        report.reconcile = match &newer {
            Some(n) => reconcile.for_incomplete_release(&release, n, &summary.status, &report.objects, &outcome.live),
            None if report.status == Status::Drifted => {
                let mut cmds = reconcile.for_release(&release, &report.objects, &outcome.live);
                cmds.extend(reconcile.failed_install_advice(&release, &summary.status));
                cmds
            }
            None if report.status == Status::Incomplete => reconcile.failed_install_advice(&release, &summary.status),
            None => Vec::new(),
        };
    }
    if !chart_crds.is_empty() {
        if report.status != Status::Error {
            report.reconcile.extend(reconcile.for_chart_crds(&release, &chart_crds));
        }
        report.objects.extend(chart_crds);
        sort_objects(&mut report.objects);
        report.status =
            crate::engine::lifecycle::release_status(&report.objects, report.problem.is_some(), &summary.status);
    }
    ReleaseCheck {
        report,
        objects: outcome.checked + crds_checked,
        release: Some(release),
        desired,
        live: outcome.live,
    }
}

impl Engine {
    /// The reports of the release chart's `crds/` against the live CRDs (read where whole LISTs
    /// come from: one cached LIST shared by every release of a run, or in live mode the watch-fed
    /// cache, which then re-checks the release when a CRD changes): a CRD missing live, or differing
    /// ([`crds::crd_report`]); and how many were compared. A LIST that fails is an error of the
    /// release, never "clean".
    async fn chart_crd_reports(
        &self,
        release: &Release,
        desired: &[DesiredObject],
        errors: &mut Vec<String>,
    ) -> (Vec<ObjectReport>, usize) {
        let (chart, problems) = crds::chart_crds(release, desired);
        errors.extend(problems);
        if chart.is_empty() {
            return (Vec::new(), 0);
        }
        let kind = match self.kinds.resolve(crds::CRD_API_VERSION, crds::CRD_KIND) {
            Ok(k) => k,
            Err(e) => {
                errors.push(format!("the chart's crds/ could not be compared: {e}"));
                return (Vec::new(), 0);
            }
        };
        let live = match self.lists.list(&kind, None).await {
            Ok(l) => l,
            Err(e) => {
                errors.push(format!("the chart's crds/ could not be compared: {e}"));
                return (Vec::new(), 0);
            }
        };
        let by_name: HashMap<&str, &Value> =
            live.iter().filter_map(|o| Some((o.pointer("/metadata/name")?.as_str()?, o))).collect();
        let reports = chart
            .iter()
            .filter_map(|c| crds::crd_report(c, by_name.get(c.name.as_str()).copied(), &self.rules))
            .collect();
        (reports, chart.len())
    }
}

fn build_release_report(
    release: &Release,
    mut objects: Vec<ObjectReport>,
    errors: Vec<String>,
    helm_status: &str,
) -> ReleaseReport {
    sort_objects(&mut objects);
    let status = crate::engine::lifecycle::release_status(&objects, !errors.is_empty(), helm_status);
    ReleaseReport {
        problem: crate::report::Problem::from_messages(errors),
        objects,
        ..ReleaseReport::new(
            ReleaseOrigin {
                name: release.name.clone(),
                namespace: release.namespace.clone(),
                revision: release.revision,
                chart: release.chart_name().to_string(),
                chart_version: release.chart_version().to_string(),
                app_version: release.app_version().to_string(),
                helm_status: Some(helm_status.to_string()),
                latest_revision: Some(release.revision),
                helm_description: None,
                values_digest: Some(values_digest(release)),
                gitops: None,
            },
            status,
        )
    }
}

/// A digest of the release's user-supplied values (to tell a values change from a chart change).
pub fn values_digest(release: &Release) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(release.values().to_string().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A release's objects in report order: errors, missing, changed, extra, ignored; then by kind,
/// namespace and name.
fn sort_objects(objects: &mut [ObjectReport]) {
    objects.sort_by(|a, b| {
        (state_rank(a.state), &a.kind, &a.namespace, &a.name).cmp(&(
            state_rank(b.state),
            &b.kind,
            &b.namespace,
            &b.name,
        ))
    });
}

fn state_rank(s: ObjectState) -> u8 {
    match s {
        ObjectState::Error => 0,
        ObjectState::Missing => 1,
        ObjectState::Changed => 2,
        ObjectState::Extra => 3,
        ObjectState::Ignored => 4,
    }
}
