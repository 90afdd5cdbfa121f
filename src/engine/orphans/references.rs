//! References found by field name, for objects whose schema is not built in: custom resources
//! (the generic pass, with exact rules for the operators people run most), PersistentVolume
//! sources, StorageClass and VolumeSnapshotClass parameters, and ingress-controller
//! annotations. Pure: values in, references out, each with the field path that names the
//! target (`spec.credentialsSecretRef`), so a person can check it.
//!
//! The generic pass walks every field except `metadata` and `status` and takes:
//! - typed references: an object with `kind` Secret, ConfigMap, ServiceAccount or Service (core
//!   group) and a `name` (`valuesFrom`, `substituteFrom`, `targetRefs`, `parametersRef`, ...);
//!   an object with another `kind` is never taken for one of ours;
//! - objects with a `name` under a key ending in `secretRef`, `secretKeyRef`, `secretToRef` or
//!   `secret` (`privateKeySecretRef`, `bearerTokenSecret`, `imagePullSecrets`), `configMap`,
//!   `configMapRef`, `configMapKeyRef`, `serviceAccountRef`/`serviceAccount`, `service` or
//!   `serviceRef`;
//! - other objects holding only `name`, `key` (and `optional`): a Secret key selector;
//! - strings under keys ending in `secretName` or `secret` (`serverTLSSecret`), `configMapName`
//!   or `configMap`, `serviceAccountName`, `serviceName`, `credentialName` (Istio), and
//!   `claimName` (a PersistentVolumeClaim).
//!
//! A reference's namespace is its own `namespace` field (or the sibling `<key>Namespace` of a
//! `...Name` string), else the object's namespace; for cluster-scoped objects, references
//! without a namespace are dropped unless a rule gives a default.

use crate::engine::tree::{DestructuredRef, IObject, IValue, Tree, TreeMap, as_str};

use crate::report::orphan_kinds::ExaminedKind;

/// One reference found in an object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FieldRef {
    pub kind: ExaminedKind,
    /// The namespace the reference names, if it names one.
    pub namespace: Option<String>,
    pub name: String,
    /// Where: `spec.valuesFrom[0]`.
    pub path: String,
}

/// What changes the generic pass for a kind.
#[derive(Debug, Default, Clone)]
pub struct WalkRules {
    /// Traefik's lists of Secret names (`secretNames`, `rootCAsSecrets`,
    /// `certificatesSecrets`) and route `services`.
    pub traefik: bool,
    /// Paths not taken as a use (a field naming what the object writes, e.g. a Certificate's
    /// `spec.secretName`).
    pub skip_paths: &'static [&'static str],
}

fn str_of<'v>(v: &'v IValue, key: &str) -> Option<&'v str> {
    v.get(key).and_then(as_str).filter(|s| !s.is_empty())
}

/// A typed reference's kind: `kind` in the core group (no `apiVersion` other than `v1`, no
/// `group` other than `""`/`core`). `None` when it is no typed reference; `Some(None)` when
/// it names a kind that is not ours.
fn typed_kind(o: &IObject, kind_key: &str) -> Option<Option<ExaminedKind>> {
    let kind = as_str(o.get(kind_key)?)?;
    let core = o.get("apiVersion").and_then(as_str).is_none_or(|a| a == "v1")
        && o.get("group").and_then(as_str).is_none_or(|g| g.is_empty() || g == "core");
    let k = match kind {
        "Secret" => ExaminedKind::Secret,
        "ConfigMap" => ExaminedKind::ConfigMap,
        "ServiceAccount" => ExaminedKind::ServiceAccount,
        "Service" => ExaminedKind::Service,
        _ => return Some(None),
    };
    Some(core.then_some(k))
}

/// The kind an object under `key` (lower-cased) with a `name` refers to.
fn kind_of_ref_key(lk: &str) -> Option<ExaminedKind> {
    if ["secretref", "secretkeyref", "secrettoref", "secret", "imagepullsecrets"].iter().any(|s| lk.ends_with(s)) {
        Some(ExaminedKind::Secret)
    } else if ["configmap", "configmapref", "configmapkeyref"].iter().any(|s| lk.ends_with(s)) {
        Some(ExaminedKind::ConfigMap)
    } else if lk.ends_with("serviceaccountref") || lk == "serviceaccount" {
        Some(ExaminedKind::ServiceAccount)
    } else if lk == "service" || lk.ends_with("serviceref") {
        Some(ExaminedKind::Service)
    } else {
        None
    }
}

/// The kind a string under `key` (lower-cased) names.
fn kind_of_name_key(lk: &str) -> Option<ExaminedKind> {
    // `credentialName`: Istio Gateway and DestinationRule TLS.
    if lk.ends_with("secretname") || lk.ends_with("secret") || lk == "credentialname" {
        Some(ExaminedKind::Secret)
    } else if lk.ends_with("configmapname") || lk.ends_with("configmap") {
        Some(ExaminedKind::ConfigMap)
    } else if lk.ends_with("serviceaccountname") || lk == "serviceaccount" {
        Some(ExaminedKind::ServiceAccount)
    } else if lk.ends_with("servicename") {
        Some(ExaminedKind::Service)
    } else if lk == "claimname" {
        Some(ExaminedKind::PersistentVolumeClaim)
    } else {
        None
    }
}

/// Traefik lists of Secret names.
const TRAEFIK_SECRET_LISTS: &[&str] = &["secretNames", "rootCAsSecrets", "certificatesSecrets"];

/// `secretName` -> `secretNamespace`: the sibling that says where a named object lives.
fn namespace_key(key: &str) -> Option<String> {
    key.strip_suffix("Name").map(|base| format!("{base}Namespace"))
}

/// Every reference in an object (all fields but `apiVersion`, `kind`, `metadata`, `status`).
pub fn object_refs(obj: &(impl Tree + ?Sized), rules: &WalkRules) -> Vec<FieldRef> {
    let obj = &*obj.tree();
    let mut out = Vec::new();
    if let Some(m) = obj.as_object() {
        for (k, child) in m {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status") {
                continue;
            }
            walk(child, k, Some(k), rules, &mut out);
        }
    }
    out.retain(|r| !rules.skip_paths.contains(&r.path.as_str()));
    out
}

/// Every reference under one value (a PersistentVolume's `spec`, say), paths starting at `path`.
pub fn refs_under(v: &(impl Tree + ?Sized), path: &str) -> Vec<FieldRef> {
    let v = &*v.tree();
    let mut out = Vec::new();
    walk(v, path, None, &WalkRules::default(), &mut out);
    out
}

fn push(out: &mut Vec<FieldRef>, kind: ExaminedKind, namespace: Option<&str>, name: &str, path: &str) {
    out.push(FieldRef {
        kind,
        namespace: namespace.filter(|n| !n.is_empty()).map(str::to_string),
        name: name.to_string(),
        path: path.to_string(),
    });
}

/// Visit `v` found under `key` at `path`.
fn walk(v: &IValue, path: &str, key: Option<&str>, rules: &WalkRules, out: &mut Vec<FieldRef>) {
    let lk = key.map(str::to_ascii_lowercase).unwrap_or_default();
    match v.destructure_ref() {
        DestructuredRef::Object(o) => {
            if let Some(name) = o.get("name").and_then(as_str).filter(|s| !s.is_empty()) {
                let ns = str_of(v, "namespace");
                // A cert-manager / external-secrets `caProvider` says its kind in `type`.
                let kind_key = if lk == "caprovider" { "type" } else { "kind" };
                match typed_kind(o, kind_key) {
                    Some(Some(kind)) => push(out, kind, ns, name, path),
                    Some(None) => {}
                    None if rules.traefik && lk == "services" => push(out, ExaminedKind::Service, ns, name, path),
                    None => {
                        if let Some(kind) = kind_of_ref_key(&lk) {
                            push(out, kind, ns, name, path);
                        } else if o.contains_key("key")
                            && o.keys().all(|k| matches!(k.as_str(), "name" | "key" | "optional"))
                        {
                            push(out, ExaminedKind::Secret, None, name, path);
                        }
                    }
                }
            }
            for (k, child) in o {
                let k = k.as_str();
                let p = format!("{path}.{k}");
                match child.destructure_ref() {
                    DestructuredRef::String(s) if !s.is_empty() => {
                        if let Some(kind) = kind_of_name_key(&k.to_ascii_lowercase()) {
                            let ns = namespace_key(k).and_then(|nk| str_of(v, &nk));
                            push(out, kind, ns, s, &p);
                        }
                    }
                    DestructuredRef::Array(a) if rules.traefik && TRAEFIK_SECRET_LISTS.contains(&k) => {
                        for (i, s) in a.iter().enumerate() {
                            if let Some(s) = as_str(s).filter(|s| !s.is_empty()) {
                                push(out, ExaminedKind::Secret, None, s, &format!("{p}[{i}]"));
                            }
                        }
                    }
                    _ => walk(child, &p, Some(k), rules, out),
                }
            }
        }
        DestructuredRef::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                walk(child, &format!("{path}[{i}]"), key, rules, out);
            }
        }
        _ => {}
    }
}

/// A name that a template may fill in, as a glob: each `${...}` becomes `*`.
/// `None` when there is no template (the name is literal).
pub fn template_glob(s: &str) -> Option<String> {
    if !s.contains("${") {
        return None;
    }
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        match rest[start..].find('}') {
            Some(end) => {
                out.push('*');
                rest = &rest[start + end + 1..];
            }
            None => {
                out.push('*');
                rest = "";
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

/// A Secret named by StorageClass or VolumeSnapshotClass parameters: the parameter key, the
/// name (maybe a template) and the namespace (maybe a template; `None` when not given: the
/// claim's namespace, any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSecret {
    pub key: String,
    pub name: String,
    pub namespace: Option<String>,
}

/// Secrets named in `parameters`: `csi.storage.k8s.io/<op>-secret-name` with
/// `<op>-secret-namespace`, and the older `...SecretName` / `...SecretNamespace` pairs
/// (`csiProvisionerSecretName`, in-tree `adminSecretName`, `userSecretName`, `secretName`).
pub fn parameter_secrets(params: &(impl TreeMap + ?Sized)) -> Vec<ParamSecret> {
    let params = &*params.tree_map();
    let mut out = Vec::new();
    for (k, v) in params {
        let k = k.as_str();
        let Some(name) = as_str(v).filter(|s| !s.is_empty()) else { continue };
        let ns_key = if let Some(base) = k.strip_suffix("-secret-name") {
            format!("{base}-secret-namespace")
        } else if k.ends_with("SecretName") || k == "secretName" {
            match namespace_key(k) {
                Some(nk) => nk,
                None => continue,
            }
        } else {
            continue;
        };
        let namespace = params.get(ns_key.as_str()).and_then(as_str).filter(|s| !s.is_empty()).map(str::to_string);
        out.push(ParamSecret { key: k.to_string(), name: name.to_string(), namespace });
    }
    out
}

/// `ns/name` or `name` (in `default_ns`), as annotations of ingress controllers write them.
pub fn split_ref<'a>(value: &'a str, default_ns: &'a str) -> Option<(&'a str, &'a str)> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    match value.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() => Some((ns, name)),
        Some(_) => None,
        None => Some((default_ns, value)),
    }
}

/// Ingress annotations that name an object, per controller: ingress-nginx, the F5 NGINX
/// controller, HAProxy (haproxytech `haproxy.org/*` and haproxy-ingress
/// `haproxy-ingress.github.io/*`) and Traefik 1.x / haproxy-ingress's older
/// `ingress.kubernetes.io/*`. Values are `name` (the Ingress's namespace) or `namespace/name`.
pub const INGRESS_ANNOTATIONS: &[(&str, ExaminedKind)] = &[
    ("nginx.ingress.kubernetes.io/auth-secret", ExaminedKind::Secret),
    ("nginx.ingress.kubernetes.io/auth-tls-secret", ExaminedKind::Secret),
    ("nginx.ingress.kubernetes.io/proxy-ssl-secret", ExaminedKind::Secret),
    ("nginx.ingress.kubernetes.io/custom-headers", ExaminedKind::ConfigMap),
    ("nginx.ingress.kubernetes.io/auth-proxy-set-headers", ExaminedKind::ConfigMap),
    ("nginx.ingress.kubernetes.io/fastcgi-params-configmap", ExaminedKind::ConfigMap),
    ("nginx.ingress.kubernetes.io/default-backend", ExaminedKind::Service),
    ("nginx.org/basic-auth-secret", ExaminedKind::Secret),
    ("nginx.com/jwt-key", ExaminedKind::Secret),
    ("haproxy.org/auth-secret", ExaminedKind::Secret),
    ("haproxy.org/server-ca", ExaminedKind::Secret),
    ("haproxy.org/server-crt", ExaminedKind::Secret),
    ("haproxy-ingress.github.io/auth-secret", ExaminedKind::Secret),
    ("haproxy-ingress.github.io/auth-tls-secret", ExaminedKind::Secret),
    ("haproxy-ingress.github.io/secure-crt-secret", ExaminedKind::Secret),
    ("haproxy-ingress.github.io/secure-verify-ca-secret", ExaminedKind::Secret),
    ("ingress.kubernetes.io/auth-secret", ExaminedKind::Secret),
    ("ingress.kubernetes.io/auth-tls-secret", ExaminedKind::Secret),
    ("ingress.kubernetes.io/secure-crt-secret", ExaminedKind::Secret),
    ("ingress.kubernetes.io/secure-verify-ca-secret", ExaminedKind::Secret),
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn found(obj: &Value, rules: &WalkRules) -> Vec<(ExaminedKind, Option<String>, String, String)> {
        let mut v: Vec<_> =
            object_refs(obj, rules).into_iter().map(|r| (r.kind, r.namespace, r.name, r.path)).collect();
        v.sort();
        v
    }

    fn r(
        kind: ExaminedKind,
        ns: Option<&str>,
        name: &str,
        path: &str,
    ) -> (ExaminedKind, Option<String>, String, String) {
        (kind, ns.map(str::to_string), name.to_string(), path.to_string())
    }

    #[test]
    fn generic_pass_finds_fields_by_name() {
        use ExaminedKind::*;
        let obj = json!({
            "apiVersion": "x.io/v1", "kind": "Gizmo",
            "metadata": {"name": "g1", "namespace": "shop", "annotations": {"secretName": "not-this"}},
            "status": {"secretName": "nor-this"},
            "spec": {
                "credentialsSecretRef": {"name": "creds", "key": "k"},
                "tls": {"secretName": "tls", "secretNamespace": "certs"},
                "valuesFrom": [{"kind": "ConfigMap", "name": "values"}, {"kind": "Secret", "name": "more", "valuesKey": "v"}],
                "storeRef": {"kind": "ClusterSecretStore", "name": "not-a-secret"},
                "secretStoreRef": {"name": "store"},
                "serviceAccountName": "runner",
                "backend": {"serviceName": "api"},
                "webhook": {"service": {"name": "hook", "namespace": "ops", "port": 443}},
                "pod": {"imagePullSecrets": [{"name": "pull"}], "volumes": [{"name": "v", "configMap": {"name": "cfg"}}, {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
                        "containers": [{"env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "env", "key": "k"}}}]}]},
                "target": {"kind": "Deployment", "name": "web"},
                "targetRef": {"group": "", "kind": "Service", "name": "svc"},
                "parametersRef": {"group": "example.io", "kind": "ConfigMap", "name": "other-group"},
                "count": 3
            }
        });
        assert_eq!(
            found(&obj, &WalkRules::default()),
            vec![
                r(ConfigMap, None, "cfg", "spec.pod.volumes[0].configMap"),
                r(ConfigMap, None, "values", "spec.valuesFrom[0]"),
                r(Secret, None, "creds", "spec.credentialsSecretRef"),
                r(Secret, None, "env", "spec.pod.containers[0].env[0].valueFrom.secretKeyRef"),
                r(Secret, None, "more", "spec.valuesFrom[1]"),
                r(Secret, None, "pull", "spec.pod.imagePullSecrets[0]"),
                r(Secret, Some("certs"), "tls", "spec.tls.secretName"),
                r(ServiceAccount, None, "runner", "spec.serviceAccountName"),
                r(Service, None, "api", "spec.backend.serviceName"),
                r(Service, None, "svc", "spec.targetRef"),
                r(Service, Some("ops"), "hook", "spec.webhook.service"),
                r(PersistentVolumeClaim, None, "data", "spec.pod.volumes[1].persistentVolumeClaim.claimName"),
            ]
        );
    }

    #[test]
    fn exact_rules_change_the_pass() {
        use ExaminedKind::*;
        let mon = json!({"spec": {"endpoints": [{"basicAuth": {"username": {"name": "auth", "key": "user"}, "password": {"name": "auth", "key": "pw"}}}],
            "tlsConfig": {"ca": {"configMap": {"name": "ca", "key": "ca.crt"}}}}});
        assert_eq!(
            found(&mon, &WalkRules::default()),
            vec![
                r(ConfigMap, None, "ca", "spec.tlsConfig.ca.configMap"),
                r(Secret, None, "auth", "spec.endpoints[0].basicAuth.password"),
                r(Secret, None, "auth", "spec.endpoints[0].basicAuth.username"),
            ]
        );
        let cnpg = json!({"spec": {"certificates": {"serverTLSSecret": "db-tls"}, "superuserSecret": {"name": "su"},
            "backup": {"s3Credentials": {"accessKeyId": {"name": "s3", "key": "id"}}}, "sort": {"name": "n", "order": "asc"}}});
        assert_eq!(
            found(&cnpg, &WalkRules::default()),
            vec![
                r(Secret, None, "db-tls", "spec.certificates.serverTLSSecret"),
                r(Secret, None, "s3", "spec.backup.s3Credentials.accessKeyId"),
                r(Secret, None, "su", "spec.superuserSecret"),
            ]
        );

        let cert = json!({"spec": {"secretName": "written", "keystores": {"pkcs12": {"passwordSecretRef": {"name": "pw", "key": "p"}}}}});
        let rules = WalkRules { skip_paths: &["spec.secretName"], ..Default::default() };
        assert_eq!(found(&cert, &rules), vec![r(Secret, None, "pw", "spec.keystores.pkcs12.passwordSecretRef")]);

        let traefik = json!({"spec": {"basicAuth": {"secret": "users"}, "clientAuth": {"secretNames": ["ca1"]},
            "routes": [{"services": [{"name": "web", "port": 80}, {"name": "wrr", "kind": "TraefikService"}]}]}});
        let rules = WalkRules { traefik: true, ..Default::default() };
        assert_eq!(
            found(&traefik, &rules),
            vec![
                r(Secret, None, "ca1", "spec.clientAuth.secretNames[0]"),
                r(Secret, None, "users", "spec.basicAuth.secret"),
                r(Service, None, "web", "spec.routes[0].services[0]"),
            ]
        );

        let store = json!({"spec": {"provider": {"kubernetes": {"server": {"caProvider": {"type": "ConfigMap", "name": "kube-ca", "namespace": "eso", "key": "ca"}},
            "auth": {"serviceAccount": {"name": "reader"}}}}}});
        assert_eq!(
            found(&store, &WalkRules::default()),
            vec![
                r(ConfigMap, Some("eso"), "kube-ca", "spec.provider.kubernetes.server.caProvider"),
                r(ServiceAccount, None, "reader", "spec.provider.kubernetes.auth.serviceAccount"),
            ]
        );
    }

    #[test]
    fn persistent_volume_sources() {
        use ExaminedKind::*;
        let spec = json!({"csi": {"driver": "d", "nodePublishSecretRef": {"name": "np", "namespace": "st"}, "controllerExpandSecretRef": {"name": "ce", "namespace": "st"}},
            "azureFile": {"secretName": "az", "shareName": "s"}, "claimRef": {"kind": "PersistentVolumeClaim", "name": "c", "namespace": "shop"}});
        let mut got: Vec<_> =
            refs_under(&spec, "spec").into_iter().map(|r| (r.kind, r.namespace, r.name, r.path)).collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                r(Secret, None, "az", "spec.azureFile.secretName"),
                r(Secret, Some("st"), "ce", "spec.csi.controllerExpandSecretRef"),
                r(Secret, Some("st"), "np", "spec.csi.nodePublishSecretRef"),
            ]
        );
    }

    #[test]
    fn templates_and_parameters() {
        assert_eq!(template_glob("fixed"), None);
        assert_eq!(template_glob("${pvc.name}-creds").as_deref(), Some("*-creds"));
        assert_eq!(template_glob("${pvc.annotations['team/key']}").as_deref(), Some("*"));
        assert_eq!(template_glob("a-${pv.name}-${pvc.namespace}").as_deref(), Some("a-*-*"));
        let params = json!({
            "csi.storage.k8s.io/provisioner-secret-name": "prov",
            "csi.storage.k8s.io/provisioner-secret-namespace": "storage",
            "csi.storage.k8s.io/node-stage-secret-name": "${pvc.name}-stage",
            "csi.storage.k8s.io/node-stage-secret-namespace": "${pvc.namespace}",
            "csi.storage.k8s.io/fstype": "ext4",
            "csiNodePublishSecretName": "old",
            "csiNodePublishSecretNamespace": "legacy",
            "userSecretName": "ceph-user",
        });
        let mut got = parameter_secrets(params.as_object().unwrap());
        got.sort_by(|a, b| a.key.cmp(&b.key));
        let p = |k: &str, n: &str, ns: Option<&str>| ParamSecret {
            key: k.into(),
            name: n.into(),
            namespace: ns.map(str::to_string),
        };
        assert_eq!(
            got,
            vec![
                p("csi.storage.k8s.io/node-stage-secret-name", "${pvc.name}-stage", Some("${pvc.namespace}")),
                p("csi.storage.k8s.io/provisioner-secret-name", "prov", Some("storage")),
                p("csiNodePublishSecretName", "old", Some("legacy")),
                p("userSecretName", "ceph-user", None),
            ]
        );
    }

    #[test]
    fn annotation_values() {
        assert_eq!(split_ref("basic-auth", "shop"), Some(("shop", "basic-auth")));
        assert_eq!(split_ref("certs/ca", "shop"), Some(("certs", "ca")));
        assert_eq!(split_ref("/x", "shop"), None);
        assert_eq!(split_ref(" ", "shop"), None);
    }
}
