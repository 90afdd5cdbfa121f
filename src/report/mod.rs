//! The drift report: the data every output format renders (JSON and YAML serialise it as is).
//! Its JSON shape is documented in `docs/output.md` and versioned by `schemaVersion`.
//!
//! Secret values are redacted when the report is built ([`redact_value`]), so no renderer can
//! print one by mistake.

pub mod adopt;
pub mod completion;
pub mod duration;
pub mod envdiff;
pub mod field;
pub mod fleet;
pub mod gitops;
pub mod history;
pub mod orphan_kinds;
pub mod orphans;
pub mod path;
pub mod progress;
pub mod secret;
pub mod shell;
pub mod target;
pub mod upgrade;
pub mod versions;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use field::{Change, Drift, Owner};
pub use path::FieldPath;
pub use secret::{is_secret_field, redact_value, redaction};
pub use target::{
    ExtraOrigin, ExtraReport, FileOrigin, FileReport, Origin, Problem, ReleaseOrigin, ReleaseReport, SourceType,
    TargetReport,
};

pub const SCHEMA_VERSION: u32 = 2;

/// Overall result of one release (or manifests file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Clean,
    Drifted,
    Error,
    /// A Helm release whose last operation did not complete (failed, or pending: interrupted or
    /// still running), with no drift by hand: what differs live comes from that operation.
    Incomplete,
}

impl Status {
    /// The status rule, the one place it is written: an error if something could not be checked
    /// (never clean), else drifted if something differs (by hand), else incomplete if a Helm
    /// operation did not complete, else clean.
    pub fn judge(unchecked: bool, drifted: bool, unfinished: bool) -> Status {
        if unchecked {
            Status::Error
        } else if drifted {
            Status::Drifted
        } else if unfinished {
            Status::Incomplete
        } else {
            Status::Clean
        }
    }

    /// The overall status of several: any error makes an error, else any drift makes drift,
    /// else any incomplete release makes incomplete.
    /// The status as JSON names it (`clean`, `drifted`, `error`, `incomplete`), for log fields.
    pub fn name(self) -> &'static str {
        match self {
            Status::Clean => "clean",
            Status::Drifted => "drifted",
            Status::Error => "error",
            Status::Incomplete => "incomplete",
        }
    }

    pub fn worst<I: IntoIterator<Item = Status>>(statuses: I) -> Status {
        statuses.into_iter().fold(Status::Clean, |acc, s| match (acc, s) {
            (Status::Error, _) | (_, Status::Error) => Status::Error,
            (Status::Drifted, _) | (_, Status::Drifted) => Status::Drifted,
            (Status::Incomplete, _) | (_, Status::Incomplete) => Status::Incomplete,
            _ => Status::Clean,
        })
    }
}

/// What is wrong with one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectState {
    /// At least one field differs.
    Changed,
    /// The object is gone live.
    Missing,
    /// Live, labelled for the release, not in the manifest.
    Extra,
    /// Differences exist, but every one is ignored (HPA-owned replicas, ignore rules).
    Ignored,
    /// The object could not be read (forbidden, kind not served).
    Error,
}

/// One field of an object that differs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldReport {
    /// Where the field is: data (keys, list items by merge key, indexes), rendered as text only
    /// when written (`spec.template.spec.containers[name=web].image`).
    pub path: FieldPath,
    pub change: Change,
    pub desired: Option<Value>,
    pub live: Option<Value>,
    /// The field manager that owns the field now.
    pub manager: Option<String>,
    /// When that manager last wrote the object (from managedFields).
    pub time: Option<String>,
    /// Set when the difference is ignored, with why; ignored fields are not drift.
    pub reason: Option<String>,
    /// Set when the live value is what a newer, incomplete revision of the release (a failed or
    /// interrupted upgrade or rollback) applied: not drift by hand.
    #[serde(default, rename = "fromRevision", skip_serializing_if = "Option::is_none")]
    pub from_revision: Option<u32>,
    /// Set when the value was changed at admission (a mutating webhook or policy changed it
    /// during the deployer's own write; docs/drift.md "Changed at admission"): its likely cause.
    /// Set whether the difference is ignored (`--admission-changes=ignore`, the default, with the
    /// reason saying the same) or drift (`--admission-changes=drift`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<String>,
    /// The lifecycle of its open finding in the drift history (`release --history`; docs/history.md):
    /// since when, how often, by whom. Not written without a history or an open finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<history::FieldHistory>,
}

/// An `apiVersion`'s group and version: `apps/v1` is (`apps`, `v1`), `v1` is (`""`, `v1`): the
/// core group is the empty string. The one split of an apiVersion every layer uses.
pub fn group_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// One object with drift.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReport {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub state: ObjectState,
    pub fields: Vec<FieldReport>,
    /// For state `error`: what could not be done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The manifest document it came from (a template path, or file#document).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Set when the object is missing or extra because a newer, incomplete revision of the
    /// release deleted or created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_revision: Option<u32>,
    /// Why the object is compared apart from the others, shown with it: a chart's `crds/` CRD,
    /// which Helm installs once and never upgrades.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A missing object of a release whose first install failed (no revision ever deployed): the
    /// install never created it. Not drift by hand; the release is incomplete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_created: bool,
}

impl ObjectReport {
    /// A report of one object with no fields, error, source or revision (struct update syntax
    /// sets those: `ObjectReport { fields, ..ObjectReport::new(..) }`).
    pub fn new(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        namespace: Option<String>,
        name: impl Into<String>,
        state: ObjectState,
    ) -> ObjectReport {
        ObjectReport {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace,
            name: name.into(),
            state,
            fields: Vec::new(),
            error: None,
            source: None,
            from_revision: None,
            note: None,
            not_created: false,
        }
    }

    /// `Kind namespace/name` (or `Kind name` when cluster-scoped).
    pub fn title(&self) -> String {
        match &self.namespace {
            Some(ns) if !ns.is_empty() => format!("{} {}/{}", self.kind, ns, self.name),
            _ => format!("{} {}", self.kind, self.name),
        }
    }

    /// Whether this object counts as drift.
    pub fn is_drift(&self) -> bool {
        matches!(self.state, ObjectState::Changed | ObjectState::Missing | ObjectState::Extra)
    }

    /// Whether something about this object was done by hand: drift that no newer, incomplete
    /// revision of the release explains.
    pub fn is_hand_drift(&self) -> bool {
        match self.state {
            ObjectState::Changed => self.fields.iter().any(FieldReport::is_hand_drift),
            ObjectState::Missing => self.from_revision.is_none() && !self.not_created,
            ObjectState::Extra => self.from_revision.is_none(),
            ObjectState::Ignored | ObjectState::Error => false,
        }
    }

    /// This object with only its drift by hand (`None` when it has none).
    pub fn hand_drift(&self) -> Option<ObjectReport> {
        if !self.is_hand_drift() {
            return None;
        }
        let mut o = self.clone();
        o.fields.retain(|f| f.from_revision.is_none());
        Some(o)
    }
}

impl FieldReport {
    /// A difference that is neither ignored nor explained by a newer revision.
    pub fn is_hand_drift(&self) -> bool {
        self.reason.is_none() && self.from_revision.is_none()
    }
}

/// Counts over the whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub releases: usize,
    pub drifted: usize,
    pub clean: usize,
    pub errors: usize,
    /// Releases whose last Helm operation did not complete, with no drift by hand.
    pub incomplete: usize,
    /// Desired objects checked.
    pub objects: usize,
    /// Objects that drifted (changed, missing or extra).
    pub drifted_objects: usize,
}

/// The report of `kubectl drift release`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftReport {
    pub schema_version: u32,
    /// The cluster it is about: its kube context (or a server's `--cluster-name`).
    #[serde(default)]
    pub cluster: String,
    pub releases: Vec<ReleaseReport>,
    /// The Flux Kustomizations and Argo CD Applications checked with the releases (the
    /// dashboard's config drift; docs/gitops.md). Not written when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gitops: Vec<FileReport>,
    pub summary: Summary,
}

impl DriftReport {
    /// The run's status: every release's and GitOps target's ([`Status::worst`]).
    pub fn status(&self) -> Status {
        Status::worst(self.releases.iter().map(|r| r.status).chain(self.gitops.iter().map(|f| f.status)))
    }

    pub fn new(releases: Vec<ReleaseReport>, objects_checked: usize) -> DriftReport {
        let summary = Summary {
            releases: releases.len(),
            drifted: releases.iter().filter(|r| r.status == Status::Drifted).count(),
            clean: releases.iter().filter(|r| r.status == Status::Clean).count(),
            errors: releases.iter().filter(|r| r.status == Status::Error).count(),
            incomplete: releases.iter().filter(|r| r.status == Status::Incomplete).count(),
            objects: objects_checked,
            drifted_objects: releases.iter().flat_map(|r| &r.objects).filter(|o| o.is_drift()).count(),
        };
        DriftReport { schema_version: SCHEMA_VERSION, cluster: String::new(), releases, gitops: Vec::new(), summary }
    }
}

/// A folder met while walking the PATHs and not checked (a Helm chart, a Kustomize base checked
/// through its overlay, a Kustomize component), with why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedPath {
    pub path: String,
    pub reason: String,
}

/// Counts over a manifests run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestsSummary {
    pub files: usize,
    pub drifted: usize,
    pub clean: usize,
    pub errors: usize,
    /// Desired objects checked.
    pub objects: usize,
    /// Objects that drifted (changed or missing, and extra objects).
    pub drifted_objects: usize,
    /// Extra objects found (live, carrying the manifests' labels, in no file).
    #[serde(default)]
    pub extra: usize,
    /// Folders and documents skipped (Helm charts, Kustomize bases checked through an overlay,
    /// `generateName` objects).
    #[serde(default)]
    pub skipped: usize,
}

/// The report of `kubectl drift manifests`: the release schema with `files` for `releases`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestsReport {
    pub schema_version: u32,
    /// The cluster it is about: its kube context (or a server's `--cluster-name`).
    #[serde(default)]
    pub cluster: String,
    pub files: Vec<FileReport>,
    /// Folders met in a walk and not checked, with why.
    #[serde(default)]
    pub skipped: Vec<SkippedPath>,
    /// The search for extra objects; null when there was nothing to search by (no ApplySet label
    /// on the live objects, no `--selector`).
    #[serde(default)]
    pub extra: Option<ExtraReport>,
    pub summary: ManifestsSummary,
}

impl ManifestsReport {
    pub fn new(files: Vec<FileReport>, objects_checked: usize) -> ManifestsReport {
        ManifestsReport::with_extra(files, Vec::new(), None, objects_checked)
    }

    pub fn with_extra(
        files: Vec<FileReport>,
        skipped: Vec<SkippedPath>,
        extra: Option<ExtraReport>,
        objects_checked: usize,
    ) -> ManifestsReport {
        let count = |st: Status| files.iter().filter(|f| f.status == st).count();
        let extra_objects = extra.iter().flat_map(|e| &e.objects).filter(|o| o.is_drift()).count();
        let summary = ManifestsSummary {
            files: files.len(),
            drifted: count(Status::Drifted),
            clean: count(Status::Clean),
            errors: count(Status::Error),
            objects: objects_checked,
            drifted_objects: files.iter().flat_map(|f| &f.objects).filter(|o| o.is_drift()).count() + extra_objects,
            extra: extra_objects,
            skipped: skipped.len() + files.iter().map(|f| f.origin.skipped.len()).sum::<usize>(),
        };
        ManifestsReport { schema_version: SCHEMA_VERSION, cluster: String::new(), files, skipped, extra, summary }
    }

    /// The run's status: every file's and the search for extra objects' (the one rule,
    /// [`Status::worst`]).
    pub fn status(&self) -> Status {
        Status::worst(self.files.iter().map(|f| f.status).chain(self.extra.iter().map(|e| e.status)))
    }

    /// The whole run as one target (`watch` alerts on a manifests PATH so): every file's and the
    /// extra search's objects and commands, and their problems, each file's named by its path.
    pub fn as_one_target(&self, path: &str) -> TargetReport {
        let extra = self.extra.as_ref();
        let problems: Vec<String> = self
            .files
            .iter()
            .filter_map(|f| f.problem.as_ref().map(|e| format!("{}: {e}", f.origin.path)))
            .chain(extra.and_then(ExtraReport::error))
            .collect();
        TargetReport {
            problem: Problem::from_messages(problems),
            objects: self
                .files
                .iter()
                .flat_map(|f| &f.objects)
                .chain(extra.iter().flat_map(|e| &e.objects))
                .cloned()
                .collect(),
            reconcile: self
                .files
                .iter()
                .flat_map(|f| &f.reconcile)
                .chain(extra.iter().flat_map(|e| &e.reconcile))
                .cloned()
                .collect(),
            ..TargetReport::new(Origin::Manifests { path: path.to_string() }, self.status())
        }
    }
}

/// Turn a drift into its report form, redacting Secret values unless `show_secrets`.
pub fn field_report(kind: &str, d: &Drift, show_secrets: bool) -> FieldReport {
    let secret = !show_secrets && is_secret_field(kind, &d.path);
    let shown = |v: &Option<Value>| -> Option<Value> {
        v.as_ref().map(|x| if secret { redact_value(x, !d.path.starts_with(&["stringData"])) } else { x.clone() })
    };
    FieldReport {
        history: None,
        path: d.path.clone(),
        change: d.change,
        desired: shown(&d.desired),
        live: shown(&d.live),
        manager: d.owner.as_ref().map(|o| o.manager.clone()),
        time: d.owner.as_ref().and_then(|o| o.time.clone()),
        reason: d.ignored.clone(),
        from_revision: None,
        admission: None,
    }
}

/// A short fingerprint of a value, for text output of secrets shown as redacted.
pub fn is_redacted(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.starts_with("<redacted, "))
}

/// Whether `change` is an addition.
pub fn is_added(c: Change) -> bool {
    c == Change::Added
}

/// A document naming an object that cannot be matched to one live object: it has
/// `metadata.generateName` and no `metadata.name`, so every `kubectl create` makes a new one
/// (migration Jobs often are written so). `kubectl apply` refuses such objects.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedObject {
    pub api_version: String,
    pub kind: String,
    /// The `metadata.generateName` prefix.
    pub generate_name: String,
    /// As written in the manifest.
    pub namespace: Option<String>,
    /// Where it came from: `dir/app.yaml#2`.
    pub source: String,
    /// Why it is not checked.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_api_version_splits_into_group_and_version() {
        assert_eq!(group_version("apps/v1"), ("apps", "v1"));
        assert_eq!(group_version("v1"), ("", "v1"));
        assert_eq!(group_version("networking.k8s.io/v1beta1"), ("networking.k8s.io", "v1beta1"));
        assert_eq!(group_version(""), ("", ""));
    }

    use super::*;
    use crate::report::path::{FieldPath, Seg};
    use serde_json::json;

    #[test]
    fn status_names_are_its_json() {
        for s in [Status::Clean, Status::Drifted, Status::Error, Status::Incomplete] {
            assert_eq!(json!(s), json!(s.name()));
        }
    }

    #[test]
    fn redacts_secret_data_and_keeps_key_names() {
        let path = FieldPath(vec![Seg::Key("data".into())]);
        let d = Drift {
            path,
            change: Change::Changed,
            desired: Some(json!({"password": "aHVudGVyMg=="})),
            live: Some(json!({"password": "b3RoZXI="})),
            owner: None,
            ignored: None,
        };
        let f = field_report("Secret", &d, false);
        let text = serde_json::to_string(&f).unwrap();
        assert!(!text.contains("aHVudGVyMg==") && !text.contains("hunter2"), "{text}");
        assert!(text.contains("password"));
        assert_eq!(f.desired.unwrap()["password"], json!(redaction(b"hunter2")));
        let shown = field_report("Secret", &d, true);
        assert_eq!(shown.desired.unwrap()["password"], json!("aHVudGVyMg=="));
        // Other kinds are not redacted.
        assert_eq!(field_report("ConfigMap", &d, false).live.unwrap()["password"], json!("b3RoZXI="));
    }

    #[test]
    fn worst_status() {
        assert_eq!(Status::worst([]), Status::Clean);
        assert_eq!(Status::worst([Status::Clean, Status::Drifted]), Status::Drifted);
        assert_eq!(Status::worst([Status::Drifted, Status::Error, Status::Clean]), Status::Error);
        assert_eq!(Status::worst([Status::Clean, Status::Incomplete]), Status::Incomplete);
        assert_eq!(Status::worst([Status::Incomplete, Status::Drifted]), Status::Drifted);
    }

    #[test]
    fn redaction_format() {
        assert_eq!(redaction(b"hunter2"), "<redacted, 7 bytes, sha256:f52fbd32>");
    }

    /// The JSON of `kubectl drift manifests -o json` (docs/output.md): every field, so one that is
    /// renamed, added or dropped changes this snapshot (and needs a `schemaVersion` decision).
    #[test]
    fn manifests_report_schema() {
        // The history of its open finding, as `release --history` adds it (docs/history.md).
        let field = FieldReport {
            history: Some(history::FieldHistory {
                since: "2026-12-01T10:02:11Z".into(),
                first_seen: "2026-11-28T08:00:00Z".into(),
                last_seen: "2026-12-04T14:10:00Z".into(),
                episodes: 2,
                managers: vec!["kubectl-edit".into()],
                age: 0,
            }),
            path: "spec.replicas".parse().unwrap(),
            change: Change::Changed,
            desired: Some(json!(2)),
            live: Some(json!(5)),
            manager: Some("kubectl-scale".into()),
            time: Some("2026-11-30T18:07:41Z".into()),
            reason: None,
            from_revision: None,
            admission: None,
        };
        let drifted = FileReport {
            objects: vec![ObjectReport {
                fields: vec![field],
                source: Some("k8s/web.yaml#1".into()),
                ..ObjectReport::new("apps/v1", "Deployment", Some("shop".into()), "web", ObjectState::Changed)
            }],
            reconcile: vec!["kubectl apply -f k8s/web.yaml -n shop".into()],
            ..TargetReport::new(
                FileOrigin {
                    gitops: None,
                    path: "k8s/web.yaml".into(),
                    field_manager: Some("kubectl-client-side-apply".into()),
                    server_side: false,
                    source_type: SourceType::File,
                    skipped: vec![SkippedObject {
                        api_version: "batch/v1".into(),
                        kind: "Job".into(),
                        generate_name: "migrate-".into(),
                        namespace: None,
                        source: "k8s/web.yaml#2".into(),
                        reason: "metadata.generateName: a new object each apply".into(),
                    }],
                },
                Status::Drifted,
            )
        };
        let failed = FileReport {
            problem: Some(Problem::ObjectsUnchecked(1)),
            objects: vec![ObjectReport {
                error: Some("Widget (example.com/v1) is not served by the cluster".into()),
                ..ObjectReport::new("example.com/v1", "Widget", Some("shop".into()), "w", ObjectState::Error)
            }],
            ..TargetReport::new(
                FileOrigin {
                    gitops: None,
                    path: "overlays/prod".into(),
                    field_manager: None,
                    server_side: true,
                    source_type: SourceType::Kustomization,
                    skipped: vec![],
                },
                Status::Error,
            )
        };
        let extra = ExtraReport {
            objects: vec![ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "stray", ObjectState::Extra)],
            reconcile: vec!["# kubectl delete configmap/stray -n shop".into()],
            ..TargetReport::new(
                ExtraOrigin { selectors: vec!["app=shop".into()], namespaces: vec!["shop".into()] },
                Status::Drifted,
            )
        };
        let skipped = vec![SkippedPath { path: "charts/shop".into(), reason: "a Helm chart (Chart.yaml)".into() }];
        let report = ManifestsReport::with_extra(vec![drifted, failed], skipped, Some(extra), 3);
        insta::assert_snapshot!("manifests_report_schema", serde_json::to_string_pretty(&report).unwrap());
    }
}
