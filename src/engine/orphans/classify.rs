//! Putting the evidence together: for each examined object its class, reasons and users.
//! Pure: takes the inventory, returns items; the unit tests below feed it objects in memory.

use super::evidence::{HelmState, managed_reasons, protected_reasons, written_secrets};
use super::graph::{ReferenceGraph, name_of, ns_of, str_at};
use super::inventory::{Inventory, Source};
use super::rules::{OrphanRules, object_sources};
use super::usage::{Existing, UsageContext, Verdict, is_candidate, judge};
use crate::report::duration::{exact_duration, parse_timestamp, short_duration};
use crate::report::orphan_kinds::ExaminedKind;
use crate::report::orphans::{EvidenceClass, OrphanItem};

/// The kinds custom resources can reference (see `references`).
const CUSTOM_TARGETS: &[ExaminedKind] = &[
    ExaminedKind::ConfigMap,
    ExaminedKind::Secret,
    ExaminedKind::ServiceAccount,
    ExaminedKind::Service,
    ExaminedKind::PersistentVolumeClaim,
];

/// The user's policy for one scan.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub rules: OrphanRules,
    /// Objects younger than this are never called orphans.
    pub older_than_seconds: u64,
    /// Seconds since the epoch, "now" for ages.
    pub now: i64,
}

/// Class every examined object of `kinds` in the inventory.
pub fn classify(inv: &Inventory, kinds: &[ExaminedKind], policy: &Policy) -> Vec<OrphanItem> {
    let mut out = Vec::new();
    classify_each(inv, kinds, policy, |item| out.push(item));
    out
}

/// Class every examined object of `kinds` in the inventory, handing each item to `sink` as it is
/// made (a scan keeps only those it shows).
pub fn classify_each(inv: &Inventory, kinds: &[ExaminedKind], policy: &Policy, mut sink: impl FnMut(OrphanItem)) {
    let graph = ReferenceGraph::build(inv);
    let existing = Existing::from_inventory(inv);
    let helm = HelmState::from_inventory(inv);
    let writers = written_secrets(inv);
    let ctx = UsageContext { graph: &graph, existing: &existing };
    for &kind in kinds {
        for o in inv.get(Source::of_kind(kind)) {
            if kind.namespaced()
                && let Some(ns) = &inv.namespace
                && ns_of(o) != ns
            {
                continue;
            }
            if !is_candidate(kind, o) {
                continue;
            }
            let verdict = judge(kind, o, &ctx);
            let release = helm.release_of(o);
            let protected = protected_reasons(kind, o);
            let managed = managed_reasons(kind, o, release.as_ref(), &writers);
            let age = str_at(o, "/metadata/creationTimestamp").and_then(parse_timestamp).map(|t| policy.now - t);
            let (ns, name) = (ns_of(o), name_of(o));
            let sources = object_sources(o);
            let ignore = policy.rules.ignore.iter().find(|r| r.matches(kind.kind(), ns, name, &sources));
            let user_protect = policy.rules.protect.iter().find(|r| r.matches(kind.kind(), ns, name, &sources));

            let used_by = match &verdict {
                Verdict::Used(u) => u.clone(),
                Verdict::Unused(_) => Vec::new(),
            };
            let leftover = release.as_ref().is_some_and(|r| !r.installed);
            let (class, reasons) = if let Some(rule) = ignore {
                (EvidenceClass::Ignored, vec![rule.describe()])
            } else if !protected.is_empty() || user_protect.is_some() {
                let mut r = protected;
                if let Some(p) = user_protect {
                    r.push(format!("protected by {}", p.describe()));
                }
                (EvidenceClass::Protected, r)
            } else if let Verdict::Used(u) = &verdict {
                (EvidenceClass::InUse, vec![used_summary(u)])
            } else if !managed.is_empty() {
                (EvidenceClass::Managed, managed)
            } else {
                let Verdict::Unused(why) = &verdict else { unreachable!("used was handled above") };
                let mut r = vec![why.clone()];
                if let Some(rel) = release.as_ref().filter(|_| leftover) {
                    r.push(format!(
                        "leftover of Helm release {}/{}, which is no longer installed",
                        rel.namespace, rel.name
                    ));
                }
                let unread: Vec<&str> = inv
                    .skipped
                    .iter()
                    .filter(|k| CUSTOM_TARGETS.contains(&kind) && k.covers(ns))
                    .map(|k| k.resource.as_str())
                    .collect();
                match age {
                    _ if !unread.is_empty() => {
                        r.insert(
                            0,
                            format!(
                                "not certain: custom resources {} were not read, and they could reference it",
                                unread.join(", ")
                            ),
                        );
                        (EvidenceClass::Ignored, r)
                    }
                    Some(a) if a < policy.older_than_seconds as i64 => {
                        r.insert(
                            0,
                            format!(
                                "younger than --older-than {} (created {} ago)",
                                exact_duration(policy.older_than_seconds),
                                short_duration(a)
                            ),
                        );
                        (EvidenceClass::Ignored, r)
                    }
                    _ => (EvidenceClass::Orphan, r),
                }
            };
            sink(OrphanItem {
                api_version: str_at(o, "/apiVersion").unwrap_or("").to_string(),
                kind: kind.kind().to_string(),
                namespace: kind.namespaced().then(|| ns.to_string()),
                name: name.to_string(),
                class,
                reasons,
                used_by,
                age_seconds: age,
                helm_release: release,
                sources,
                examined: kind,
                leftover: leftover && class == EvidenceClass::Orphan,
            });
        }
    }
}

/// One line for the table: `used by Deployment shop/web volume config (+2 more)`. Uses that
/// are already phrases (`grants ...`, `scales ...`, `selects ...`) are shown as they are.
fn used_summary(uses: &[String]) -> String {
    let Some(first) = uses.first() else { return String::new() };
    const PHRASES: &[&str] =
        &["grants ", "scales ", "selects ", "routes ", "bound ", "applies ", "aggregated ", "ExternalName "];
    let phrase = if PHRASES.iter().any(|p| first.starts_with(p)) { first.clone() } else { format!("used by {first}") };
    if uses.len() > 1 { format!("{phrase} (+{} more)", uses.len() - 1) } else { phrase }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use serde_json::{Value, json};

    use super::*;
    use crate::engine::orphans::inventory::needs;
    use crate::engine::select::ObjectRule;

    const OLD: &str = "2020-01-01T00:00:00Z";
    const NOW: i64 = 1_700_000_000;

    /// An object of `kind` named `name` (namespace `shop` unless cluster-scoped), merged with `extra`.
    fn o(kind: &str, name: &str, extra: Value) -> Value {
        let cluster = [
            "PersistentVolume",
            "ClusterRole",
            "ClusterRoleBinding",
            "StorageClass",
            "PriorityClass",
            "ValidatingWebhookConfiguration",
            "APIService",
        ];
        let mut v = json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "creationTimestamp": OLD}});
        if !cluster.contains(&kind) {
            v["metadata"]["namespace"] = json!("shop");
        }
        merge(&mut v, extra);
        v
    }

    fn merge(a: &mut Value, b: Value) {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    fn fixture() -> Inventory {
        use Source as S;
        let tmpl = |labels: Value, spec: Value| json!({"metadata": {"labels": labels}, "spec": spec});
        let lists = vec![
            (S::Pods, vec![o("Pod", "p1", json!({"metadata": {"labels": {"app": "web"}, "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1"}]},
                "spec": {"serviceAccountName": "runner", "priorityClassName": "high", "containers": [{"name": "c"}],
                    "volumes": [{"name": "a", "configMap": {"name": "a"}}, {"name": "b", "secret": {"secretName": "b"}},
                                {"name": "c", "persistentVolumeClaim": {"claimName": "c"}}, {"name": "scratch", "ephemeral": {}}]}}))]),
            (S::Deployments, vec![
                o("Deployment", "web", json!({"spec": {"replicas": 2, "template": tmpl(json!({"app": "web"}), json!({"serviceAccountName": "runner", "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "d"}}]}]}))}})),
                o("Deployment", "zero", json!({"spec": {"replicas": 0, "template": tmpl(json!({"app": "zero"}), json!({"volumes": [{"name": "e", "configMap": {"name": "e"}}]}))}})),
                o("Deployment", "scaled", json!({"spec": {"replicas": 0, "template": tmpl(json!({"app": "scaled"}), json!({}))}})),
            ]),
            (S::StatefulSets, vec![o("StatefulSet", "db", json!({"spec": {"replicas": 0, "serviceName": "db", "template": tmpl(json!({"app": "db"}), json!({})),
                "volumeClaimTemplates": [{"metadata": {"name": "data"}}]}}))]),
            (S::DaemonSets, vec![o("DaemonSet", "ds", json!({"spec": {"template": tmpl(json!({"app": "ds"}), json!({"volumes": [{"name": "f", "secret": {"secretName": "f"}}]}))}}))]),
            (S::ReplicaSets, vec![o("ReplicaSet", "web-1", json!({"spec": {"replicas": 2, "template": tmpl(json!({"app": "web"}), json!({}))}}))]),
            (S::Jobs, vec![
                o("Job", "done", json!({"spec": {"template": tmpl(json!({}), json!({"containers": [{"name": "j", "env": [{"name": "G", "valueFrom": {"configMapKeyRef": {"name": "g", "key": "k"}}}]}]}))},
                    "status": {"conditions": [{"type": "Complete", "status": "True"}]}})),
                o("Job", "cron-run", json!({"metadata": {"ownerReferences": [{"kind": "CronJob", "name": "cj"}]}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}})),
                o("Job", "running", json!({})),
            ]),
            (S::CronJobs, vec![o("CronJob", "cj", json!({"spec": {"jobTemplate": {"spec": {"template": tmpl(json!({}), json!({"containers": [{"name": "x", "envFrom": [{"secretRef": {"name": "h"}}]}]}))}}}}))]),
            (S::ConfigMaps, ["a", "d", "e", "g", "unused-cm", "kube-root-ca.crt"].iter().map(|n| o("ConfigMap", n, json!({}))).chain([
                o("ConfigMap", "from-kept", json!({"metadata": {"annotations": {"meta.helm.sh/release-name": "kept", "meta.helm.sh/release-namespace": "shop"}}})),
                o("ConfigMap", "from-gone", json!({"metadata": {"annotations": {"meta.helm.sh/release-name": "gone"}}})),
                o("ConfigMap", "fresh", json!({"metadata": {"creationTimestamp": "2023-11-14T22:00:00Z"}})),
                o("ConfigMap", "skip-me", json!({})),
            ]).collect()),
            (S::Secrets, ["b", "f", "h", "pull", "listed", "tls", "gw", "iss", "cert", "unused-secret"].iter().map(|n| o("Secret", n, json!({}))).chain([
                o("Secret", "runner-token", json!({"metadata": {"annotations": {"kubernetes.io/service-account.name": "tokened"}}})),
                o("Secret", "sh.helm.release.v1.kept.v1", json!({"metadata": {"labels": {"owner": "helm", "name": "kept", "status": "deployed", "version": "1"}}})),
            ]).collect()),
            (S::HelmStorageSecrets, vec![o("Secret", "sh.helm.release.v1.kept.v1", json!({"metadata": {"labels": {"owner": "helm", "name": "kept", "status": "deployed", "version": "1"}}}))]),
            (S::ServiceAccounts, vec![
                o("ServiceAccount", "runner", json!({"imagePullSecrets": [{"name": "pull"}], "secrets": [{"name": "listed"}]})),
                o("ServiceAccount", "lonely", json!({})), o("ServiceAccount", "default", json!({})),
                o("ServiceAccount", "bound", json!({})), o("ServiceAccount", "tokened", json!({})),
            ]),
            (S::Services, vec![
                o("Service", "web", json!({"spec": {"selector": {"app": "web"}}})),
                o("Service", "db", json!({"spec": {"clusterIP": "None"}})),
                o("Service", "ghost", json!({"spec": {"selector": {"app": "ghost"}}})),
                o("Service", "api", json!({"spec": {}})), o("Service", "metrics", json!({"spec": {}})),
                o("Service", "eps", json!({"spec": {}})), o("Service", "routed", json!({"spec": {}})),
            ]),
            (S::EndpointSlices, vec![o("EndpointSlice", "eps-1", json!({"metadata": {"labels": {"kubernetes.io/service-name": "eps"}}, "endpoints": [{"addresses": ["10.0.0.9"]}]})),
                o("EndpointSlice", "ghost-1", json!({"metadata": {"labels": {"kubernetes.io/service-name": "ghost"}}, "endpoints": []}))]),
            (S::PersistentVolumeClaims, vec![
                o("PersistentVolumeClaim", "c", json!({"spec": {"storageClassName": "sc1"}})),
                o("PersistentVolumeClaim", "p1-scratch", json!({})), o("PersistentVolumeClaim", "data-db-0", json!({})),
                o("PersistentVolumeClaim", "data-db-x", json!({})), o("PersistentVolumeClaim", "unused-pvc", json!({})),
            ]),
            (S::PersistentVolumes, vec![
                o("PersistentVolume", "pv1", json!({"spec": {"claimRef": {"namespace": "shop", "name": "c"}}, "status": {"phase": "Bound"}})),
                o("PersistentVolume", "pv2", json!({"status": {"phase": "Available"}})),
            ]),
            (S::Roles, vec![o("Role", "r1", json!({})), o("Role", "r2", json!({}))]),
            (S::ClusterRoles, vec![
                o("ClusterRole", "cr-bound", json!({})), o("ClusterRole", "cr-rb", json!({})), o("ClusterRole", "cr-unused", json!({})),
                o("ClusterRole", "cr-agg", json!({"metadata": {"labels": {"agg": "true"}}})),
                o("ClusterRole", "cr-aggregator", json!({"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}})),
            ]),
            (S::RoleBindings, vec![
                o("RoleBinding", "rb1", json!({"roleRef": {"kind": "Role", "name": "r1"}, "subjects": [{"kind": "ServiceAccount", "name": "bound"}]})),
                o("RoleBinding", "rb2", json!({"roleRef": {"kind": "ClusterRole", "name": "cr-rb"}, "subjects": [{"kind": "User", "name": "alice"}]})),
                o("RoleBinding", "rb3", json!({"roleRef": {"kind": "Role", "name": "missing"}, "subjects": [{"kind": "User", "name": "alice"}]})),
                o("RoleBinding", "rb4", json!({"roleRef": {"kind": "Role", "name": "r1"}, "subjects": [{"kind": "ServiceAccount", "name": "gone"}]})),
            ]),
            (S::ClusterRoleBindings, vec![o("ClusterRoleBinding", "crb1", json!({"roleRef": {"kind": "ClusterRole", "name": "cr-bound"}, "subjects": [{"kind": "ServiceAccount", "name": "runner", "namespace": "shop"}]}))]),
            (S::HorizontalPodAutoscalers, vec![
                o("HorizontalPodAutoscaler", "h1", json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "scaled"}}})),
                o("HorizontalPodAutoscaler", "h2", json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "nope"}}})),
            ]),
            (S::PodDisruptionBudgets, vec![o("PodDisruptionBudget", "pdb1", json!({"spec": {"selector": {"matchLabels": {"app": "db"}}}})),
                o("PodDisruptionBudget", "pdb2", json!({"spec": {"selector": {"matchLabels": {"app": "zzz"}}}}))]),
            (S::NetworkPolicies, vec![o("NetworkPolicy", "np1", json!({"spec": {"podSelector": {}}})),
                o("NetworkPolicy", "np2", json!({"spec": {"podSelector": {"matchLabels": {"app": "zzz"}}}})),
                o("NetworkPolicy", "np3", json!({"spec": {"podSelector": {"matchLabels": {"app": "ds"}}}}))]),
            (S::Ingresses, vec![
                o("Ingress", "ing1", json!({"spec": {"tls": [{"secretName": "tls"}], "rules": [{"http": {"paths": [{"backend": {"service": {"name": "routed"}}}]}}]}})),
                o("Ingress", "ing2", json!({"spec": {"defaultBackend": {"service": {"name": "nope"}}}})),
            ]),
            (S::StorageClasses, vec![o("StorageClass", "sc1", json!({})), o("StorageClass", "sc2", json!({}))]),
            (S::PriorityClasses, vec![o("PriorityClass", "high", json!({})), o("PriorityClass", "low", json!({}))]),
            (S::Gateways, vec![o("Gateway", "gw1", json!({"spec": {"listeners": [{"name": "https", "tls": {"certificateRefs": [{"name": "gw"}]}}]}}))]),
            (S::Issuers, vec![o("Issuer", "iss1", json!({"spec": {"ca": {"secretName": "iss"}}}))]),
            (S::Certificates, vec![o("Certificate", "cert1", json!({"spec": {"secretName": "cert"}}))]),
            (S::ValidatingWebhooks, vec![o("ValidatingWebhookConfiguration", "vw", json!({"webhooks": [{"name": "w", "clientConfig": {"service": {"namespace": "shop", "name": "api"}}}]}))]),
            (S::ApiServices, vec![o("APIService", "v1.metrics", json!({"spec": {"service": {"namespace": "shop", "name": "metrics"}}}))]),
        ];
        // With -A the scan-wide and cluster-wide RoleBinding lists are the same objects.
        let rbs = lists.iter().find(|(s, _)| *s == S::RoleBindings).map(|(_, l)| l.clone()).unwrap_or_default();
        let mut lists = lists;
        lists.extend(beyond_pods());
        lists.push((S::AllRoleBindings, rbs));
        Inventory::from_objects(None, lists)
    }

    /// Uses outside pods: storage, ingress annotations, Gateway API routes, custom resources.
    fn beyond_pods() -> Vec<(Source, Vec<Value>)> {
        use Source as S;
        let secret = |n: &str| o("Secret", n, json!({}));
        let cr = |api: &str, kind: &str, name: &str, extra: Value| {
            let mut v = o(kind, name, extra);
            v["apiVersion"] = json!(api);
            v
        };
        vec![
            (
                S::Secrets,
                [
                    "csi-np",
                    "sc-prov",
                    "pvc1-stage",
                    "nginx-auth",
                    "gizmo-creds",
                    "es-target",
                    "xns-cert",
                    "granted-cert",
                    "prom-extra",
                    "am-config",
                    "ceph-user",
                ]
                .iter()
                .map(|n| secret(n))
                .chain([o(
                    "Secret",
                    "argo-repo",
                    json!({"metadata": {"labels": {"argocd.argoproj.io/secret-type": "repository"}}}),
                )])
                .collect(),
            ),
            (
                S::ConfigMaps,
                vec![
                    o("ConfigMap", "headers", json!({})),
                    o("ConfigMap", "flux-values", json!({})),
                    o("ConfigMap", "lonely-cm", json!({})),
                    o("ConfigMap", "gw-ca", json!({})),
                    o("ConfigMap", "gw-ca-denied", json!({})),
                    o("ConfigMap", "gw-params", json!({})),
                ],
            ),
            (
                S::Services,
                vec![
                    o("Service", "route-backend", json!({"spec": {}})),
                    o("Service", "xns-backend", json!({"spec": {}})),
                    o("Service", "xns-denied", json!({"spec": {}})),
                    o("Service", "canary", json!({"spec": {}})),
                    o("Service", "default-be", json!({"spec": {}})),
                ],
            ),
            (S::ServiceAccounts, vec![o("ServiceAccount", "gizmo-sa", json!({}))]),
            (
                S::PersistentVolumes,
                vec![o(
                    "PersistentVolume",
                    "pv-csi",
                    json!({"spec": {"claimRef": {"namespace": "shop", "name": "c"},
                "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-np", "namespace": "shop"}}}, "status": {"phase": "Bound"}}),
                )],
            ),
            (
                S::StorageClasses,
                vec![o(
                    "StorageClass",
                    "sc-csi",
                    json!({"parameters": {
                "csi.storage.k8s.io/provisioner-secret-name": "sc-prov", "csi.storage.k8s.io/provisioner-secret-namespace": "shop",
                "csi.storage.k8s.io/node-stage-secret-name": "${pvc.name}-stage", "csi.storage.k8s.io/node-stage-secret-namespace": "${pvc.namespace}",
                "userSecretName": "ceph-user"}}),
                )],
            ),
            (
                S::Ingresses,
                vec![o(
                    "Ingress",
                    "ing-annotated",
                    json!({"metadata": {"annotations": {
                "nginx.ingress.kubernetes.io/auth-secret": "nginx-auth", "nginx.ingress.kubernetes.io/custom-headers": "shop/headers",
                "nginx.ingress.kubernetes.io/default-backend": "default-be"}},
                "spec": {"defaultBackend": {"service": {"name": "routed"}}}}),
                )],
            ),
            (
                S::Gateways,
                vec![
                    {
                        let mut g = o(
                            "Gateway",
                            "edge",
                            json!({"spec": {"listeners": [{"name": "a", "tls": {"certificateRefs": [{"name": "xns-cert", "namespace": "shop"}]}},
                    {"name": "b", "tls": {"certificateRefs": [{"name": "granted-cert", "namespace": "shop"}],
                        "frontendValidation": {"caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "gw-ca", "namespace": "shop"},
                            {"group": "", "kind": "ConfigMap", "name": "gw-ca-denied", "namespace": "shop"}]}}}]}}),
                        );
                        g["metadata"]["namespace"] = json!("infra");
                        g
                    },
                    o(
                        "Gateway",
                        "local-gw",
                        json!({"spec": {"infrastructure": {"parametersRef": {"group": "", "kind": "ConfigMap", "name": "gw-params"}}, "listeners": []}}),
                    ),
                ],
            ),
            (
                S::ReferenceGrants,
                vec![
                    o(
                        "ReferenceGrant",
                        "from-web",
                        json!({"spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "web"}], "to": [{"group": "", "kind": "Service", "name": "xns-backend"}]}}),
                    ),
                    o(
                        "ReferenceGrant",
                        "from-infra",
                        json!({"spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "infra"}], "to": [{"group": "", "kind": "Secret", "name": "granted-cert"}, {"group": "", "kind": "ConfigMap", "name": "gw-ca"}]}}),
                    ),
                ],
            ),
            (
                S::HttpRoutes,
                vec![
                    o(
                        "HTTPRoute",
                        "local",
                        json!({"spec": {"rules": [{"backendRefs": [{"name": "route-backend", "port": 80}]}]}}),
                    ),
                    {
                        let mut r = o(
                            "HTTPRoute",
                            "remote",
                            json!({"spec": {"rules": [{"backendRefs": [{"name": "xns-backend", "namespace": "shop"}, {"name": "xns-denied", "namespace": "shop"}]}]}}),
                        );
                        r["metadata"]["namespace"] = json!("web");
                        r
                    },
                ],
            ),
            (
                S::Rollouts,
                vec![o(
                    "Rollout",
                    "ro",
                    json!({"spec": {"strategy": {"canary": {"canaryService": "canary"}}, "template": {"spec": {}}}}),
                )],
            ),
            (
                S::CustomResources,
                vec![
                    cr(
                        "example.io/v1",
                        "Gizmo",
                        "g1",
                        json!({"spec": {"credentialsSecretRef": {"name": "gizmo-creds"}, "serviceAccountName": "gizmo-sa"}}),
                    ),
                    cr(
                        "helm.toolkit.fluxcd.io/v2",
                        "HelmRelease",
                        "hr",
                        json!({"spec": {"valuesFrom": [{"kind": "ConfigMap", "name": "flux-values"}]}}),
                    ),
                    cr(
                        "external-secrets.io/v1",
                        "ExternalSecret",
                        "es",
                        json!({"spec": {"target": {"name": "es-target"}}}),
                    ),
                    cr("monitoring.coreos.com/v1", "Prometheus", "prom", json!({"spec": {"secrets": ["prom-extra"]}})),
                    cr(
                        "monitoring.coreos.com/v1",
                        "Alertmanager",
                        "am",
                        json!({"spec": {"configSecret": "am-config"}}),
                    ),
                ],
            ),
        ]
    }

    fn policy() -> Policy {
        let mut rules = OrphanRules::default();
        rules.ignore.push(ObjectRule::parse_cli("--ignore", "ConfigMap:shop/skip-me").unwrap());
        rules.protect.push(ObjectRule::parse_cli("--ignore", "kind=Secret,name=unused-*").unwrap());
        Policy { rules, older_than_seconds: 3600, now: NOW }
    }

    fn classes(items: &[OrphanItem]) -> BTreeMap<String, &'static str> {
        items.iter().map(|i| (format!("{}/{}", i.kind, i.name), i.class.word())).collect()
    }

    #[test]
    fn every_kind_is_classed_by_its_rule() {
        let items = classify(&fixture(), &ExaminedKind::ALL, &policy());
        let got = classes(&items);
        let expected: BTreeMap<String, &str> = [
            ("ConfigMap/a", "in use"),
            ("ConfigMap/d", "in use"),
            ("ConfigMap/e", "in use"),
            ("ConfigMap/g", "in use"),
            ("ConfigMap/unused-cm", "orphan"),
            ("ConfigMap/kube-root-ca.crt", "protected"),
            ("ConfigMap/from-kept", "managed"),
            ("ConfigMap/from-gone", "orphan"),
            ("ConfigMap/fresh", "ignored"),
            ("ConfigMap/skip-me", "ignored"),
            ("Secret/b", "in use"),
            ("Secret/f", "in use"),
            ("Secret/h", "in use"),
            ("Secret/pull", "in use"),
            ("Secret/listed", "in use"),
            ("Secret/tls", "in use"),
            ("Secret/gw", "in use"),
            ("Secret/iss", "in use"),
            ("Secret/cert", "managed"),
            ("Secret/unused-secret", "protected"),
            ("Secret/runner-token", "protected"),
            ("Secret/sh.helm.release.v1.kept.v1", "protected"),
            ("ServiceAccount/runner", "in use"),
            ("ServiceAccount/lonely", "orphan"),
            ("ServiceAccount/default", "protected"),
            ("ServiceAccount/bound", "in use"),
            ("ServiceAccount/tokened", "in use"),
            ("Service/web", "in use"),
            ("Service/db", "in use"),
            ("Service/ghost", "orphan"),
            ("Service/api", "in use"),
            ("Service/metrics", "in use"),
            ("Service/eps", "in use"),
            ("Service/routed", "in use"),
            ("PersistentVolumeClaim/c", "in use"),
            ("PersistentVolumeClaim/p1-scratch", "in use"),
            ("PersistentVolumeClaim/data-db-0", "in use"),
            ("PersistentVolumeClaim/data-db-x", "orphan"),
            ("PersistentVolumeClaim/unused-pvc", "orphan"),
            ("PersistentVolume/pv1", "in use"),
            ("PersistentVolume/pv2", "orphan"),
            ("Role/r1", "in use"),
            ("Role/r2", "orphan"),
            ("ClusterRole/cr-bound", "in use"),
            ("ClusterRole/cr-rb", "in use"),
            ("ClusterRole/cr-unused", "orphan"),
            ("ClusterRole/cr-agg", "in use"),
            ("ClusterRole/cr-aggregator", "orphan"),
            ("RoleBinding/rb1", "in use"),
            ("RoleBinding/rb2", "in use"),
            ("RoleBinding/rb3", "orphan"),
            ("RoleBinding/rb4", "orphan"),
            ("ClusterRoleBinding/crb1", "in use"),
            ("HorizontalPodAutoscaler/h1", "in use"),
            ("HorizontalPodAutoscaler/h2", "orphan"),
            ("PodDisruptionBudget/pdb1", "in use"),
            ("PodDisruptionBudget/pdb2", "orphan"),
            ("NetworkPolicy/np1", "in use"),
            ("NetworkPolicy/np2", "orphan"),
            ("NetworkPolicy/np3", "in use"),
            ("Ingress/ing1", "in use"),
            ("Ingress/ing2", "orphan"),
            ("Deployment/zero", "orphan"),
            ("Deployment/scaled", "in use"),
            ("StatefulSet/db", "orphan"),
            ("Job/done", "orphan"),
            ("StorageClass/sc1", "in use"),
            ("StorageClass/sc2", "orphan"),
            ("PriorityClass/high", "in use"),
            ("PriorityClass/low", "orphan"),
            ("Secret/csi-np", "in use"),
            ("Secret/sc-prov", "in use"),
            ("Secret/pvc1-stage", "in use"),
            ("Secret/nginx-auth", "in use"),
            ("Secret/gizmo-creds", "in use"),
            ("Secret/es-target", "managed"),
            ("Secret/xns-cert", "orphan"),
            ("Secret/granted-cert", "in use"),
            ("Secret/prom-extra", "in use"),
            ("Secret/am-config", "in use"),
            ("Secret/ceph-user", "in use"),
            ("Secret/argo-repo", "in use"),
            ("ConfigMap/headers", "in use"),
            ("ConfigMap/flux-values", "in use"),
            ("ConfigMap/lonely-cm", "orphan"),
            ("ConfigMap/gw-ca", "in use"),
            ("ConfigMap/gw-ca-denied", "orphan"),
            ("ConfigMap/gw-params", "in use"),
            ("Service/route-backend", "in use"),
            ("Service/xns-backend", "in use"),
            ("Service/xns-denied", "orphan"),
            ("Service/canary", "in use"),
            ("Service/default-be", "in use"),
            ("ServiceAccount/gizmo-sa", "in use"),
            ("PersistentVolume/pv-csi", "in use"),
            ("StorageClass/sc-csi", "orphan"),
            ("Ingress/ing-annotated", "in use"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(got, expected);

        let find = |k: &str, n: &str| items.iter().find(|i| i.kind == k && i.name == n).unwrap();
        let gone = find("ConfigMap", "from-gone");
        assert!(gone.leftover);
        assert!(gone.reasons.iter().any(|r| r.contains("leftover of Helm release shop/gone")));
        assert!(
            find("ConfigMap", "fresh").reasons[0].starts_with("younger than --older-than 1h (created "),
            "{:?}",
            find("ConfigMap", "fresh").reasons
        );
        assert_eq!(find("ConfigMap", "e").used_by, vec!["Deployment shop/zero (0 replicas) volume e"]);
        assert_eq!(find("PersistentVolumeClaim", "p1-scratch").used_by, vec!["Pod shop/p1 ephemeral volume scratch"]);
        assert_eq!(find("ConfigMap", "a").used_by, vec!["pods of ReplicaSet shop/web-1 volume a"]);
        assert_eq!(find("Secret", "cert").reasons, vec!["cert-manager Certificate shop/cert1 writes it"]);
        assert!(find("Secret", "unused-secret").reasons[0].starts_with("protected by --ignore kind=Secret"));
        assert_eq!(find("RoleBinding", "rb3").reasons, vec!["its Role missing does not exist"]);
        assert_eq!(find("RoleBinding", "rb4").reasons, vec!["none of its subjects exist (ServiceAccount shop/gone)"]);
        assert_eq!(find("Deployment", "scaled").used_by, vec!["HorizontalPodAutoscaler shop/h1 scaleTargetRef"]);
        assert_eq!(
            find("Deployment", "scaled").reasons,
            vec!["used by HorizontalPodAutoscaler shop/h1 scaleTargetRef"]
        );
        assert_eq!(find("RoleBinding", "rb2").reasons, vec!["grants ClusterRole cr-rb to User alice"]);
        assert_eq!(find("Secret", "b").reasons, vec!["used by pods of ReplicaSet shop/web-1 volume b"]);
        // The evidence names the field that refers to it.
        let evidence: &[(&str, &str, &str)] = &[
            ("Secret", "csi-np", "PersistentVolume pv-csi spec.csi.nodePublishSecretRef"),
            (
                "Secret",
                "pvc1-stage",
                "StorageClass sc-csi parameter csi.storage.k8s.io/node-stage-secret-name (may use: template ${pvc.name}-stage in ${pvc.namespace})",
            ),
            ("Secret", "sc-prov", "StorageClass sc-csi parameter csi.storage.k8s.io/provisioner-secret-name"),
            ("Secret", "nginx-auth", "Ingress shop/ing-annotated annotation nginx.ingress.kubernetes.io/auth-secret"),
            (
                "Secret",
                "ceph-user",
                "StorageClass sc-csi parameter userSecretName (may use: ceph-user in the claim's namespace)",
            ),
            (
                "ConfigMap",
                "gw-ca",
                "Gateway infra/edge spec.listeners[1].tls.frontendValidation.caCertificateRefs[0] (allowed by ReferenceGrant shop/from-infra)",
            ),
            ("ConfigMap", "gw-params", "Gateway shop/local-gw spec.infrastructure.parametersRef"),
            ("Secret", "gizmo-creds", "Gizmo shop/g1 spec.credentialsSecretRef"),
            ("ConfigMap", "flux-values", "HelmRelease shop/hr spec.valuesFrom[0]"),
            (
                "Service",
                "xns-backend",
                "HTTPRoute web/remote spec.rules[0].backendRefs[0] (allowed by ReferenceGrant shop/from-web)",
            ),
            (
                "Secret",
                "granted-cert",
                "Gateway infra/edge listener b certificateRefs (allowed by ReferenceGrant shop/from-infra)",
            ),
            ("Secret", "am-config", "Alertmanager shop/am spec.configSecret"),
            ("Secret", "argo-repo", "Argo CD (label argocd.argoproj.io/secret-type: repository)"),
        ];
        for (kind, name, use_) in evidence {
            assert_eq!(find(kind, name).used_by, vec![use_.to_string()], "{kind} {name}");
        }
        assert_eq!(find("Secret", "es-target").reasons, vec!["external-secrets ExternalSecret shop/es writes it"]);
        // Jobs kept by a CronJob and unfinished Jobs are not examined; running Deployments neither.
        assert!(
            !got.contains_key("Job/cron-run")
                && !got.contains_key("Job/running")
                && !got.contains_key("Deployment/web")
        );
    }

    /// A scan of one kind lists only what `needs` names; it must give the same classes as a
    /// scan with everything listed, or a missing list would turn a used object into an orphan.
    #[test]
    fn each_kind_needs_only_the_lists_it_declares() {
        let full = fixture();
        for kind in ExaminedKind::ALL {
            let sources: BTreeSet<Source> = needs(kind).into_iter().collect();
            let restricted = full.restricted(&sources);
            let all = classify(&full, &[kind], &policy());
            let some = classify(&restricted, &[kind], &policy());
            assert_eq!(classes(&all), classes(&some), "{kind}: needs() misses a list");
            assert!(!all.is_empty(), "{kind}: the fixture has objects of this kind");
        }
    }

    /// A custom resource kind that was not read: what it could reference is not an orphan.
    #[test]
    fn a_skipped_kind_keeps_its_possible_targets_from_being_orphans() {
        let mut inv = fixture();
        inv.skipped.push(crate::report::orphans::SkippedKind {
            resource: "gizmos.example.io".into(),
            kind: "Gizmo".into(),
            namespace: Some("shop".into()),
            namespaced: true,
            reason: "20000 or more objects".into(),
        });
        let items = classify(&inv, &ExaminedKind::ALL, &policy());
        let find = |k: &str, n: &str| items.iter().find(|i| i.kind == k && i.name == n).unwrap();
        let cm = find("ConfigMap", "lonely-cm");
        assert_eq!(cm.class, EvidenceClass::Ignored);
        assert!(cm.reasons[0].contains("custom resources gizmos.example.io were not read"), "{:?}", cm.reasons);
        assert_eq!(find("ServiceAccount", "lonely").class, EvidenceClass::Ignored);
        // Kinds a custom resource cannot reference keep their class.
        assert_eq!(find("Role", "r2").class, EvidenceClass::Orphan);
        // A kind skipped in another namespace does not cover this one.
        inv.skipped[0].namespace = Some("elsewhere".into());
        let items = classify(&inv, &ExaminedKind::ALL, &policy());
        assert!(items.iter().any(|i| i.name == "lonely-cm" && i.class == EvidenceClass::Orphan));
    }

    #[test]
    fn a_namespace_scan_examines_only_that_namespace() {
        let mut inv = fixture();
        inv.namespace = Some("other".into());
        let items = classify(&inv, &[ExaminedKind::ConfigMap, ExaminedKind::StorageClass], &policy());
        assert!(items.iter().all(|i| i.kind == "StorageClass"), "ConfigMaps of namespace shop are not examined");
    }
}
