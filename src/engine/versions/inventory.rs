//! What is installed, from live objects: control-plane static pods and kube-proxy/CoreDNS in
//! kube-system, nodes' kubelet and container runtime, the images of Deployments, StatefulSets,
//! DaemonSets and CronJobs (Helm-managed or not), and the digests their pods run
//! (`status.containerStatuses[].imageID`). Pure functions over the listed objects.

use std::collections::{BTreeMap, BTreeSet};

use ijson::{IObject, IValue};
use serde_json::Value;

use crate::engine::select::label_selector_matches;
use crate::source::live::{Prune, Trim};

// What the inventory reads of the pods and workloads it lists, skipped by the decoder as each LIST
// page arrives (a cluster's pods are most of its bytes): identity, labels and annotations (ignore
// rules, groups, mirror pods, the Helm release), owners, the selector, each container's name and
// image, the pull secrets' names, and each container status's name and imageID.
use Prune::{Drop, Fields, Items, Keep};
const META: Prune = Fields(
    &[
        ("name", Keep),
        ("namespace", Keep),
        ("labels", Keep),
        ("annotations", Fields(&[("kubectl.kubernetes.io/last-applied-configuration", Drop)], &Keep)),
        ("ownerReferences", Items(&Fields(&[("kind", Keep), ("name", Keep)], &Drop))),
    ],
    &Drop,
);
const CONTAINER: Prune = Fields(&[("name", Keep), ("image", Keep)], &Drop);
const CONTAINER_STATUS: Prune = Fields(&[("name", Keep), ("imageID", Keep)], &Drop);
const POD_SPEC: Prune = Fields(
    &[
        ("initContainers", Items(&CONTAINER)),
        ("containers", Items(&CONTAINER)),
        ("imagePullSecrets", Items(&Fields(&[("name", Keep)], &Drop))),
    ],
    &Drop,
);
const POD_PRUNE: Prune = Fields(
    &[
        ("metadata", META),
        ("spec", POD_SPEC),
        (
            "status",
            Fields(
                &[("initContainerStatuses", Items(&CONTAINER_STATUS)), ("containerStatuses", Items(&CONTAINER_STATUS))],
                &Drop,
            ),
        ),
    ],
    &Drop,
);
const TEMPLATE: Prune = Fields(&[("spec", POD_SPEC)], &Drop);
const WORKLOAD_PRUNE: Prune = Fields(
    &[
        ("metadata", META),
        (
            "spec",
            Fields(
                &[
                    ("selector", Keep),
                    ("template", TEMPLATE),
                    ("jobTemplate", Fields(&[("spec", Fields(&[("template", TEMPLATE)], &Drop))], &Drop)),
                ],
                &Drop,
            ),
        ),
    ],
    &Drop,
);

/// What [`static_pod_images`] and [`workload_images`] read of a Pod.
pub const POD_TRIM: Trim = Trim { name: "versions-pod", prune: &POD_PRUNE, apply: |v| POD_PRUNE.apply(v) };
/// What [`workload_images`] reads of a Deployment, StatefulSet, DaemonSet or CronJob.
pub const WORKLOAD_TRIM: Trim =
    Trim { name: "versions-workload", prune: &WORKLOAD_PRUNE, apply: |v| WORKLOAD_PRUNE.apply(v) };

/// One container image in use, with what runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUse {
    /// `Deployment`, `StatefulSet`, `DaemonSet`, `CronJob`, or `Pod` (a static pod).
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub container: String,
    /// The image reference as written in the pod spec.
    pub image: String,
    /// Digests the pods run (`sha256:...`), from `imageID`.
    pub running_digests: BTreeSet<String>,
    /// The Helm release that manages the workload, if any.
    pub helm_release: Option<String>,
    /// Names of the pod template's imagePullSecrets (read only when asked to).
    pub pull_secrets: Vec<String>,
}

impl ImageUse {
    /// `Deployment shop/web`.
    pub fn object(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// The digest of an `imageID`: `docker-pullable://r/x@sha256:..`, `r/x@sha256:..` or `sha256:..`.
pub fn digest_of_image_id(image_id: &str) -> Option<String> {
    let d = image_id.rsplit('@').next().unwrap_or(image_id);
    let d = d.strip_prefix("docker-pullable://").unwrap_or(d);
    (d.starts_with("sha256:") && d.len() > 7).then(|| d.to_string())
}

fn str_at<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// The Helm release that manages an object: the `meta.helm.sh/release-name` annotation, or the
/// `app.kubernetes.io/managed-by: Helm` label with the `app.kubernetes.io/instance` label.
pub fn helm_release_of(obj: &Value) -> Option<String> {
    if let Some(r) = obj.pointer("/metadata/annotations/meta.helm.sh~1release-name").and_then(Value::as_str) {
        return Some(r.to_string());
    }
    let managed = str_at(obj, "/metadata/labels/app.kubernetes.io~1managed-by");
    if managed.eq_ignore_ascii_case("helm") {
        let instance = str_at(obj, "/metadata/labels/app.kubernetes.io~1instance");
        return Some(if instance.is_empty() { "?".to_string() } else { instance.to_string() });
    }
    None
}

/// The pod spec of a workload (`CronJob`: its job template's).
fn pod_spec<'a>(kind: &str, obj: &'a Value) -> Option<&'a Value> {
    match kind {
        "CronJob" => obj.pointer("/spec/jobTemplate/spec/template/spec"),
        "Pod" => obj.get("spec"),
        _ => obj.pointer("/spec/template/spec"),
    }
}

/// `(container name, image)` of a pod spec: init containers, then containers.
fn containers(spec: &Value) -> Vec<(String, String)> {
    ["initContainers", "containers"]
        .iter()
        .flat_map(|k| spec.get(*k).and_then(Value::as_array).into_iter().flatten())
        .filter_map(|c| {
            let image = c.get("image").and_then(Value::as_str)?;
            Some((c.get("name").and_then(Value::as_str).unwrap_or("").to_string(), image.to_string()))
        })
        .collect()
}

/// What the matching keeps of a pod, made as each pod is read (a cluster's pods are never all
/// held decoded): its labels (compact, made once per pod rather than once per workload it is
/// compared with), the names of the Jobs that own it, and each container's running digest, from
/// init and regular container statuses.
struct PodFacts {
    labels: IObject,
    jobs: Vec<String>,
    running: Vec<(String, String)>,
}

impl PodFacts {
    fn of(pod: &Value) -> PodFacts {
        let labels = match pod.pointer("/metadata/labels") {
            Some(l @ Value::Object(_)) => IValue::from(l.clone()).into_object().unwrap_or_default(),
            _ => IObject::new(),
        };
        let jobs = pod
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|o| str_at(o, "/kind") == "Job")
            .map(|o| str_at(o, "/name").to_string())
            .collect();
        let running = ["initContainerStatuses", "containerStatuses"]
            .iter()
            .flat_map(|k| pod.pointer(&format!("/status/{k}")).and_then(Value::as_array).into_iter().flatten())
            .filter_map(|s| {
                let digest = s.get("imageID").and_then(Value::as_str).and_then(digest_of_image_id)?;
                Some((s.get("name").and_then(Value::as_str).unwrap_or("").to_string(), digest))
            })
            .collect();
        PodFacts { labels, jobs, running }
    }
}

/// Running digests of `container` in `pods`.
fn running(pods: &[&PodFacts], container: &str) -> BTreeSet<String> {
    pods.iter().flat_map(|p| &p.running).filter(|(c, _)| c == container).map(|(_, d)| d.clone()).collect()
}

/// Does the pod belong to the workload (already known to be in its namespace)? Selected by its
/// selector; a CronJob's pods are those of its Jobs (`<cronjob>-<n>`).
fn pod_of(kind: &str, workload: &Value, selector: Option<&IValue>, pod: &PodFacts) -> bool {
    if kind == "CronJob" {
        let name = str_at(workload, "/metadata/name");
        return pod.jobs.iter().any(|job| {
            job.strip_prefix(name)
                .and_then(|r| r.strip_prefix('-'))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
    }
    selector.is_some_and(|s| label_selector_matches(s, &pod.labels))
}

/// The images of `workloads` (`(kind, object)`), with the digests their `pods` run. Pods are
/// grouped by namespace first: a workload is compared only with the pods of its namespace. Both
/// are taken one object at a time, so a caller can decode each as it is read.
pub fn workload_images(
    workloads: impl IntoIterator<Item = (String, Value)>,
    pods: impl IntoIterator<Item = Value>,
) -> Vec<ImageUse> {
    let mut by_namespace: BTreeMap<String, Vec<PodFacts>> = BTreeMap::new();
    for pod in pods {
        by_namespace.entry(str_at(&pod, "/metadata/namespace").to_string()).or_default().push(PodFacts::of(&pod));
    }
    let mut out = Vec::new();
    for (kind, w) in workloads {
        let Some(spec) = pod_spec(&kind, &w) else { continue };
        let selector = w.pointer("/spec/selector").map(|s| IValue::from(s.clone()));
        let mine: Vec<&PodFacts> = by_namespace
            .get(str_at(&w, "/metadata/namespace"))
            .into_iter()
            .flatten()
            .filter(|p| pod_of(&kind, &w, selector.as_ref(), p))
            .collect();
        let pull_secrets = spec
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| s.get("name").and_then(Value::as_str).map(str::to_string))
            .collect::<Vec<_>>();
        for (container, image) in containers(spec) {
            out.push(ImageUse {
                kind: kind.clone(),
                namespace: str_at(&w, "/metadata/namespace").to_string(),
                name: str_at(&w, "/metadata/name").to_string(),
                running_digests: running(&mine, &container),
                container,
                image,
                helm_release: helm_release_of(&w),
                pull_secrets: pull_secrets.clone(),
            });
        }
    }
    out
}

/// Control-plane static pods (mirror pods: owned by their Node, or with the
/// `kubernetes.io/config.mirror` annotation) in kube-system, one use per container.
pub fn static_pod_images(pods: impl IntoIterator<Item = Value>) -> Vec<ImageUse> {
    let mut out = Vec::new();
    for p in pods {
        let p = &p;
        let mirror = p.pointer("/metadata/annotations/kubernetes.io~1config.mirror").is_some()
            || p.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|o| str_at(o, "/kind") == "Node");
        if !mirror || str_at(p, "/metadata/namespace") != "kube-system" {
            continue;
        }
        let Some(spec) = p.get("spec") else { continue };
        for (container, image) in containers(spec) {
            // Static pods are named `<component>-<node>`; the component label says which.
            let component = p
                .pointer("/metadata/labels/component")
                .or_else(|| p.pointer("/metadata/labels/k8s-app"))
                .and_then(Value::as_str)
                .unwrap_or(&container)
                .to_string();
            out.push(ImageUse {
                kind: "Pod".into(),
                namespace: "kube-system".into(),
                name: component,
                running_digests: running(&[&PodFacts::of(p)], &container),
                container,
                image,
                helm_release: None,
                pull_secrets: Vec::new(),
            });
        }
    }
    out
}

/// kube-proxy and CoreDNS: cluster components, not workloads.
pub fn is_cluster_addon(u: &ImageUse) -> bool {
    u.namespace == "kube-system"
        && matches!(
            (u.kind.as_str(), u.name.as_str()),
            ("DaemonSet", "kube-proxy") | ("Deployment", "coredns") | ("Deployment", "kube-dns")
        )
}

/// One group of nodes with the same kubelet (or runtime) version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGroup {
    /// `kubelet` or the runtime's name (`containerd`, `cri-o`, `docker`, ...).
    pub component: String,
    /// The version as the node reports it (`v1.35.2`, `1.7.27`).
    pub version: String,
    pub nodes: Vec<String>,
}

/// Nodes grouped by kubelet version and by container runtime version (`containerd://1.7.27`).
pub fn node_groups(nodes: &[Value]) -> Vec<NodeGroup> {
    let mut groups: BTreeMap<(u8, String, String), Vec<String>> = BTreeMap::new();
    for n in nodes {
        let name = str_at(n, "/metadata/name").to_string();
        let kubelet = str_at(n, "/status/nodeInfo/kubeletVersion");
        if !kubelet.is_empty() {
            groups.entry((0, "kubelet".into(), kubelet.to_string())).or_default().push(name.clone());
        }
        let runtime = str_at(n, "/status/nodeInfo/containerRuntimeVersion");
        if !runtime.is_empty() {
            let (rt, version) = runtime.split_once("://").unwrap_or(("unknown", runtime));
            groups.entry((1, rt.to_string(), version.to_string())).or_default().push(name);
        }
    }
    groups.into_iter().map(|((_, component, version), nodes)| NodeGroup { component, version, nodes }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn image_ids() {
        assert_eq!(digest_of_image_id("docker-pullable://r/x@sha256:abc").as_deref(), Some("sha256:abc"));
        assert_eq!(digest_of_image_id("127.0.0.1:5000/x@sha256:abc").as_deref(), Some("sha256:abc"));
        assert_eq!(digest_of_image_id("sha256:abc").as_deref(), Some("sha256:abc"));
        assert_eq!(digest_of_image_id(""), None);
        assert_eq!(digest_of_image_id("docker://x"), None);
    }

    #[test]
    fn workloads_and_their_pods() {
        let dep = json!({"metadata": {"name": "web", "namespace": "shop", "annotations": {"meta.helm.sh/release-name": "shop"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {
                "imagePullSecrets": [{"name": "regcred"}],
                "initContainers": [{"name": "init", "image": "busybox:1.36"}],
                "containers": [{"name": "app", "image": "r:5000/web:1.2.3"}]}}}});
        let cj = json!({"metadata": {"name": "nightly", "namespace": "shop"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "job", "image": "job:latest"}]}}}}}});
        let pods = vec![
            json!({"metadata": {"namespace": "shop", "labels": {"app": "web"}},
                "status": {"containerStatuses": [{"name": "app", "imageID": "r:5000/web@sha256:aaa"}],
                           "initContainerStatuses": [{"name": "init", "imageID": "sha256:iii"}]}}),
            json!({"metadata": {"namespace": "other", "labels": {"app": "web"}},
                "status": {"containerStatuses": [{"name": "app", "imageID": "r:5000/web@sha256:zzz"}]}}),
            json!({"metadata": {"namespace": "shop", "ownerReferences": [{"kind": "Job", "name": "nightly-2900"}]},
                "status": {"containerStatuses": [{"name": "job", "imageID": "job@sha256:jjj"}]}}),
            json!({"metadata": {"namespace": "shop", "ownerReferences": [{"kind": "Job", "name": "nightly-other-1"}]},
                "status": {"containerStatuses": [{"name": "job", "imageID": "job@sha256:nope"}]}}),
        ];
        let uses = workload_images([("Deployment".into(), dep), ("CronJob".into(), cj)], pods);
        assert_eq!(uses.len(), 3);
        assert_eq!((uses[0].container.as_str(), uses[0].image.as_str()), ("init", "busybox:1.36"));
        assert_eq!(uses[0].running_digests.iter().collect::<Vec<_>>(), vec!["sha256:iii"]);
        assert_eq!(uses[1].running_digests.iter().collect::<Vec<_>>(), vec!["sha256:aaa"]);
        assert_eq!(uses[1].helm_release.as_deref(), Some("shop"));
        assert_eq!(uses[1].pull_secrets, vec!["regcred"]);
        assert_eq!(uses[1].object(), "Deployment shop/web");
        assert_eq!(uses[2].running_digests.iter().collect::<Vec<_>>(), vec!["sha256:jjj"]);
        assert_eq!(uses[2].helm_release, None);
    }

    #[test]
    fn the_trims_keep_what_the_inventory_reads() {
        // Whole objects as the API server sends them; decoded with the trims' prunes, the images,
        // digests, owners, selectors, pull secrets and labels found are the same.
        let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u1", "resourceVersion": "9",
                "labels": {"app": "web"}, "annotations": {"meta.helm.sh/release-name": "shop",
                "kubectl.kubernetes.io/last-applied-configuration": "{}"},
                "managedFields": [{"manager": "helm", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "strategy": {},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                    "imagePullSecrets": [{"name": "regcred"}],
                    "initContainers": [{"name": "init", "image": "busybox:1.36", "args": ["x"]}],
                    "containers": [{"name": "app", "image": "r:5000/web:1.2.3", "env": [{"name": "A", "value": "b"}],
                        "resources": {"limits": {"cpu": "1"}}}]}}},
            "status": {"replicas": 2}});
        let cj = json!({"metadata": {"name": "nightly", "namespace": "shop"}, "spec": {"schedule": "@daily",
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "job", "image": "job:latest"}]}}}}}});
        let pod = |ns: &str, owner: serde_json::Value, id: &str| {
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": ns, "labels": {"app": "web"}, "ownerReferences": [owner],
                "annotations": {"kubernetes.io/config.mirror": "x"}, "managedFields": [{"manager": "kubelet"}]},
            "spec": {"nodeName": "n1", "volumes": [{"name": "v"}], "containers": [{"name": "app", "image": "r:5000/web:1.2.3"}],
                "initContainers": [{"name": "init", "image": "busybox:1.36"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1",
                "containerStatuses": [{"name": "app", "imageID": id, "ready": true, "state": {"running": {}}}],
                "initContainerStatuses": [{"name": "init", "imageID": "sha256:iii", "restartCount": 0}]}})
        };
        let pods = vec![
            pod("shop", json!({"kind": "ReplicaSet", "name": "web-1", "uid": "x", "controller": true}), "r@sha256:aaa"),
            pod("kube-system", json!({"kind": "Node", "name": "cp1", "uid": "y"}), "r@sha256:bbb"),
            pod("shop", json!({"kind": "Job", "name": "nightly-2900", "uid": "z"}), "job@sha256:jjj"),
        ];
        let decode = |trim: &Trim, v: &Value| trim.prune.decode(&v.to_string()).unwrap();
        let trimmed_pods: Vec<Value> = pods.iter().map(|p| decode(&POD_TRIM, p)).collect();
        let workloads = vec![("Deployment".to_string(), dep.clone()), ("CronJob".to_string(), cj.clone())];
        let trimmed_workloads: Vec<(String, Value)> =
            workloads.iter().map(|(k, w)| (k.clone(), decode(&WORKLOAD_TRIM, w))).collect();
        let whole = workload_images(workloads.clone(), pods.clone());
        assert_eq!(whole.len(), 3);
        assert_eq!(workload_images(trimmed_workloads.clone(), trimmed_pods.clone()), whole);
        assert_eq!(static_pod_images(trimmed_pods.clone()), static_pod_images(pods.clone()));
        assert_eq!(static_pod_images(pods.clone()).len(), 2);
        // They do drop what is not read.
        assert!(trimmed_pods[0].pointer("/status/phase").is_none());
        assert!(trimmed_pods[0].pointer("/metadata/managedFields").is_none());
        assert!(trimmed_workloads[0].1.pointer("/spec/template/spec/containers/0/env").is_none());
        assert!(trimmed_workloads[0].1.pointer("/metadata/annotations/meta.helm.sh~1release-name").is_some());
        // The trims' in-place form drops the same.
        let mut applied = pods[0].clone();
        (POD_TRIM.apply)(&mut applied);
        assert_eq!(applied, trimmed_pods[0]);
    }

    #[test]
    fn static_pods_and_nodes() {
        let pods = vec![
            json!({"metadata": {"name": "etcd-cp1", "namespace": "kube-system", "labels": {"component": "etcd"},
                "ownerReferences": [{"kind": "Node", "name": "cp1"}]},
                "spec": {"containers": [{"name": "etcd", "image": "registry.k8s.io/etcd:3.5.15-0"}]},
                "status": {"containerStatuses": [{"name": "etcd", "imageID": "registry.k8s.io/etcd@sha256:e1"}]}}),
            json!({"metadata": {"name": "web-1", "namespace": "kube-system"},
                "spec": {"containers": [{"name": "x", "image": "x:1"}]}}),
        ];
        let uses = static_pod_images(pods);
        assert_eq!(uses.len(), 1);
        assert_eq!((uses[0].name.as_str(), uses[0].image.as_str()), ("etcd", "registry.k8s.io/etcd:3.5.15-0"));
        let nodes: Vec<Value> = ["a", "b", "c"]
            .iter()
            .zip(["v1.35.2", "v1.35.2", "v1.34.1"])
            .map(|(n, k)| json!({"metadata": {"name": n}, "status": {"nodeInfo": {"kubeletVersion": k, "containerRuntimeVersion": "containerd://1.7.27"}}}))
            .collect();
        let g = node_groups(&nodes);
        assert_eq!(g.len(), 3);
        assert_eq!((g[0].component.as_str(), g[0].version.as_str(), g[0].nodes.len()), ("kubelet", "v1.34.1", 1));
        assert_eq!((g[1].component.as_str(), g[1].version.as_str(), g[1].nodes.len()), ("kubelet", "v1.35.2", 2));
        assert_eq!((g[2].component.as_str(), g[2].version.as_str(), g[2].nodes.len()), ("containerd", "1.7.27", 3));
    }
}
