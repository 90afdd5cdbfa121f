//! One Helm release's check: the one path that `release` ([`super::check_releases`]), `adopt`,
//! live mode (`engine::live::view`) and `compare` (`engine::envdiff`) all take.
//!
//! 1. [`DecodedRelease`]: the revision compared and a newer one that did not complete, decoded
//!    from storage (live mode keeps them so, and checks them again on every change it hears of).
//! 2. [`DesiredRelease::build`]: the desired side: each revision's manifest parsed, with the
//!    metadata Helm writes on every object ([`helm_metadata`]), and the identity extra objects
//!    are found by.
//! 3. [`check_release`] on it, one way: compare ([`Engine::check_objects`]) -> Helm's lifecycle
//!    (what the newer revision applied is its own, not drift by hand) -> what was changed at
//!    admission, with its likely cause ([`super::admission`]) -> the chart's `crds/`
//!    ([`super::crds`]) -> Flux (the HelmRelease's ignore rules and state) -> the status, judged
//!    once over all of it -> the report -> the reconcile commands.

use std::collections::HashMap;

use serde_json::Value;

use super::flux::{self, FluxMatch};
use super::{Engine, ReleaseIdentity, admission, crds, helm_deployers, helm_metadata, values_digest};
use crate::engine::compare::CompareContext;
use crate::engine::lifecycle::{LiveObjects, attribute_newer, not_created, release_status};
use crate::engine::reconcile::Reconciler;
use crate::report::{ObjectReport, ObjectState, Problem, ReleaseOrigin, ReleaseReport, Status};
use crate::source::helm::Release;
use crate::source::helm::driver::{ReleaseSummary, StoredRevision};
use crate::source::helm::storage::{ReleaseRevisions, is_settled};
use crate::source::live::Wanted;
use crate::source::manifest::{DesiredObject, parse_stream};

/// A release's revisions as a check reads them, decoded.
#[derive(Debug, Clone)]
pub struct DecodedRelease {
    /// The release as its storage labels describe it (its newest revision and that one's status).
    pub summary: ReleaseSummary,
    /// The revision compared: its manifest is the desired state.
    pub release: Release,
    /// A newer revision that did not complete (a failed or interrupted upgrade or rollback), or
    /// why it could not be decoded (the check then goes on without it, and says so).
    pub newer: Option<Result<Release, String>>,
}

impl DecodedRelease {
    /// Decode a release's revisions. A compared revision that does not decode is the release's
    /// report: an error, with what the storage labels tell.
    pub fn decode(revisions: ReleaseRevisions) -> Result<DecodedRelease, Box<ReleaseReport>> {
        let ReleaseRevisions { summary, desired, newer } = revisions;
        match desired.release.decode() {
            Ok(release) => Ok(DecodedRelease::new(summary, release, newer)),
            Err(e) => {
                let mut report =
                    ReleaseReport::failed_release(desired.name, desired.namespace, desired.revision, e.to_string());
                report.origin.helm_status = Some(summary.status.clone());
                report.origin.latest_revision = Some(summary.revision);
                Err(Box::new(report))
            }
        }
    }

    /// The compared revision as the caller decoded it (`adopt` decodes it with its chart), and the
    /// newer one, decoded here.
    pub fn new(summary: ReleaseSummary, release: Release, newer: Option<StoredRevision>) -> DecodedRelease {
        let newer =
            newer.map(|n| n.release.decode().map_err(|e| format!("revision {} ({}): {e}", n.revision, n.status)));
        DecodedRelease { summary, release, newer }
    }
}

/// The desired side of one release's check (see the module documentation).
pub struct DesiredRelease<'r> {
    pub decoded: &'r DecodedRelease,
    /// The compared revision's objects as compared (Helm's metadata set).
    pub objects: Vec<DesiredObject>,
    /// The newer revision that did not complete, and its objects.
    pub newer: Option<(&'r Release, Vec<DesiredObject>)>,
    /// Who labelled objects as the release's (for extra objects), with the newer revision's kinds.
    pub identity: ReleaseIdentity,
    /// What could not be read: the newer revision, manifest documents that do not parse.
    pub errors: Vec<String>,
}

impl<'r> DesiredRelease<'r> {
    /// The one place a release's desired side is built.
    pub fn build(decoded: &'r DecodedRelease) -> DesiredRelease<'r> {
        let mut errors = Vec::new();
        let newer = match &decoded.newer {
            Some(Ok(n)) => Some(n),
            Some(Err(e)) => {
                errors.push(e.clone());
                None
            }
            None => None,
        };
        let release = &decoded.release;
        let objects = manifest_objects(release, &mut errors);
        let newer = newer.map(|n| (n, manifest_objects(n, &mut errors)));
        let identity = ReleaseIdentity {
            name: release.name.clone(),
            namespace: release.namespace.clone(),
            also_kinds: newer.iter().flat_map(|(_, o)| o).map(|d| (d.api_version.clone(), d.kind.clone())).collect(),
        };
        DesiredRelease { decoded, objects, newer, identity, errors }
    }
}

/// One revision's manifest as compared: its documents parsed, with Helm's metadata set; the
/// documents that do not parse go to `errors`.
fn manifest_objects(release: &Release, errors: &mut Vec<String>) -> Vec<DesiredObject> {
    let origin = format!("release {}/{} revision {}", release.namespace, release.name, release.revision);
    let (mut objects, parse_errors) = parse_stream(&release.manifest, &origin);
    errors.extend(parse_errors.iter().map(|e| e.to_string()));
    helm_metadata(&mut objects, &release.name, &release.namespace);
    objects
}

/// One release checked.
pub struct ReleaseCheck {
    pub report: ReleaseReport,
    /// How many objects were compared (the templated ones and the chart's CRDs).
    pub objects: usize,
    /// The live objects the templated ones were compared with, keyed (kind, namespace, name).
    pub live: LiveObjects,
}

/// Check one release's desired side against the cluster (the steps are the module
/// documentation's).
pub async fn check_release(engine: &Engine, desired: &DesiredRelease<'_>, reconcile: &Reconciler) -> ReleaseCheck {
    let DecodedRelease { summary, release, .. } = desired.decoded;
    let mut errors = desired.errors.clone();
    let ctx = CompareContext {
        deployers: helm_deployers(),
        admission_changes: Some(engine.admission_changes),
        ..Default::default()
    };
    let mut outcome = engine.check_objects(&desired.objects, &release.namespace, &ctx, Some(&desired.identity)).await;
    if let Some((newer, objects)) = &desired.newer {
        attribute_newer(&mut outcome.objects, objects, newer.revision, &release.namespace, &outcome.live, &ctx);
    } else if release.revision == summary.revision && !is_settled(&summary.status) {
        // No revision ever deployed (a failed or interrupted first install: the revision compared
        // is the newest, unsettled one; a newer revision that did not decode leaves `newer` empty
        // while a deployed one is compared, and is not this): what is missing is what the install
        // did not get to create, not what a person deleted.
        not_created(&mut outcome.objects);
    }
    // What a mutating webhook or policy changed during Helm's own write: its likely cause.
    admission::name_causes(engine, &mut outcome.objects, &outcome.live, &ctx.deployers, engine.admission_changes).await;
    errors.append(&mut outcome.errors);
    let (chart_crds, crds_checked) = if engine.chart_crds {
        engine.chart_crd_reports(release, &desired.objects, &mut errors).await
    } else {
        (Vec::new(), 0)
    };
    // A release helm-controller manages: its HelmRelease's ignore rules, state and advice.
    let flux_index = engine.flux.get_or_init(|| flux::FluxIndex::read(&engine.kinds, &engine.reader)).await;
    let flux = flux::flux_release(flux_index, &release.name, &release.namespace, &outcome.live);
    if let Some(hr) = flux.as_ref().and_then(|f| f.helm_release.as_ref()) {
        flux::apply_flux_ignore(hr, &mut outcome.objects, &outcome.live, &desired.objects);
    }
    let status = release_status(outcome.objects.iter().chain(&chart_crds), !errors.is_empty(), &summary.status);
    let mut report = release_report(desired, outcome.objects, errors, status);
    report.origin.gitops = flux.as_ref().map(|f| f.gitops(&report.objects));
    report.reconcile = reconcile_commands(reconcile, &report, &chart_crds, desired, flux.as_ref(), &outcome.live);
    // The chart's CRDs join the objects after the commands for the templated ones (Helm's and
    // kubectl's; a rollback never touches crds/), which have their own.
    report.objects.extend(chart_crds);
    sort_objects(&mut report.objects);
    ReleaseCheck { report, objects: outcome.checked + crds_checked, live: outcome.live }
}

/// The report of a checked release, its objects in report order and its status as judged.
fn release_report(
    desired: &DesiredRelease<'_>,
    mut objects: Vec<ObjectReport>,
    errors: Vec<String>,
    status: Status,
) -> ReleaseReport {
    let DecodedRelease { summary, release, .. } = desired.decoded;
    sort_objects(&mut objects);
    // What Helm said of its last operation, while that operation is not settled.
    let described = desired.newer.as_ref().map_or(release, |(n, _)| *n);
    let helm_description =
        Some(described.info.description.clone()).filter(|d| !d.is_empty() && !is_settled(&summary.status));
    ReleaseReport {
        problem: Problem::from_messages(errors),
        objects,
        ..ReleaseReport::new(
            ReleaseOrigin {
                name: release.name.clone(),
                namespace: release.namespace.clone(),
                revision: release.revision,
                chart: release.chart_name().to_string(),
                chart_version: release.chart_version().to_string(),
                app_version: release.app_version().to_string(),
                helm_status: Some(summary.status.clone()),
                latest_revision: Some(summary.revision),
                helm_description,
                values_digest: Some(values_digest(release)),
                gitops: None,
            },
            status,
        )
    }
}

/// The commands that restore a checked release (none when it could not be checked whole):
/// Flux's when a HelmRelease manages it, else Helm's for an incomplete newer revision or hand
/// edits (with kubectl's for what Helm leaves), judged on the templated objects of `report`;
/// then those for the chart's CRDs that differ.
fn reconcile_commands(
    reconcile: &Reconciler,
    report: &ReleaseReport,
    chart_crds: &[ObjectReport],
    desired: &DesiredRelease<'_>,
    flux: Option<&FluxMatch>,
    live: &LiveObjects,
) -> Vec<String> {
    if report.status == Status::Error {
        return Vec::new();
    }
    let DecodedRelease { summary, release, .. } = desired.decoded;
    let objects = &report.objects;
    let by_hand = objects.iter().any(ObjectReport::is_hand_drift);
    let unfinished = !is_settled(&summary.status);
    let mut out = match (flux, &desired.newer) {
        (Some(f), _) if by_hand || unfinished => reconcile.for_flux_release(&f.namespace, &f.name, objects, live),
        (_, Some((newer, _))) => reconcile.for_incomplete_release(release, newer, &summary.status, objects, live),
        (_, None) if by_hand => {
            let mut out = reconcile.for_release(release, objects, live);
            out.extend(reconcile.failed_install_advice(release, &summary.status));
            out
        }
        (_, None) if unfinished => reconcile.failed_install_advice(release, &summary.status),
        (_, None) => Vec::new(),
    };
    out.extend(reconcile.for_chart_crds(release, chart_crds));
    out
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
        let wanted = Wanted { names: chart.iter().map(|c| c.name.clone()).collect(), ..Wanted::default() };
        let live = match self.lists.list_wanted(&kind, None, &wanted).await {
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
