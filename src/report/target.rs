//! One target's result: a Helm release, a manifests file or kustomization, the search for extra
//! objects, a watched manifests PATH, or a whole cluster. [`TargetReport`] holds what every
//! target has (status, problem, objects, reconcile commands, the cluster); its origin holds what
//! only that kind of target has. The renderers, `watch` (its alerts and state) and `serve` take
//! it, so a new kind of target is a reader plus one [`Origin`] variant.
//!
//! In a report each list holds one origin ([`ReleaseReport`] in `releases[]`, [`FileReport`] in
//! `files[]`, [`ExtraReport`] as `extra`); [`Origin`] is any of them, for the code that takes
//! every kind of target alike (`watch`). The JSON of each is written field by field in the order
//! docs/output.md gives (the origin's fields sit before and after the common ones, which
//! `#[serde(flatten)]` cannot interleave); `cluster` is not in it (the report names its cluster
//! at the top).

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};

use super::{ObjectReport, SkippedObject, Status};

/// One target's result.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetReport<O = Origin> {
    /// The cluster (kube context) it is about; empty in a report (which names its cluster once),
    /// set where targets of several clusters meet (`watch`).
    pub cluster: String,
    /// What was checked.
    pub origin: O,
    pub status: Status,
    /// Why the target could not be fully checked. In JSON and YAML: `error`, its message.
    pub problem: Option<Problem>,
    pub objects: Vec<ObjectReport>,
    /// The commands that restore the desired state (review, then run in order).
    pub reconcile: Vec<String>,
}

/// A Helm release's result (`releases[]`).
pub type ReleaseReport = TargetReport<ReleaseOrigin>;
/// A manifests file's or kustomization's result (`files[]`).
pub type FileReport = TargetReport<FileOrigin>;
/// The search for extra objects of a manifests run (`extra`).
pub type ExtraReport = TargetReport<ExtraOrigin>;

/// Why a target could not be fully checked. In JSON and YAML: its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The target itself (reading, decoding, parsing, rendering, a LIST not tied to one object):
    /// each message.
    Failed(Vec<String>),
    /// Only objects could not be checked, this many; each says why in its own `error`.
    ObjectsUnchecked(usize),
}

impl Problem {
    /// One failure.
    pub fn failed(message: impl Into<String>) -> Problem {
        Problem::Failed(vec![message.into()])
    }

    /// The failures as one problem, or none when there is none.
    pub fn from_messages(messages: Vec<String>) -> Option<Problem> {
        (!messages.is_empty()).then_some(Problem::Failed(messages))
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Failed(messages) => f.write_str(&messages.join("; ")),
            Problem::ObjectsUnchecked(1) => f.write_str("1 object could not be checked"),
            Problem::ObjectsUnchecked(n) => write!(f, "{n} objects could not be checked"),
        }
    }
}

impl Serialize for Problem {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Problem {
    /// A message as [`Problem`]'s Display writes it (the counted form, else one failure).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Problem, D::Error> {
        let text = String::deserialize(deserializer)?;
        let counted = text
            .strip_suffix(" objects could not be checked")
            .or_else(|| text.strip_suffix(" object could not be checked"))
            .and_then(|n| n.parse().ok());
        Ok(match counted {
            Some(n) => Problem::ObjectsUnchecked(n),
            None => Problem::failed(text),
        })
    }
}

/// A Helm release: which revision was compared, and Helm's own view of it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReleaseOrigin {
    pub name: String,
    pub namespace: String,
    pub revision: u32,
    pub chart: String,
    pub chart_version: String,
    pub app_version: String,
    /// Helm's status of the release: the status of its newest revision (`helm status`), e.g.
    /// `deployed`, `failed`, `pending-upgrade`; null when the release could not be read.
    pub helm_status: Option<String>,
    /// The newest revision; greater than `revision` after a failed or interrupted upgrade or
    /// rollback (both were compared); null when the release could not be read.
    pub latest_revision: Option<u32>,
    /// Helm's description of the newest revision when the release is not `deployed` (why it
    /// failed, e.g. `Upgrade "shop" failed: context deadline exceeded`).
    pub helm_description: Option<String>,
    /// A digest of the revision's user-supplied values (not serialised: values may hold secrets;
    /// `watch` uses it to say when values changed).
    pub values_digest: Option<String>,
    /// The Flux HelmRelease that manages the release, when one does (`gitops` in JSON).
    pub gitops: Option<super::gitops::GitOps>,
}

/// A manifests file or kustomization directory (`kubectl drift manifests`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FileOrigin {
    /// The file as found from the paths given (or a path that could not be read).
    pub path: String,
    /// The field manager taken as the file's deployer (given by `--field-manager`, else the
    /// manager that owns most of its objects' manifest fields); null when no object is live.
    pub field_manager: Option<String>,
    /// Whether that manager applied the file server-side (`kubectl apply --server-side`).
    pub server_side: bool,
    /// A file, or a kustomization directory (rendered with `kubectl kustomize`).
    pub source_type: SourceType,
    /// Documents that cannot be matched to one live object (`metadata.generateName`), with why.
    pub skipped: Vec<SkippedObject>,
    /// A Flux Kustomization's or an Argo CD Application's own state (`gitops` in JSON).
    pub gitops: Option<super::gitops::GitOps>,
}

/// What a `files[]` entry of a manifests report is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceType {
    /// A manifest file.
    #[default]
    File,
    /// A kustomization directory, rendered with `kubectl kustomize`.
    Kustomization,
    /// A Flux Kustomization's inventory (`kubectl drift kustomization`); `path` is
    /// `NAMESPACE/NAME`.
    #[serde(rename = "flux-kustomization")]
    FluxKustomization,
    /// An Argo CD Application's resources (`kubectl drift application`); `path` is
    /// `NAMESPACE/NAME`.
    #[serde(rename = "argocd-application")]
    ArgoApplication,
}

/// Live objects that carry the labels of the manifests (their ApplySet's, or `--selector`) but
/// are in none of the files: the counterpart of a release's extra objects. Its status is
/// `drifted` when extra objects were found, `error` when the search was incomplete; its objects
/// are of state `extra` (or `ignored`, by a whole-object ignore rule), sorted by kind, namespace,
/// name; its reconcile commands are commented-out `kubectl delete` lines (deleting is the user's
/// decision).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExtraOrigin {
    /// The label selectors searched (`applyset.kubernetes.io/part-of=ID`, `--selector`).
    pub selectors: Vec<String>,
    /// The namespaces searched (cluster-scoped kinds are searched cluster-wide).
    pub namespaces: Vec<String>,
}

/// Any kind of target.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    Release(ReleaseOrigin),
    File(FileOrigin),
    Extra(ExtraOrigin),
    /// A manifests PATH taken as one target, its files and its search for extra objects together
    /// (what `watch` alerts on).
    Manifests {
        path: String,
    },
    /// The whole cluster: a check that could not even list what to check (API down, forbidden).
    Cluster,
}

impl From<ReleaseOrigin> for Origin {
    fn from(o: ReleaseOrigin) -> Origin {
        Origin::Release(o)
    }
}

impl From<FileOrigin> for Origin {
    fn from(o: FileOrigin) -> Origin {
        Origin::File(o)
    }
}

impl From<ExtraOrigin> for Origin {
    fn from(o: ExtraOrigin) -> Origin {
        Origin::Extra(o)
    }
}

impl Origin {
    /// The kind of target, as alerts and metrics name it: `release`, `file`, `kustomization`,
    /// `extra`, `manifests` or `cluster`.
    pub fn kind(&self) -> &'static str {
        match self {
            Origin::Release(_) => "release",
            Origin::File(f) => match f.source_type {
                SourceType::File => "file",
                SourceType::Kustomization => "kustomization",
                SourceType::FluxKustomization => "flux-kustomization",
                SourceType::ArgoApplication => "argocd-application",
            },
            Origin::Extra(_) => "extra",
            Origin::Manifests { .. } => "manifests",
            Origin::Cluster => "cluster",
        }
    }

    /// The target's name: a release's name, a path, the selectors searched.
    pub fn name(&self) -> String {
        match self {
            Origin::Release(r) => r.name.clone(),
            Origin::File(f) => f.path.clone(),
            Origin::Extra(e) => e.selectors.join(", "),
            Origin::Manifests { path } => path.clone(),
            Origin::Cluster => "(all watched targets)".into(),
        }
    }

    /// A release's namespace.
    pub fn namespace(&self) -> Option<&str> {
        self.release().map(|r| r.namespace.as_str())
    }

    /// A release's compared revision (none when it could not be read, revision 0).
    pub fn revision(&self) -> Option<u32> {
        self.release().map(|r| r.revision).filter(|r| *r > 0)
    }

    pub fn release(&self) -> Option<&ReleaseOrigin> {
        match self {
            Origin::Release(r) => Some(r),
            _ => None,
        }
    }
}

impl<O> TargetReport<O> {
    /// A target with nothing found yet: no problem, object or command.
    pub fn new(origin: O, status: Status) -> TargetReport<O> {
        TargetReport {
            cluster: String::new(),
            origin,
            status,
            problem: None,
            objects: Vec::new(),
            reconcile: Vec::new(),
        }
    }

    /// A target that could not be checked at all.
    pub fn failed(origin: O, message: impl Into<String>) -> TargetReport<O> {
        TargetReport { problem: Some(Problem::failed(message)), ..TargetReport::new(origin, Status::Error) }
    }

    /// The problem's message (`error` in JSON).
    pub fn error(&self) -> Option<String> {
        self.problem.as_ref().map(ToString::to_string)
    }

    /// This report as any kind of target (for the code that takes every kind alike).
    pub fn to_any(&self) -> TargetReport
    where
        O: Clone + Into<Origin>,
    {
        TargetReport {
            cluster: self.cluster.clone(),
            origin: self.origin.clone().into(),
            status: self.status,
            problem: self.problem.clone(),
            objects: self.objects.clone(),
            reconcile: self.reconcile.clone(),
        }
    }
}

impl ReleaseReport {
    /// A release that could not be checked at all (not found, undecodable storage).
    pub fn failed_release(name: String, namespace: String, revision: u32, error: String) -> ReleaseReport {
        TargetReport::failed(ReleaseOrigin { name, namespace, revision, ..ReleaseOrigin::default() }, error)
    }
}

impl Serialize for ReleaseReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let o = &self.origin;
        let mut s = serializer.serialize_struct("ReleaseReport", 14)?;
        s.serialize_field("name", &o.name)?;
        s.serialize_field("namespace", &o.namespace)?;
        s.serialize_field("revision", &o.revision)?;
        s.serialize_field("chart", &o.chart)?;
        s.serialize_field("chartVersion", &o.chart_version)?;
        s.serialize_field("appVersion", &o.app_version)?;
        s.serialize_field("status", &self.status)?;
        s.serialize_field("helmStatus", &o.helm_status)?;
        s.serialize_field("latestRevision", &o.latest_revision)?;
        s.serialize_field("helmDescription", &o.helm_description)?;
        match &o.gitops {
            Some(g) => s.serialize_field("gitops", g)?,
            None => s.skip_field("gitops")?,
        }
        s.serialize_field("error", &self.problem)?;
        s.serialize_field("objects", &self.objects)?;
        s.serialize_field("reconcile", &self.reconcile)?;
        s.end()
    }
}

impl Serialize for FileReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let o = &self.origin;
        let mut s = serializer.serialize_struct("FileReport", 10)?;
        s.serialize_field("path", &o.path)?;
        s.serialize_field("status", &self.status)?;
        s.serialize_field("error", &self.problem)?;
        s.serialize_field("fieldManager", &o.field_manager)?;
        s.serialize_field("serverSide", &o.server_side)?;
        s.serialize_field("type", &o.source_type)?;
        match &o.gitops {
            Some(g) => s.serialize_field("gitops", g)?,
            None => s.skip_field("gitops")?,
        }
        s.serialize_field("objects", &self.objects)?;
        s.serialize_field("skipped", &o.skipped)?;
        s.serialize_field("reconcile", &self.reconcile)?;
        s.end()
    }
}

impl Serialize for ExtraReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let o = &self.origin;
        let mut s = serializer.serialize_struct("ExtraReport", 6)?;
        s.serialize_field("selectors", &o.selectors)?;
        s.serialize_field("namespaces", &o.namespaces)?;
        s.serialize_field("status", &self.status)?;
        s.serialize_field("error", &self.problem)?;
        s.serialize_field("objects", &self.objects)?;
        s.serialize_field("reconcile", &self.reconcile)?;
        s.end()
    }
}

/// The JSON of a `releases[]` entry, read back (a saved dashboard report).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReleaseJson {
    name: String,
    namespace: String,
    revision: u32,
    chart: String,
    chart_version: String,
    app_version: String,
    status: Status,
    helm_status: Option<String>,
    latest_revision: Option<u32>,
    helm_description: Option<String>,
    #[serde(default)]
    gitops: Option<super::gitops::GitOps>,
    error: Option<Problem>,
    objects: Vec<ObjectReport>,
    reconcile: Vec<String>,
}

impl<'de> Deserialize<'de> for ReleaseReport {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<ReleaseReport, D::Error> {
        let j = ReleaseJson::deserialize(deserializer)?;
        Ok(TargetReport {
            cluster: String::new(),
            origin: ReleaseOrigin {
                name: j.name,
                namespace: j.namespace,
                revision: j.revision,
                chart: j.chart,
                chart_version: j.chart_version,
                app_version: j.app_version,
                helm_status: j.helm_status,
                latest_revision: j.latest_revision,
                helm_description: j.helm_description,
                values_digest: None,
                gitops: j.gitops,
            },
            status: j.status,
            problem: j.error,
            objects: j.objects,
            reconcile: j.reconcile,
        })
    }
}

/// The JSON of a `files[]` entry, read back.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileJson {
    path: String,
    status: Status,
    error: Option<Problem>,
    field_manager: Option<String>,
    server_side: bool,
    #[serde(rename = "type", default)]
    source_type: SourceType,
    #[serde(default)]
    gitops: Option<super::gitops::GitOps>,
    objects: Vec<ObjectReport>,
    #[serde(default)]
    skipped: Vec<SkippedObject>,
    reconcile: Vec<String>,
}

impl<'de> Deserialize<'de> for FileReport {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<FileReport, D::Error> {
        let j = FileJson::deserialize(deserializer)?;
        Ok(TargetReport {
            cluster: String::new(),
            origin: FileOrigin {
                path: j.path,
                field_manager: j.field_manager,
                server_side: j.server_side,
                source_type: j.source_type,
                skipped: j.skipped,
                gitops: j.gitops,
            },
            status: j.status,
            problem: j.error,
            objects: j.objects,
            reconcile: j.reconcile,
        })
    }
}

/// The JSON of `extra`, read back.
#[derive(Deserialize)]
struct ExtraJson {
    selectors: Vec<String>,
    namespaces: Vec<String>,
    status: Status,
    error: Option<Problem>,
    objects: Vec<ObjectReport>,
    reconcile: Vec<String>,
}

impl<'de> Deserialize<'de> for ExtraReport {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<ExtraReport, D::Error> {
        let j = ExtraJson::deserialize(deserializer)?;
        Ok(TargetReport {
            cluster: String::new(),
            origin: ExtraOrigin { selectors: j.selectors, namespaces: j.namespaces },
            status: j.status,
            problem: j.error,
            objects: j.objects,
            reconcile: j.reconcile,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ObjectState;

    #[test]
    fn each_origin_reads_back_what_it_writes() {
        let mut release = ReleaseReport::failed_release("shop".into(), "shop".into(), 3, "storage: gone".into());
        release.origin.helm_status = Some("failed".into());
        let json = serde_json::to_string(&release).unwrap();
        assert_eq!(serde_json::from_str::<ReleaseReport>(&json).unwrap(), release);
        let file = FileReport {
            problem: Some(Problem::ObjectsUnchecked(2)),
            objects: vec![ObjectReport::new("v1", "ConfigMap", None, "a", ObjectState::Error)],
            ..TargetReport::new(
                FileOrigin { path: "k8s".into(), source_type: SourceType::Kustomization, ..FileOrigin::default() },
                Status::Error,
            )
        };
        let json = serde_json::to_string(&file).unwrap();
        assert!(json.contains(r#""error":"2 objects could not be checked""#), "{json}");
        assert_eq!(serde_json::from_str::<FileReport>(&json).unwrap(), file);
        let extra = ExtraReport::failed(ExtraOrigin { selectors: vec!["app=shop".into()], namespaces: vec![] }, "x");
        let json = serde_json::to_string(&extra).unwrap();
        assert_eq!(serde_json::from_str::<ExtraReport>(&json).unwrap(), extra);
    }

    #[test]
    fn any_origin_names_its_target() {
        let release = ReleaseReport::failed_release("shop".into(), "ns".into(), 0, "x".into()).to_any();
        assert_eq!(
            (release.origin.kind(), release.origin.name(), release.origin.namespace(), release.origin.revision()),
            ("release", "shop".to_string(), Some("ns"), None)
        );
        let file = FileReport::new(
            FileOrigin { path: "k".into(), source_type: SourceType::Kustomization, ..FileOrigin::default() },
            Status::Clean,
        );
        assert_eq!(file.to_any().origin.kind(), "kustomization");
        assert_eq!(TargetReport::failed(Origin::Cluster, "down").error().as_deref(), Some("down"));
    }
}
