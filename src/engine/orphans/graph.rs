//! The reference graph: for every object that something names, who names it and where
//! (`Deployment shop/web volume config`). Built once from the inventory, in memory.
//!
//! Users read: live pods and the pod templates of Deployments, StatefulSets, DaemonSets,
//! ReplicaSets, Jobs, CronJobs (and Argo Rollouts); ServiceAccount `secrets` and
//! `imagePullSecrets`; Ingress TLS and backends; Gateway listener `certificateRefs`;
//! cert-manager Issuer and ClusterIssuer secret references; (Cluster)RoleBinding roleRef and
//! subjects; service-account token Secrets; HPA scaleTargetRef; EndpointSlices; webhook and
//! APIService Services; PV/PVC storageClassName; ClusterRole aggregation; ingress-controller
//! annotations; Gateway API routes (with ReferenceGrants); PersistentVolume, StorageClass and
//! VolumeSnapshotClass secrets (templated names as patterns: "may use"); Argo CD's Secrets by
//! label; and every other custom resource through [`super::references`]. Label selectors
//! (Service, PodDisruptionBudget, NetworkPolicy) are matched later against [`PodLabels`].

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::engine::tree::{DestructuredRef, IObject, IValue, Tree, as_array, as_str, pointer};

use super::inventory::{GATEWAY_GROUP, Inventory, ROUTES, Source};
use super::podspec::pod_spec_refs;
use super::references::{
    FieldRef, INGRESS_ANNOTATIONS, WalkRules, object_refs, parameter_secrets, refs_under, split_ref, template_glob,
};
use crate::engine::select::glob;
use crate::engine::select::label_selector_matches;
use crate::report::orphan_kinds::ExaminedKind;

/// An object that can be used: kind, namespace ("" when cluster-scoped) and name.
pub type Target = (ExaminedKind, String, String);

/// Namespace the cert-manager ClusterIssuers read their Secrets from (cert-manager's default
/// `--cluster-resource-namespace`).
pub const CLUSTER_ISSUER_NAMESPACE: &str = "cert-manager";

/// The labels of a live pod or a pod template, and how to name it in a reason.
#[derive(Debug, Clone)]
pub struct PodLabels {
    pub who: String,
    pub labels: IObject,
}

/// A use of every object whose namespace and name match globs (a templated StorageClass
/// parameter, say): "may use".
#[derive(Debug, Clone)]
struct UsePattern {
    kind: ExaminedKind,
    namespace: String,
    name: String,
    who: String,
}

/// Who uses what.
#[derive(Debug, Default)]
pub struct ReferenceGraph {
    uses: HashMap<Target, BTreeSet<String>>,
    patterns: Vec<UsePattern>,
    /// Per namespace: the labels of every live pod and pod template.
    pub pod_labels: HashMap<String, Vec<PodLabels>>,
    /// Per namespace: StatefulSet volumeClaimTemplate claim prefixes `<template>-<sts>-` and who.
    pub claim_templates: HashMap<String, Vec<(String, String)>>,
}

pub fn str_at<'v>(v: &'v IValue, at: &str) -> Option<&'v str> {
    pointer(v, at).and_then(as_str).filter(|s| !s.is_empty())
}

pub fn ns_of(v: &IValue) -> &str {
    str_at(v, "/metadata/namespace").unwrap_or("")
}

pub fn name_of(v: &IValue) -> &str {
    str_at(v, "/metadata/name").unwrap_or("")
}

fn kind_of(v: &IValue) -> &str {
    str_at(v, "/kind").unwrap_or("?")
}

/// `Kind ns/name` (or `Kind name` when cluster-scoped).
pub fn title(v: &IValue) -> String {
    let ns = ns_of(v);
    if ns.is_empty() { format!("{} {}", kind_of(v), name_of(v)) } else { format!("{} {ns}/{}", kind_of(v), name_of(v)) }
}

/// Objects of a source, each once (with `-A` the scan-wide and cluster-wide lists of a kind
/// can be the same objects).
fn unique<'a>(inv: &'a Inventory, sources: &[Source]) -> Vec<&'a IValue> {
    let mut seen = HashSet::new();
    sources
        .iter()
        .flat_map(|s| inv.get(*s))
        .filter(|o| seen.insert((ns_of(o).to_string(), name_of(o).to_string())))
        .collect()
}

fn array<'v>(v: &'v IValue, at: &str) -> &'v [IValue] {
    pointer(v, at).and_then(as_array).unwrap_or(&[])
}

fn replicas_zero(v: &IValue) -> bool {
    pointer(v, "/spec/replicas").and_then(IValue::to_i64) == Some(0)
}

impl ReferenceGraph {
    fn add(&mut self, kind: ExaminedKind, namespace: &str, name: &str, who: String) {
        let ns = if kind.namespaced() { namespace } else { "" };
        self.uses.entry((kind, ns.to_string(), name.to_string())).or_default().insert(who);
    }

    /// Who uses this object (sorted, each once).
    pub fn uses(&self, kind: ExaminedKind, namespace: &str, name: &str) -> Vec<String> {
        let ns = if kind.namespaced() { namespace } else { "" };
        let mut out: BTreeSet<String> =
            self.uses.get(&(kind, ns.to_string(), name.to_string())).cloned().unwrap_or_default();
        for p in &self.patterns {
            if p.kind == kind && glob(&p.namespace, ns) && glob(&p.name, name) {
                out.insert(p.who.clone());
            }
        }
        out.into_iter().collect()
    }

    /// A reference found by field name: in `namespace` unless it names its own.
    fn add_ref(&mut self, r: &FieldRef, namespace: &str, who: &str) {
        let ns = r.namespace.as_deref().unwrap_or(namespace);
        if r.kind.namespaced() && ns.is_empty() {
            return;
        }
        self.add(r.kind, ns, &r.name, format!("{who} {}", r.path));
    }

    pub fn build(inv: &Inventory) -> ReferenceGraph {
        let mut g = ReferenceGraph::default();
        g.pods_and_templates(inv);
        g.service_accounts(inv);
        g.ingresses(inv);
        let grants = ReferenceGrants::from_inventory(inv);
        g.gateways(inv, &grants);
        g.routes(inv, &grants);
        g.issuers(inv);
        g.custom_resources(inv);
        g.storage(inv);
        g.argo_cd(inv);
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
            if let Some(labels) = pointer(pod, "/metadata/labels").and_then(IValue::as_object) {
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
        for (source, at) in templates {
            for owner in inv.get(source) {
                let ns = ns_of(owner);
                let scaled_down = matches!(source, Source::Deployments | Source::StatefulSets | Source::Rollouts)
                    && replicas_zero(owner);
                let who = if scaled_down { format!("{} (0 replicas)", title(owner)) } else { title(owner) };
                let Some(template) = pointer(owner, at) else { continue };
                if let Some(spec) = template.get("spec") {
                    for r in pod_spec_refs(spec, None) {
                        self.add(r.kind, ns, &r.name, format!("{who} {}", r.via));
                    }
                }
                if let Some(labels) = pointer(template, "/metadata/labels").and_then(IValue::as_object) {
                    let who = format!("pods of {who}");
                    self.pod_labels.entry(ns.to_string()).or_default().push(PodLabels { who, labels: labels.clone() });
                }
                if source == Source::Rollouts {
                    for (field, path) in ROLLOUT_SERVICES {
                        if let Some(svc) = str_at(owner, path) {
                            self.add(ExaminedKind::Service, ns, svc, format!("{who} {field}"));
                        }
                    }
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
            let annotations = pointer(ing, "/metadata/annotations").and_then(IValue::as_object);
            for (key, kind) in INGRESS_ANNOTATIONS {
                let value = annotations.and_then(|a| a.get(*key)).and_then(as_str).unwrap_or("");
                if let Some((rns, name)) = split_ref(value, ns) {
                    // The default backend annotation names a Service of the Ingress's namespace.
                    let rns = if *kind == ExaminedKind::Service { ns } else { rns };
                    self.add(*kind, rns, name, format!("{} annotation {key}", title(ing)));
                }
            }
        }
    }

    fn gateways(&mut self, inv: &Inventory, grants: &ReferenceGrants) {
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
                        let Some(grant) = grants.allows("Gateway", ns, "Secret", rns, n) else { continue };
                        self.add(
                            ExaminedKind::Secret,
                            rns,
                            n,
                            format!("{} listener {lname} certificateRefs{grant}", title(gw)),
                        );
                    }
                }
            }
            // ConfigMaps named by typed references: client-certificate validation
            // `caCertificateRefs`, `infrastructure.parametersRef`.
            for r in object_refs(gw, &WalkRules::default()) {
                let rns = r.namespace.as_deref().unwrap_or(ns);
                if r.kind == ExaminedKind::ConfigMap
                    && let Some(grant) = grants.allows("Gateway", ns, "ConfigMap", rns, &r.name)
                {
                    self.add(r.kind, rns, &r.name, format!("{} {}{grant}", title(gw), r.path));
                }
            }
        }
    }

    /// cert-manager: Issuers, ClusterIssuers (their references without a namespace are read
    /// from cert-manager's cluster resource namespace) and Certificates (keystore passwords;
    /// the Secret a Certificate writes is `managed`, not used: see `evidence`).
    fn issuers(&mut self, inv: &Inventory) {
        let plain = WalkRules::default();
        let certificate = WalkRules { skip_paths: &["spec.secretName"], ..Default::default() };
        for (source, rules, fixed_ns) in [
            (Source::Issuers, &plain, None),
            (Source::ClusterIssuers, &plain, Some(CLUSTER_ISSUER_NAMESPACE)),
            (Source::Certificates, &certificate, None),
        ] {
            for o in inv.get(source) {
                let ns = fixed_ns.unwrap_or(ns_of(o));
                let who = title(o);
                for r in object_refs(o, rules) {
                    self.add_ref(&r, ns, &who);
                }
            }
        }
    }

    /// Gateway API routes: `backendRefs` (and `requestMirror` filters) to Services; across
    /// namespaces only where a ReferenceGrant in the Service's namespace allows it.
    fn routes(&mut self, inv: &Inventory, grants: &ReferenceGrants) {
        for (source, route_kind) in ROUTES {
            for route in inv.get(*source) {
                let ns = ns_of(route);
                let mut found = Vec::new();
                let null = IValue::NULL;
                backend_refs(route.get("spec").unwrap_or(&null), "spec", &mut found);
                for (path, r) in found {
                    let group = str_at(r, "/group").unwrap_or("");
                    if str_at(r, "/kind").unwrap_or("Service") != "Service" || !group.is_empty() {
                        continue;
                    }
                    let Some(name) = str_at(r, "/name") else { continue };
                    let rns = str_at(r, "/namespace").unwrap_or(ns);
                    if let Some(grant) = grants.allows(route_kind, ns, "Service", rns, name) {
                        self.add(ExaminedKind::Service, rns, name, format!("{} {path}{grant}", title(route)));
                    }
                }
            }
        }
    }

    /// Every other custom resource: the generic pass, with the exact rules of [`CustomRules`].
    fn custom_resources(&mut self, inv: &Inventory) {
        let objects: Vec<&IValue> = inv.get(Source::CustomResources).collect();
        let rules = CustomRules::new(&objects);
        for o in objects {
            let (group, kind) = group_kind(o);
            let ns = ns_of(o);
            let who = title(o);
            let walk = rules.walk_rules(group, kind);
            let mut refs = object_refs(o, &walk);
            refs.extend(exact_refs(group, kind, o));
            let defaults: Vec<String> =
                if ns.is_empty() { rules.cluster_defaults(group, kind, name_of(o)) } else { vec![ns.to_string()] };
            for r in &refs {
                if r.namespace.is_some() {
                    self.add_ref(r, "", &who);
                }
                for d in defaults.iter().filter(|_| r.namespace.is_none()) {
                    self.add_ref(r, d, &who);
                }
            }
            // Secrets whose deletion the snapshotter still needs.
            if group == "snapshot.storage.k8s.io" && kind == "VolumeSnapshotContent" {
                self.annotation_secret(o, "snapshot.storage.k8s.io/deletion-secret");
            }
        }
    }

    /// A Secret named by `<prefix>-name` and `<prefix>-namespace` annotations.
    fn annotation_secret(&mut self, o: &IValue, prefix: &str) {
        let annotations = pointer(o, "/metadata/annotations").and_then(IValue::as_object);
        let get = |k: String| annotations.and_then(|a| a.get(k.as_str())).and_then(as_str).filter(|s| !s.is_empty());
        if let (Some(name), Some(ns)) = (get(format!("{prefix}-name")), get(format!("{prefix}-namespace"))) {
            self.add(ExaminedKind::Secret, ns, name, format!("{} annotation {prefix}-name", title(o)));
        }
    }

    /// Storage: PersistentVolume sources' secret references (a reference without a namespace
    /// is read from the claim's), the provisioner's deletion secret annotations, and the
    /// Secrets StorageClass and VolumeSnapshotClass parameters name. A templated name or
    /// namespace (`${pvc.name}`, `${pvc.namespace}`, ...) may use every Secret of that shape.
    fn storage(&mut self, inv: &Inventory) {
        for pv in inv.get(Source::PersistentVolumes) {
            let claim_ns = str_at(pv, "/spec/claimRef/namespace").unwrap_or("");
            let who = title(pv);
            for r in refs_under(pv.get("spec").unwrap_or(&IValue::NULL), "spec") {
                if r.kind == ExaminedKind::Secret {
                    self.add_ref(&r, claim_ns, &who);
                }
            }
            self.annotation_secret(pv, "volume.kubernetes.io/provisioner-deletion-secret");
        }
        for source in [Source::StorageClasses, Source::VolumeSnapshotClasses] {
            for class in inv.get(source) {
                let Some(params) = class.get("parameters").and_then(IValue::as_object) else { continue };
                for p in parameter_secrets(params) {
                    let who = format!("{} parameter {}", title(class), p.key);
                    let name_glob = template_glob(&p.name);
                    let ns_glob = match &p.namespace {
                        Some(n) => template_glob(n),
                        None => Some("*".to_string()),
                    };
                    match (name_glob, ns_glob, &p.namespace) {
                        (None, None, Some(ns)) => self.add(ExaminedKind::Secret, ns, &p.name, who),
                        (name_glob, ns_glob, ns) => {
                            let ns_text = ns.as_deref().unwrap_or("the claim's namespace");
                            let name_text =
                                if name_glob.is_some() { format!("template {}", p.name) } else { p.name.clone() };
                            self.patterns.push(UsePattern {
                                kind: ExaminedKind::Secret,
                                namespace: ns_glob.unwrap_or_else(|| ns_text.to_string()),
                                name: name_glob.unwrap_or_else(|| p.name.clone()),
                                who: format!("{who} (may use: {name_text} in {ns_text})"),
                            });
                        }
                    }
                }
            }
        }
    }

    /// Argo CD reads Secrets by label (repositories, repository credentials, clusters) and its
    /// own configuration by name.
    fn argo_cd(&mut self, inv: &Inventory) {
        for s in inv.get(Source::Secrets) {
            if let Some(t) = str_at(s, "/metadata/labels/argocd.argoproj.io~1secret-type") {
                self.add(
                    ExaminedKind::Secret,
                    ns_of(s),
                    name_of(s),
                    format!("Argo CD (label argocd.argoproj.io/secret-type: {t})"),
                );
            }
        }
        for (source, kind, names) in [
            (Source::Secrets, ExaminedKind::Secret, ARGO_CD_SECRETS),
            (Source::ConfigMaps, ExaminedKind::ConfigMap, ARGO_CD_CONFIG_MAPS),
        ] {
            for o in inv.get(source) {
                if names.contains(&name_of(o))
                    && str_at(o, "/metadata/labels/app.kubernetes.io~1part-of") == Some("argocd")
                {
                    self.add(kind, ns_of(o), name_of(o), "Argo CD (reads it by name)".to_string());
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
        let roles: Vec<&IValue> = inv.get(Source::ClusterRoles).collect();
        for agg in &roles {
            let selectors = array(agg, "/aggregationRule/clusterRoleSelectors");
            if selectors.is_empty() {
                continue;
            }
            for r in &roles {
                let Some(labels) = pointer(r, "/metadata/labels").and_then(IValue::as_object) else { continue };
                if name_of(r) != name_of(agg) && selectors.iter().any(|s| label_selector_matches(s, labels)) {
                    self.add(ExaminedKind::ClusterRole, "", name_of(r), format!("aggregated into {}", title(agg)));
                }
            }
        }
    }
}

/// The Services an Argo Rollout switches traffic between.
const ROLLOUT_SERVICES: &[(&str, &str)] = &[
    ("spec.strategy.canary.canaryService", "/spec/strategy/canary/canaryService"),
    ("spec.strategy.canary.stableService", "/spec/strategy/canary/stableService"),
    ("spec.strategy.blueGreen.activeService", "/spec/strategy/blueGreen/activeService"),
    ("spec.strategy.blueGreen.previewService", "/spec/strategy/blueGreen/previewService"),
];

/// Argo CD's own configuration, read by name in its namespace.
const ARGO_CD_CONFIG_MAPS: &[&str] = &[
    "argocd-cm",
    "argocd-rbac-cm",
    "argocd-cmd-params-cm",
    "argocd-ssh-known-hosts-cm",
    "argocd-tls-certs-cm",
    "argocd-gpg-keys-cm",
    "argocd-notifications-cm",
];
const ARGO_CD_SECRETS: &[&str] = &["argocd-secret", "argocd-notifications-secret"];

/// The API group and kind of a listed object.
fn group_kind(o: &IValue) -> (&str, &str) {
    let api_version = str_at(o, "/apiVersion").unwrap_or("");
    let group = crate::report::group_version(api_version).0;
    (group, kind_of(o))
}

/// `backendRefs` anywhere in a route spec (rules and their filters' `requestMirror`
/// `backendRef`), with their paths.
fn backend_refs<'v>(v: &'v IValue, path: &str, out: &mut Vec<(String, &'v IValue)>) {
    match v.destructure_ref() {
        DestructuredRef::Object(m) => {
            for (k, child) in m {
                let p = format!("{path}.{}", k.as_str());
                match (k.as_str(), child.destructure_ref()) {
                    ("backendRefs", DestructuredRef::Array(a)) => {
                        for (i, r) in a.iter().enumerate() {
                            out.push((format!("{p}[{i}]"), r));
                        }
                    }
                    ("backendRef", DestructuredRef::Object(_)) => out.push((p.clone(), child)),
                    _ => {}
                }
                backend_refs(child, &p, out);
            }
        }
        DestructuredRef::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                backend_refs(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// One ReferenceGrant: in `namespace`, lets `from` (kind, namespace) refer to `to` (kind,
/// name or "" for any).
#[derive(Debug)]
struct Grant {
    name: String,
    namespace: String,
    from: Vec<(String, String)>,
    to: Vec<(String, String)>,
}

/// Gateway API ReferenceGrants: which cross-namespace references are allowed.
#[derive(Debug, Default)]
pub struct ReferenceGrants {
    grants: Vec<Grant>,
}

impl ReferenceGrants {
    pub fn from_inventory(inv: &Inventory) -> ReferenceGrants {
        let mut grants = Vec::new();
        for g in inv.get(Source::ReferenceGrants) {
            let from = array(g, "/spec/from")
                .iter()
                .filter(|f| str_at(f, "/group") == Some(GATEWAY_GROUP))
                .map(|f| {
                    (str_at(f, "/kind").unwrap_or("").to_string(), str_at(f, "/namespace").unwrap_or("").to_string())
                })
                .collect();
            let to = array(g, "/spec/to")
                .iter()
                .filter(|t| str_at(t, "/group").is_none())
                .map(|t| (str_at(t, "/kind").unwrap_or("").to_string(), str_at(t, "/name").unwrap_or("").to_string()))
                .collect();
            grants.push(Grant { name: name_of(g).to_string(), namespace: ns_of(g).to_string(), from, to });
        }
        ReferenceGrants { grants }
    }

    /// Whether a `from_kind` in `from_ns` may refer to the `to_kind` `to_ns/name`: `Some("")`
    /// in its own namespace, `Some(" (allowed by ReferenceGrant ns/name)")` across namespaces
    /// with a grant, `None` without one.
    pub fn allows(&self, from_kind: &str, from_ns: &str, to_kind: &str, to_ns: &str, name: &str) -> Option<String> {
        if from_ns == to_ns {
            return Some(String::new());
        }
        self.grants
            .iter()
            .find(|g| {
                g.namespace == to_ns
                    && g.from.iter().any(|(k, n)| k == from_kind && n == from_ns)
                    && g.to.iter().any(|(k, n)| k == to_kind && (n.is_empty() || n == name))
            })
            .map(|g| format!(" (allowed by ReferenceGrant {}/{})", g.namespace, g.name))
    }
}

/// Exact rules for custom resources of the operators people run most, where the generic
/// pass needs help (see `docs/output.md`, Orphans).
struct CustomRules {
    /// ClusterSecretStore name -> the namespaces of ExternalSecrets that use it (its
    /// references without a namespace are read from the ExternalSecret's namespace).
    cluster_store_users: HashMap<String, BTreeSet<String>>,
}

impl CustomRules {
    fn new(objects: &[&IValue]) -> CustomRules {
        let mut cluster_store_users: HashMap<String, BTreeSet<String>> = HashMap::new();
        for o in objects {
            if group_kind(o) == ("external-secrets.io", "ExternalSecret")
                && str_at(o, "/spec/secretStoreRef/kind") == Some("ClusterSecretStore")
                && let Some(store) = str_at(o, "/spec/secretStoreRef/name")
            {
                cluster_store_users.entry(store.to_string()).or_default().insert(ns_of(o).to_string());
            }
        }
        CustomRules { cluster_store_users }
    }

    fn walk_rules(&self, group: &str, kind: &str) -> WalkRules {
        match group {
            "traefik.io" | "traefik.containo.us" => WalkRules { traefik: true, ..Default::default() },
            "external-secrets.io" if kind == "ExternalSecret" => {
                // The target is what it writes (managed, see `evidence`), not a use.
                WalkRules { skip_paths: &["spec.target.name"], ..Default::default() }
            }
            _ => WalkRules::default(),
        }
    }

    /// Where a cluster-scoped object's references without a namespace point.
    fn cluster_defaults(&self, group: &str, kind: &str, name: &str) -> Vec<String> {
        match (group, kind) {
            ("cert-manager.io", "ClusterIssuer") => vec![CLUSTER_ISSUER_NAMESPACE.to_string()],
            ("external-secrets.io", "ClusterSecretStore") => {
                self.cluster_store_users.get(name).into_iter().flatten().cloned().collect()
            }
            _ => Vec::new(),
        }
    }
}

/// References the generic pass cannot see: lists of plain names and implied defaults.
fn exact_refs(group: &str, kind: &str, o: &IValue) -> Vec<FieldRef> {
    let mut out = Vec::new();
    let mut push = |kind: ExaminedKind, name: &str, namespace: Option<&str>, path: String| {
        out.push(FieldRef { kind, namespace: namespace.map(str::to_string), name: name.to_string(), path })
    };
    match (group, kind) {
        ("monitoring.coreos.com", "Prometheus" | "PrometheusAgent" | "Alertmanager" | "ThanosRuler") => {
            // Mounted into every pod of the instance.
            for (field, target) in [("secrets", ExaminedKind::Secret), ("configMaps", ExaminedKind::ConfigMap)] {
                for (i, n) in array(o, &format!("/spec/{field}")).iter().enumerate() {
                    if let Some(n) = as_str(n).filter(|n| !n.is_empty()) {
                        push(target, n, None, format!("spec.{field}[{i}]"));
                    }
                }
            }
            if kind == "Alertmanager" {
                match str_at(o, "/spec/configSecret") {
                    Some(n) => push(ExaminedKind::Secret, n, None, "spec.configSecret".into()),
                    None => push(
                        ExaminedKind::Secret,
                        &format!("alertmanager-{}", name_of(o)),
                        None,
                        "spec.configSecret (default alertmanager-<name>)".into(),
                    ),
                }
            }
            for (i, am) in array(o, "/spec/alerting/alertmanagers").iter().enumerate() {
                if let Some(n) = str_at(am, "/name") {
                    push(
                        ExaminedKind::Service,
                        n,
                        str_at(am, "/namespace"),
                        format!("spec.alerting.alertmanagers[{i}]"),
                    );
                }
            }
        }
        ("external-secrets.io", "ExternalSecret") if str_at(o, "/spec/target/creationPolicy") == Some("Merge") => {
            // It writes its data into a Secret something else created.
            let target = str_at(o, "/spec/target/name").unwrap_or(name_of(o));
            push(ExaminedKind::Secret, target, None, "spec.target (creationPolicy Merge)".into());
        }
        _ => {}
    }
    out
}

/// The Services an Ingress routes to (default backend and every path).
pub fn ingress_backends(ing: &(impl Tree + ?Sized)) -> BTreeSet<String> {
    let ing = &*ing.tree();
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ingress_backend_services() {
        let ing = json!({"spec": {"defaultBackend": {"service": {"name": "fallback"}}, "rules": [{"http": {"paths": [{"backend": {"service": {"name": "web"}}}, {"backend": {"resource": {"kind": "Bucket", "name": "b"}}}]}}]}});
        assert_eq!(ingress_backends(&ing).into_iter().collect::<Vec<_>>(), vec!["fallback", "web"]);
    }
}
