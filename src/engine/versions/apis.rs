//! Upgrade readiness: objects whose apiVersion is deprecated, or removed in the installed or a
//! coming Kubernetes minor. Two sources, merged:
//! - our own table ([`DEPRECATED_APIS`]), written from the facts the API server itself warns with:
//!   the prerelease lifecycle of each beta and alpha version in `k8s.io/api` (deprecated in,
//!   removed in, replacement; what a server sends in its `Warning: 299` header) and the server's
//!   own deprecation of GA kinds (v1 Endpoints); see docs/versions.md for how it is updated;
//! - the API server's warnings ([`server_deprecations`]): every served version is asked once,
//!   and a deprecated API the table does not know (a newer Kubernetes, a CRD version marked
//!   `deprecated`) is reported in the server's own words.
//!
//! Objects come from Helm release manifests, `--manifests PATH` files, and live objects (the
//! apiVersion each field manager wrote with, from `metadata.managedFields`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::report::versions::{Category, VersionRow, VersionStatus};
use crate::source::live::{Kinds, LiveReader};

/// What replaces a deprecated API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replacement {
    /// The same kind in another apiVersion.
    Version(&'static str),
    /// Another kind (`discovery.k8s.io/v1`, `EndpointSlice` for v1 Endpoints).
    Kind(&'static str, &'static str),
    /// None served: why, or what to use instead.
    Nothing(&'static str),
}

/// One deprecated API of the table: `group/version` and kind, the minor it was deprecated in,
/// the minor it is removed in (`None`: no removal planned), and what replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeprecatedApi {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub deprecated_in: u64,
    pub removed_in: Option<u64>,
    pub replacement: Replacement,
}

const fn api(
    api_version: &'static str,
    kind: &'static str,
    deprecated_in: u64,
    removed_in: u64,
    replacement: &'static str,
) -> DeprecatedApi {
    DeprecatedApi {
        api_version,
        kind,
        deprecated_in,
        removed_in: Some(removed_in),
        replacement: Replacement::Version(replacement),
    }
}

const fn api_without(
    api_version: &'static str,
    kind: &'static str,
    deprecated_in: u64,
    removed_in: u64,
    instead: &'static str,
) -> DeprecatedApi {
    DeprecatedApi {
        api_version,
        kind,
        deprecated_in,
        removed_in: Some(removed_in),
        replacement: Replacement::Nothing(instead),
    }
}

/// The table (Kubernetes 1.x minors). Beta versions: their prerelease lifecycle in `k8s.io/api`
/// (v0.20 to v0.37.2, the newest release that still has the type, and v0.38.0-beta.0, which adds
/// no deprecation), which is what the API server says in its warning; replacements as the server
/// serves them (checked on the test API server: `tests/e2e/deprecations.rs`). Alpha versions are
/// left to the server's own warnings: outside the deprecation policy, their removals move (the
/// 1.36 server announces MutatingAdmissionPolicy v1alpha1 gone in 1.38; 1.38.0-beta.0 keeps it).
pub const DEPRECATED_APIS: &[DeprecatedApi] = &[
    // Removed in 1.16.
    api("extensions/v1beta1", "Deployment", 8, 16, "apps/v1"),
    api("extensions/v1beta1", "DaemonSet", 8, 16, "apps/v1"),
    api("extensions/v1beta1", "ReplicaSet", 8, 16, "apps/v1"),
    api("extensions/v1beta1", "NetworkPolicy", 9, 16, "networking.k8s.io/v1"),
    api("extensions/v1beta1", "PodSecurityPolicy", 11, 16, "policy/v1beta1"),
    api("apps/v1beta1", "Deployment", 8, 16, "apps/v1"),
    api("apps/v1beta1", "StatefulSet", 8, 16, "apps/v1"),
    api("apps/v1beta2", "Deployment", 9, 16, "apps/v1"),
    api("apps/v1beta2", "StatefulSet", 9, 16, "apps/v1"),
    api("apps/v1beta2", "DaemonSet", 9, 16, "apps/v1"),
    api("apps/v1beta2", "ReplicaSet", 9, 16, "apps/v1"),
    // Removed in 1.22.
    api(
        "admissionregistration.k8s.io/v1beta1",
        "MutatingWebhookConfiguration",
        16,
        22,
        "admissionregistration.k8s.io/v1",
    ),
    api(
        "admissionregistration.k8s.io/v1beta1",
        "ValidatingWebhookConfiguration",
        16,
        22,
        "admissionregistration.k8s.io/v1",
    ),
    api("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", 16, 22, "apiextensions.k8s.io/v1"),
    api("apiregistration.k8s.io/v1beta1", "APIService", 19, 22, "apiregistration.k8s.io/v1"),
    api("authentication.k8s.io/v1beta1", "TokenReview", 19, 22, "authentication.k8s.io/v1"),
    api("authorization.k8s.io/v1beta1", "SubjectAccessReview", 19, 22, "authorization.k8s.io/v1"),
    api("authorization.k8s.io/v1beta1", "LocalSubjectAccessReview", 19, 22, "authorization.k8s.io/v1"),
    api("authorization.k8s.io/v1beta1", "SelfSubjectAccessReview", 19, 22, "authorization.k8s.io/v1"),
    api("certificates.k8s.io/v1beta1", "CertificateSigningRequest", 19, 22, "certificates.k8s.io/v1"),
    api("coordination.k8s.io/v1beta1", "Lease", 19, 22, "coordination.k8s.io/v1"),
    api("extensions/v1beta1", "Ingress", 14, 22, "networking.k8s.io/v1"),
    api("networking.k8s.io/v1beta1", "Ingress", 19, 22, "networking.k8s.io/v1"),
    api("networking.k8s.io/v1beta1", "IngressClass", 19, 22, "networking.k8s.io/v1"),
    api("rbac.authorization.k8s.io/v1beta1", "ClusterRole", 17, 22, "rbac.authorization.k8s.io/v1"),
    api("rbac.authorization.k8s.io/v1beta1", "ClusterRoleBinding", 17, 22, "rbac.authorization.k8s.io/v1"),
    api("rbac.authorization.k8s.io/v1beta1", "Role", 17, 22, "rbac.authorization.k8s.io/v1"),
    api("rbac.authorization.k8s.io/v1beta1", "RoleBinding", 17, 22, "rbac.authorization.k8s.io/v1"),
    api("scheduling.k8s.io/v1beta1", "PriorityClass", 14, 22, "scheduling.k8s.io/v1"),
    api("storage.k8s.io/v1beta1", "CSIDriver", 19, 22, "storage.k8s.io/v1"),
    api("storage.k8s.io/v1beta1", "CSINode", 17, 22, "storage.k8s.io/v1"),
    api("storage.k8s.io/v1beta1", "StorageClass", 19, 22, "storage.k8s.io/v1"),
    api("storage.k8s.io/v1beta1", "VolumeAttachment", 19, 22, "storage.k8s.io/v1"),
    // Removed in 1.25.
    api("batch/v1beta1", "CronJob", 21, 25, "batch/v1"),
    api("discovery.k8s.io/v1beta1", "EndpointSlice", 21, 25, "discovery.k8s.io/v1"),
    api("events.k8s.io/v1beta1", "Event", 22, 25, "events.k8s.io/v1"),
    api("autoscaling/v2beta1", "HorizontalPodAutoscaler", 22, 25, "autoscaling/v2"),
    api("policy/v1beta1", "PodDisruptionBudget", 21, 25, "policy/v1"),
    api_without("policy/v1beta1", "PodSecurityPolicy", 21, 25, "Pod Security Admission (no replacement kind)"),
    api("node.k8s.io/v1beta1", "RuntimeClass", 22, 25, "node.k8s.io/v1"),
    // Removed in 1.26.
    api("flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema", 23, 26, "flowcontrol.apiserver.k8s.io/v1"),
    api(
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "PriorityLevelConfiguration",
        23,
        26,
        "flowcontrol.apiserver.k8s.io/v1",
    ),
    api("autoscaling/v2beta2", "HorizontalPodAutoscaler", 23, 26, "autoscaling/v2"),
    // Removed in 1.27.
    api("storage.k8s.io/v1beta1", "CSIStorageCapacity", 24, 27, "storage.k8s.io/v1"),
    // Removed in 1.29.
    api("flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema", 26, 29, "flowcontrol.apiserver.k8s.io/v1"),
    api(
        "flowcontrol.apiserver.k8s.io/v1beta2",
        "PriorityLevelConfiguration",
        26,
        29,
        "flowcontrol.apiserver.k8s.io/v1",
    ),
    // Removed in 1.32.
    api("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", 29, 32, "flowcontrol.apiserver.k8s.io/v1"),
    api(
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "PriorityLevelConfiguration",
        29,
        32,
        "flowcontrol.apiserver.k8s.io/v1",
    ),
    // Removed in 1.34.
    api("admissionregistration.k8s.io/v1beta1", "ValidatingAdmissionPolicy", 31, 34, "admissionregistration.k8s.io/v1"),
    api(
        "admissionregistration.k8s.io/v1beta1",
        "ValidatingAdmissionPolicyBinding",
        31,
        34,
        "admissionregistration.k8s.io/v1",
    ),
    // Removed in 1.37.
    api("networking.k8s.io/v1beta1", "IPAddress", 34, 37, "networking.k8s.io/v1"),
    api("networking.k8s.io/v1beta1", "ServiceCIDR", 34, 37, "networking.k8s.io/v1"),
    api("storage.k8s.io/v1beta1", "VolumeAttributesClass", 34, 37, "storage.k8s.io/v1"),
    // Removed in 1.38.
    api("resource.k8s.io/v1beta1", "DeviceClass", 35, 38, "resource.k8s.io/v1"),
    api("resource.k8s.io/v1beta1", "ResourceClaim", 35, 38, "resource.k8s.io/v1"),
    api("resource.k8s.io/v1beta1", "ResourceClaimTemplate", 35, 38, "resource.k8s.io/v1"),
    api("resource.k8s.io/v1beta1", "ResourceSlice", 35, 38, "resource.k8s.io/v1"),
    // Removed in 1.39.
    api("resource.k8s.io/v1beta2", "DeviceClass", 36, 39, "resource.k8s.io/v1"),
    api("resource.k8s.io/v1beta2", "ResourceClaim", 36, 39, "resource.k8s.io/v1"),
    api("resource.k8s.io/v1beta2", "ResourceClaimTemplate", 36, 39, "resource.k8s.io/v1"),
    api("resource.k8s.io/v1beta2", "ResourceSlice", 36, 39, "resource.k8s.io/v1"),
    api_without("coordination.k8s.io/v1beta1", "LeaseCandidate", 36, 39, "no replacement served yet"),
    // Removed in 1.40 (deprecated in 1.37).
    api("admissionregistration.k8s.io/v1beta1", "MutatingAdmissionPolicy", 37, 40, "admissionregistration.k8s.io/v1"),
    api(
        "admissionregistration.k8s.io/v1beta1",
        "MutatingAdmissionPolicyBinding",
        37,
        40,
        "admissionregistration.k8s.io/v1",
    ),
    api("certificates.k8s.io/v1beta1", "ClusterTrustBundle", 37, 40, "certificates.k8s.io/v1"),
    api("certificates.k8s.io/v1beta1", "PodCertificateRequest", 37, 40, "certificates.k8s.io/v1"),
    api("storagemigration.k8s.io/v1beta1", "StorageVersionMigration", 37, 40, "storagemigration.k8s.io/v1"),
    // GA kinds the API server itself calls deprecated, with no removal planned.
    DeprecatedApi {
        api_version: "v1",
        kind: "Endpoints",
        deprecated_in: 33,
        removed_in: None,
        replacement: Replacement::Kind("discovery.k8s.io/v1", "EndpointSlice"),
    },
];

/// How many minors ahead count as "the next minors".
pub const LOOKAHEAD: u64 = 2;

/// A deprecated API as this scan knows it: from the table, the API server's warning, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deprecation {
    pub api_version: String,
    pub kind: String,
    /// The minor it was deprecated in (`None`: the server said deprecated, not since when).
    pub deprecated_in: Option<u64>,
    /// The minor it is removed in (`None`: none planned, or the server did not say).
    pub removed_in: Option<u64>,
    /// `apiVersion Kind` of what replaces it.
    pub replacement: Option<String>,
    /// When nothing replaces it: what to use instead.
    pub instead: Option<String>,
    /// Known to our table (else learned from the server alone).
    pub in_table: bool,
    /// The API server's own warning, when it sent one.
    pub server_says: Option<String>,
}

impl Deprecation {
    fn of(d: &DeprecatedApi) -> Deprecation {
        let (replacement, instead) = match d.replacement {
            Replacement::Version(v) => (Some(format!("{v} {}", d.kind)), None),
            Replacement::Kind(v, k) => (Some(format!("{v} {k}")), None),
            Replacement::Nothing(why) => (None, Some(why.to_string())),
        };
        Deprecation {
            api_version: d.api_version.into(),
            kind: d.kind.into(),
            deprecated_in: Some(d.deprecated_in),
            removed_in: d.removed_in,
            replacement,
            instead,
            in_table: true,
            server_says: None,
        }
    }

    /// What the API server's warning on a request to `api_version` `kind` says. Its own form
    /// (`X is deprecated in v1.34+, unavailable in v1.37+; use Y`) gives the minors and the
    /// replacement; any other text (a CRD's `deprecationWarning`) is kept as it is.
    pub fn from_warning(api_version: &str, kind: &str, text: &str) -> Deprecation {
        let minor = |after: &str| -> Option<u64> {
            let rest = text.split_once(after)?.1;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        let replacement = text.split_once("; use ").map(|(_, r)| r.trim().trim_end_matches('.').to_string());
        let removed_in = minor("unavailable in v1.");
        Deprecation {
            api_version: api_version.into(),
            kind: kind.into(),
            deprecated_in: minor("deprecated in v1."),
            removed_in,
            replacement,
            instead: None,
            in_table: false,
            server_says: Some(text.to_string()),
        }
    }

    /// The apiVersion of the replacement (the `latest` column).
    fn replacement_api_version(&self) -> Option<String> {
        match &self.replacement {
            Some(r) => r.split_whitespace().next().map(str::to_string),
            None => self.instead.clone(),
        }
    }

    fn use_instead(&self) -> String {
        match (&self.replacement, &self.instead) {
            (Some(r), _) => format!("use {r}"),
            (None, Some(i)) => i.clone(),
            (None, None) => "the API server names no replacement".into(),
        }
    }
}

/// The deprecated APIs a scan looks for: the table, with what the API server said added.
#[derive(Debug, Clone)]
pub struct Deprecations {
    by_api: BTreeMap<(String, String), Deprecation>,
}

impl Deprecations {
    /// The table alone.
    pub fn table() -> Deprecations {
        let by_api = DEPRECATED_APIS
            .iter()
            .map(|d| ((d.api_version.to_string(), d.kind.to_string()), Deprecation::of(d)))
            .collect();
        Deprecations { by_api }
    }

    /// The table with the server's warnings: the server's words are added to an entry it knows,
    /// and an API it does not know becomes an entry of its own.
    pub fn with_server(mut self, warned: Vec<Deprecation>) -> Deprecations {
        for w in warned {
            match self.by_api.get_mut(&(w.api_version.clone(), w.kind.clone())) {
                Some(known) => known.server_says = w.server_says,
                None => {
                    self.by_api.insert((w.api_version.clone(), w.kind.clone()), w);
                }
            }
        }
        self
    }

    pub fn lookup(&self, api_version: &str, kind: &str) -> Option<&Deprecation> {
        self.by_api.get(&(api_version.to_string(), kind.to_string()))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Deprecation> {
        self.by_api.values()
    }
}

/// What the rows are judged against: the cluster's minor (deprecated by it, or removed within
/// [`LOOKAHEAD`] minors of it), or a planned upgrade's (`--target-version`: deprecated or removed
/// by that minor).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Horizon {
    /// The installed minor (`None`: unknown).
    pub minor: Option<u64>,
    /// The planned minor (`--target-version`).
    pub target: Option<u64>,
}

impl Horizon {
    /// The last minor a removal counts in (`None`: every removal).
    fn removal(&self) -> Option<u64> {
        self.target.or(self.minor.map(|m| m + LOOKAHEAD))
    }

    /// The minor a deprecation counts by (`None`: every deprecation).
    fn deprecation(&self) -> Option<u64> {
        self.target.or(self.minor)
    }
}

/// The row for one object, when its apiVersion matters at `horizon` (see [`Horizon`]).
pub fn judge(d: &Deprecation, u: &ApiUse, horizon: Horizon) -> Option<VersionRow> {
    let status = match d.removed_in {
        Some(r) if horizon.removal().is_none_or(|h| r <= h) => VersionStatus::Removed,
        _ if d.deprecated_in.is_none() => VersionStatus::Deprecated,
        _ if horizon.deprecation().is_none_or(|m| d.deprecated_in.is_some_and(|di| di <= m)) => {
            VersionStatus::Deprecated
        }
        _ => return None,
    };
    let (api_version, kind) = (&d.api_version, &d.kind);
    let mut row = VersionRow::new(Category::Apis, format!("{kind}/{}", u.name), api_version.as_str());
    row.namespace = u.namespace.clone();
    row.component = Some(kind.clone());
    row.latest = d.replacement_api_version();
    row.status = status;
    row.source = Some(u.origin.clone());
    row.deprecated_in = d.deprecated_in.map(|m| format!("1.{m}"));
    row.removed_in = match (d.removed_in, &d.server_says, d.in_table) {
        (Some(r), _, _) => Some(format!("1.{r}")),
        // The server's own form says when it becomes unavailable; without it, none is planned.
        (None, Some(text), false) if !text.contains(" is deprecated in v1.") => None,
        (None, _, _) => Some("not planned".into()),
    };
    row.replacement = d.replacement.clone();
    let instead = d.use_instead();
    let since = d.deprecated_in.map(|m| format!(" since 1.{m}")).unwrap_or_default();
    let mut why = match (d.removed_in, horizon.minor, horizon.target) {
        (Some(r), Some(m), _) if r <= m => {
            format!("{api_version} {kind} was removed in 1.{r} (this cluster runs 1.{m}); {instead}")
        }
        (Some(r), _, Some(t)) if r <= t => {
            format!("{api_version} {kind} is deprecated{since}, removed in 1.{r} (the target is 1.{t}); {instead}")
        }
        (Some(r), _, _) => format!("{api_version} {kind} is deprecated{since}, removed in 1.{r}; {instead}"),
        (None, _, _) => format!("{api_version} {kind} is deprecated{since}, no removal planned; {instead}"),
    };
    if let (Some(text), false) = (&d.server_says, d.in_table) {
        why = format!("the API server warns: \"{text}\"");
    }
    row.why = Some(why);
    row.notes = Some(if d.in_table {
        "https://kubernetes.io/docs/reference/using-api/deprecation-guide/".into()
    } else {
        format!("not in kubectl-drift's table: the API server's warning on {api_version} {kind}")
    });
    Some(row)
}

// What is read of each live object: its name, namespace and the apiVersion and manager of each
// managedFields entry (skipped while decoding: the rest of the metadata, the fields' trees).
use crate::source::live::{Prune, Trim};
const LIVE_PRUNE: Prune = Prune::Fields(
    &[(
        "metadata",
        Prune::Fields(
            &[
                ("name", Prune::Keep),
                ("namespace", Prune::Keep),
                (
                    "managedFields",
                    Prune::Items(&Prune::Fields(
                        &[("apiVersion", Prune::Keep), ("manager", Prune::Keep)],
                        &Prune::Drop,
                    )),
                ),
            ],
            &Prune::Drop,
        ),
    )],
    &Prune::Drop,
);
const LIVE_TRIM: Trim = Trim { name: "versions-apis", prune: &LIVE_PRUNE, apply: |v| LIVE_PRUNE.apply(v) };

/// Field managers that are the control plane itself: what they write with is the cluster's own
/// business (the endpoints controller keeps writing v1 Endpoints while the kind is served), not
/// a use of a deprecated API to move off.
const CONTROL_PLANE_MANAGERS: &[&str] = &["kube-controller-manager", "kube-apiserver", "kube-scheduler"];

/// An object whose apiVersion is deprecated for its kind: what its row says, and where it was
/// found. Only these are kept of a release manifest or a live list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiUse {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    /// `release shop/shop revision 3 (templates/x.yaml)`, `live (managedFields of web: kubectl-client-side-apply)`.
    pub origin: String,
}

/// The objects of a release manifest (`origin`: which release and revision) whose apiVersion is
/// deprecated.
pub fn release_objects(origin: &str, manifest: &str, known: &Deprecations) -> Vec<ApiUse> {
    let (objects, _) = crate::source::manifest::parse_stream(manifest, origin);
    objects
        .into_iter()
        .filter(|o| known.lookup(&o.api_version, &o.kind).is_some())
        .map(|o| ApiUse {
            origin: format!("{origin} ({})", o.source),
            api_version: o.api_version,
            kind: o.kind,
            namespace: o.namespace,
            name: o.name,
        })
        .collect()
}

/// Ask the API server about every version it serves: one LIST (metadata only, one item) per
/// listable resource of every served group version, keeping the `Warning` headers (a deprecated
/// version answers every request with one). A resource this user may not list is left out (an
/// answer without a warning says nothing).
pub async fn server_deprecations(kinds: &Kinds, reader: &LiveReader, namespace: Option<&str>) -> Vec<Deprecation> {
    let resources = kinds.every_listable_version();
    let asked = resources.iter().map(|rk| async move {
        let scope = if rk.namespaced { namespace } else { None };
        let warnings = reader.list_warnings(rk, scope).await.unwrap_or_default();
        warnings
            .into_iter()
            .map(|w| Deprecation::from_warning(&rk.resource.api_version, &rk.resource.kind, &w))
            .collect::<Vec<_>>()
    });
    let mut found: Vec<Deprecation> = futures::future::join_all(asked).await.into_iter().flatten().collect();
    found.sort_by(|a, b| (&a.api_version, &a.kind).cmp(&(&b.api_version, &b.kind)));
    found.dedup_by(|a, b| (&a.api_version, &a.kind) == (&b.api_version, &b.kind));
    found
}

/// Live objects of every deprecated kind that the cluster serves (in `namespace`, or every
/// namespace), once per deprecated apiVersion a field manager other than the control plane
/// wrote with (each managedFields entry's `apiVersion`): the others give no row, so a big
/// cluster's ReplicaSets, Events and Leases are read but not kept. The kind is listed at its
/// preferred version in its own group, else in its replacement's (a removed group's objects live
/// on under the new one: extensions/v1beta1 Ingress under networking.k8s.io). Lists that fail
/// are left out (the rows they would give are only possible on clusters that still serve the
/// kind).
pub async fn live_objects(
    kinds: &Kinds,
    reader: &LiveReader,
    namespace: Option<&str>,
    known: &Deprecations,
) -> Vec<ApiUse> {
    let group_of = |api_version: &str| crate::report::group_version(api_version).0.to_string();
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for d in known.iter() {
        let mut groups = vec![group_of(&d.api_version)];
        if let Some(r) = &d.replacement
            && r.split_whitespace().nth(1) == Some(d.kind.as_str())
        {
            groups.push(group_of(r.split_whitespace().next().unwrap_or_default()));
        }
        // Create-only kinds (TokenReview, SubjectAccessReview) are in the table but never stored:
        // not listed (a LIST answers 405).
        let Some(rk) = groups.iter().find_map(|g| kinds.resolve_preferred_listable(g, &d.kind)) else { continue };
        if !seen.insert((rk.resource.group.clone(), rk.resource.kind.clone())) {
            continue;
        }
        let scope = if rk.namespaced { namespace } else { None };
        let Ok(list) = reader.list_trimmed(&rk, scope, true, "", LIVE_TRIM).await else { continue };
        for obj in list.iter() {
            let meta = obj.get("metadata");
            let text = |k: &str| meta.and_then(|m| m.get(k)).and_then(|v| v.as_string()).map(|s| s.as_str());
            let mut writers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for m in meta.and_then(|m| m.get("managedFields")).and_then(|f| f.as_array()).into_iter().flatten() {
                let field = |k: &str| m.get(k).and_then(|v| v.as_string()).map(|s| s.as_str());
                let (Some(v), manager) = (field("apiVersion"), field("manager").unwrap_or("")) else { continue };
                if known.lookup(v, &rk.resource.kind).is_some() && !CONTROL_PLANE_MANAGERS.contains(&manager) {
                    let managers = writers.entry(v).or_default();
                    if !managers.contains(&manager) {
                        managers.push(manager);
                    }
                }
            }
            let name = text("name").unwrap_or("");
            for (v, managers) in writers {
                out.push(ApiUse {
                    api_version: v.to_string(),
                    kind: rk.resource.kind.clone(),
                    namespace: text("namespace").map(str::to_string),
                    name: name.to_string(),
                    origin: format!("live (managedFields of {name}: {})", managers.join(", ")),
                });
            }
        }
    }
    out
}

/// Rows for the objects found in release manifests ([`release_objects`]), the manifest files at
/// `paths`, and live objects ([`live_objects`]), judged at `horizon`.
pub fn api_rows(
    horizon: Horizon,
    known: &Deprecations,
    releases: &[ApiUse],
    paths: &[PathBuf],
    live: &[ApiUse],
) -> Vec<VersionRow> {
    let mut rows = Vec::new();
    let mut check = |u: &ApiUse| {
        if let Some(d) = known.lookup(&u.api_version, &u.kind)
            && let Some(r) = judge(d, u, horizon)
            && !rows.contains(&r)
        {
            rows.push(r);
        }
    };
    for u in releases {
        check(u);
    }
    let mut errors = Vec::new();
    for found in crate::source::manifest_files::find_targets(paths, &[], None) {
        use crate::source::manifest_files::Found;
        let (shown, text) = match found {
            Found::File(path) => {
                (path.display().to_string(), std::fs::read_to_string(&path).map_err(|e| e.to_string()))
            }
            Found::Stdin(s) => (s.name, Ok(s.text.to_string())),
            other => {
                not_read(other, &mut errors);
                continue;
            }
        };
        match text {
            Ok(text) => {
                let parsed = crate::source::manifest::parse_manifests(&text, &shown);
                for o in parsed.objects {
                    check(&ApiUse {
                        origin: o.source.clone(),
                        api_version: o.api_version,
                        kind: o.kind,
                        namespace: o.namespace,
                        name: o.name,
                    });
                }
                for e in parsed.errors {
                    errors.push(VersionRow::new(Category::Apis, shown.clone(), "?").error(e.to_string()));
                }
            }
            Err(e) => errors.push(VersionRow::new(Category::Apis, shown, "?").error(e)),
        }
    }
    for u in live {
        check(u);
    }
    rows.extend(errors);
    rows
}

/// A CRD of a deployed release's chart `crds/`: which release shipped it (`release NS/NAME
/// revision N (crds/x.yaml)`), in which namespace, and the CRD.
#[derive(Debug, Clone)]
pub struct ReleaseCrd {
    pub namespace: String,
    pub crd: crate::engine::drift::crds::ChartCrd,
}

/// The rows of chart CRDs that the cluster holds older than the chart (`behind chart`: a version,
/// a schema property, a printer column or a subresource of the chart's missing live, or a stored
/// version the chart's CRD no longer has; Helm never upgrades `crds/`), or not at all. Live CRDs
/// ahead of their chart give no row: nothing is behind. `live`: the cluster's CRDs.
pub fn crd_rows(crds: &[ReleaseCrd], live: &[serde_json::Value]) -> Vec<VersionRow> {
    use crate::engine::drift::crds::crd_drifts;
    use crate::report::field::Change;
    let by_name: BTreeMap<&str, &serde_json::Value> =
        live.iter().filter_map(|o| Some((o.pointer("/metadata/name")?.as_str()?, o))).collect();
    let versions = |crd: &serde_json::Value| -> String {
        crd.pointer("/spec/versions")
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
            .filter(|v| v.get("served").and_then(|s| s.as_bool()) == Some(true))
            .filter_map(|v| v.get("name")?.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut rows = Vec::new();
    for rc in crds {
        let c = &rc.crd;
        let live = by_name.get(c.name.as_str()).copied();
        let (installed, why) = match live {
            None => ("-".to_string(), "not in the cluster".to_string()),
            Some(l) => {
                let behind: Vec<String> = crd_drifts(&c.body, l)
                    .into_iter()
                    .filter(|d| d.change != Change::Added)
                    .map(|d| d.path.to_string())
                    .collect();
                if behind.is_empty() {
                    continue;
                }
                (versions(l), format!("missing or different live: {}", behind.join(", ")))
            }
        };
        let mut row = VersionRow::new(Category::Apis, format!("CustomResourceDefinition/{}", c.name), installed);
        row.namespace = Some(rc.namespace.clone());
        row.component = Some("CustomResourceDefinition".into());
        row.latest = Some(versions(&c.body));
        row.status = VersionStatus::BehindChart;
        row.source = Some(c.source.clone());
        row.why = Some(format!(
            "{why}; Helm installs crds/ once and never upgrades them (kubectl drift release shows the command)"
        ));
        rows.push(row);
    }
    rows
}

/// A target of `--manifests` that is not a file read here: why, as a row.
fn not_read(found: crate::source::manifest_files::Found, errors: &mut Vec<VersionRow>) {
    use crate::source::manifest_files::Found;
    match found {
        Found::Kustomization { dir, .. } => {
            errors.push(VersionRow::new(Category::Apis, dir.display().to_string(), "?").unknown(
                "a kustomization: give the rendered output (kubectl kustomize DIR > FILE) to check its apiVersions",
            ))
        }
        Found::Problem { path, error } => {
            errors.push(VersionRow::new(Category::Apis, path, "?").error(error.to_string()))
        }
        Found::Skipped { .. } | Found::File(_) | Found::Stdin(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(api_version: &str, kind: &str) -> ApiUse {
        ApiUse {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: Some("shop".into()),
            name: "x".into(),
            origin: "f.yaml".into(),
        }
    }

    fn status(api_version: &str, kind: &str, minor: u64, target: Option<u64>) -> Option<VersionStatus> {
        let known = Deprecations::table();
        let d = known.lookup(api_version, kind)?;
        judge(d, &used(api_version, kind), Horizon { minor: Some(minor), target }).map(|r| r.status)
    }

    #[test]
    fn table_rules() {
        let known = Deprecations::table();
        // Removed before the installed minor: removed, with the replacement.
        let d = known.lookup("extensions/v1beta1", "Ingress").unwrap();
        let r = judge(d, &used("extensions/v1beta1", "Ingress"), Horizon { minor: Some(35), target: None }).unwrap();
        assert_eq!((r.status, r.latest.as_deref()), (VersionStatus::Removed, Some("networking.k8s.io/v1")));
        assert!(r.why.unwrap().contains("removed in 1.22"));
        assert_eq!(
            (r.deprecated_in.as_deref(), r.removed_in.as_deref(), r.replacement.as_deref()),
            (Some("1.14"), Some("1.22"), Some("networking.k8s.io/v1 Ingress"))
        );
        // Removed within the next minors: removed; deprecated but removed later: deprecated.
        assert_eq!(status("batch/v1beta1", "CronJob", 24, None), Some(VersionStatus::Removed));
        assert_eq!(status("batch/v1beta1", "CronJob", 21, None), Some(VersionStatus::Deprecated));
        // Not yet deprecated at the installed minor: nothing to say.
        assert_eq!(status("batch/v1beta1", "CronJob", 19, None), None);
        assert!(known.lookup("apps/v1", "Deployment").is_none());
        // Every entry: deprecated before removed, a replacement or what to do instead, and no
        // two entries for one API.
        for d in DEPRECATED_APIS {
            assert!(d.removed_in.is_none_or(|r| r > d.deprecated_in), "{d:?}");
            assert_eq!(
                DEPRECATED_APIS.iter().filter(|o| (o.api_version, o.kind) == (d.api_version, d.kind)).count(),
                1
            );
        }
    }

    #[test]
    fn endpoints_deprecated_since_1_33_with_no_removal() {
        let known = Deprecations::table();
        let d = known.lookup("v1", "Endpoints").unwrap();
        let r = judge(d, &used("v1", "Endpoints"), Horizon { minor: Some(36), target: None }).unwrap();
        assert_eq!(r.status, VersionStatus::Deprecated);
        assert_eq!(
            (r.deprecated_in.as_deref(), r.removed_in.as_deref(), r.replacement.as_deref(), r.latest.as_deref()),
            (Some("1.33"), Some("not planned"), Some("discovery.k8s.io/v1 EndpointSlice"), Some("discovery.k8s.io/v1"))
        );
        assert_eq!(status("v1", "Endpoints", 32, None), None);
    }

    #[test]
    fn a_target_version_judges_against_the_planned_minor() {
        // resource.k8s.io/v1beta2: deprecated in 1.36, removed in 1.39.
        assert_eq!(status("resource.k8s.io/v1beta2", "ResourceClaim", 36, None), Some(VersionStatus::Deprecated));
        assert_eq!(status("resource.k8s.io/v1beta2", "ResourceClaim", 36, Some(39)), Some(VersionStatus::Removed));
        // Deprecated in 1.37: nothing on 1.36, deprecated for a 1.38 target.
        let mp = "admissionregistration.k8s.io/v1beta1";
        assert_eq!(status(mp, "MutatingAdmissionPolicy", 36, None), None);
        assert_eq!(status(mp, "MutatingAdmissionPolicy", 36, Some(38)), Some(VersionStatus::Deprecated));
        // A target below the live minor + 2 sees fewer removals: VolumeAttributesClass v1beta1
        // goes in 1.37.
        assert_eq!(status("storage.k8s.io/v1beta1", "VolumeAttributesClass", 35, None), Some(VersionStatus::Removed));
        assert_eq!(
            status("storage.k8s.io/v1beta1", "VolumeAttributesClass", 35, Some(36)),
            Some(VersionStatus::Deprecated)
        );
    }

    #[test]
    fn the_servers_warning_read_in_its_own_form_or_kept_as_said() {
        let w = Deprecation::from_warning(
            "storage.k8s.io/v1beta1",
            "VolumeAttributesClass",
            "storage.k8s.io/v1beta1 VolumeAttributesClass is deprecated in v1.34+, unavailable in v1.37+; use storage.k8s.io/v1 VolumeAttributesClass",
        );
        assert_eq!((w.deprecated_in, w.removed_in), (Some(34), Some(37)));
        assert_eq!(w.replacement.as_deref(), Some("storage.k8s.io/v1 VolumeAttributesClass"));
        let w = Deprecation::from_warning("v1", "ComponentStatus", "v1 ComponentStatus is deprecated in v1.19+");
        assert_eq!((w.deprecated_in, w.removed_in, w.replacement), (Some(19), None, None));
        // A CRD's own words: kept, no minors made up.
        let w = Deprecation::from_warning("drift.test/v1beta1", "Widget", "widgets v1beta1 is going away; move to v1");
        assert_eq!((w.deprecated_in, w.removed_in), (None, None));
        let known = Deprecations::table().with_server(vec![w.clone()]);
        let r = judge(
            known.lookup("drift.test/v1beta1", "Widget").unwrap(),
            &used("drift.test/v1beta1", "Widget"),
            Horizon { minor: Some(36), target: None },
        )
        .unwrap();
        assert_eq!(r.status, VersionStatus::Deprecated);
        assert_eq!(r.why.as_deref(), Some("the API server warns: \"widgets v1beta1 is going away; move to v1\""));
        assert_eq!((r.removed_in, r.deprecated_in), (None, None));
        // A warning for an API the table knows adds the server's words, not a second entry.
        let endpoints = Deprecation::from_warning("v1", "Endpoints", "v1 Endpoints is deprecated in v1.33+; use x");
        let known = Deprecations::table().with_server(vec![endpoints]);
        let d = known.lookup("v1", "Endpoints").unwrap();
        assert!(d.in_table && d.server_says.is_some());
        assert_eq!(known.iter().count(), DEPRECATED_APIS.len());
    }

    #[test]
    fn rows_from_release_manifests_and_live_objects() {
        let known = Deprecations::table();
        let manifest = "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: ext\n";
        let live = vec![ApiUse {
            api_version: "autoscaling/v2beta2".into(),
            kind: "HorizontalPodAutoscaler".into(),
            namespace: Some("shop".into()),
            name: "h".into(),
            origin: "live (managedFields of h: kubectl)".into(),
        }];
        let found = release_objects("release shop/shop revision 1", manifest, &known);
        assert_eq!(found.len(), 2, "the ConfigMap is not kept: {found:?}");
        let rows = api_rows(Horizon { minor: Some(36), target: None }, &known, &found, &[], &live);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].name, "PodDisruptionBudget/pdb");
        assert!(rows[0].source.as_deref().unwrap().starts_with("release shop/shop"));
        assert_eq!((rows[1].name.as_str(), rows[1].status), ("Endpoints/ext", VersionStatus::Deprecated));
        assert_eq!((rows[2].name.as_str(), rows[2].namespace.as_deref()), ("HorizontalPodAutoscaler/h", Some("shop")));
    }
}
