//! Upgrade readiness: objects whose apiVersion is deprecated, or removed in the installed or a
//! coming Kubernetes minor. Our own table, written from the facts of Kubernetes' deprecated API
//! migration guide (the version each API is deprecated and removed in, and its replacement).
//! Objects come from Helm release manifests, `--manifests PATH` files, and live objects (the
//! apiVersion each field manager wrote with, from `metadata.managedFields`).

use std::path::PathBuf;

use crate::report::versions::{Category, VersionRow, VersionStatus};
use crate::source::live::{Kinds, LiveReader};

/// One deprecated API: `group/version` and kind, the minor it was deprecated in, the minor it is
/// removed in (`None`: no removal planned), and what replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeprecatedApi {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub deprecated_in: u64,
    pub removed_in: Option<u64>,
    pub replacement: &'static str,
}

const fn api(
    api_version: &'static str,
    kind: &'static str,
    deprecated_in: u64,
    removed_in: u64,
    replacement: &'static str,
) -> DeprecatedApi {
    DeprecatedApi { api_version, kind, deprecated_in, removed_in: Some(removed_in), replacement }
}

/// The table (Kubernetes 1.x minors), from the deprecated API migration guide.
pub const DEPRECATED_APIS: &[DeprecatedApi] = &[
    // Removed in 1.16.
    api("extensions/v1beta1", "Deployment", 9, 16, "apps/v1"),
    api("extensions/v1beta1", "DaemonSet", 9, 16, "apps/v1"),
    api("extensions/v1beta1", "ReplicaSet", 9, 16, "apps/v1"),
    api("extensions/v1beta1", "NetworkPolicy", 9, 16, "networking.k8s.io/v1"),
    api("extensions/v1beta1", "PodSecurityPolicy", 11, 16, "policy/v1beta1"),
    api("apps/v1beta1", "Deployment", 9, 16, "apps/v1"),
    api("apps/v1beta1", "StatefulSet", 9, 16, "apps/v1"),
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
    api("events.k8s.io/v1beta1", "Event", 21, 25, "events.k8s.io/v1"),
    api("autoscaling/v2beta1", "HorizontalPodAutoscaler", 22, 25, "autoscaling/v2"),
    api("policy/v1beta1", "PodDisruptionBudget", 21, 25, "policy/v1"),
    api("policy/v1beta1", "PodSecurityPolicy", 21, 25, "Pod Security Admission (no replacement kind)"),
    api("node.k8s.io/v1beta1", "RuntimeClass", 20, 25, "node.k8s.io/v1"),
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
];

/// How many minors ahead count as "the next minors".
pub const LOOKAHEAD: u64 = 2;

/// The table entry for an apiVersion and kind.
pub fn lookup(api_version: &str, kind: &str) -> Option<&'static DeprecatedApi> {
    DEPRECATED_APIS.iter().find(|d| d.api_version == api_version && d.kind == kind)
}

/// The row for one object, when its apiVersion matters for the installed minor: removed at or
/// before `installed minor + LOOKAHEAD`, or deprecated by the installed minor. `None` (no
/// installed version known) takes every entry as relevant.
pub fn judge(
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    origin: &str,
    minor: Option<u64>,
) -> Option<VersionRow> {
    let d = lookup(api_version, kind)?;
    let horizon = minor.map_or(u64::MAX, |m| m + LOOKAHEAD);
    let status = match d.removed_in {
        Some(r) if r <= horizon => VersionStatus::Removed,
        _ if minor.is_none_or(|m| d.deprecated_in <= m) => VersionStatus::Deprecated,
        _ => return None,
    };
    let mut row = VersionRow::new(Category::Apis, format!("{kind}/{name}"), api_version);
    row.namespace = namespace.map(str::to_string);
    row.component = Some(kind.to_string());
    row.latest = Some(d.replacement.to_string());
    row.status = status;
    row.source = Some(origin.to_string());
    row.why = Some(match (d.removed_in, minor) {
        (Some(r), Some(m)) if r <= m => {
            format!("{api_version} {kind} was removed in 1.{r} (this cluster runs 1.{m}); use {}", d.replacement)
        }
        (Some(r), _) => format!(
            "{api_version} {kind} is deprecated since 1.{}, removed in 1.{r}; use {}",
            d.deprecated_in, d.replacement
        ),
        (None, _) => format!("{api_version} {kind} is deprecated since 1.{}; use {}", d.deprecated_in, d.replacement),
    });
    row.notes = Some("https://kubernetes.io/docs/reference/using-api/deprecation-guide/".into());
    Some(row)
}

// What is read of each live object: its name, namespace and the apiVersion of each managedFields
// entry (skipped while decoding: the rest of the metadata, the fields' trees).
use crate::source::live::{Prune, Trim};
const LIVE_PRUNE: Prune = Prune::Fields(
    &[(
        "metadata",
        Prune::Fields(
            &[
                ("name", Prune::Keep),
                ("namespace", Prune::Keep),
                ("managedFields", Prune::Items(&Prune::Fields(&[("apiVersion", Prune::Keep)], &Prune::Drop))),
            ],
            &Prune::Drop,
        ),
    )],
    &Prune::Drop,
);
const LIVE_TRIM: Trim = Trim { name: "versions-apis", prune: &LIVE_PRUNE, apply: |v| LIVE_PRUNE.apply(v) };

/// An object whose apiVersion is in the table for its kind: what its row says, and where it was
/// found. Only these are kept of a release manifest or a live list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiUse {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    /// `release shop/shop revision 3 (templates/pdb.yaml)`, `live (managedFields of web)`.
    pub origin: String,
}

/// The objects of a release manifest (`origin`: which release and revision) whose apiVersion is
/// in the table.
pub fn release_objects(origin: &str, manifest: &str) -> Vec<ApiUse> {
    let (objects, _) = crate::source::manifest::parse_stream(manifest, origin);
    objects
        .into_iter()
        .filter(|o| lookup(&o.api_version, &o.kind).is_some())
        .map(|o| ApiUse {
            origin: format!("{origin} ({})", o.source),
            api_version: o.api_version,
            kind: o.kind,
            namespace: o.namespace,
            name: o.name,
        })
        .collect()
}

/// Live objects of every kind in the table that the cluster serves (in `namespace`, or every
/// namespace), once per apiVersion they were written with (each managedFields entry's
/// `apiVersion`) that is in the table for the kind: the others give no row, so a big cluster's
/// ReplicaSets, Events and Leases are read but not kept. Lists that fail are left out (the table
/// rows they would give are only possible on clusters that still serve the kind).
pub async fn live_objects(kinds: &Kinds, reader: &LiveReader, namespace: Option<&str>) -> Vec<ApiUse> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for d in DEPRECATED_APIS {
        let group = d.replacement.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        if !seen.insert((group, d.kind)) {
            continue;
        }
        // Create-only kinds (TokenReview, SubjectAccessReview) are in the table but never stored:
        // not listed (a LIST answers 405).
        let Some(rk) = kinds.resolve_preferred_listable(group, d.kind) else { continue };
        let scope = if rk.namespaced { namespace } else { None };
        let Ok(list) = reader.list_trimmed(&rk, scope, true, "", LIVE_TRIM).await else { continue };
        for obj in list.iter() {
            let meta = obj.get("metadata");
            let text = |k: &str| meta.and_then(|m| m.get(k)).and_then(|v| v.as_string()).map(|s| s.as_str());
            let mut versions: Vec<&str> = meta
                .and_then(|m| m.get("managedFields"))
                .and_then(|f| f.as_array())
                .into_iter()
                .flatten()
                .filter_map(|m| m.get("apiVersion").and_then(|v| v.as_string()).map(|s| s.as_str()))
                .filter(|v| lookup(v, d.kind).is_some())
                .collect();
            versions.sort();
            versions.dedup();
            let name = text("name").unwrap_or("");
            for v in versions {
                out.push(ApiUse {
                    api_version: v.to_string(),
                    kind: d.kind.to_string(),
                    namespace: text("namespace").map(str::to_string),
                    name: name.to_string(),
                    origin: format!("live (managedFields of {name})"),
                });
            }
        }
    }
    out
}

/// Rows for the objects found in release manifests ([`release_objects`]), the manifest files at
/// `paths`, and live objects ([`live_objects`]).
pub fn api_rows(
    server: &Option<(u64, u64, u64)>,
    releases: &[ApiUse],
    paths: &[PathBuf],
    live: &[ApiUse],
) -> Vec<VersionRow> {
    let minor = server.map(|s| s.1);
    let mut rows = Vec::new();
    let mut check = |api_version: &str, kind: &str, namespace: Option<&str>, name: &str, origin: String| {
        if let Some(r) = judge(api_version, kind, namespace, name, &origin, minor)
            && !rows.contains(&r)
        {
            rows.push(r);
        }
    };
    for u in releases {
        check(&u.api_version, &u.kind, u.namespace.as_deref(), &u.name, u.origin.clone());
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
                    check(&o.api_version, &o.kind, o.namespace.as_deref(), &o.name, o.source.clone());
                }
                for e in parsed.errors {
                    errors.push(VersionRow::new(Category::Apis, shown.clone(), "?").error(e.to_string()));
                }
            }
            Err(e) => errors.push(VersionRow::new(Category::Apis, shown, "?").error(e)),
        }
    }
    for u in live {
        check(&u.api_version, &u.kind, u.namespace.as_deref(), &u.name, u.origin.clone());
    }
    rows.extend(errors);
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

    #[test]
    fn table_rules() {
        // Removed before the installed minor: removed, with the replacement.
        let r = judge("extensions/v1beta1", "Ingress", Some("shop"), "web", "f.yaml", Some(35)).unwrap();
        assert_eq!((r.status, r.latest.as_deref()), (VersionStatus::Removed, Some("networking.k8s.io/v1")));
        assert!(r.why.unwrap().contains("removed in 1.22"));
        // Removed within the next minors: removed; deprecated but removed later: deprecated.
        assert_eq!(judge("batch/v1beta1", "CronJob", None, "x", "o", Some(24)).unwrap().status, VersionStatus::Removed);
        assert_eq!(
            judge("batch/v1beta1", "CronJob", None, "x", "o", Some(21)).unwrap().status,
            VersionStatus::Deprecated
        );
        // Not yet deprecated at the installed minor: nothing to say.
        assert!(judge("batch/v1beta1", "CronJob", None, "x", "o", Some(19)).is_none());
        assert!(judge("apps/v1", "Deployment", None, "x", "o", Some(35)).is_none());
        // Every entry: deprecated before removed, replacement named.
        for d in DEPRECATED_APIS {
            assert!(d.removed_in.is_none_or(|r| r > d.deprecated_in), "{d:?}");
            assert!(!d.replacement.is_empty());
        }
    }

    #[test]
    fn rows_from_release_manifests_and_live_objects() {
        let manifest = "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n";
        let live = vec![ApiUse {
            api_version: "autoscaling/v2beta2".into(),
            kind: "HorizontalPodAutoscaler".into(),
            namespace: Some("shop".into()),
            name: "h".into(),
            origin: "live (managedFields of h)".into(),
        }];
        let found = release_objects("release shop/shop revision 1", manifest);
        assert_eq!(found.len(), 1, "the ConfigMap is not kept: {found:?}");
        let rows = api_rows(&Some((1, 36, 0)), &found, &[], &live);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "PodDisruptionBudget/pdb");
        assert!(rows[0].source.as_deref().unwrap().starts_with("release shop/shop"));
        assert_eq!((rows[1].name.as_str(), rows[1].namespace.as_deref()), ("HorizontalPodAutoscaler/h", Some("shop")));
    }
}
