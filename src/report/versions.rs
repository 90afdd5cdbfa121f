//! The versions report: one row per installed component, what upstream has, and a status.
//! JSON and YAML serialise it as is (`schemaVersion` 1, documented in `docs/output.md`).

use serde::{Deserialize, Serialize};

use crate::report::Status;

pub const SCHEMA_VERSION: u32 = 2;

/// What a row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Cluster,
    Nodes,
    Helm,
    Workloads,
    Apis,
}

impl Category {
    pub const ALL: [Category; 5] =
        [Category::Cluster, Category::Nodes, Category::Helm, Category::Workloads, Category::Apis];

    pub fn word(self) -> &'static str {
        match self {
            Category::Cluster => "cluster",
            Category::Nodes => "nodes",
            Category::Helm => "helm",
            Category::Workloads => "workloads",
            Category::Apis => "apis",
        }
    }

    /// Whether the category reads the whole cluster (the API server and its control-plane pods in
    /// kube-system, the Nodes) rather than the namespaces in scope.
    pub fn cluster_wide(self) -> bool {
        matches!(self, Category::Cluster | Category::Nodes)
    }

    pub fn parse(s: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.word() == s.trim().to_ascii_lowercase())
    }
}

/// The status of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionStatus {
    Current,
    PatchBehind,
    MinorBehind,
    MajorBehind,
    /// A floating tag whose registry digest differs from the running one.
    NewerImage,
    /// An API version that is deprecated (still served) in a coming minor.
    Deprecated,
    /// An API version removed in the installed or the next minor.
    Removed,
    /// A CRD older live than the one its release's chart ships in `crds/` (Helm never upgrades
    /// them).
    BehindChart,
    /// Nothing to compare with (the `why` says what is missing).
    Unknown,
    /// A lookup failed (the `why` says which and why).
    Error,
}

impl VersionStatus {
    pub fn word(self) -> &'static str {
        match self {
            VersionStatus::Current => "current",
            VersionStatus::PatchBehind => "patch behind",
            VersionStatus::MinorBehind => "minor behind",
            VersionStatus::MajorBehind => "major behind",
            VersionStatus::NewerImage => "newer image behind tag",
            VersionStatus::Deprecated => "deprecated",
            VersionStatus::Removed => "removed",
            VersionStatus::BehindChart => "behind chart",
            VersionStatus::Unknown => "unknown",
            VersionStatus::Error => "error",
        }
    }

    /// The one status rule's view of it: error is an error, anything to act on is a finding,
    /// current and unknown (nothing known to act on) are clean.
    pub fn status(self) -> Status {
        match self {
            VersionStatus::Current | VersionStatus::Unknown => Status::Clean,
            VersionStatus::Error => Status::Error,
            _ => Status::Drifted,
        }
    }

    pub fn is_outdated(self) -> bool {
        !matches!(self, VersionStatus::Current)
    }
}

/// One row: an installed component and what upstream has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionRow {
    pub category: Category,
    /// Namespace of the release or workload (none for cluster-wide rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// What it is: `kubernetes`, `etcd`, `kubelet`, a release name, `Deployment/web`, ...
    pub name: String,
    /// The container, chart or runtime the version belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The image reference, for image rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The installed version as found (vendor suffixes kept).
    pub installed: String,
    /// The newest upstream version within the track (or the registry's digest of a floating tag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<String>,
    /// The newest version of any track, when the track held the answer back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newer_track: Option<String>,
    pub status: VersionStatus,
    /// Why the status is unknown or error, or what an apis row is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Where the upstream answer came from (a URL, a registry repository, a chart match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Where to read the release notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// How many objects (nodes, workloads) this row stands for.
    pub count: usize,
    /// The objects this row stands for (`Deployment shop/web`, node names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<String>,
    /// Running digests (from pods' imageID).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running_digests: Vec<String>,
    /// Rendered by Helm (hidden unless `--show all`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub helm_managed: bool,
    /// Folded by an ignore rule (kept with its note under `--show all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored: Option<String>,
    /// The version the running app reported to an opt-in HTTP probe (`versions.probes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probed: Option<String>,
    /// Apis rows: the Kubernetes minor the apiVersion was deprecated in (`1.33`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated_in: Option<String>,
    /// Apis rows: the minor it is removed in (`1.37`), or `not planned`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_in: Option<String>,
    /// Apis rows: what replaces it, as `apiVersion Kind` (`discovery.k8s.io/v1 EndpointSlice`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
}

impl VersionRow {
    pub fn new(category: Category, name: impl Into<String>, installed: impl Into<String>) -> VersionRow {
        VersionRow {
            category,
            namespace: None,
            name: name.into(),
            component: None,
            image: None,
            installed: installed.into(),
            latest: None,
            newer_track: None,
            status: VersionStatus::Unknown,
            why: None,
            source: None,
            notes: None,
            count: 1,
            objects: Vec::new(),
            running_digests: Vec::new(),
            helm_managed: false,
            ignored: None,
            probed: None,
            deprecated_in: None,
            removed_in: None,
            replacement: None,
        }
    }

    pub fn unknown(mut self, why: impl Into<String>) -> VersionRow {
        self.status = VersionStatus::Unknown;
        self.why = Some(why.into());
        self
    }

    pub fn error(mut self, why: impl Into<String>) -> VersionRow {
        self.status = VersionStatus::Error;
        self.why = Some(why.into());
        self
    }
}

/// Counts per status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionsSummary {
    pub rows: usize,
    pub current: usize,
    pub behind: usize,
    pub newer_image: usize,
    pub apis: usize,
    pub unknown: usize,
    pub errors: usize,
    /// Rows hidden by `--show` (outdated only, or Helm-managed images).
    pub hidden: usize,
    /// Requests made per upstream host during this scan (cache hits not counted).
    pub requests: std::collections::BTreeMap<String, u64>,
    /// Cluster-wide categories not scanned because the scan was scoped to one namespace (`-n`
    /// without `--category` naming them); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<Category>,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionsReport {
    pub schema_version: u32,
    /// The cluster it is about: its kube context (or a server's `--cluster-name`).
    #[serde(default)]
    pub cluster: String,
    pub status: Status,
    pub rows: Vec<VersionRow>,
    pub summary: VersionsSummary,
}

impl VersionsReport {
    /// The report over `rows` (already filtered), with `hidden` rows left out.
    pub fn new(rows: Vec<VersionRow>, hidden: usize) -> VersionsReport {
        let mut summary = VersionsSummary { rows: rows.len(), hidden, ..Default::default() };
        for r in &rows {
            match r.status {
                VersionStatus::Current => summary.current += 1,
                VersionStatus::PatchBehind | VersionStatus::MinorBehind | VersionStatus::MajorBehind => {
                    summary.behind += 1
                }
                VersionStatus::NewerImage => summary.newer_image += 1,
                VersionStatus::Deprecated | VersionStatus::Removed | VersionStatus::BehindChart => summary.apis += 1,
                VersionStatus::Unknown => summary.unknown += 1,
                VersionStatus::Error => summary.errors += 1,
            }
        }
        let status = Status::worst(rows.iter().map(|r| r.status.status()));
        VersionsReport { schema_version: SCHEMA_VERSION, cluster: String::new(), status, rows, summary }
    }
}
