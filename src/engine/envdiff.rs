//! Comparing environments (`compare`): one Helm release deployed twice (two clusters, or two
//! namespaces of one) side by side. Not to be confused with [`crate::engine::compare`], which
//! compares one desired object with its live twin; this engine runs that whole drift check once
//! per side and then compares the two results.
//!
//! Each side is the release drift check ([`check_release`], on the desired side
//! [`DesiredRelease::build`] makes) on that side's cluster handle: it gives the deployed revision
//! (chart, values), the desired objects as rendered, the live objects they were compared with,
//! and the side's drift findings. The comparison is then pure
//! ([`compare`], unit-tested without a cluster):
//!
//! - chart name, chart version and app version; the user-supplied values, key by key;
//! - objects matched by kind and name (first the same name, then the name with each side's
//!   release, namespace and cluster name taken out), on one side only, deleted by hand on one
//!   side, or field by field. The fields looked at are those the two renderings differ in
//!   ([`Walker`] both ways, with its normalisation: quantities, numbers, unset values) and those
//!   either side's drift check found edited by hand: never server defaults, status or server
//!   metadata, so two identical installs compare equal. A field whose live values differ is from
//!   the values when the renderings differ there, else a hand edit of the side(s) whose drift
//!   check found it (with the field manager).
//! - a side's extra objects (live, labelled for its release, in no manifest: what its drift
//!   check reports as extra) are objects of that side too: on one side only, or compared the
//!   same way, what was written to each ([`written_fields`]: the fields its managers own) in
//!   place of a rendering;
//! - the CRDs of each chart's `crds/` (stored with the chart, in no manifest): on one side
//!   only, missing live, or compared as the two charts ship them and, across two clusters, as
//!   the two live CRDs have them (what [`crd_drifts`] compares: versions, schema properties,
//!   printer columns, subresources).
//!
//! What ignore rules cover (`compare.ignore` and `--ignore`: kinds, `Values` for the values and
//! `Chart` for the chart fields) and what differs only by the two sides' names is kept, marked
//! ignored, and counted. Secret data and secret-like values keys are redacted here.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::engine::compare::ManagedFields;
use crate::engine::compare::prepare_desired;
use crate::engine::compare::rules::IgnoreRule;
use crate::engine::compare::walk::{Walker, is_unset, scalars_equal};
use crate::engine::drift::Engine;
use crate::engine::drift::crds::{CRD_API_VERSION, CRD_KIND, chart_crds, crd_drifts};
use crate::engine::drift::release::{DecodedRelease, DesiredRelease, check_release};
use crate::report::envdiff::{
    COMPARE_SCHEMA_VERSION, Cause, CompareReport, CompareSide, CompareStatus, FieldDifference, ObjectDifference,
    Presence, ValueDifference,
};
use crate::report::path::FieldPath;
use crate::report::secret::{is_secret_field, is_secret_value_path, redact_value};
use crate::report::{FieldReport, ObjectReport, ObjectState, Status};
use crate::source::cluster::Cluster;
use crate::source::helm::{Release, StorageError};
use crate::source::manifest::DesiredObject;

/// The reason shown with a difference that is only the two sides' names.
pub const NAMES_ONLY: &str = "differs only by the names of the two sides (release, namespace or cluster)";

/// Where one side is, as the user named it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    pub cluster: String,
    pub namespace: String,
    /// The release (empty for a folder of manifests).
    pub release: String,
}

/// One side as read: its place and what it holds (`Ok(None)`: the release is not there), or why
/// it could not be read.
#[derive(Debug, Clone)]
pub struct SideRead {
    pub place: Place,
    pub outcome: Result<Option<SideData>, String>,
}

/// What a side has deployed, and its own drift.
#[derive(Debug, Clone)]
pub struct SideData {
    pub revision: Option<u32>,
    pub chart: String,
    pub chart_version: String,
    pub app_version: String,
    pub helm_status: Option<String>,
    /// The user-supplied values.
    pub values: Value,
    /// The side's drift status (live against what it deployed).
    pub drift: Status,
    /// What the side's check could not see (then the compare cannot say "same").
    pub problem: Option<String>,
    pub objects: Vec<SideObject>,
}

/// One desired object of a side, with its live twin and its drift findings.
#[derive(Debug, Clone)]
pub struct SideObject {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    /// The desired object as the drift engine compares it ([`prepare_desired`]).
    pub desired: Value,
    /// `None`: not live (or not readable: `error`).
    pub live: Option<Value>,
    /// The side's drift findings for it (their paths, managers and reasons are used; their
    /// values never are: values come from `live`).
    pub findings: Vec<FieldReport>,
    /// The object could not be read.
    pub error: bool,
    /// Where the side has it from.
    pub origin: ObjectOrigin,
}

/// Where a side's object comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ObjectOrigin {
    /// Rendered by the side's revision (or in its folder).
    #[default]
    Manifest,
    /// An extra object: live, labelled for the side's release, in no manifest of it. Its
    /// `desired` is what was written to it ([`written_fields`]).
    Extra,
    /// A CRD of the chart's `crds/`. Its `desired` is the chart's file.
    ChartCrd,
}

impl SideObject {
    fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
    }
}

/// Read one side: the release's deployed revision checked for drift on `cluster` in `namespace`
/// (every hand edit counts: no drift ignore rules), with its extra objects and its chart's
/// `crds/`.
pub async fn read_release_side(cluster: &Cluster, namespace: &str, release: &str) -> SideRead {
    let place =
        Place { cluster: cluster.name().to_string(), namespace: namespace.to_string(), release: release.to_string() };
    let outcome = read_release(cluster, namespace, release).await;
    SideRead { place, outcome }
}

async fn read_release(cluster: &Cluster, namespace: &str, release: &str) -> Result<Option<SideData>, String> {
    let names = [release.to_string()];
    let (found, engine) = futures::join!(
        cluster.store().releases_to_check(Some(namespace), &names, None),
        Engine::connect(cluster, Vec::new(), false)
    );
    let revisions = match found.map_err(|e| e.to_string())?.into_iter().next() {
        None | Some(Err((_, StorageError::NotFound { .. }))) => return Ok(None),
        Some(Err((_, e))) => return Err(e.to_string()),
        Some(Ok(r)) => r,
    };
    let engine = engine.map_err(|e| e.to_string())?;
    let reconciler = crate::engine::reconcile::Reconciler::from(cluster.target());
    let decoded = DecodedRelease::decode(revisions)
        .map_err(|failed| failed.error().unwrap_or_else(|| "the release could not be read".into()))?;
    let desired = DesiredRelease::build(&decoded);
    let check = check_release(&engine, &desired, &reconciler).await;
    let (report, rel) = (check.report, &decoded.release);
    let mut objects: Vec<SideObject> = desired
        .objects
        .iter()
        .map(|d| {
            let ns = d.namespace.clone().unwrap_or_else(|| rel.namespace.clone());
            let live = check
                .live
                .get(&(d.kind.clone(), ns.clone(), d.name.clone()))
                .or_else(|| check.live.get(&(d.kind.clone(), String::new(), d.name.clone())));
            let reported = report
                .objects
                .iter()
                .find(|o| o.kind == d.kind && o.name == d.name && o.namespace.as_deref().is_none_or(|n| n == ns));
            SideObject {
                api_version: d.api_version.clone(),
                kind: d.kind.clone(),
                name: d.name.clone(),
                namespace: live.map(|_| ns.clone()).unwrap_or(ns),
                desired: prepare_desired(&d.kind, &d.body),
                live: live.cloned(),
                findings: reported.map(|o| o.fields.clone()).unwrap_or_default(),
                error: reported.is_some_and(|o| o.state == ObjectState::Error),
                origin: ObjectOrigin::Manifest,
            }
        })
        .collect();
    objects.extend(extra_objects(&engine, &report.objects).await);
    objects.extend(chart_crd_objects(&engine, rel, &desired.objects).await);
    Ok(Some(SideData {
        revision: Some(rel.revision),
        chart: rel.chart_name().to_string(),
        chart_version: rel.chart_version().to_string(),
        app_version: rel.app_version().to_string(),
        helm_status: report.origin.helm_status.clone(),
        values: rel.values(),
        drift: report.status,
        problem: report.error(),
        objects,
    }))
}

/// Managers of the control plane itself: what they write to an object (the volume a claim is
/// bound to, ...) is the cluster's doing, not what was deployed.
const CONTROL_PLANE: &[&str] = &["kube-controller-manager", "kube-scheduler", "kubelet", "kube-apiserver"];

/// What was written to an extra object, which no manifest renders: the part of it its field
/// managers own on the object itself (not `status`), except the control plane's; the whole
/// object when it records no manager. Values the API server assigns (a Service's cluster IP)
/// are nobody's, so they are not in it, and two objects written alike compare equal.
pub fn written_fields(live: &Value) -> Value {
    let managed = ManagedFields::from_object(live);
    if managed.entries.is_empty() {
        return live.clone();
    }
    let writers: Vec<String> =
        managed.entries.iter().map(|e| e.manager.clone()).filter(|m| !CONTROL_PLANE.contains(&m.as_str())).collect();
    managed.projection(&writers, live)
}

/// The live object `name` of a listing.
fn named<'v>(items: &'v [Value], name: &str) -> Option<&'v Value> {
    items.iter().find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
}

/// The side's extra objects (those its drift check `reported` as extra), each with its live body
/// (from the LIST the check read: the engine's cache answers it) and what was written to it.
async fn extra_objects(engine: &Engine, reported: &[ObjectReport]) -> Vec<SideObject> {
    let mut out = Vec::new();
    for o in reported.iter().filter(|o| o.state == ObjectState::Extra) {
        let live = match engine.kinds.resolve(&o.api_version, &o.kind) {
            Ok(kind) => match engine.lists.list(&kind, o.namespace.as_deref()).await {
                Ok(items) => named(&items, &o.name).cloned(),
                Err(_) => None,
            },
            Err(_) => None,
        };
        out.push(SideObject {
            api_version: o.api_version.clone(),
            kind: o.kind.clone(),
            name: o.name.clone(),
            namespace: o.namespace.clone().unwrap_or_default(),
            desired: live.as_ref().map(written_fields).unwrap_or(Value::Null),
            error: live.is_none(),
            live,
            findings: Vec::new(),
            origin: ObjectOrigin::Extra,
        });
    }
    out
}

/// The CRDs of the release chart's `crds/` (those the templates do not render), each with the
/// live CRD of its name (the LIST the check read). What does not parse is already the check's
/// error.
async fn chart_crd_objects(engine: &Engine, release: &Release, templated: &[DesiredObject]) -> Vec<SideObject> {
    let (chart, _) = chart_crds(release, templated);
    if chart.is_empty() {
        return Vec::new();
    }
    let live = match engine.kinds.resolve(CRD_API_VERSION, CRD_KIND) {
        Ok(kind) => engine.lists.list(&kind, None).await.ok(),
        Err(_) => None,
    };
    chart
        .into_iter()
        .map(|c| SideObject {
            api_version: CRD_API_VERSION.to_string(),
            kind: CRD_KIND.to_string(),
            live: live.as_ref().and_then(|items| named(items, &c.name)).cloned(),
            error: live.is_none(),
            name: c.name,
            namespace: String::new(),
            desired: c.body,
            // Compared as the charts ship it ([`crd_differences`]), not by the side's findings.
            findings: Vec::new(),
            origin: ObjectOrigin::ChartCrd,
        })
        .collect()
}

/// The desired objects of a folder (or files, kustomizations) of manifests, read once for both
/// sides of `compare -f`, with the problems reading them.
pub async fn read_manifests(
    paths: &[std::path::PathBuf],
    kubectl: &std::path::Path,
) -> (Vec<DesiredObject>, Vec<String>) {
    let renderer =
        crate::source::manifest_files::Renderer { kubectl: kubectl.to_path_buf(), deadline: None, timeout_secs: 0 };
    let (_, files) = crate::source::manifest_files::read_targets(paths, &[], None, renderer).await;
    let mut objects = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        errors.extend(f.errors.into_iter().map(|e| format!("{}: {e}", f.path)));
        objects.extend(f.desired);
    }
    (objects, errors)
}

/// Read one side of `compare -f`: the manifests' objects checked for drift on `cluster`, objects
/// without a namespace in `namespace` (each object's deployer from its own managedFields, as
/// `manifests` does). `file_errors`: what could not be read from the files (the side is then
/// incomplete).
pub async fn read_manifests_side(
    cluster: &Cluster,
    namespace: &str,
    desired: &[DesiredObject],
    file_errors: &[String],
) -> SideRead {
    let place = Place { cluster: cluster.name().to_string(), namespace: namespace.to_string(), release: String::new() };
    let engine = match Engine::connect(cluster, Vec::new(), false).await {
        Ok(e) => e,
        Err(e) => return SideRead { place, outcome: Err(e.to_string()) },
    };
    let ctx = crate::engine::compare::CompareContext { infer_deployer: true, ..Default::default() };
    let outcome = engine.check_objects(desired, namespace, &ctx, None).await;
    let objects = desired
        .iter()
        .map(|d| {
            let ns = match engine.kinds.resolve(&d.api_version, &d.kind) {
                Ok(rk) if !rk.namespaced => String::new(),
                _ => d.namespace.clone().unwrap_or_else(|| namespace.to_string()),
            };
            let live = outcome.live.get(&(d.kind.clone(), ns.clone(), d.name.clone()));
            let reported = outcome
                .objects
                .iter()
                .find(|o| o.kind == d.kind && o.name == d.name && o.namespace.as_deref().unwrap_or("") == ns);
            SideObject {
                api_version: d.api_version.clone(),
                kind: d.kind.clone(),
                name: d.name.clone(),
                namespace: ns,
                desired: prepare_desired(&d.kind, &d.body),
                live: live.cloned(),
                findings: reported.map(|o| o.fields.clone()).unwrap_or_default(),
                error: reported.is_some_and(|o| o.state == ObjectState::Error),
                origin: ObjectOrigin::Manifest,
            }
        })
        .collect();
    let errors: Vec<String> = file_errors.iter().chain(&outcome.errors).cloned().collect();
    let drifted = outcome.objects.iter().any(crate::report::ObjectReport::is_drift);
    let data = SideData {
        revision: None,
        chart: String::new(),
        chart_version: String::new(),
        app_version: String::new(),
        helm_status: None,
        values: Value::Null,
        drift: Status::judge(!errors.is_empty(), drifted, false),
        problem: (!errors.is_empty()).then(|| errors.join("; ")),
        objects,
    };
    SideRead { place, outcome: Ok(Some(data)) }
}

/// How to judge the differences.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions<'a> {
    /// `compare.ignore` and `--ignore`.
    pub rules: &'a [IgnoreRule],
    pub show_secrets: bool,
}

/// Compare two sides read ([`read_release_side`]). `target` names what was compared.
pub fn compare(target: &str, left: &SideRead, right: &SideRead, opts: CompareOptions) -> CompareReport {
    let mut report = CompareReport {
        schema_version: COMPARE_SCHEMA_VERSION,
        target: target.to_string(),
        status: CompareStatus::Same,
        left: side_of(left),
        right: side_of(right),
        chart: Vec::new(),
        values: Vec::new(),
        objects: Vec::new(),
        ignored: 0,
    };
    let (l, r) = match (&left.outcome, &right.outcome) {
        (Err(_), _) | (_, Err(_)) => {
            report.status = CompareStatus::Error;
            return report;
        }
        (Ok(Some(l)), Ok(Some(r))) => (l, r),
        // On one side only (or on neither): a clear answer, different.
        _ => {
            report.status = CompareStatus::Different;
            return report;
        }
    };
    let names = Names::of(&left.place, &right.place);
    let judge = Judge { rules: opts.rules, names: &names, left: &left.place, right: &right.place };
    report.chart = chart_differences(l, r, &judge);
    report.values = value_differences(&l.values, &r.values, &judge, opts.show_secrets);
    report.objects = object_differences(l, r, &judge, opts.show_secrets);
    report.ignored = report.chart.iter().chain(&report.values).filter(|d| d.ignored.is_some()).count()
        + report
            .objects
            .iter()
            .map(|o| match o.ignored {
                Some(_) => 1,
                None => o.fields.iter().filter(|f| f.ignored.is_some()).count(),
            })
            .sum::<usize>();
    let (chart, values, objects) = report.counted();
    report.status = if l.problem.is_some() || r.problem.is_some() {
        CompareStatus::Error
    } else if chart + values + objects > 0 {
        CompareStatus::Different
    } else {
        CompareStatus::Same
    };
    report
}

fn side_of(read: &SideRead) -> CompareSide {
    let mut side = CompareSide {
        cluster: read.place.cluster.clone(),
        namespace: read.place.namespace.clone(),
        release: read.place.release.clone(),
        ..Default::default()
    };
    match &read.outcome {
        Err(e) => side.error = Some(e.clone()),
        Ok(None) => {}
        Ok(Some(d)) => {
            side.found = true;
            side.revision = d.revision;
            let set = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
            side.chart = set(&d.chart);
            side.chart_version = set(&d.chart_version);
            side.app_version = set(&d.app_version);
            side.helm_status = d.helm_status.clone();
            side.drift = Some(d.drift);
            side.error = d.problem.clone();
        }
    }
    side
}

/// The names that tell the two sides apart (release, namespace, cluster), each with the word
/// that stands for it, for matching object names and judging values that differ only by them.
struct Names {
    left: Vec<(String, &'static str)>,
    right: Vec<(String, &'static str)>,
}

impl Names {
    fn of(left: &Place, right: &Place) -> Names {
        let mut names = Names { left: Vec::new(), right: Vec::new() };
        for (l, r, word) in [
            (&left.release, &right.release, "{release}"),
            (&left.namespace, &right.namespace, "{namespace}"),
            (&left.cluster, &right.cluster, "{cluster}"),
        ] {
            if l != r && l.len() >= 2 && r.len() >= 2 {
                names.left.push((l.clone(), word));
                names.right.push((r.clone(), word));
            }
        }
        // Longest first, so a name that holds another is taken out whole.
        names.left.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
        names.right.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
        names
    }

    fn neutral_left(&self, s: &str) -> String {
        neutral(s, &self.left)
    }

    fn neutral_right(&self, s: &str) -> String {
        neutral(s, &self.right)
    }

    /// Whether two differing values are the same once each side's names are taken out.
    fn same_but_names(&self, l: Option<&Value>, r: Option<&Value>) -> bool {
        if self.left.is_empty() {
            return false;
        }
        match (l, r) {
            (Some(l), Some(r)) => neutral_value(l, &self.left) == neutral_value(r, &self.right),
            _ => false,
        }
    }
}

/// `s` with each of `names` replaced by its word where it stands as a whole word (between
/// characters that are not letters or digits, or the ends): `shop-staging-db` in namespace
/// `staging` is `shop-{namespace}-db`, `product` in namespace `prod` stays `product`.
fn neutral(s: &str, names: &[(String, &'static str)]) -> String {
    let mut out = s.to_string();
    for (name, word) in names {
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        let mut before: Option<char> = None;
        while let Some(i) = rest.find(name.as_str()) {
            let prev = if i == 0 { before } else { rest[..i].chars().next_back() };
            let next = rest[i + name.len()..].chars().next();
            let bounded = !prev.is_some_and(char::is_alphanumeric) && !next.is_some_and(char::is_alphanumeric);
            result.push_str(&rest[..i]);
            if bounded {
                result.push_str(word);
            } else {
                result.push_str(name);
            }
            before = name.chars().next_back();
            rest = &rest[i + name.len()..];
        }
        result.push_str(rest);
        out = result;
    }
    out
}

fn neutral_value(v: &Value, names: &[(String, &'static str)]) -> Value {
    match v {
        Value::String(s) => Value::String(neutral(s, names)),
        Value::Array(a) => Value::Array(a.iter().map(|x| neutral_value(x, names)).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, x)| (neutral(k, names), neutral_value(x, names))).collect())
        }
        other => other.clone(),
    }
}

/// The rules and names every difference is judged by.
struct Judge<'a> {
    rules: &'a [IgnoreRule],
    names: &'a Names,
    left: &'a Place,
    right: &'a Place,
}

impl Judge<'_> {
    /// The first rule that covers `path` of the object `kind` named `names` (left, right), with
    /// its reason.
    fn rule(&self, kind: &str, names: (Option<&str>, Option<&str>), path: &str) -> Option<String> {
        let sides = [(self.left.namespace.as_str(), names.0), (self.right.namespace.as_str(), names.1)];
        // A rule without a path covers every field (and for `Values` and `Chart`, all of them).
        self.rules
            .iter()
            .find(|r| sides.iter().any(|(ns, name)| name.is_some_and(|n| r.matches_field(kind, ns, n, path))))
            .map(IgnoreRule::describe)
    }

    /// The first rule that covers the whole object.
    fn whole_object_rule(&self, kind: &str, names: (Option<&str>, Option<&str>)) -> Option<String> {
        let sides = [(self.left.namespace.as_str(), names.0), (self.right.namespace.as_str(), names.1)];
        self.rules
            .iter()
            .filter(|r| r.is_whole_object())
            .find(|r| sides.iter().any(|(ns, name)| name.is_some_and(|n| r.matches_object(kind, ns, n))))
            .map(IgnoreRule::describe)
    }

    /// Why a difference between `l` and `r` is ignored: only the names differ, or a rule.
    fn ignored(
        &self,
        kind: &str,
        names: (Option<&str>, Option<&str>),
        path: &FieldPath,
        l: Option<&Value>,
        r: Option<&Value>,
    ) -> Option<String> {
        if self.names.same_but_names(l, r) {
            return Some(NAMES_ONLY.to_string());
        }
        self.rule(kind, names, &path.to_string())
    }
}

/// Chart name, version and app version where they differ (rules: kind `Chart`, named by the
/// chart, paths `name`, `version`, `appVersion`).
fn chart_differences(l: &SideData, r: &SideData, judge: &Judge) -> Vec<ValueDifference> {
    let names = (Some(l.chart.as_str()), Some(r.chart.as_str()));
    [
        ("name", &l.chart, &r.chart),
        ("version", &l.chart_version, &r.chart_version),
        ("appVersion", &l.app_version, &r.app_version),
    ]
    .into_iter()
    .filter(|(_, a, b)| a != b)
    .map(|(key, a, b)| {
        let path = FieldPath::root().key(key);
        let set = |s: &String| Some(Value::String(s.clone())).filter(|_| !s.is_empty());
        let ignored = judge.rule("Chart", names, key);
        ValueDifference { path, left: set(a), right: set(b), ignored }
    })
    .collect()
}

/// The leaves of a values tree: maps are walked, anything else (lists too) is one value.
fn flatten(v: &Value, path: FieldPath, out: &mut BTreeMap<FieldPath, Value>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                flatten(x, path.key(k), out);
            }
        }
        // The empty map of no values at all is not a value.
        Value::Object(_) if path.segs().is_empty() => {}
        other => {
            out.insert(path, other.clone());
        }
    }
}

/// The user-supplied values that differ, key by key (rules: kind `Values`, named by the release).
fn value_differences(l: &Value, r: &Value, judge: &Judge, show_secrets: bool) -> Vec<ValueDifference> {
    let (mut lf, mut rf) = (BTreeMap::new(), BTreeMap::new());
    flatten(l, FieldPath::root(), &mut lf);
    flatten(r, FieldPath::root(), &mut rf);
    let paths: BTreeSet<&FieldPath> = lf.keys().chain(rf.keys()).collect();
    let names = (Some(judge.left.release.as_str()), Some(judge.right.release.as_str()));
    paths
        .into_iter()
        .filter_map(|path| {
            let (a, b) = (lf.get(path), rf.get(path));
            if a == b {
                return None;
            }
            let ignored = judge.ignored("Values", names, path, a, b);
            let shown = |v: Option<&Value>| {
                v.map(|v| if !show_secrets && is_secret_value_path(path) { redact_value(v, false) } else { v.clone() })
            };
            Some(ValueDifference { path: path.clone(), left: shown(a), right: shown(b), ignored })
        })
        .collect()
}

/// The objects of the two sides paired by kind and name: the same name first, then the name
/// with each side's names taken out; then those on one side only.
fn pair_objects<'a>(
    l: &'a SideData,
    r: &'a SideData,
    names: &Names,
) -> Vec<(Option<&'a SideObject>, Option<&'a SideObject>)> {
    let same_kind = |a: &SideObject, b: &SideObject| a.kind == b.kind && a.group() == b.group();
    let mut used = vec![false; r.objects.len()];
    let mut pairs: Vec<(Option<&SideObject>, Option<&SideObject>)> = Vec::new();
    let mut unmatched = Vec::new();
    for a in &l.objects {
        match r.objects.iter().enumerate().find(|(i, b)| !used[*i] && same_kind(a, b) && a.name == b.name) {
            Some((i, b)) => {
                used[i] = true;
                pairs.push((Some(a), Some(b)));
            }
            None => unmatched.push(a),
        }
    }
    for a in unmatched {
        let key = names.neutral_left(&a.name);
        match r
            .objects
            .iter()
            .enumerate()
            .find(|(i, b)| !used[*i] && same_kind(a, b) && names.neutral_right(&b.name) == key)
        {
            Some((i, b)) => {
                used[i] = true;
                pairs.push((Some(a), Some(b)));
            }
            None => pairs.push((Some(a), None)),
        }
    }
    for (i, b) in r.objects.iter().enumerate() {
        if !used[i] {
            pairs.push((None, Some(b)));
        }
    }
    pairs
}

fn presence(o: Option<&SideObject>) -> Presence {
    match o {
        None => Presence::Absent,
        Some(o) if o.error => Presence::Error,
        Some(o) if o.origin == ObjectOrigin::Extra => Presence::Extra,
        Some(o) if o.live.is_some() => Presence::Live,
        Some(_) => Presence::Missing,
    }
}

fn object_differences(l: &SideData, r: &SideData, judge: &Judge, show_secrets: bool) -> Vec<ObjectDifference> {
    let mut out: Vec<ObjectDifference> = pair_objects(l, r, judge.names)
        .into_iter()
        .filter_map(|(a, b)| {
            let any = a.or(b)?;
            let names = (a.map(|o| o.name.as_str()), b.map(|o| o.name.as_str()));
            let (pa, pb) = (presence(a), presence(b));
            let readable = |o: &SideObject| !o.error;
            let on_both = |o: &SideObject| !o.error && o.live.is_some();
            let fields = match (a, b) {
                // A CRD of a chart's crds/: as the charts ship it, whether or not it is live.
                (Some(a), Some(b))
                    if (a.origin == ObjectOrigin::ChartCrd || b.origin == ObjectOrigin::ChartCrd)
                        && readable(a)
                        && readable(b) =>
                {
                    crd_differences(a, b, judge)
                }
                (Some(a), Some(b)) if on_both(a) && on_both(b) => field_differences(a, b, judge, show_secrets),
                _ => Vec::new(),
            };
            let ignored = judge.whole_object_rule(&any.kind, names);
            let diff = ObjectDifference {
                api_version: any.api_version.clone(),
                kind: any.kind.clone(),
                left_name: names.0.map(str::to_string),
                right_name: names.1.map(str::to_string),
                left: pa,
                right: pb,
                fields,
                ignored,
            };
            (diff.left != diff.right || !diff.fields.is_empty()).then_some(diff)
        })
        .collect();
    out.sort_by(|a, b| (&a.kind, a.display_name()).cmp(&(&b.kind, b.display_name())));
    out
}

/// A value at `path` that counts as set (see [`is_unset`]).
fn set_at<'v>(path: &FieldPath, v: &'v Value) -> Option<&'v Value> {
    path.get(v).filter(|x| !is_unset(path, x))
}

/// Equal live values, after the drift engine's normalisation.
fn same(kind: &str, path: &FieldPath, a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) if x == y => true,
        (Some(x @ (Value::Object(_) | Value::Array(_))), Some(y))
        | (Some(x), Some(y @ (Value::Object(_) | Value::Array(_)))) => {
            x.is_object() == y.is_object()
                && x.is_array() == y.is_array()
                && Walker::compare(kind, x, y).is_empty()
                && Walker::compare(kind, y, x).is_empty()
        }
        (Some(x), Some(y)) => scalars_equal(path, x, y),
        _ => false,
    }
}

/// Whether two paths name the same field or one lies inside the other.
fn overlaps(a: &FieldPath, b: &FieldPath) -> bool {
    a.is_under(b) || b.is_under(a)
}

/// Who wrote a drift finding: its field manager, or the revision whose failed upgrade applied it.
fn manager_of(f: &FieldReport) -> Option<String> {
    match (f.from_revision, &f.manager) {
        (Some(n), _) => Some(format!("revision {n}")),
        (None, m) => m.clone(),
    }
}

/// The fields of a CRD of the charts' `crds/` that differ: as the two charts ship it (cause
/// `values`, the charts' values), then, when the sides are two clusters, as the two live CRDs
/// have it where the charts agree (cause `live-crd`, the live values); one cluster has one live
/// CRD for both sides. What [`crd_drifts`] compares: the server's defaulting is no difference.
fn crd_differences(a: &SideObject, b: &SideObject, judge: &Judge) -> Vec<FieldDifference> {
    let names = (Some(a.name.as_str()), Some(b.name.as_str()));
    let difference = |path: FieldPath, left: Option<Value>, right: Option<Value>, cause: Cause| {
        let ignored = judge.ignored(CRD_KIND, names, &path, left.as_ref(), right.as_ref());
        FieldDifference { path, left, right, cause, left_manager: None, right_manager: None, ignored }
    };
    let charts = crd_drifts(&a.desired, &b.desired);
    let mut out: Vec<FieldDifference> =
        charts.iter().map(|d| difference(d.path.clone(), d.desired.clone(), d.live.clone(), Cause::Values)).collect();
    if let (Some(la), Some(lb)) = (&a.live, &b.live)
        && judge.left.cluster != judge.right.cluster
    {
        let stored = FieldPath::root().key("status").key("storedVersions");
        for d in crd_drifts(la, lb) {
            // A stored version the other side lacks is that side's own upgrade blocker.
            if d.path == stored || charts.iter().any(|c| overlaps(&c.path, &d.path)) {
                continue;
            }
            out.push(difference(d.path, d.desired, d.live, Cause::LiveCrd));
        }
    }
    out.sort_by(|x, y| x.path.cmp(&y.path));
    out
}

/// Who wrote `path` of an extra object (its field manager); `None` for an object a manifest
/// renders, whose hand edits are its drift findings.
fn writer(o: &SideObject, live: &Value, path: &FieldPath) -> Option<String> {
    if o.origin != ObjectOrigin::Extra {
        return None;
    }
    ManagedFields::from_object(live).owner(path, live).map(|w| w.manager)
}

/// The fields of a pair of live objects that differ, each with its cause.
fn field_differences(a: &SideObject, b: &SideObject, judge: &Judge, show_secrets: bool) -> Vec<FieldDifference> {
    let kind = a.kind.as_str();
    let (la, lb) = (a.live.as_ref().expect("live"), b.live.as_ref().expect("live"));
    // An extra object on a side: nothing rendered it there, so no cause but that.
    let extra = a.origin == ObjectOrigin::Extra || b.origin == ObjectOrigin::Extra;
    // Where the two renderings differ.
    let mut rendered: Vec<FieldPath> =
        Walker::compare(kind, &a.desired, &b.desired).into_iter().map(|d| d.path).collect();
    for d in Walker::compare(kind, &b.desired, &a.desired) {
        if !rendered.contains(&d.path) {
            rendered.push(d.path);
        }
    }
    // Every field looked at: the rendered differences and both sides' drift findings, outermost
    // first (a field inside another one looked at is part of it).
    let mut candidates: Vec<FieldPath> = rendered.clone();
    candidates.extend(a.findings.iter().chain(&b.findings).map(|f| f.path.clone()));
    candidates.sort_by_key(|p| p.segs().len());
    let mut looked: Vec<FieldPath> = Vec::new();
    for p in candidates {
        if !looked.iter().any(|q| p.is_under(q)) {
            looked.push(p);
        }
    }
    let names = (Some(a.name.as_str()), Some(b.name.as_str()));
    let mut out: Vec<FieldDifference> = looked
        .into_iter()
        .filter_map(|path| {
            let (va, vb) = (set_at(&path, la), set_at(&path, lb));
            if same(kind, &path, va, vb) {
                return None;
            }
            let fa: Vec<&FieldReport> = a.findings.iter().filter(|f| overlaps(&f.path, &path)).collect();
            let fb: Vec<&FieldReport> = b.findings.iter().filter(|f| overlaps(&f.path, &path)).collect();
            let edited = |fs: &[&FieldReport]| fs.iter().any(|f| f.reason.is_none());
            let from_values = rendered.iter().any(|r| overlaps(r, &path));
            let cause = match (from_values, edited(&fa), edited(&fb)) {
                _ if extra => Cause::Extra,
                (true, _, _) => Cause::Values,
                (false, true, true) => Cause::BothEdits,
                (false, true, false) => Cause::LeftEdit,
                (false, false, true) => Cause::RightEdit,
                // Only findings the drift check ignores: the side they are on.
                (false, false, false) if fa.is_empty() => Cause::RightEdit,
                (false, false, false) => Cause::LeftEdit,
            };
            let mut ignored = judge.ignored(kind, names, &path, va, vb);
            // A difference only the drift check itself ignores (replicas an HPA owns, a value
            // set at admission): ignored here too, for the same reason.
            if ignored.is_none() && !from_values && !edited(&fa) && !edited(&fb) {
                ignored = fa.iter().chain(&fb).find_map(|f| f.reason.clone());
            }
            let secret = !show_secrets && is_secret_field(kind, &path);
            let shown = |v: Option<&Value>| {
                v.map(|v| if secret { redact_value(v, !path.starts_with(&["stringData"])) } else { v.clone() })
            };
            let manager = |fs: &[&FieldReport]| fs.iter().find(|f| f.reason.is_none()).and_then(|f| manager_of(f));
            Some(FieldDifference {
                left: shown(va),
                right: shown(vb),
                cause,
                left_manager: manager(&fa).or_else(|| writer(a, la, &path)),
                right_manager: manager(&fb).or_else(|| writer(b, lb, &path)),
                ignored,
                path,
            })
        })
        .collect();
    out.sort_by(|x, y| x.path.cmp(&y.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::field::Change;
    use serde_json::json;

    fn place(cluster: &str, namespace: &str) -> Place {
        Place { cluster: cluster.into(), namespace: namespace.into(), release: "shop".into() }
    }

    fn deployment(name: &str, replicas: u32, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": "shop"}},
               "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "web", "image": image,
               "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}]}}}})
    }

    /// The live twin of a desired object: the server's defaults and metadata added.
    fn live_of(desired: &Value, namespace: &str, uid: &str) -> Value {
        let mut l = desired.clone();
        l["metadata"]["namespace"] = json!(namespace);
        l["metadata"]["uid"] = json!(uid);
        l["metadata"]["resourceVersion"] = json!("42");
        l["metadata"]["annotations"] = json!({"meta.helm.sh/release-namespace": namespace});
        l["spec"]["progressDeadlineSeconds"] = json!(600);
        l["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"] = json!("/dev/termination-log");
        l["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = json!("0.5");
        l["status"] = json!({"readyReplicas": 1});
        l
    }

    fn object(desired: Value, live: Option<Value>, findings: Vec<FieldReport>) -> SideObject {
        SideObject {
            api_version: desired["apiVersion"].as_str().unwrap().into(),
            kind: desired["kind"].as_str().unwrap().into(),
            name: desired["metadata"]["name"].as_str().unwrap().into(),
            namespace: "x".into(),
            desired,
            live,
            findings,
            error: false,
            origin: ObjectOrigin::Manifest,
        }
    }

    fn side(place: Place, values: Value, objects: Vec<SideObject>) -> SideRead {
        let data = SideData {
            revision: Some(1),
            chart: "shop".into(),
            chart_version: "1.0.0".into(),
            app_version: "2.0".into(),
            helm_status: Some("deployed".into()),
            values,
            drift: Status::Clean,
            problem: None,
            objects,
        };
        SideRead { place, outcome: Ok(Some(data)) }
    }

    fn finding(path: FieldPath, manager: &str) -> FieldReport {
        FieldReport {
            history: None,
            path,
            change: Change::Changed,
            desired: None,
            live: None,
            manager: Some(manager.into()),
            time: None,
            reason: None,
            from_revision: None,
            admission: None,
        }
    }

    fn opts(rules: &[IgnoreRule]) -> CompareOptions<'_> {
        CompareOptions { rules, show_secrets: false }
    }

    #[test]
    fn two_identical_installs_in_two_namespaces_are_the_same() {
        let d = deployment("shop-web", 2, "web:1");
        let left = side(
            place("c", "staging"),
            json!({"a": 1}),
            vec![object(d.clone(), Some(live_of(&d, "staging", "u1")), vec![])],
        );
        let right =
            side(place("c", "prod"), json!({"a": 1}), vec![object(d.clone(), Some(live_of(&d, "prod", "u2")), vec![])]);
        let report = compare("shop", &left, &right, opts(&[]));
        assert_eq!(report.status, CompareStatus::Same, "{report:#?}");
        assert!(report.objects.is_empty() && report.values.is_empty() && report.ignored == 0, "{report:#?}");
    }

    #[test]
    fn a_value_and_a_hand_edit_are_told_apart() {
        let (dl, dr) = (deployment("shop-web", 2, "web:1"), deployment("shop-web", 3, "web:1"));
        let mut live_right = live_of(&dr, "prod", "u2");
        live_right["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:hotfix");
        let image = FieldPath::root()
            .key("spec")
            .key("template")
            .key("spec")
            .key("containers")
            .child(crate::report::path::Seg::Item { field: "name".into(), value: "web".into() })
            .key("image");
        let left = side(
            place("a", "shop"),
            json!({"replicas": 2, "db": {"password": "canary-l"}}),
            vec![object(dl.clone(), Some(live_of(&dl, "shop", "u1")), vec![])],
        );
        let right = side(
            place("b", "shop"),
            json!({"replicas": 3, "db": {"password": "canary-r"}}),
            vec![object(dr.clone(), Some(live_right), vec![finding(image.clone(), "kubectl-set")])],
        );
        let report = compare("shop", &left, &right, opts(&[]));
        assert_eq!(report.status, CompareStatus::Different);
        let fields = &report.objects[0].fields;
        assert_eq!(fields.len(), 2, "{fields:#?}");
        assert_eq!((fields[0].path.to_string().as_str(), fields[0].cause), ("spec.replicas", Cause::Values));
        assert_eq!((&fields[0].left, &fields[0].right), (&Some(json!(2)), &Some(json!(3))));
        assert_eq!(fields[1].path, image);
        assert_eq!(fields[1].cause, Cause::RightEdit);
        assert_eq!(fields[1].right_manager.as_deref(), Some("kubectl-set"));
        // Values key by key; the password redacted on both sides.
        let paths: Vec<String> = report.values.iter().map(|v| v.path.to_string()).collect();
        assert_eq!(paths, vec!["db.password", "replicas"]);
        let text = serde_json::to_string(&report).unwrap();
        assert!(!text.contains("canary"), "{text}");
        // Declared as expected: ignored, counted, the same.
        let values: IgnoreRule = serde_json::from_value(json!({"kind": "Values"})).unwrap();
        let mut rules = crate::engine::compare::rules::ignore_rules(vec![values], &[]).unwrap();
        rules.push(IgnoreRule::parse_cli("Deployment:spec.replicas").unwrap());
        rules.push(IgnoreRule::parse_cli("Deployment:spec.template.*").unwrap());
        let report = compare("shop", &left, &right, opts(&rules));
        assert_eq!(report.status, CompareStatus::Same, "{report:#?}");
        assert_eq!(report.ignored, 4);
    }

    #[test]
    fn names_that_embed_the_namespace_are_matched_and_only_names_are_ignored() {
        let mk = |ns: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("shop-{ns}-settings")},
                   "data": {"url": format!("http://db.{ns}.svc:5432"), "product": "product"}})
        };
        let (dl, dr) = (mk("prod"), mk("staging"));
        let mut ll = dl.clone();
        ll["metadata"]["namespace"] = json!("prod");
        let mut lr = dr.clone();
        lr["metadata"]["namespace"] = json!("staging");
        let left = side(place("c", "prod"), json!({}), vec![object(dl, Some(ll), vec![])]);
        let right = side(place("c", "staging"), json!({}), vec![object(dr, Some(lr), vec![])]);
        let report = compare("shop", &left, &right, opts(&[]));
        assert_eq!(report.objects.len(), 1, "matched as one object: {report:#?}");
        let o = &report.objects[0];
        assert_eq!(
            (o.left_name.as_deref(), o.right_name.as_deref()),
            (Some("shop-prod-settings"), Some("shop-staging-settings"))
        );
        assert_eq!(o.fields.len(), 1, "{o:#?}");
        assert_eq!(o.fields[0].ignored.as_deref(), Some(NAMES_ONLY));
        assert_eq!((report.status, report.ignored), (CompareStatus::Same, 1));
        assert_eq!(neutral("product-prod", &[("prod".into(), "{namespace}")]), "product-{namespace}");
    }

    #[test]
    fn objects_on_one_side_missing_live_and_a_release_on_one_side() {
        let d = deployment("shop-web", 1, "web:1");
        let cm =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-flags"}, "data": {"a": "1"}});
        let left = side(
            place("a", "x"),
            json!({}),
            vec![object(d.clone(), None, vec![]), object(cm.clone(), Some(cm.clone()), vec![])],
        );
        let right = side(place("b", "x"), json!({}), vec![object(d.clone(), Some(live_of(&d, "x", "u")), vec![])]);
        let report = compare("shop", &left, &right, opts(&[]));
        let got: Vec<(&str, Presence, Presence)> =
            report.objects.iter().map(|o| (o.kind.as_str(), o.left, o.right)).collect();
        assert_eq!(
            got,
            vec![("ConfigMap", Presence::Live, Presence::Absent), ("Deployment", Presence::Missing, Presence::Live)]
        );
        assert_eq!(report.status, CompareStatus::Different);
        // A whole-object rule hides the ConfigMap.
        let whole: IgnoreRule = serde_json::from_value(json!({"kind": "ConfigMap"})).unwrap();
        let rules = crate::engine::compare::rules::ignore_rules(vec![whole], &[]).unwrap();
        let report = compare("shop", &left, &right, opts(&rules));
        assert_eq!(report.ignored, 1);
        // Not deployed on the right: different, with nothing to compare; unreadable: an error.
        let gone = SideRead { place: place("b", "x"), outcome: Ok(None) };
        let report = compare("shop", &left, &gone, opts(&[]));
        assert_eq!((report.status, report.right.found, report.left.found), (CompareStatus::Different, false, true));
        let down = SideRead { place: place("b", "x"), outcome: Err("connection refused".into()) };
        let report = compare("shop", &left, &down, opts(&[]));
        assert_eq!(report.status, CompareStatus::Error);
        assert_eq!(report.right.error.as_deref(), Some("connection refused"));
        assert_eq!(report.left.chart_version.as_deref(), Some("1.0.0"), "the other side is still shown");
    }

    /// An extra object as the API server keeps it: `written` owned by `manager`, a value the
    /// server assigned (nobody's) and the control plane's own field.
    fn extra(name: &str, data: Value, manager: &str, assigned: &str) -> SideObject {
        let mut fields = serde_json::Map::new();
        fields.insert(".".into(), json!({}));
        for k in data.as_object().unwrap().keys() {
            fields.insert(format!("f:{k}"), json!({}));
        }
        let live = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "x", "uid": assigned,
                         "labels": {"app.kubernetes.io/instance": "shop"},
                         "annotations": {"assigned": assigned},
                         "managedFields": [
                             {"manager": manager, "operation": "Update", "fieldsType": "FieldsV1",
                              "fieldsV1": {"f:data": fields, "f:metadata": {"f:labels": {".": {}, "f:app.kubernetes.io/instance": {}}}}},
                             {"manager": "kube-controller-manager", "operation": "Update", "fieldsType": "FieldsV1",
                              "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:assigned": {}}}}}]},
            "data": data
        });
        SideObject {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            namespace: "x".into(),
            desired: written_fields(&live),
            live: Some(live),
            findings: Vec::new(),
            error: false,
            origin: ObjectOrigin::Extra,
        }
    }

    #[test]
    fn what_was_written_to_an_extra_object_is_what_its_managers_own() {
        let o = extra("shop-stray", json!({"mode": "fast"}), "kubectl-create", "10.0.0.7");
        assert_eq!(o.desired["data"], json!({"mode": "fast"}));
        assert_eq!(o.desired["metadata"]["labels"], json!({"app.kubernetes.io/instance": "shop"}));
        // Neither the control plane's annotation nor the server's uid.
        assert!(o.desired["metadata"].get("annotations").is_none() && o.desired["metadata"].get("uid").is_none());
        // No managedFields recorded: the whole object.
        let bare = json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
        assert_eq!(written_fields(&bare), bare);
    }

    #[test]
    fn extra_objects_are_compared_on_one_side_or_field_by_field() {
        let d = deployment("shop-web", 1, "web:1");
        let web = |ns: &str, uid: &str| object(d.clone(), Some(live_of(&d, ns, uid)), vec![]);
        let left = side(
            place("c", "staging"),
            json!({}),
            vec![
                web("staging", "u1"),
                extra("shop-flags", json!({"mode": "fast", "size": "s"}), "kubectl-create", "l1"),
                extra("shop-twin", json!({"a": "1"}), "kubectl-client-side-apply", "l2"),
                extra("shop-only-left", json!({"a": "1"}), "kubectl-create", "l3"),
            ],
        );
        let right = side(
            place("c", "prod"),
            json!({}),
            vec![
                web("prod", "u2"),
                extra("shop-flags", json!({"mode": "slow", "size": "s"}), "kubectl-edit", "r1"),
                // Written alike; the server's values and the control plane's differ.
                extra("shop-twin", json!({"a": "1"}), "kubectl-client-side-apply", "r2"),
            ],
        );
        let report = compare("shop", &left, &right, opts(&[]));
        let got: Vec<(String, Presence, Presence, usize)> =
            report.objects.iter().map(|o| (o.display_name(), o.left, o.right, o.fields.len())).collect();
        assert_eq!(
            got,
            vec![
                ("shop-flags".to_string(), Presence::Extra, Presence::Extra, 1),
                ("shop-only-left".to_string(), Presence::Extra, Presence::Absent, 0)
            ],
            "{report:#?}"
        );
        let mode = &report.objects[0].fields[0];
        assert_eq!(mode.path.to_string(), "data.mode");
        assert_eq!((&mode.left, &mode.right, mode.cause), (&Some(json!("fast")), &Some(json!("slow")), Cause::Extra));
        assert_eq!(
            (mode.left_manager.as_deref(), mode.right_manager.as_deref()),
            (Some("kubectl-create"), Some("kubectl-edit"))
        );
        assert_eq!(report.status, CompareStatus::Different);
        // Declared as expected, by kind: the same.
        let rule: IgnoreRule = serde_json::from_value(json!({"kind": "ConfigMap"})).unwrap();
        let rules = crate::engine::compare::rules::ignore_rules(vec![rule], &[]).unwrap();
        let report = compare("shop", &left, &right, opts(&rules));
        assert_eq!((report.status, report.ignored), (CompareStatus::Same, 2), "{report:#?}");
    }

    #[test]
    fn an_object_one_release_renders_and_the_other_side_has_as_extra() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"mode": "fast"},
                        "metadata": {"name": "shop-flags", "labels": {"app.kubernetes.io/instance": "shop"}}});
        let mut live = cm.clone();
        live["metadata"]["namespace"] = json!("x");
        let left = side(place("a", "x"), json!({}), vec![object(cm, Some(live), vec![])]);
        let right =
            side(place("b", "x"), json!({}), vec![extra("shop-flags", json!({"mode": "slow"}), "kubectl-create", "r")]);
        let report = compare("shop", &left, &right, opts(&[]));
        let o = &report.objects[0];
        assert_eq!((o.left, o.right), (Presence::Live, Presence::Extra));
        assert_eq!(o.fields.len(), 1, "{o:#?}");
        assert_eq!((o.fields[0].cause, o.fields[0].left_manager.as_deref()), (Cause::Extra, None));
        assert_eq!(o.fields[0].right_manager.as_deref(), Some("kubectl-create"));
    }

    fn crd_body(group: &str, versions: &[(&str, &[&str])]) -> Value {
        let versions: Vec<Value> = versions
            .iter()
            .map(|(name, props)| {
                let props: serde_json::Map<String, Value> =
                    props.iter().map(|p| (p.to_string(), json!({"type": "string"}))).collect();
                json!({"name": name, "served": true, "storage": *name == "v1",
                       "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}}})
            })
            .collect();
        json!({"apiVersion": CRD_API_VERSION, "kind": CRD_KIND, "metadata": {"name": format!("gizmos.{group}")},
               "spec": {"group": group, "scope": "Namespaced", "names": {"plural": "gizmos", "kind": "Gizmo"}, "versions": versions}})
    }

    /// A CRD of a chart's crds/: the chart's file, the live CRD (server defaults and status
    /// added), the side's own finding paths.
    fn chart_crd(chart: Value, live: Option<Value>) -> SideObject {
        let live = live.map(|mut l| {
            l["metadata"]["uid"] = json!("u");
            l["spec"]["conversion"] = json!({"strategy": "None"});
            l["status"] = json!({"storedVersions": ["v1"]});
            l
        });
        SideObject {
            api_version: CRD_API_VERSION.into(),
            kind: CRD_KIND.into(),
            name: chart["metadata"]["name"].as_str().unwrap().into(),
            namespace: String::new(),
            desired: chart,
            live,
            findings: Vec::new(),
            error: false,
            origin: ObjectOrigin::ChartCrd,
        }
    }

    #[test]
    fn chart_crds_differ_as_the_charts_ship_them_in_one_cluster() {
        let old = crd_body("drift.test", &[("v1", &["size"])]);
        let new = crd_body("drift.test", &[("v1", &["size", "color"]), ("v2", &["size"])]);
        let other = crd_body("other.test", &[("v1", &[])]);
        // Two namespaces of one cluster: one live CRD, the older one, for both sides.
        let left = side(
            place("c", "a"),
            json!({}),
            vec![chart_crd(old.clone(), Some(old.clone())), chart_crd(other.clone(), None)],
        );
        let right = side(place("c", "b"), json!({}), vec![chart_crd(new, Some(old.clone()))]);
        let report = compare("shop", &left, &right, opts(&[]));
        let got: Vec<(String, Presence, Presence)> =
            report.objects.iter().map(|o| (o.display_name(), o.left, o.right)).collect();
        assert_eq!(
            got,
            vec![
                ("gizmos.drift.test".to_string(), Presence::Live, Presence::Live),
                ("gizmos.other.test".to_string(), Presence::Missing, Presence::Absent)
            ]
        );
        let fields: Vec<(String, Cause, Option<Value>, Option<Value>)> = report.objects[0]
            .fields
            .iter()
            .map(|f| (f.path.to_string(), f.cause, f.left.clone(), f.right.clone()))
            .collect();
        assert_eq!(
            fields,
            vec![
                (
                    "spec.versions[name=v1].schema.openAPIV3Schema.properties.spec.properties.color".to_string(),
                    Cause::Values,
                    None,
                    Some(json!("string"))
                ),
                (
                    "spec.versions[name=v2]".to_string(),
                    Cause::Values,
                    None,
                    Some(json!({"served": true, "storage": false}))
                ),
            ]
        );
        assert_eq!(report.status, CompareStatus::Different);
        // The same charts, whatever the server added live: the same.
        let same = side(place("c", "b"), json!({}), vec![chart_crd(old.clone(), Some(old.clone()))]);
        let left = side(place("c", "a"), json!({}), vec![chart_crd(old.clone(), Some(old))]);
        assert_eq!(compare("shop", &left, &same, opts(&[])).status, CompareStatus::Same);
    }

    #[test]
    fn live_crds_of_two_clusters_differ_where_the_charts_agree() {
        let old = crd_body("drift.test", &[("v1", &["size"])]);
        let new = crd_body("drift.test", &[("v1", &["size", "color"])]);
        // Both charts ship the new CRD; the left cluster kept the old one (Helm never upgrades crds/).
        let left = side(place("staging", "x"), json!({}), vec![chart_crd(new.clone(), Some(old))]);
        let right = side(place("prod", "x"), json!({}), vec![chart_crd(new.clone(), Some(new.clone()))]);
        let report = compare("shop", &left, &right, opts(&[]));
        let f = &report.objects[0].fields;
        assert_eq!(f.len(), 1, "{report:#?}");
        assert_eq!(
            (f[0].path.to_string().as_str(), f[0].cause, &f[0].left, &f[0].right),
            (
                "spec.versions[name=v1].schema.openAPIV3Schema.properties.spec.properties.color",
                Cause::LiveCrd,
                &None,
                &Some(json!("string"))
            )
        );
        // Ignored by a rule on the CRD kind, counted.
        let rules = vec![IgnoreRule::parse_cli("CustomResourceDefinition:spec.versions*").unwrap()];
        let report = compare("shop", &left, &right, opts(&rules));
        assert_eq!((report.status, report.ignored), (CompareStatus::Same, 1), "{report:#?}");
    }

    #[test]
    fn secret_data_is_redacted_in_every_difference() {
        let s = |v: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "shop-db"}, "data": {"password": v}});
        let (a, b) = (s("Y2FuYXJ5LWxlZnQ="), s("Y2FuYXJ5LXJpZ2h0"));
        let left = side(place("a", "x"), json!({}), vec![object(a.clone(), Some(a.clone()), vec![])]);
        let right = side(place("b", "x"), json!({}), vec![object(b.clone(), Some(b.clone()), vec![])]);
        let report = compare("shop", &left, &right, opts(&[]));
        assert_eq!(report.objects[0].fields.len(), 1);
        let text = serde_json::to_string(&report).unwrap();
        assert!(!text.contains("Y2FuYXJ5") && text.contains("<redacted, "), "{text}");
        let shown = compare("shop", &left, &right, CompareOptions { rules: &[], show_secrets: true });
        assert!(serde_json::to_string(&shown).unwrap().contains("Y2FuYXJ5LWxlZnQ="));
    }
}
