//! The drift engine: a set of desired objects against the live cluster, producing object reports.
//! Release drift ([`check_releases`], each release through the one check of [`release`]) and
//! manifests drift use the same [`Engine::check_objects`].
//!
//! Steps per set: [`plan`] resolves each kind by discovery and lists the LISTs needed; [`fetch`]
//! reads them through the shared connection ([`Cluster`]: discovery and the LIST cache, or a
//! watch-fed cache); [`compare`] compares each pair (pure: it sees only the fetched objects),
//! marks replicas owned by an HPA and user-ignored fields as ignored, and finds extra objects
//! carrying the release's labels. Nothing here prints.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

pub mod admission;
pub mod compare;
pub mod crds;
pub mod fetch;
pub mod flux;
pub mod plan;
pub mod release;
#[cfg(test)]
mod tests;

use crate::engine::compare::rules::IgnoreRule;
use crate::engine::compare::{AdmissionChanges, CompareContext};
use crate::report::progress::{Counter, Progress};
use crate::report::{ObjectReport, ObjectState, ReleaseReport};
use crate::source::cluster::Cluster;
use crate::source::helm::Release;
use crate::source::live::{Kinds, LiveError, LiveReader, LiveSource, ResolvedKind};
use crate::source::manifest::DesiredObject;

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
    /// What a value changed at admission is (`--admission-changes`; [`admission`]).
    pub admission_changes: AdmissionChanges,
    /// The cluster's mutating webhooks and policies, read on first need, shared by the checks.
    pub admission: Arc<tokio::sync::OnceCell<admission::Mutators>>,
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
            admission_changes: AdmissionChanges::default(),
            admission: Arc::default(),
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
            admission_changes: self.admission_changes,
            admission: self.admission.clone(),
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
    /// What a value changed at admission is (`--admission-changes`).
    pub admission_changes: AdmissionChanges,
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
/// The default; `--releases-in-flight` sets another for a cluster (a pod with a small memory
/// limit), [`releases_in_flight`].
const RELEASES_IN_FLIGHT: usize = 24;

/// How many releases a check of `cluster` has in flight: its `--releases-in-flight`, else
/// [`RELEASES_IN_FLIGHT`].
pub(crate) fn releases_in_flight(cluster: &Cluster) -> usize {
    cluster.releases_in_flight().unwrap_or(RELEASES_IN_FLIGHT).max(1)
}

/// Check the selected releases: read their storage, discover kinds, compare every release (at
/// most [`releases_in_flight`] at once, each a task of its own, sharing LISTs), and build the
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
    engine.admission_changes = sel.admission_changes;
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
            let (report, objects) = match release::DecodedRelease::decode(rev) {
                Ok(decoded) => {
                    let check =
                        release::check_release(&engine, &release::DesiredRelease::build(&decoded), &reconciler).await;
                    (check.report, check.objects)
                }
                Err(failed) => (*failed, 0),
            };
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
    .buffered(releases_in_flight(cluster));
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

/// A digest of the release's user-supplied values (to tell a values change from a chart change).
pub fn values_digest(release: &Release) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(release.values().to_string().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}
