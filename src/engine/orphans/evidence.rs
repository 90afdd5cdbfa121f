//! Evidence beyond use: what makes an object protected (never offered for deletion) or managed
//! (something would recreate it), and which Helm release an object came from.

use std::collections::{HashMap, HashSet};

use crate::engine::tree::{IValue, Tree, as_array, as_str, pointer};

use super::graph::{name_of, ns_of, str_at};
use super::inventory::{Inventory, Source};
use crate::report::orphan_kinds::ExaminedKind;
use crate::report::orphans::HelmRelease;
use crate::source::helm::driver::summarise_labels;

/// Namespaces whose objects (other than Helm-installed ones) belong to the cluster's bootstrap.
pub const SYSTEM_NAMESPACES: &[&str] = &["kube-system", "kube-public", "kube-node-lease"];

/// Prefix of Helm's release storage objects.
const HELM_STORAGE_PREFIX: &str = "sh.helm.release.v1.";

/// Installed Helm releases, read from the labels of release storage (never its contents), or
/// from the name, version and status columns of Helm's SQL storage.
#[derive(Debug, Default)]
pub struct HelmState {
    /// (namespace, release) -> (highest revision, its status).
    latest: HashMap<(String, String), (u64, String)>,
}

impl HelmState {
    pub fn from_inventory(inv: &Inventory) -> HelmState {
        let from_labels = inv
            .get(Source::HelmStorageSecrets)
            .chain(inv.get(Source::HelmStorageConfigMaps))
            .filter(|o| is_helm_storage(o))
            .filter_map(|o| {
                let name = str_at(o, "/metadata/labels/name")?;
                let status = str_at(o, "/metadata/labels/status")?;
                let version = str_at(o, "/metadata/labels/version").and_then(|v| v.parse().ok()).unwrap_or(0);
                Some((ns_of(o).to_string(), name.to_string(), version, status.to_string()))
            });
        let from_sql =
            inv.sql_releases.iter().map(|r| (r.namespace.clone(), r.name.clone(), r.revision, r.status.clone()));
        let latest = summarise_labels(from_labels.chain(from_sql))
            .into_iter()
            .map(|r| ((r.namespace, r.name), (u64::from(r.revision), r.status)))
            .collect();
        HelmState { latest }
    }

    pub fn installed(&self, namespace: &str, name: &str) -> bool {
        self.latest.get(&(namespace.to_string(), name.to_string())).is_some_and(|(_, s)| s != "uninstalled")
    }

    /// The release an object came from, if it says so.
    pub fn release_of(&self, obj: &(impl Tree + ?Sized)) -> Option<HelmRelease> {
        let obj = &*obj.tree();
        let name = str_at(obj, "/metadata/annotations/meta.helm.sh~1release-name")?;
        let namespace = str_at(obj, "/metadata/annotations/meta.helm.sh~1release-namespace").unwrap_or(ns_of(obj));
        Some(HelmRelease {
            name: name.to_string(),
            namespace: namespace.to_string(),
            installed: self.installed(namespace, name),
        })
    }
}

/// Helm release storage: a Secret or ConfigMap labelled `owner=helm` named `sh.helm.release.v1.*`.
pub fn is_helm_storage(o: &IValue) -> bool {
    str_at(o, "/metadata/labels/owner") == Some("helm") && name_of(o).starts_with(HELM_STORAGE_PREFIX)
}

fn label<'v>(o: &'v IValue, key: &str) -> Option<&'v str> {
    pointer(o, "/metadata/labels").and_then(|l| l.get(key)).and_then(as_str)
}

fn annotation<'v>(o: &'v IValue, key: &str) -> Option<&'v str> {
    pointer(o, "/metadata/annotations").and_then(|l| l.get(key)).and_then(as_str)
}

/// Built-in reasons an object must never be offered for deletion.
pub fn protected_reasons(kind: ExaminedKind, o: &(impl Tree + ?Sized)) -> Vec<String> {
    let o = &*o.tree();
    use ExaminedKind as K;
    let (ns, name) = (ns_of(o), name_of(o));
    let mut out = Vec::new();
    if name.starts_with("system:") {
        out.push("system:* object of Kubernetes itself".to_string());
    }
    if name.starts_with("kubeadm:") {
        out.push("kubeadm:* bootstrap object".to_string());
    }
    if label(o, "kubernetes.io/bootstrapping") == Some("rbac-defaults") {
        out.push("default RBAC object (kubernetes.io/bootstrapping: rbac-defaults)".to_string());
    }
    if label(o, "app.kubernetes.io/managed-by") == Some("kubectl-drift") {
        out.push("kubectl-drift's own state (watch --state configmap:...)".to_string());
    }
    if SYSTEM_NAMESPACES.contains(&ns) && annotation(o, "meta.helm.sh/release-name").is_none() {
        out.push(format!("{ns} bootstrap object"));
    }
    match kind {
        K::ConfigMap if name == "kube-root-ca.crt" => {
            out.push("kube-root-ca.crt, published into every namespace by Kubernetes".into())
        }
        K::ServiceAccount if name == "default" => out.push("the namespace's default ServiceAccount".into()),
        K::Service if ns == "default" && name == "kubernetes" => out.push("the API server's own Service".into()),
        K::Secret => {
            if let Some(sa) = annotation(o, "kubernetes.io/service-account.name") {
                out.push(format!("service-account token Secret of ServiceAccount {sa}"));
            }
        }
        K::PriorityClass if name.starts_with("system-") => out.push("built-in system-* PriorityClass".into()),
        K::PriorityClass if o.get("globalDefault").and_then(IValue::to_bool) == Some(true) => {
            out.push("the cluster's default PriorityClass (globalDefault)".into())
        }
        K::StorageClass
            if ["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"]
                .iter()
                .any(|a| annotation(o, a) == Some("true")) =>
        {
            out.push("the cluster's default StorageClass".into())
        }
        _ => {}
    }
    if matches!(kind, K::Secret | K::ConfigMap) && is_helm_storage(o) {
        out.push("Helm release storage".to_string());
    }
    out
}

/// The Secrets an operator writes, (namespace, secret) -> who: cert-manager Certificates
/// (`spec.secretName`) and external-secrets ExternalSecrets (`spec.target.name`, by default
/// the ExternalSecret's own name, unless its `creationPolicy` is `Merge` or `None`).
pub fn written_secrets(inv: &Inventory) -> HashMap<(String, String), String> {
    let mut out = HashMap::new();
    for c in inv.get(Source::Certificates) {
        if let Some(secret) = str_at(c, "/spec/secretName") {
            out.insert(
                (ns_of(c).to_string(), secret.to_string()),
                format!("cert-manager Certificate {}/{}", ns_of(c), name_of(c)),
            );
        }
    }
    for e in inv.get(Source::CustomResources) {
        let external_secret = str_at(e, "/kind") == Some("ExternalSecret")
            && str_at(e, "/apiVersion").is_some_and(|a| a.starts_with("external-secrets.io/"));
        let policy = str_at(e, "/spec/target/creationPolicy").unwrap_or("Owner");
        if external_secret && !matches!(policy, "Merge" | "None") {
            let secret = str_at(e, "/spec/target/name").unwrap_or(name_of(e));
            out.insert(
                (ns_of(e).to_string(), secret.to_string()),
                format!("external-secrets ExternalSecret {}/{}", ns_of(e), name_of(e)),
            );
        }
    }
    out
}

/// Reasons something would recreate the object.
pub fn managed_reasons(
    kind: ExaminedKind,
    o: &(impl Tree + ?Sized),
    helm: Option<&HelmRelease>,
    writers: &HashMap<(String, String), String>,
) -> Vec<String> {
    let o = &*o.tree();
    let mut out = Vec::new();
    let mut owners = HashSet::new();
    for owner in pointer(o, "/metadata/ownerReferences").and_then(as_array).into_iter().flatten() {
        let k = str_at(owner, "/kind").unwrap_or("?");
        let n = str_at(owner, "/name").unwrap_or("?");
        if owners.insert((k, n)) {
            out.push(format!("owned by {k} {n}"));
        }
    }
    if let Some(r) = helm.filter(|r| r.installed) {
        out.push(format!("installed Helm release {}/{}", r.namespace, r.name));
    }
    if kind == ExaminedKind::Secret
        && let Some(writer) = writers.get(&(ns_of(o).to_string(), name_of(o).to_string()))
    {
        out.push(format!("{writer} writes it"));
    }
    if let Some(id) = annotation(o, "argocd.argoproj.io/tracking-id") {
        out.push(format!("tracked by Argo CD ({id})"));
    } else if let Some(app) = label(o, "argocd.argoproj.io/instance") {
        out.push(format!("tracked by Argo CD application {app}"));
    }
    if let Some(m) = label(o, "app.kubernetes.io/managed-by").filter(|m| !m.eq_ignore_ascii_case("helm")) {
        out.push(format!("app.kubernetes.io/managed-by: {m}"));
    }
    for (key, what) in [
        ("kustomize.toolkit.fluxcd.io/name", "Flux Kustomization"),
        ("helm.toolkit.fluxcd.io/name", "Flux HelmRelease"),
    ] {
        if let Some(n) = label(o, key) {
            let fns = label(o, &key.replace("/name", "/namespace")).unwrap_or("");
            out.push(if fns.is_empty() { format!("{what} {n}") } else { format!("{what} {fns}/{n}") });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn protected_objects() {
        let state = json!({"metadata": {"namespace": "ops", "name": "drift-state", "labels": {"app.kubernetes.io/managed-by": "kubectl-drift"}}});
        assert!(!protected_reasons(ExaminedKind::ConfigMap, &state).is_empty(), "the watcher's state is protected");
        let cm = json!({"metadata": {"namespace": "a", "name": "kube-root-ca.crt"}});
        assert!(!protected_reasons(ExaminedKind::ConfigMap, &cm).is_empty());
        let cr = json!({"metadata": {"name": "system:aggregate-to-view"}});
        assert!(!protected_reasons(ExaminedKind::ClusterRole, &cr).is_empty());
        let view = json!({"metadata": {"name": "view", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}});
        assert!(!protected_reasons(ExaminedKind::ClusterRole, &view).is_empty());
        let tok = json!({"metadata": {"namespace": "a", "name": "t", "annotations": {"kubernetes.io/service-account.name": "x"}}});
        assert!(protected_reasons(ExaminedKind::Secret, &tok)[0].contains("token"));
        let storage =
            json!({"metadata": {"namespace": "a", "name": "sh.helm.release.v1.shop.v1", "labels": {"owner": "helm"}}});
        assert_eq!(protected_reasons(ExaminedKind::Secret, &storage), vec!["Helm release storage"]);
        let ks = json!({"metadata": {"namespace": "kube-system", "name": "extension-apiserver-authentication"}});
        assert!(!protected_reasons(ExaminedKind::ConfigMap, &ks).is_empty());
        let ks_helm = json!({"metadata": {"namespace": "kube-system", "name": "x", "annotations": {"meta.helm.sh/release-name": "m"}}});
        assert!(protected_reasons(ExaminedKind::ConfigMap, &ks_helm).is_empty());
        let plain = json!({"metadata": {"namespace": "a", "name": "settings"}});
        assert!(protected_reasons(ExaminedKind::ConfigMap, &plain).is_empty());
        let sc = json!({"metadata": {"name": "std", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}});
        assert!(!protected_reasons(ExaminedKind::StorageClass, &sc).is_empty());
    }

    #[test]
    fn helm_state_and_managed() {
        let s = |name: &str, status: &str, v: &str| json!({"metadata": {"namespace": "shop", "name": format!("sh.helm.release.v1.{name}.v{v}"), "labels": {"owner": "helm", "name": name, "status": status, "version": v}}});
        let inv = Inventory::from_objects(
            Some("shop"),
            vec![(
                Source::HelmStorageSecrets,
                vec![s("web", "superseded", "1"), s("web", "deployed", "2"), s("old", "uninstalled", "3")],
            )],
        );
        let helm = HelmState::from_inventory(&inv);
        assert!(helm.installed("shop", "web"));
        assert!(!helm.installed("shop", "old"));
        assert!(!helm.installed("shop", "never"));
        // Releases from Helm's SQL storage count the same way.
        let summary = |name: &str, revision, status: &str| crate::source::helm::ReleaseSummary {
            namespace: "db".into(),
            name: name.into(),
            revision,
            status: status.into(),
            deployed: (status == "deployed").then_some(revision),
        };
        let mut sql = Inventory::from_objects(Some("db"), vec![]);
        sql.sql_releases = vec![summary("api", 4, "deployed"), summary("gone", 2, "uninstalled")];
        let sql = HelmState::from_inventory(&sql);
        assert!(sql.installed("db", "api"));
        assert!(!sql.installed("db", "gone"));
        assert!(!sql.installed("shop", "api"));
        let obj = json!({"metadata": {"namespace": "shop", "name": "c", "annotations": {"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": "shop"},
            "labels": {"app.kubernetes.io/managed-by": "Helm"}, "ownerReferences": [{"kind": "ReplicaSet", "name": "r"}]}});
        let rel = helm.release_of(&obj).unwrap();
        assert!(rel.installed);
        let reasons = managed_reasons(ExaminedKind::ConfigMap, &obj, Some(&rel), &HashMap::new());
        assert_eq!(reasons, vec!["owned by ReplicaSet r", "installed Helm release shop/web"]);
        let op = json!({"metadata": {"namespace": "shop", "name": "c", "labels": {"app.kubernetes.io/managed-by": "my-operator"}}});
        assert_eq!(
            managed_reasons(ExaminedKind::ConfigMap, &op, None, &HashMap::new()),
            vec!["app.kubernetes.io/managed-by: my-operator"]
        );
        let mut certs = HashMap::new();
        certs.insert(("shop".to_string(), "c".to_string()), "cert-manager Certificate shop/web-cert".to_string());
        assert_eq!(
            managed_reasons(
                ExaminedKind::Secret,
                &json!({"metadata": {"namespace": "shop", "name": "c"}}),
                None,
                &certs
            ),
            vec!["cert-manager Certificate shop/web-cert writes it"]
        );
    }
}
