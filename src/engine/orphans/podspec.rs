//! What a pod spec refers to: ConfigMaps, Secrets, PersistentVolumeClaims, its ServiceAccount
//! and PriorityClass, through volumes (including projected sources and ephemeral claims), env
//! `valueFrom`, `envFrom` and `imagePullSecrets`, in containers, initContainers and
//! ephemeralContainers. The same function reads live pods and every kind of pod template.

use serde_json::Value;

use crate::engine::tree::{IValue, Tree, as_array, as_str, pointer};
use crate::report::orphan_kinds::ExaminedKind;
use crate::source::live::Prune;

/// One reference from a pod spec: the object it names (in the pod's namespace, or
/// cluster-scoped for a PriorityClass) and where in the spec, e.g. `volume config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    pub kind: ExaminedKind,
    pub name: String,
    pub via: String,
}

fn s<'v>(v: &'v IValue, at: &str) -> Option<&'v str> {
    pointer(v, at).and_then(as_str).filter(|s| !s.is_empty())
}

fn arr<'v>(v: &'v IValue, key: &str) -> &'v [IValue] {
    v.get(key).and_then(as_array).unwrap_or(&[])
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
pub fn pod_spec_refs(spec: &(impl Tree + ?Sized), pod_name: Option<&str>) -> Vec<PodRef> {
    let spec = &*spec.tree();
    let mut out = Vec::new();
    let mut push = |kind, name: &str, via: String| out.push(PodRef { kind, name: name.to_string(), via });

    for vol in arr(spec, "volumes") {
        let vname = vol.get("name").and_then(as_str).unwrap_or("?");
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
        if let Some(sources) = pointer(vol, "/projected/sources").and_then(as_array) {
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
            let cname = c.get("name").and_then(as_str).unwrap_or("?");
            for e in arr(c, "env") {
                let var = e.get("name").and_then(as_str).unwrap_or("?");
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

/// The fields of a pod spec that [`pod_spec_refs`] reads, the ones to keep when a spec is held only
/// to find its references (the inventory of a scan keeps every Pod and template): what a LIST
/// decoder may skip, and what [`trim_pod_spec`] drops but for the env vars set without `valueFrom`
/// (dropped after decoding: that needs their content).
pub const POD_SPEC_PRUNE: Prune = {
    use Prune::{Drop, Fields, Items, Keep};
    const ENV_VAR: Prune = Fields(&[("name", Keep), ("valueFrom", Keep)], &Drop);
    const CONTAINER: Prune = Fields(&[("name", Keep), ("env", Items(&ENV_VAR)), ("envFrom", Keep)], &Drop);
    Fields(
        &[
            ("volumes", Keep),
            ("initContainers", Items(&CONTAINER)),
            ("containers", Items(&CONTAINER)),
            ("ephemeralContainers", Items(&CONTAINER)),
            ("imagePullSecrets", Keep),
            ("serviceAccountName", Keep),
            ("serviceAccount", Keep),
            ("priorityClassName", Keep),
        ],
        &Drop,
    )
};

/// Drop, in place, what [`pod_spec_refs`] does not read: every other field of the spec, and of
/// each container all but its name, `envFrom` and the env vars set `valueFrom` (their name and
/// `valueFrom`). `pod_spec_refs` of the trimmed spec is that of the whole one.
pub fn trim_pod_spec(spec: &mut Value) {
    POD_SPEC_PRUNE.apply(spec);
    let Some(spec) = spec.as_object_mut() else { return };
    for field in ["initContainers", "containers", "ephemeralContainers"] {
        for c in spec.get_mut(field).and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(Value::Array(env)) = c.get_mut("env") {
                env.retain(|e| e.get("valueFrom").is_some());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ExaminedKind::*;
    use serde_json::json;

    fn has(refs: &[PodRef], kind: ExaminedKind, name: &str, via: &str) -> bool {
        refs.iter().any(|r| r.kind == kind && r.name == name && r.via == via)
    }

    fn every_kind_of_reference() -> Value {
        json!({
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
        })
    }

    #[test]
    fn every_reference_is_found() {
        let refs = pod_spec_refs(&every_kind_of_reference(), Some("web-0"));
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

    #[test]
    fn a_trimmed_spec_has_the_same_references() {
        let mut spec = every_kind_of_reference();
        // What the API server's defaults add to a pod, none of it a reference.
        spec["dnsPolicy"] = json!("ClusterFirst");
        spec["tolerations"] = json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]);
        spec["nodeSelector"] = json!({"disk": "ssd"});
        spec["containers"][0]["image"] = json!("web:1");
        spec["containers"][0]["resources"] = json!({"limits": {"cpu": "1"}});
        spec["containers"][0]["volumeMounts"] = json!([{"name": "cfg", "mountPath": "/etc/cfg"}]);
        let mut trimmed = spec.clone();
        trim_pod_spec(&mut trimmed);
        assert_eq!(pod_spec_refs(&trimmed, Some("web-0")), pod_spec_refs(&spec, Some("web-0")));
        assert_eq!(pod_spec_refs(&trimmed, None), pod_spec_refs(&spec, None));
        for gone in ["/dnsPolicy", "/tolerations", "/nodeSelector", "/containers/0/image", "/containers/0/resources"] {
            assert_eq!(trimmed.pointer(gone), None, "{gone} is kept");
        }
        // The plain env var is dropped; those set from a ConfigMap or Secret are kept whole.
        assert_eq!(trimmed["containers"][0]["env"].as_array().map(Vec::len), Some(2));
        assert_eq!(trimmed["volumes"], spec["volumes"]);
        let mut odd = json!(["not", "a", "spec"]);
        trim_pod_spec(&mut odd);
        assert_eq!(odd, json!(["not", "a", "spec"]));
    }
}
