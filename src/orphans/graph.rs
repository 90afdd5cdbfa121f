//! The reference graph: for every object that something names, who names it and where
//! (`Deployment shop/web volume config`). Built once from the inventory, in memory.
//!
//! Users read: live pods and the pod templates of Deployments, StatefulSets, DaemonSets,
//! ReplicaSets, Jobs, CronJobs (and Argo Rollouts); ServiceAccount `secrets` and
//! `imagePullSecrets`; Ingress TLS and backends; Gateway listener `certificateRefs`;
//! cert-manager Issuer and ClusterIssuer secret references; (Cluster)RoleBinding roleRef and
//! subjects; service-account token Secrets; HPA scaleTargetRef; EndpointSlices; webhook and
//! APIService Services; PV/PVC storageClassName; ClusterRole aggregation. Label selectors
//! (Service, PodDisruptionBudget, NetworkPolicy) are matched later against [`PodLabels`].

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};

use super::inventory::{Inventory, Source};
use super::kinds::ExaminedKind;
use super::podspec::pod_spec_refs;
use super::selector::label_selector_matches;

/// An object that can be used: kind, namespace ("" when cluster-scoped) and name.
pub type Target = (ExaminedKind, String, String);

/// Namespace the cert-manager ClusterIssuers read their Secrets from (cert-manager's default
/// `--cluster-resource-namespace`).
pub const CLUSTER_ISSUER_NAMESPACE: &str = "cert-manager";

/// The labels of a live pod or a pod template, and how to name it in a reason.
#[derive(Debug, Clone)]
pub struct PodLabels {
    pub who: String,
    pub labels: Map<String, Value>,
}

/// Who uses what.
#[derive(Debug, Default)]
pub struct ReferenceGraph {
    uses: HashMap<Target, BTreeSet<String>>,
    /// Per namespace: the labels of every live pod and pod template.
    pub pod_labels: HashMap<String, Vec<PodLabels>>,
    /// Per namespace: StatefulSet volumeClaimTemplate claim prefixes `<template>-<sts>-` and who.
    pub claim_templates: HashMap<String, Vec<(String, String)>>,
}

pub fn str_at<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty())
}

pub fn ns_of(v: &Value) -> &str {
    str_at(v, "/metadata/namespace").unwrap_or("")
}

pub fn name_of(v: &Value) -> &str {
    str_at(v, "/metadata/name").unwrap_or("")
}

fn kind_of(v: &Value) -> &str {
    str_at(v, "/kind").unwrap_or("?")
}

/// `Kind ns/name` (or `Kind name` when cluster-scoped).
pub fn title(v: &Value) -> String {
    let ns = ns_of(v);
    if ns.is_empty() { format!("{} {}", kind_of(v), name_of(v)) } else { format!("{} {ns}/{}", kind_of(v), name_of(v)) }
}

/// Objects of a source, each once (with `-A` the scan-wide and cluster-wide lists of a kind
/// can be the same objects).
fn unique<'a>(inv: &'a Inventory, sources: &[Source]) -> Vec<&'a Value> {
    let mut seen = HashSet::new();
    sources
        .iter()
        .flat_map(|s| inv.get(*s))
        .filter(|o| seen.insert((ns_of(o).to_string(), name_of(o).to_string())))
        .collect()
}

fn array<'v>(v: &'v Value, pointer: &str) -> &'v [Value] {
    v.pointer(pointer).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn replicas_zero(v: &Value) -> bool {
    v.pointer("/spec/replicas").and_then(Value::as_i64) == Some(0)
}

impl ReferenceGraph {
    fn add(&mut self, kind: ExaminedKind, namespace: &str, name: &str, who: String) {
        let ns = if kind.namespaced() { namespace } else { "" };
        self.uses.entry((kind, ns.to_string(), name.to_string())).or_default().insert(who);
    }

    /// Who uses this object (sorted, each once).
    pub fn uses(&self, kind: ExaminedKind, namespace: &str, name: &str) -> Vec<String> {
        let ns = if kind.namespaced() { namespace } else { "" };
        self.uses
            .get(&(kind, ns.to_string(), name.to_string()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub fn build(inv: &Inventory) -> ReferenceGraph {
        let mut g = ReferenceGraph::default();
        g.pods_and_templates(inv);
        g.service_accounts(inv);
        g.ingresses(inv);
        g.gateways(inv);
        g.issuers(inv);
        g.bindings(inv);
        g.token_secrets(inv);
        g.autoscalers(inv);
        g.endpoint_slices(inv);
        g.webhooks_and_api_services(inv);
        g.storage_classes(inv);
        g.aggregation(inv);
        g
    }

    fn pods_and_templates(&mut self, inv: &Inventory) {
        for pod in inv.get(Source::Pods) {
            let ns = ns_of(pod);
            // Pods of a controller are named after it, to keep reasons short.
            let who = match array(pod, "/metadata/ownerReferences").first() {
                Some(owner) => format!(
                    "pods of {} {ns}/{}",
                    str_at(owner, "/kind").unwrap_or("?"),
                    str_at(owner, "/name").unwrap_or("?")
                ),
                None => title(pod),
            };
            if let Some(spec) = pod.get("spec") {
                for r in pod_spec_refs(spec, Some(name_of(pod))) {
                    // Ephemeral claims are per pod: name the pod itself.
                    let w = if r.via.starts_with("ephemeral") { title(pod) } else { who.clone() };
                    self.add(r.kind, ns, &r.name, format!("{w} {}", r.via));
                }
            }
            if let Some(labels) = pod.pointer("/metadata/labels").and_then(Value::as_object) {
                self.pod_labels.entry(ns.to_string()).or_default().push(PodLabels { who, labels: labels.clone() });
            }
        }
        let templates: [(Source, &str); 7] = [
            (Source::Deployments, "/spec/template"),
            (Source::StatefulSets, "/spec/template"),
            (Source::DaemonSets, "/spec/template"),
            (Source::ReplicaSets, "/spec/template"),
            (Source::Jobs, "/spec/template"),
            (Source::CronJobs, "/spec/jobTemplate/spec/template"),
            (Source::Rollouts, "/spec/template"),
        ];
        for (source, pointer) in templates {
            for owner in inv.get(source) {
                let ns = ns_of(owner);
                let scaled_down = matches!(source, Source::Deployments | Source::StatefulSets | Source::Rollouts)
                    && replicas_zero(owner);
                let who = if scaled_down { format!("{} (0 replicas)", title(owner)) } else { title(owner) };
                let Some(template) = owner.pointer(pointer) else { continue };
                if let Some(spec) = template.get("spec") {
                    for r in pod_spec_refs(spec, None) {
                        self.add(r.kind, ns, &r.name, format!("{who} {}", r.via));
                    }
                }
                if let Some(labels) = template.pointer("/metadata/labels").and_then(Value::as_object) {
                    let who = format!("pods of {who}");
                    self.pod_labels.entry(ns.to_string()).or_default().push(PodLabels { who, labels: labels.clone() });
                }
                if source == Source::StatefulSets {
                    if let Some(svc) = str_at(owner, "/spec/serviceName") {
                        self.add(ExaminedKind::Service, ns, svc, format!("{who} serviceName"));
                    }
                    for vct in array(owner, "/spec/volumeClaimTemplates") {
                        if let Some(t) = str_at(vct, "/metadata/name") {
                            self.claim_templates
                                .entry(ns.to_string())
                                .or_default()
                                .push((format!("{t}-{}-", name_of(owner)), format!("{who} volumeClaimTemplate {t}")));
                        }
                    }
                }
            }
        }
    }

    fn service_accounts(&mut self, inv: &Inventory) {
        for sa in inv.get(Source::ServiceAccounts) {
            let ns = ns_of(sa);
            for (field, word) in [("/secrets", "secrets"), ("/imagePullSecrets", "imagePullSecrets")] {
                for s in array(sa, field) {
                    if let Some(n) = str_at(s, "/name") {
                        self.add(ExaminedKind::Secret, ns, n, format!("{} {word}", title(sa)));
                    }
                }
            }
        }
    }

    fn ingresses(&mut self, inv: &Inventory) {
        for ing in inv.get(Source::Ingresses) {
            let ns = ns_of(ing);
            for tls in array(ing, "/spec/tls") {
                if let Some(n) = str_at(tls, "/secretName") {
                    self.add(ExaminedKind::Secret, ns, n, format!("{} tls", title(ing)));
                }
            }
            for svc in ingress_backends(ing) {
                self.add(ExaminedKind::Service, ns, &svc, format!("{} backend", title(ing)));
            }
        }
    }

    fn gateways(&mut self, inv: &Inventory) {
        for gw in inv.get(Source::Gateways) {
            let ns = ns_of(gw);
            for l in array(gw, "/spec/listeners") {
                let lname = str_at(l, "/name").unwrap_or("?");
                for r in array(l, "/tls/certificateRefs") {
                    let kind = str_at(r, "/kind").unwrap_or("Secret");
                    let group = str_at(r, "/group").unwrap_or("");
                    if kind != "Secret" || !group.is_empty() {
                        continue;
                    }
                    if let Some(n) = str_at(r, "/name") {
                        let rns = str_at(r, "/namespace").unwrap_or(ns);
                        self.add(
                            ExaminedKind::Secret,
                            rns,
                            n,
                            format!("{} listener {lname} certificateRefs", title(gw)),
                        );
                    }
                }
            }
        }
    }

    fn issuers(&mut self, inv: &Inventory) {
        for (source, fixed_ns) in [(Source::Issuers, None), (Source::ClusterIssuers, Some(CLUSTER_ISSUER_NAMESPACE))] {
            for issuer in inv.get(source) {
                let ns = fixed_ns.unwrap_or(ns_of(issuer));
                let mut found = Vec::new();
                if let Some(spec) = issuer.get("spec") {
                    secret_names_in(spec, "spec", &mut found);
                }
                for (path, name) in found {
                    self.add(ExaminedKind::Secret, ns, &name, format!("{} {path}", title(issuer)));
                }
            }
        }
    }

    fn bindings(&mut self, inv: &Inventory) {
        for b in unique(inv, &[Source::RoleBindings, Source::AllRoleBindings, Source::ClusterRoleBindings]) {
            let ns = ns_of(b);
            if let Some(role) = str_at(b, "/roleRef/name") {
                match str_at(b, "/roleRef/kind") {
                    Some("Role") => self.add(ExaminedKind::Role, ns, role, format!("{} roleRef", title(b))),
                    Some("ClusterRole") => {
                        self.add(ExaminedKind::ClusterRole, "", role, format!("{} roleRef", title(b)))
                    }
                    _ => {}
                }
            }
            for s in array(b, "/subjects") {
                if str_at(s, "/kind") == Some("ServiceAccount")
                    && let Some(n) = str_at(s, "/name")
                {
                    let sns = str_at(s, "/namespace").unwrap_or(ns);
                    self.add(ExaminedKind::ServiceAccount, sns, n, format!("{} subject", title(b)));
                }
            }
        }
    }

    fn token_secrets(&mut self, inv: &Inventory) {
        for s in inv.get(Source::Secrets) {
            if let Some(sa) = str_at(s, "/metadata/annotations/kubernetes.io~1service-account.name") {
                self.add(ExaminedKind::ServiceAccount, ns_of(s), sa, format!("{} service-account token", title(s)));
            }
        }
    }

    fn autoscalers(&mut self, inv: &Inventory) {
        for hpa in inv.get(Source::HorizontalPodAutoscalers) {
            let kind = match str_at(hpa, "/spec/scaleTargetRef/kind") {
                Some("Deployment") => ExaminedKind::Deployment,
                Some("StatefulSet") => ExaminedKind::StatefulSet,
                _ => continue,
            };
            if let Some(n) = str_at(hpa, "/spec/scaleTargetRef/name") {
                self.add(kind, ns_of(hpa), n, format!("{} scaleTargetRef", title(hpa)));
            }
        }
    }

    fn endpoint_slices(&mut self, inv: &Inventory) {
        for es in inv.get(Source::EndpointSlices) {
            let Some(svc) = str_at(es, "/metadata/labels/kubernetes.io~1service-name") else { continue };
            let ready = array(es, "/endpoints").iter().filter(|e| !array(e, "/addresses").is_empty()).count();
            if ready > 0 {
                self.add(ExaminedKind::Service, ns_of(es), svc, format!("{} ({ready} endpoint(s))", title(es)));
            }
        }
    }

    fn webhooks_and_api_services(&mut self, inv: &Inventory) {
        for source in [Source::ValidatingWebhooks, Source::MutatingWebhooks] {
            for cfg in inv.get(source) {
                for w in array(cfg, "/webhooks") {
                    if let (Some(ns), Some(n)) =
                        (str_at(w, "/clientConfig/service/namespace"), str_at(w, "/clientConfig/service/name"))
                    {
                        let wname = str_at(w, "/name").unwrap_or("?");
                        self.add(ExaminedKind::Service, ns, n, format!("{} webhook {wname}", title(cfg)));
                    }
                }
            }
        }
        for api in inv.get(Source::ApiServices) {
            if let (Some(ns), Some(n)) = (str_at(api, "/spec/service/namespace"), str_at(api, "/spec/service/name")) {
                self.add(ExaminedKind::Service, ns, n, title(api));
            }
        }
    }

    fn storage_classes(&mut self, inv: &Inventory) {
        for o in unique(inv, &[Source::PersistentVolumes, Source::PersistentVolumeClaims]) {
            let class = str_at(o, "/spec/storageClassName")
                .or_else(|| str_at(o, "/metadata/annotations/volume.beta.kubernetes.io~1storage-class"));
            if let Some(c) = class {
                self.add(ExaminedKind::StorageClass, "", c, format!("{} storageClassName", title(o)));
            }
        }
    }

    fn aggregation(&mut self, inv: &Inventory) {
        let roles: Vec<&Value> = inv.get(Source::ClusterRoles).collect();
        for agg in &roles {
            let selectors = array(agg, "/aggregationRule/clusterRoleSelectors");
            if selectors.is_empty() {
                continue;
            }
            for r in &roles {
                let Some(labels) = r.pointer("/metadata/labels").and_then(Value::as_object) else { continue };
                if name_of(r) != name_of(agg) && selectors.iter().any(|s| label_selector_matches(s, labels)) {
                    self.add(ExaminedKind::ClusterRole, "", name_of(r), format!("aggregated into {}", title(agg)));
                }
            }
        }
    }
}

/// The Services an Ingress routes to (default backend and every path).
pub fn ingress_backends(ing: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let Some(n) = str_at(ing, "/spec/defaultBackend/service/name") {
        out.insert(n.to_string());
    }
    for rule in array(ing, "/spec/rules") {
        for p in array(rule, "/http/paths") {
            if let Some(n) = str_at(p, "/backend/service/name") {
                out.insert(n.to_string());
            }
        }
    }
    out
}

/// Secret names anywhere in a cert-manager issuer spec: `secretName: x` and `<anything>SecretRef`
/// / `secretRef` objects with a `name`, with the path where each was found.
fn secret_names_in(v: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{path}.{k}");
                if k == "secretName"
                    && let Some(n) = child.as_str().filter(|s| !s.is_empty())
                {
                    out.push((p.clone(), n.to_string()));
                }
                if (k.ends_with("SecretRef") || k == "secretRef")
                    && let Some(n) = child.get("name").and_then(Value::as_str).filter(|s| !s.is_empty())
                {
                    out.push((p.clone(), n.to_string()));
                }
                secret_names_in(child, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                secret_names_in(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn issuer_secret_paths() {
        let spec = json!({"acme": {"privateKeySecretRef": {"name": "acme-key"}, "solvers": [{"dns01": {"cloudflare": {"apiTokenSecretRef": {"name": "cf", "key": "t"}}}}]}, "ca": {"secretName": "ca-key"}});
        let mut out = Vec::new();
        secret_names_in(&spec, "spec", &mut out);
        out.sort();
        assert_eq!(
            out,
            vec![
                ("spec.acme.privateKeySecretRef".to_string(), "acme-key".to_string()),
                ("spec.acme.solvers[0].dns01.cloudflare.apiTokenSecretRef".to_string(), "cf".to_string()),
                ("spec.ca.secretName".to_string(), "ca-key".to_string()),
            ]
        );
    }

    #[test]
    fn ingress_backend_services() {
        let ing = json!({"spec": {"defaultBackend": {"service": {"name": "fallback"}}, "rules": [{"http": {"paths": [{"backend": {"service": {"name": "web"}}}, {"backend": {"resource": {"kind": "Bucket", "name": "b"}}}]}}]}});
        assert_eq!(ingress_backends(&ing).into_iter().collect::<Vec<_>>(), vec!["fallback", "web"]);
    }
}
