//! What an orphans scan keeps of each object it lists: the trims (and the prunes the decoder
//! applies as each LIST page arrives) of the inventory's lists and of the custom resources read
//! by `custom`, which both take them from here.

use serde_json::Value;

use super::podspec::POD_SPEC_PRUNE;
use crate::source::live::{Prune, Trim};

/// What a scan keeps of each listed object. The inventory of `orphans -A` holds every object
/// it lists until the end (whether something is used needs references from every namespace),
/// so it keeps only what the evidence reads: no rule reads `status` but a Job's conditions
/// (finished) and a PersistentVolume's phase (shown), `managedFields` only for the names of
/// the managers (`source: manager:…` rules), never the last-applied annotation (a second
/// copy of the object), and of a pod spec (a Pod's, or a template's) only what
/// [`pod_spec_refs`](super::podspec::pod_spec_refs) reads. A scan of 2,000 releases held
/// 1.2 GiB before, most of it Pods' status, managedFields and defaulted spec fields.
pub const KEEP_NO_STATUS: Trim = Trim { name: "orphans", prune: &NO_STATUS, apply: |v| trim_object(v, &[], None) };
pub(super) const KEEP_PV_PHASE: Trim =
    Trim { name: "orphans-pv", prune: &PV, apply: |v| trim_object(v, &["phase"], None) };
// Pods, ReplicaSets, DaemonSets, CronJobs and EndpointSlices are never examined, only read for
// what they use (`graph`): of these only that is kept, the trim being their prune applied.
pub(super) const POD: Trim =
    Trim { name: "orphans-pod", prune: &POD_PRUNE, apply: |v| trim_user(v, &POD_PRUNE, Some("/spec")) };
pub(super) const USER_TEMPLATE: Trim = Trim {
    name: "orphans-user-template",
    prune: &USER_TEMPLATE_PRUNE,
    apply: |v| trim_user(v, &USER_TEMPLATE_PRUNE, Some("/spec/template/spec")),
};
pub(super) const ENDPOINT_SLICE: Trim = Trim {
    name: "orphans-endpointslice",
    prune: &ENDPOINT_SLICE_PRUNE,
    apply: |v| trim_user(v, &ENDPOINT_SLICE_PRUNE, None),
};
pub(super) const TEMPLATE: Trim = Trim {
    name: "orphans-template",
    prune: &TEMPLATE_PRUNE,
    apply: |v| trim_object(v, &[], Some("/spec/template/spec")),
};
pub(super) const JOB: Trim = Trim {
    name: "orphans-job",
    prune: &JOB_PRUNE,
    apply: |v| trim_object(v, &["conditions"], Some("/spec/template/spec")),
};
pub(super) const CRON_JOB: Trim = Trim {
    name: "orphans-cronjob",
    prune: &CRON_JOB_PRUNE,
    apply: |v| trim_user(v, &CRON_JOB_PRUNE, Some("/spec/jobTemplate/spec/template/spec")),
};

// What the decoder skips of each object, the biggest parts of what `trim_object` drops (a Pod's
// status and its managed fields' `fieldsV1` are most of its bytes): never built at all. Each
// prune skips only what its trim drops (test `pruned_decoding_keeps_what_the_trim_keeps`).
use Prune::{Drop, Fields, Items, Keep};
const META: Prune = Fields(
    &[
        ("name", Keep),
        ("namespace", Keep),
        ("labels", Keep),
        ("annotations", Fields(&[("kubectl.kubernetes.io/last-applied-configuration", Drop)], &Keep)),
        ("ownerReferences", Keep),
        ("managedFields", Items(&Fields(&[("manager", Keep)], &Drop))),
        ("creationTimestamp", Keep),
    ],
    &Drop,
);
const NO_STATUS: Prune = Fields(&[("status", Drop), ("metadata", META)], &Keep);
const PV: Prune = Fields(&[("status", Fields(&[("phase", Keep)], &Drop)), ("metadata", META)], &Keep);
// What the graph reads of an object it only reads for what it uses: its name and labels, and its
// owners' kind and name (a pod's reasons name its controller).
const USER_META: Prune = Fields(
    &[
        ("name", Keep),
        ("namespace", Keep),
        ("labels", Keep),
        ("ownerReferences", Items(&Fields(&[("kind", Keep), ("name", Keep)], &Drop))),
    ],
    &Drop,
);
const POD_PRUNE: Prune = Fields(&[KIND, API_VERSION, ("metadata", USER_META), ("spec", POD_SPEC_PRUNE)], &Drop);
const KIND: (&str, Prune) = ("kind", Keep);
const API_VERSION: (&str, Prune) = ("apiVersion", Keep);
/// A pod template as the graph reads it: its labels and pod spec.
const USER_POD_TEMPLATE: Prune =
    Fields(&[("metadata", Fields(&[("labels", Keep)], &Drop)), ("spec", POD_SPEC_PRUNE)], &Drop);
const USER_TEMPLATE_PRUNE: Prune = Fields(
    &[KIND, API_VERSION, ("metadata", USER_META), ("spec", Fields(&[("template", USER_POD_TEMPLATE)], &Drop))],
    &Drop,
);
/// An EndpointSlice: its Service (a label) and whether an endpoint has addresses.
const ENDPOINT_SLICE_PRUNE: Prune = Fields(
    &[KIND, API_VERSION, ("metadata", USER_META), ("endpoints", Items(&Fields(&[("addresses", Keep)], &Drop)))],
    &Drop,
);
const TEMPLATE_SPEC: Prune = Fields(&[("template", Fields(&[("spec", POD_SPEC_PRUNE)], &Keep))], &Keep);
const TEMPLATE_PRUNE: Prune = Fields(&[("status", Drop), ("metadata", META), ("spec", TEMPLATE_SPEC)], &Keep);
const JOB_PRUNE: Prune =
    Fields(&[("status", Fields(&[("conditions", Keep)], &Drop)), ("metadata", META), ("spec", TEMPLATE_SPEC)], &Keep);
const CRON_JOB_PRUNE: Prune = Fields(
    &[
        KIND,
        API_VERSION,
        ("metadata", USER_META),
        (
            "spec",
            Fields(
                &[("jobTemplate", Fields(&[("spec", Fields(&[("template", USER_POD_TEMPLATE)], &Drop))], &Drop))],
                &Drop,
            ),
        ),
    ],
    &Drop,
);

/// An object only read for what it uses: `prune` applied (the decoder has skipped it already), then
/// the env vars of its pod spec that are not set `valueFrom`.
fn trim_user(v: &mut Value, prune: &Prune, pod_spec: Option<&str>) {
    prune.apply(v);
    if let Some(spec) = pod_spec.and_then(|p| v.pointer_mut(p)) {
        super::podspec::trim_pod_spec(spec);
    }
}

fn trim_object(v: &mut Value, keep_status: &[&str], pod_spec: Option<&str>) {
    if let Some(spec) = pod_spec.and_then(|p| v.pointer_mut(p)) {
        super::podspec::trim_pod_spec(spec);
    }
    let Some(obj) = v.as_object_mut() else { return };
    match obj.get_mut("status").and_then(Value::as_object_mut) {
        Some(status) if !keep_status.is_empty() => status.retain(|k, _| keep_status.contains(&k.as_str())),
        _ => {
            obj.remove("status");
        }
    }
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    // Of the metadata, what a rule, an evidence or a reason reads (not uid, resourceVersion,
    // generation, finalizers, ...).
    meta.retain(|k, _| {
        matches!(
            k.as_str(),
            "name" | "namespace" | "labels" | "annotations" | "ownerReferences" | "managedFields" | "creationTimestamp"
        )
    });
    if let Some(Value::Array(entries)) = meta.get_mut("managedFields") {
        let mut managers: Vec<Value> = Vec::new();
        for e in entries.iter() {
            if let Some(m) = e.get("manager").filter(|m| m.is_string())
                && !managers.iter().any(|k| k.get("manager") == Some(m))
            {
                managers.push(serde_json::json!({ "manager": m }));
            }
        }
        *entries = managers;
    }
    if let Some(Value::Object(a)) = meta.get_mut("annotations") {
        a.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn trimmed(trim: Trim, mut v: Value) -> Value {
        (trim.apply)(&mut v);
        v
    }

    #[test]
    fn pruned_decoding_keeps_what_the_trim_keeps() {
        let meta = json!({"name": "x", "namespace": "shop", "uid": "u", "resourceVersion": "7",
            "labels": {"app": "web"}, "ownerReferences": [{"kind": "ReplicaSet", "name": "rs"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "a"},
            "managedFields": [{"manager": "helm", "fieldsV1": {"f:spec": {}}}, {"operation": "Update"},
                {"manager": "kubectl-edit", "time": "t"}, {"manager": "helm"}, {"manager": 7}],
            "creationTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["f"]});
        let spec = json!({"containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"},
                {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}, "extra": 1}, "odd"],
                "envFrom": [{"configMapRef": {"name": "m"}}], "resources": {}}, "odd"],
            "initContainers": [{"name": "i", "env": "odd"}], "volumes": [{"name": "v", "secret": {"secretName": "t"}}],
            "serviceAccountName": "sa", "priorityClassName": "p", "dnsPolicy": "ClusterFirst", "nodeName": "n"});
        let status = json!({"phase": "Bound", "conditions": [{"type": "Complete"}], "containerStatuses": [{}]});
        let cases = [
            (KEEP_NO_STATUS, json!({"kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}, "status": status})),
            (KEEP_NO_STATUS, json!({"kind": "Odd", "metadata": "odd", "status": "odd"})),
            (
                KEEP_PV_PHASE,
                json!({"kind": "PersistentVolume", "metadata": meta, "spec": {"claimRef": {}}, "status": status}),
            ),
            (KEEP_PV_PHASE, json!({"kind": "PersistentVolume", "status": "odd"})),
            (POD, json!({"kind": "Pod", "metadata": meta, "spec": spec, "status": status})),
            (POD, json!({"kind": "Pod", "spec": ["odd"]})),
            (
                TEMPLATE,
                json!({"kind": "Deployment", "metadata": meta, "spec": {"replicas": 2,
                "template": {"metadata": meta, "spec": spec}}, "status": status}),
            ),
            (JOB, json!({"kind": "Job", "metadata": meta, "spec": {"template": {"spec": spec}}, "status": status})),
            (
                CRON_JOB,
                json!({"kind": "CronJob", "metadata": meta,
                "spec": {"jobTemplate": {"spec": {"template": {"spec": spec}}}}, "status": status}),
            ),
            (
                USER_TEMPLATE,
                json!({"kind": "ReplicaSet", "metadata": meta, "spec": {"replicas": 2,
                "template": {"metadata": meta, "spec": spec}}, "status": status}),
            ),
            (
                ENDPOINT_SLICE,
                json!({"kind": "EndpointSlice", "metadata": meta, "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}, "targetRef": {}}],
                "ports": [{"port": 80}]}),
            ),
        ];
        for (trim, whole) in cases {
            let text = whole.to_string();
            let pruned = trim.prune.decode(&text).unwrap();
            if whole["metadata"].is_object() {
                assert!(pruned.to_string().len() < text.len(), "{}: something is skipped", trim.name);
            }
            assert_eq!(trimmed(trim, pruned), trimmed(trim, whole.clone()), "{}", trim.name);
            // What the graph and every reason read is kept by every trim: the kind, the name, the
            // namespace, the labels, the owners' kind and name.
            let t = trimmed(trim, whole.clone());
            assert_eq!(t["kind"], whole["kind"], "{}", trim.name);
            if whole["metadata"].is_object() {
                for at in [
                    "/metadata/name",
                    "/metadata/namespace",
                    "/metadata/labels",
                    "/metadata/ownerReferences/0/kind",
                    "/metadata/ownerReferences/0/name",
                ] {
                    assert_eq!(t.pointer(at), whole.pointer(at), "{} {at}", trim.name);
                }
            }
        }
    }

    #[test]
    fn listed_objects_keep_only_what_the_evidence_reads() {
        let pod = json!({
            "kind": "Pod",
            "metadata": {
                "name": "web-1", "namespace": "shop", "labels": {"app": "web"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"big\":1}", "team": "a"},
                "managedFields": [
                    {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:spec": {}}},
                    {"manager": "helm", "operation": "Update", "fieldsV1": {"f:metadata": {}}},
                    {"manager": "kubectl-edit", "operation": "Update", "subresource": "scale"},
                ],
            },
            "spec": {"volumes": [{"name": "c", "configMap": {"name": "settings"}}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "web"}]},
        });
        let sources_before = super::super::rules::object_sources(&pod);
        let t = trimmed(KEEP_NO_STATUS, pod.clone());
        assert_eq!(t.get("status"), None);
        assert_eq!(t["spec"], pod["spec"]);
        assert_eq!(t["metadata"]["labels"], pod["metadata"]["labels"]);
        assert_eq!(t["metadata"]["annotations"], json!({"team": "a"}));
        assert_eq!(t["metadata"]["managedFields"], json!([{"manager": "kubectl-edit"}, {"manager": "helm"}]));
        assert_eq!(super::super::rules::object_sources(&t), sources_before, "manager: rules still match");

        let job = json!({"kind": "Job", "metadata": {"name": "j"},
            "status": {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1, "startTime": "x"}});
        let t = trimmed(JOB, job);
        assert_eq!(t["status"], json!({"conditions": [{"type": "Complete", "status": "True"}]}));

        let pv = json!({"kind": "PersistentVolume", "metadata": {"name": "pv"},
            "spec": {"claimRef": {"name": "c"}}, "status": {"phase": "Released", "lastPhaseTransitionTime": "x"}});
        let t = trimmed(KEEP_PV_PHASE, pv);
        assert_eq!(t["status"], json!({"phase": "Released"}));
        assert_eq!(t["spec"]["claimRef"]["name"], "c");

        // Objects without the trimmed parts (metadata-only lists, odd shapes) pass unchanged.
        let bare = json!({"kind": "ConfigMap", "metadata": {"name": "m"}});
        assert_eq!(trimmed(KEEP_NO_STATUS, bare.clone()), bare);
        assert_eq!(trimmed(JOB, json!("odd")), json!("odd"));

        // Pod specs, a Pod's or a template's, keep what has references; the rest of the object
        // (replicas, claim templates, labels) is kept.
        let spec = json!({"containers": [{"name": "c", "image": "x", "envFrom": [{"secretRef": {"name": "s"}}]}],
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "sa"});
        let trimmed_spec = json!({"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "s"}}]}],
            "serviceAccountName": "sa"});
        let t = trimmed(POD, json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": spec}));
        assert_eq!(t["spec"], trimmed_spec);
        let sts = json!({"kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {"replicas": 0,
            "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": spec}}});
        let t = trimmed(TEMPLATE, sts.clone());
        assert_eq!(t["spec"]["template"]["spec"], trimmed_spec);
        assert_eq!(t["spec"]["replicas"], 0);
        assert_eq!(t["spec"]["volumeClaimTemplates"], sts["spec"]["volumeClaimTemplates"]);
        assert_eq!(t["spec"]["template"]["metadata"], sts["spec"]["template"]["metadata"]);
        let cj = json!({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": spec}}}}});
        assert_eq!(trimmed(CRON_JOB, cj)["spec"]["jobTemplate"]["spec"]["template"]["spec"], trimmed_spec);
    }
}
