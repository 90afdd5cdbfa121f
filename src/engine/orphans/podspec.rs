//! What a pod spec refers to: ConfigMaps, Secrets, PersistentVolumeClaims, its ServiceAccount
//! and PriorityClass, through volumes (including projected sources and ephemeral claims), env
//! `valueFrom`, `envFrom` and `imagePullSecrets`, in containers, initContainers and
//! ephemeralContainers. The same function reads live pods and every kind of pod template.

use serde_json::Value;

use super::kinds::ExaminedKind;

/// One reference from a pod spec: the object it names (in the pod's namespace, or
/// cluster-scoped for a PriorityClass) and where in the spec, e.g. `volume config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    pub kind: ExaminedKind,
    pub name: String,
    pub via: String,
}

fn s<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn arr<'v>(v: &'v Value, key: &str) -> &'v [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// Volume types that name a Secret for credentials, and the key holding it.
const SECRET_REF_VOLUMES: &[(&str, &str)] = &[
    ("csi", "/nodePublishSecretRef/name"),
    ("cephfs", "/secretRef/name"),
    ("rbd", "/secretRef/name"),
    ("flexVolume", "/secretRef/name"),
    ("iscsi", "/secretRef/name"),
    ("scaleIO", "/secretRef/name"),
    ("storageos", "/secretRef/name"),
    ("azureFile", "/secretName"),
];

/// Every reference in `spec`. `pod_name` is the live pod's name (ephemeral volume claims are
/// named `<pod>-<volume>`); templates pass `None`.
pub fn pod_spec_refs(spec: &Value, pod_name: Option<&str>) -> Vec<PodRef> {
    let mut out = Vec::new();
    let mut push = |kind, name: &str, via: String| out.push(PodRef { kind, name: name.to_string(), via });

    for vol in arr(spec, "volumes") {
        let vname = vol.get("name").and_then(Value::as_str).unwrap_or("?");
        if let Some(n) = s(vol, "/configMap/name") {
            push(ExaminedKind::ConfigMap, n, format!("volume {vname}"));
        }
        if let Some(n) = s(vol, "/secret/secretName") {
            push(ExaminedKind::Secret, n, format!("volume {vname}"));
        }
        if let Some(n) = s(vol, "/persistentVolumeClaim/claimName") {
            push(ExaminedKind::PersistentVolumeClaim, n, format!("volume {vname}"));
        }
        if vol.get("ephemeral").is_some()
            && let Some(pod) = pod_name
        {
            push(ExaminedKind::PersistentVolumeClaim, &format!("{pod}-{vname}"), format!("ephemeral volume {vname}"));
        }
        if let Some(sources) = vol.pointer("/projected/sources").and_then(Value::as_array) {
            for src in sources {
                if let Some(n) = s(src, "/configMap/name") {
                    push(ExaminedKind::ConfigMap, n, format!("projected volume {vname}"));
                }
                if let Some(n) = s(src, "/secret/name") {
                    push(ExaminedKind::Secret, n, format!("projected volume {vname}"));
                }
            }
        }
        for (ty, ptr) in SECRET_REF_VOLUMES {
            if let Some(n) = vol.get(*ty).and_then(|v| s(v, ptr)) {
                push(ExaminedKind::Secret, n, format!("volume {vname} ({ty} secret)"));
            }
        }
    }

    for (field, word) in [
        ("initContainers", "initContainer"),
        ("containers", "container"),
        ("ephemeralContainers", "ephemeralContainer"),
    ] {
        for c in arr(spec, field) {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("?");
            for e in arr(c, "env") {
                let var = e.get("name").and_then(Value::as_str).unwrap_or("?");
                if let Some(n) = s(e, "/valueFrom/configMapKeyRef/name") {
                    push(ExaminedKind::ConfigMap, n, format!("{word} {cname} env {var}"));
                }
                if let Some(n) = s(e, "/valueFrom/secretKeyRef/name") {
                    push(ExaminedKind::Secret, n, format!("{word} {cname} env {var}"));
                }
            }
            for e in arr(c, "envFrom") {
                if let Some(n) = s(e, "/configMapRef/name") {
                    push(ExaminedKind::ConfigMap, n, format!("{word} {cname} envFrom"));
                }
                if let Some(n) = s(e, "/secretRef/name") {
                    push(ExaminedKind::Secret, n, format!("{word} {cname} envFrom"));
                }
            }
        }
    }

    for ips in arr(spec, "imagePullSecrets") {
        if let Some(n) = s(ips, "/name") {
            push(ExaminedKind::Secret, n, "imagePullSecrets".to_string());
        }
    }
    let sa = s(spec, "/serviceAccountName").or_else(|| s(spec, "/serviceAccount")).unwrap_or("default");
    push(ExaminedKind::ServiceAccount, sa, "serviceAccountName".to_string());
    if let Some(pc) = s(spec, "/priorityClassName") {
        push(ExaminedKind::PriorityClass, pc, "priorityClassName".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ExaminedKind::*;
    use serde_json::json;

    fn has(refs: &[PodRef], kind: ExaminedKind, name: &str, via: &str) -> bool {
        refs.iter().any(|r| r.kind == kind && r.name == name && r.via == via)
    }

    #[test]
    fn every_reference_is_found() {
        let spec = json!({
            "serviceAccountName": "runner",
            "priorityClassName": "high",
            "imagePullSecrets": [{"name": "regcred"}],
            "volumes": [
                {"name": "cfg", "configMap": {"name": "app-config"}},
                {"name": "tls", "secret": {"secretName": "app-tls"}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "app-data"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                {"name": "all", "projected": {"sources": [{"configMap": {"name": "p-cm"}}, {"secret": {"name": "p-sec"}}, {"serviceAccountToken": {"path": "t"}}]}},
                {"name": "vault", "csi": {"driver": "x", "nodePublishSecretRef": {"name": "csi-creds"}}}
            ],
            "initContainers": [{"name": "init", "envFrom": [{"configMapRef": {"name": "init-env"}}, {"secretRef": {"name": "init-sec"}}]}],
            "containers": [{"name": "web", "env": [
                {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "a"}}},
                {"name": "B", "valueFrom": {"secretKeyRef": {"name": "env-sec", "key": "b", "optional": true}}},
                {"name": "C", "value": "plain"}
            ]}],
            "ephemeralContainers": [{"name": "debug", "envFrom": [{"secretRef": {"name": "debug-sec"}}]}]
        });
        let refs = pod_spec_refs(&spec, Some("web-0"));
        assert!(has(&refs, ServiceAccount, "runner", "serviceAccountName"));
        assert!(has(&refs, PriorityClass, "high", "priorityClassName"));
        assert!(has(&refs, Secret, "regcred", "imagePullSecrets"));
        assert!(has(&refs, ConfigMap, "app-config", "volume cfg"));
        assert!(has(&refs, Secret, "app-tls", "volume tls"));
        assert!(has(&refs, PersistentVolumeClaim, "app-data", "volume data"));
        assert!(has(&refs, PersistentVolumeClaim, "web-0-scratch", "ephemeral volume scratch"));
        assert!(has(&refs, ConfigMap, "p-cm", "projected volume all"));
        assert!(has(&refs, Secret, "p-sec", "projected volume all"));
        assert!(has(&refs, Secret, "csi-creds", "volume vault (csi secret)"));
        assert!(has(&refs, ConfigMap, "init-env", "initContainer init envFrom"));
        assert!(has(&refs, Secret, "init-sec", "initContainer init envFrom"));
        assert!(has(&refs, ConfigMap, "env-cm", "container web env A"));
        assert!(has(&refs, Secret, "env-sec", "container web env B"));
        assert!(has(&refs, Secret, "debug-sec", "ephemeralContainer debug envFrom"));
        assert_eq!(refs.len(), 15);
    }

    #[test]
    fn defaults_and_templates() {
        let refs =
            pod_spec_refs(&json!({"volumes": [{"name": "s", "ephemeral": {}}], "containers": [{"name": "c"}]}), None);
        // A template has no pod name, so no ephemeral claim; the default ServiceAccount is used.
        assert_eq!(
            refs,
            vec![PodRef { kind: ServiceAccount, name: "default".into(), via: "serviceAccountName".into() }]
        );
        let refs = pod_spec_refs(&json!({"serviceAccount": "legacy"}), None);
        assert!(has(&refs, ServiceAccount, "legacy", "serviceAccountName"));
    }
}
