//! Reading the GitOps controllers' own objects: Flux HelmReleases and Kustomizations, Argo CD
//! Applications. Only what drift needs is kept (see docs/gitops.md for the fields and why).
//! Their kinds are found by discovery; a cluster that does not serve one simply has none.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;

use crate::report::gitops::Condition;
use crate::source::live::{Kinds, LiveError, LiveReader, ResolvedKind};

/// Flux's helm-controller API group (HelmRelease).
pub const FLUX_HELM_GROUP: &str = "helm.toolkit.fluxcd.io";
/// Flux's kustomize-controller API group (Kustomization).
pub const FLUX_KUSTOMIZE_GROUP: &str = "kustomize.toolkit.fluxcd.io";
/// Argo CD's API group (Application).
pub const ARGO_GROUP: &str = "argoproj.io";
/// The labels helm-controller's post-renderer puts on every object of a release.
pub const FLUX_HELM_NAME_LABEL: &str = "helm.toolkit.fluxcd.io/name";
pub const FLUX_HELM_NAMESPACE_LABEL: &str = "helm.toolkit.fluxcd.io/namespace";
/// The labels kustomize-controller puts on every object it applies.
pub const FLUX_KUSTOMIZE_NAME_LABEL: &str = "kustomize.toolkit.fluxcd.io/name";
pub const FLUX_KUSTOMIZE_NAMESPACE_LABEL: &str = "kustomize.toolkit.fluxcd.io/namespace";
/// An object (label or annotation) helm-controller's drift detection leaves out.
pub const FLUX_DRIFT_DETECTION_KEY: &str = "helm.toolkit.fluxcd.io/driftDetection";

/// The objects of one GitOps kind, read by one (cached) LIST; `Ok(None)` when the cluster does
/// not serve the kind.
pub async fn list(
    kinds: &Kinds,
    reader: &LiveReader,
    group: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Result<Option<(ResolvedKind, Arc<Vec<Value>>)>, LiveError> {
    let Some(rk) = kinds.resolve_preferred(group, kind) else { return Ok(None) };
    let items = reader.list(&rk, namespace).await?;
    Ok(Some((rk, items)))
}

fn text(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

/// `metadata.namespace` and `metadata.name`.
fn identity(v: &Value) -> (String, String) {
    (text(v, "/metadata/namespace").unwrap_or_default(), text(v, "/metadata/name").unwrap_or_default())
}

/// `status.conditions[]` of the given types, in that order, as written.
fn conditions(v: &Value, types: &[&str]) -> Vec<Condition> {
    let all = v.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    types
        .iter()
        .filter_map(|t| {
            let c = all.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(t))?;
            Some(Condition {
                kind: t.to_string(),
                status: text(c, "/status").unwrap_or_else(|| "Unknown".into()),
                reason: text(c, "/reason"),
                message: text(c, "/message"),
                time: text(c, "/lastTransitionTime"),
            })
        })
        .collect()
}

/// A Flux object's source reference (`spec.sourceRef`) as `Kind namespace/name`.
fn source_ref(v: &Value, at: &str, own_namespace: &str) -> Option<String> {
    let r = v.pointer(at)?;
    let kind = text(r, "/kind")?;
    let name = text(r, "/name")?;
    let ns = text(r, "/namespace").unwrap_or_else(|| own_namespace.to_string());
    Some(format!("{kind} {ns}/{name}"))
}

/// One Flux ignore rule: an entry of a HelmRelease's `spec.driftDetection.ignore` or of a
/// Kustomization's `spec.ignore` (kustomize-controller 1.9; the same shape: `paths`, `target`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FluxIgnore {
    /// JSON pointers (RFC 6901); `""` is the whole object.
    pub paths: Vec<String>,
    /// `target`: which objects (all when none).
    pub target: Option<FluxSelector>,
}

/// Flux's object selector (`target` of an ignore rule): regular expressions matched whole for
/// group, version, kind, name and namespace; label selectors for labels and annotations
/// (`engine::compare::rules::FluxTarget` matches it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FluxSelector {
    pub group: Option<String>,
    pub version: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub annotation_selector: Option<String>,
}

/// Flux's ignore rules at `at` (`paths` and `target` of each entry), as written.
fn flux_ignore(v: &Value, at: &str) -> Vec<FluxIgnore> {
    let Some(rules) = v.pointer(at).and_then(Value::as_array) else { return Vec::new() };
    rules
        .iter()
        .map(|r| FluxIgnore {
            paths: r
                .get("paths")
                .and_then(Value::as_array)
                .map(|p| p.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            target: r.get("target").filter(|t| t.is_object()).map(|t| FluxSelector {
                group: text(t, "/group"),
                version: text(t, "/version"),
                kind: text(t, "/kind"),
                name: text(t, "/name"),
                namespace: text(t, "/namespace"),
                label_selector: text(t, "/labelSelector"),
                annotation_selector: text(t, "/annotationSelector"),
            }),
        })
        .collect()
}

/// A Flux HelmRelease (API v2), the fields drift reads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HelmRelease {
    pub namespace: String,
    pub name: String,
    /// The Helm release it manages: `status.history[0]` when written, else from the spec
    /// (`spec.releaseName`, else `TARGETNAMESPACE-NAME` with a target namespace, else its name).
    pub release_name: String,
    /// `spec.targetNamespace`, else its own namespace.
    pub release_namespace: String,
    /// `spec.driftDetection.mode` (none: unset, which Flux takes as `disabled`).
    pub mode: Option<String>,
    pub ignore: Vec<FluxIgnore>,
    pub suspended: bool,
    pub interval: Option<String>,
    pub source: Option<String>,
    pub revision: Option<String>,
    /// `Ready` and `Drifted` (helm-controller writes the second since 2026), as written.
    pub conditions: Vec<Condition>,
}

impl HelmRelease {
    pub fn from_value(v: &Value) -> HelmRelease {
        let (namespace, name) = identity(v);
        let target = text(v, "/spec/targetNamespace");
        let release_namespace =
            text(v, "/status/history/0/namespace").or_else(|| target.clone()).unwrap_or_else(|| namespace.clone());
        let release_name = text(v, "/status/history/0/name").or_else(|| text(v, "/spec/releaseName")).unwrap_or_else(
            || match &target {
                Some(t) => format!("{t}-{name}"),
                None => name.clone(),
            },
        );
        let ignore = flux_ignore(v, "/spec/driftDetection/ignore");
        let source = source_ref(v, "/spec/chart/spec/sourceRef", &namespace)
            .map(|s| match text(v, "/spec/chart/spec/chart") {
                Some(chart) => format!("chart {chart} from {s}"),
                None => s,
            })
            .or_else(|| source_ref(v, "/spec/chartRef", &namespace));
        HelmRelease {
            release_name,
            release_namespace,
            mode: text(v, "/spec/driftDetection/mode"),
            ignore,
            suspended: v.pointer("/spec/suspend").and_then(Value::as_bool).unwrap_or(false),
            interval: text(v, "/spec/interval"),
            source,
            revision: text(v, "/status/lastAttemptedRevision"),
            conditions: conditions(v, &["Ready", "Released", "Drifted"]),
            namespace,
            name,
        }
    }
}

/// One object a Kustomization or an Application says it manages.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct InventoryEntry {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
    /// Argo CD's own sync status of the object (`Synced`, `OutOfSync`), when it says.
    pub sync: Option<String>,
}

impl InventoryEntry {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
}

/// Parse a Flux inventory id, `NAMESPACE_NAME_GROUP_KIND` (cli-utils' object metadata; a `:` in
/// an RBAC name is written `__`), with its version.
pub fn parse_inventory_id(id: &str, version: &str) -> Option<InventoryEntry> {
    let (namespace, rest) = id.split_once('_')?;
    let (rest, kind) = rest.rsplit_once('_')?;
    let (name, group) = rest.rsplit_once('_')?;
    if name.is_empty() || kind.is_empty() {
        return None;
    }
    Some(InventoryEntry {
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        namespace: namespace.to_string(),
        name: name.replace("__", ":"),
        sync: None,
    })
}

/// A Flux Kustomization (API v1), the fields drift reads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Kustomization {
    pub namespace: String,
    pub name: String,
    /// `status.inventory.entries`; none when no inventory was written yet (never applied).
    pub inventory: Option<Vec<InventoryEntry>>,
    /// Inventory ids that could not be read.
    pub bad_entries: Vec<String>,
    pub suspended: bool,
    pub prune: bool,
    pub interval: Option<String>,
    pub source: Option<String>,
    pub path: Option<String>,
    pub revision: Option<String>,
    pub conditions: Vec<Condition>,
    /// `spec.ignore` (kustomize-controller 1.9): paths Flux neither compares nor takes back.
    pub ignore: Vec<FluxIgnore>,
}

impl Kustomization {
    pub fn from_value(v: &Value) -> Kustomization {
        let (namespace, name) = identity(v);
        let mut bad_entries = Vec::new();
        let inventory = v.pointer("/status/inventory").map(|inv| {
            inv.get("entries")
                .and_then(Value::as_array)
                .map(|entries| {
                    entries
                        .iter()
                        .filter_map(|e| {
                            let id = e.get("id").and_then(Value::as_str).unwrap_or("");
                            let version = e.get("v").and_then(Value::as_str).unwrap_or("");
                            let parsed = parse_inventory_id(id, version).filter(|_| !version.is_empty());
                            if parsed.is_none() {
                                bad_entries.push(id.to_string());
                            }
                            parsed
                        })
                        .collect()
                })
                .unwrap_or_default()
        });
        Kustomization {
            inventory,
            bad_entries,
            suspended: v.pointer("/spec/suspend").and_then(Value::as_bool).unwrap_or(false),
            prune: v.pointer("/spec/prune").and_then(Value::as_bool).unwrap_or(false),
            interval: text(v, "/spec/interval"),
            source: source_ref(v, "/spec/sourceRef", &namespace),
            path: text(v, "/spec/path"),
            revision: text(v, "/status/lastAppliedRevision"),
            conditions: conditions(v, &["Ready", "Healthy"]),
            ignore: flux_ignore(v, "/spec/ignore"),
            namespace,
            name,
        }
    }
}

/// One entry of an Application's `spec.ignoreDifferences`, as written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArgoIgnore {
    /// `group` (`""`: the core group) and `kind`, globs as Argo CD matches them.
    pub group: String,
    pub kind: String,
    /// `name` and `namespace`: any when unset or empty.
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// `jsonPointers` (RFC 6901).
    pub json_pointers: Vec<String>,
    /// `jqPathExpressions`.
    pub jq_path_expressions: Vec<String>,
    /// `managedFieldsManagers`: the fields these field managers own are not drift.
    pub managed_fields_managers: Vec<String>,
}

/// An Argo CD Application (v1alpha1), the fields drift reads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Application {
    pub namespace: String,
    pub name: String,
    /// `status.resources[]` (hooks left out: they are not kept in sync).
    pub resources: Vec<InventoryEntry>,
    /// `spec.ignoreDifferences[]`, in order.
    pub ignore: Vec<ArgoIgnore>,
    /// `spec.syncPolicy.automated` is set, and with `selfHeal`.
    pub automated: bool,
    pub self_heal: bool,
    pub prune: bool,
    pub source: Option<String>,
    pub revision: Option<String>,
    /// `Sync` (status.sync.status) and `Health` (status.health.status).
    pub conditions: Vec<Condition>,
}

impl Application {
    pub fn from_value(v: &Value) -> Application {
        let (namespace, name) = identity(v);
        let resources = v
            .pointer("/status/resources")
            .and_then(Value::as_array)
            .map(|rs| {
                rs.iter()
                    .filter(|r| !r.get("hook").and_then(Value::as_bool).unwrap_or(false))
                    .filter_map(|r| {
                        Some(InventoryEntry {
                            group: text(r, "/group").unwrap_or_default(),
                            version: text(r, "/version")?,
                            kind: text(r, "/kind")?,
                            namespace: text(r, "/namespace").unwrap_or_default(),
                            name: text(r, "/name")?,
                            sync: text(r, "/status"),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let automated = v.pointer("/spec/syncPolicy/automated").is_some_and(|a| !a.is_null());
        let source = v.pointer("/spec/source").or_else(|| v.pointer("/spec/sources/0")).and_then(|s| {
            let repo = text(s, "/repoURL")?;
            Some(match (text(s, "/path"), text(s, "/chart")) {
                (Some(p), _) => format!("{repo} path {p}"),
                (None, Some(c)) => format!("{repo} chart {c}"),
                _ => repo,
            })
        });
        let mut conditions = Vec::new();
        if let Some(s) = text(v, "/status/sync/status") {
            conditions.push(Condition { kind: "Sync".into(), status: s, ..Condition::default() });
        }
        if let Some(s) = text(v, "/status/health/status") {
            conditions.push(Condition {
                kind: "Health".into(),
                status: s,
                message: text(v, "/status/health/message"),
                ..Condition::default()
            });
        }
        let strings = |r: &Value, key: &str| -> Vec<String> {
            r.get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default()
        };
        let ignore = v
            .pointer("/spec/ignoreDifferences")
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| ArgoIgnore {
                        group: r.get("group").and_then(Value::as_str).unwrap_or("").to_string(),
                        kind: r.get("kind").and_then(Value::as_str).unwrap_or("").to_string(),
                        name: text(r, "/name"),
                        namespace: text(r, "/namespace"),
                        json_pointers: strings(r, "jsonPointers"),
                        jq_path_expressions: strings(r, "jqPathExpressions"),
                        managed_fields_managers: strings(r, "managedFieldsManagers"),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Application {
            resources,
            ignore,
            automated,
            self_heal: v.pointer("/spec/syncPolicy/automated/selfHeal").and_then(Value::as_bool).unwrap_or(false),
            prune: v.pointer("/spec/syncPolicy/automated/prune").and_then(Value::as_bool).unwrap_or(false),
            source,
            revision: text(v, "/status/sync/revision"),
            conditions,
            namespace,
            name,
        }
    }
}

/// How Argo CD knows which Application a live object belongs to (`application.resourceTrackingMethod`
/// in its `argocd-cm` ConfigMap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrackingMethod {
    /// The `argocd.argoproj.io/tracking-id` annotation (`APP:GROUP/KIND:NAMESPACE/NAME`); Argo
    /// CD's default since 3.0, and what it does with a value it does not know.
    #[default]
    Annotation,
    /// The instance label (`app.kubernetes.io/instance`, or `application.instanceLabelKey`) set to
    /// the Application's instance name.
    Label,
    /// Tracked by the annotation; the label is also written, for other tools only.
    AnnotationAndLabel,
}

impl TrackingMethod {
    /// As `argocd-cm` writes it; Argo CD takes an unknown value as `annotation`.
    pub fn parse(s: &str) -> Option<TrackingMethod> {
        match s.trim() {
            "annotation" => Some(TrackingMethod::Annotation),
            "label" => Some(TrackingMethod::Label),
            "annotation+label" => Some(TrackingMethod::AnnotationAndLabel),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TrackingMethod::Annotation => "annotation",
            TrackingMethod::Label => "label",
            TrackingMethod::AnnotationAndLabel => "annotation+label",
        }
    }
}

/// Argo CD's settings ConfigMap.
pub const ARGO_CM: &str = "argocd-cm";
/// The label Argo CD's label tracking uses unless `application.instanceLabelKey` says otherwise.
pub const ARGO_DEFAULT_INSTANCE_LABEL: &str = "app.kubernetes.io/instance";

/// What drift reads of Argo CD's `argocd-cm`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArgoSettings {
    /// Where it was found: Argo CD's own namespace.
    pub namespace: String,
    /// `application.resourceTrackingMethod` as written (none: unset).
    pub tracking_method: Option<String>,
    /// `application.instanceLabelKey` (none: unset, `app.kubernetes.io/instance`).
    pub instance_label_key: Option<String>,
}

impl ArgoSettings {
    pub fn from_data(namespace: &str, data: &std::collections::BTreeMap<String, String>) -> ArgoSettings {
        let get = |k: &str| data.get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        ArgoSettings {
            namespace: namespace.to_string(),
            tracking_method: get("application.resourceTrackingMethod"),
            instance_label_key: get("application.instanceLabelKey"),
        }
    }
}

/// Read `argocd-cm` in `namespace` (one GET): `Ok(None)` when there is none there, `Err` with
/// the API server's message when it cannot be read (RBAC, say).
pub async fn argo_settings(client: &kube::Client, namespace: &str) -> Result<Option<ArgoSettings>, String> {
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), namespace);
    match api.get_opt(ARGO_CM).await {
        Ok(Some(cm)) => Ok(Some(ArgoSettings::from_data(namespace, &cm.data.unwrap_or_default()))),
        Ok(None) => Ok(None),
        Err(e) => Err(format!("could not read ConfigMap {namespace}/{ARGO_CM}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn inventory_ids_are_read_as_flux_writes_them() {
        let e = parse_inventory_id("shop_web_apps_Deployment", "v1").unwrap();
        assert_eq!(
            (e.namespace.as_str(), e.name.as_str(), e.group.as_str(), e.kind.as_str()),
            ("shop", "web", "apps", "Deployment")
        );
        assert_eq!(e.api_version(), "apps/v1");
        let e = parse_inventory_id("shop_conf__ConfigMap", "v1").unwrap();
        assert_eq!((e.group.as_str(), e.api_version()), ("", "v1".to_string()));
        let e = parse_inventory_id("_system__controller__x_rbac.authorization.k8s.io_ClusterRole", "v1").unwrap();
        assert_eq!((e.namespace.as_str(), e.name.as_str()), ("", "system:controller:x"));
        assert!(parse_inventory_id("nonsense", "v1").is_none());
    }

    #[test]
    fn an_application_s_ignore_differences_are_read_as_written() {
        let app = Application::from_value(&json!({
            "metadata": {"namespace": "argocd", "name": "shop"},
            "spec": {"ignoreDifferences": [
                {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"],
                 "managedFieldsManagers": ["hpa-controller"]},
                {"kind": "ConfigMap", "name": "conf", "namespace": "shop",
                 "jqPathExpressions": [".data.a"]}]}
        }));
        assert_eq!(app.ignore.len(), 2);
        assert_eq!((app.ignore[0].group.as_str(), app.ignore[0].kind.as_str()), ("apps", "Deployment"));
        assert_eq!(app.ignore[0].json_pointers, vec!["/spec/replicas"]);
        assert_eq!(app.ignore[0].managed_fields_managers, vec!["hpa-controller"]);
        assert_eq!(app.ignore[0].name, None);
        assert_eq!(app.ignore[1].group, "");
        assert_eq!((app.ignore[1].name.as_deref(), app.ignore[1].namespace.as_deref()), (Some("conf"), Some("shop")));
        assert_eq!(app.ignore[1].jq_path_expressions, vec![".data.a"]);
        assert_eq!(TrackingMethod::parse("annotation+label"), Some(TrackingMethod::AnnotationAndLabel));
        assert_eq!(TrackingMethod::parse("labels"), None);
    }

    #[test]
    fn a_kustomization_s_ignore_rules_are_read_as_kustomize_controller_writes_them() {
        let k = Kustomization::from_value(&json!({
            "metadata": {"namespace": "flux-system", "name": "apps"},
            "spec": {"ignore": [
                {"paths": ["/spec/replicas", "/metadata/annotations/a~1b"],
                 "target": {"group": "apps", "version": "v1", "kind": "Deployment", "name": "web.*",
                            "namespace": "shop", "labelSelector": "tier=web", "annotationSelector": "x in (y)"}},
                {"paths": ["/data"]}]}
        }));
        assert_eq!(k.ignore.len(), 2);
        assert_eq!(k.ignore[0].paths, vec!["/spec/replicas", "/metadata/annotations/a~1b"]);
        let t = k.ignore[0].target.as_ref().unwrap();
        assert_eq!(
            (t.group.as_deref(), t.version.as_deref(), t.kind.as_deref(), t.name.as_deref(), t.namespace.as_deref()),
            (Some("apps"), Some("v1"), Some("Deployment"), Some("web.*"), Some("shop"))
        );
        assert_eq!(
            (t.label_selector.as_deref(), t.annotation_selector.as_deref()),
            (Some("tier=web"), Some("x in (y)"))
        );
        assert_eq!((k.ignore[1].paths.as_slice(), k.ignore[1].target.as_ref()), (&["/data".to_string()][..], None));
        assert!(Kustomization::from_value(&json!({"spec": {}})).ignore.is_empty());
    }

    #[test]
    fn a_helm_release_names_its_release_from_status_then_spec() {
        let hr = HelmRelease::from_value(&json!({
            "metadata": {"namespace": "flux-system", "name": "shop"},
            "spec": {"targetNamespace": "shop", "driftDetection": {"mode": "warn", "ignore": [
                {"paths": ["/spec/replicas"], "target": {"kind": "Deployment"}}]}}
        }));
        assert_eq!((hr.release_name.as_str(), hr.release_namespace.as_str()), ("shop-shop", "shop"));
        assert_eq!(hr.mode.as_deref(), Some("warn"));
        assert_eq!(hr.ignore[0].paths, vec!["/spec/replicas"]);
        assert_eq!(hr.ignore[0].target.as_ref().unwrap().kind.as_deref(), Some("Deployment"));
        let hr = HelmRelease::from_value(&json!({
            "metadata": {"namespace": "apps", "name": "shop"},
            "spec": {"releaseName": "store"},
            "status": {"history": [{"name": "store-x", "namespace": "apps"}]}
        }));
        assert_eq!((hr.release_name.as_str(), hr.release_namespace.as_str()), ("store-x", "apps"));
    }
}
