//! Plan: which live objects a check needs. Resolves each desired object's kind and namespace by
//! discovery and lists every LIST to read: the desired kinds per namespace, the HPAs of those
//! namespaces (an autoscaler owns its target's replicas), and, for a release, the kinds searched
//! for extra objects carrying its labels. No request is made here.

use std::collections::BTreeSet;

use serde_json::Value;

use super::ReleaseIdentity;
use crate::source::live::{Kinds, LiveError, ResolvedKind, Wanted};
use crate::source::manifest::DesiredObject;

/// Kinds searched for extra objects carrying a release's labels, besides the manifest's own.
const EXTRA_KINDS: &[(&str, &str)] = &[
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "Service"),
    ("", "ServiceAccount"),
    ("", "PersistentVolumeClaim"),
    ("", "Pod"),
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("policy", "PodDisruptionBudget"),
];

/// Kinds never reported as extra: controllers copy labels onto them.
const NEVER_EXTRA: &[&str] = &["Endpoints", "EndpointSlice", "Event", "ControllerRevision", "ReplicaSet", "Lease"];

/// One desired object the cluster serves: where its live twin is listed.
#[derive(Debug, Clone)]
pub struct Target {
    /// Index into the desired objects.
    pub index: usize,
    pub kind: ResolvedKind,
    /// Its namespace (`None` when its kind is cluster-scoped).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

/// The search for extra objects labelled for a release.
#[derive(Debug, Clone)]
pub struct ExtraSearch {
    pub release: ReleaseIdentity,
    /// Kinds to list in the release's namespace (or cluster-wide when cluster-scoped).
    pub kinds: Vec<ResolvedKind>,
    /// PVC name prefixes made by the release's StatefulSets (never extra).
    pub claim_prefixes: Vec<String>,
}

impl ExtraSearch {
    /// Where one of [`ExtraSearch::kinds`] is listed.
    pub fn namespace_of(&self, kind: &ResolvedKind) -> Option<String> {
        kind.namespaced.then(|| self.release.namespace.clone())
    }
}

/// What a check reads, decided before any request.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Desired objects whose kind the cluster does not serve, in order: (index, why).
    pub unresolved: Vec<(usize, LiveError)>,
    /// Desired objects to compare, in order.
    pub targets: Vec<Target>,
    /// The HPA kind, when served, and the namespaces whose HPAs are read.
    pub hpa: Option<ResolvedKind>,
    pub hpa_namespaces: Vec<String>,
    /// With a release: the extra objects to look for.
    pub extra: Option<ExtraSearch>,
}

impl Plan {
    /// Every LIST the plan needs (kind, namespace), each once, in a stable order.
    pub fn lists(&self) -> Vec<(ResolvedKind, Option<String>)> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        let mut add = |rk: &ResolvedKind, ns: Option<String>| {
            let ar = &rk.resource;
            if seen.insert((ar.group.clone(), ar.version.clone(), ar.plural.clone(), ns.clone())) {
                out.push((rk.clone(), ns));
            }
        };
        for t in &self.targets {
            add(&t.kind, t.namespace.clone());
        }
        if let Some(hk) = &self.hpa {
            for ns in &self.hpa_namespaces {
                add(hk, Some(ns.clone()));
            }
        }
        if let Some(extra) = &self.extra {
            for rk in &extra.kinds {
                add(rk, extra.namespace_of(rk));
            }
        }
        out
    }
}

impl Plan {
    /// Which objects of the list of `kind` in `namespace` the compare step looks at, or `None`
    /// when it reads all of them: a namespace's HorizontalPodAutoscalers (any of them may scale a
    /// desired object). Otherwise the desired objects of that list, by name, and with a release,
    /// when the kind is searched for extra objects, those that may belong to it. A watch-fed
    /// cache decodes only these: a check of one release read the whole cluster-scoped lists
    /// (2,000 ClusterRoles and as many bindings at 2,000 releases) for its one or two objects.
    pub fn wanted(&self, kind: &ResolvedKind, namespace: Option<&str>) -> Option<Wanted> {
        let same = |k: &ResolvedKind| {
            let (a, b) = (&k.resource, &kind.resource);
            a.group == b.group && a.version == b.version && a.plural == b.plural
        };
        let hpa_namespace = namespace.is_some_and(|ns| self.hpa_namespaces.iter().any(|h| h == ns));
        if hpa_namespace && self.hpa.as_ref().is_some_and(same) {
            return None;
        }
        let names = self.targets.iter().filter(|t| same(&t.kind) && t.namespace.as_deref() == namespace);
        let release = self
            .extra
            .as_ref()
            .filter(|e| e.kinds.iter().any(|k| same(k) && e.namespace_of(k).as_deref() == namespace));
        Some(Wanted {
            names: names.map(|t| t.name.clone()).collect(),
            release: release.map(|e| e.release.name.clone()),
            metadata: self.metadata_will_do(kind, namespace),
        })
    }

    /// Whether the LIST of `kind` in `namespace` is read as metadata only: Pods, when no desired
    /// object is a Pod there. They are listed only to find extra objects, which needs nothing but
    /// metadata (labels, annotations, owners), and whole Pods were nearly half of what
    /// `release --all -A` read at 2,000 releases (118 of 261 MiB). Other kinds stay whole: they
    /// are often desired in the same namespace by another release, and a namespace's lists are
    /// shared by its releases (one LIST, not one of each shape).
    pub fn metadata_will_do(&self, kind: &ResolvedKind, namespace: Option<&str>) -> bool {
        let r = &kind.resource;
        r.group.is_empty()
            && r.kind == "Pod"
            && !self.targets.iter().any(|t| {
                t.kind.resource.kind == "Pod" && t.kind.resource.group.is_empty() && t.namespace.as_deref() == namespace
            })
    }
}

/// Plan a check of `desired`: objects without a namespace take `default_namespace` when their
/// kind is namespaced; with `release`, extra objects labelled for it are looked for.
pub fn plan(
    kinds: &Kinds,
    desired: &[DesiredObject],
    default_namespace: &str,
    release: Option<&ReleaseIdentity>,
) -> Plan {
    let mut plan = Plan::default();
    for (index, d) in desired.iter().enumerate() {
        match kinds.resolve(&d.api_version, &d.kind) {
            Ok(kind) => {
                let namespace =
                    kind.namespaced.then(|| d.namespace.clone().unwrap_or_else(|| default_namespace.to_string()));
                plan.targets.push(Target { index, kind, namespace, name: d.name.clone() });
            }
            Err(e) => plan.unresolved.push((index, e)),
        }
    }
    plan.hpa = kinds.resolve_preferred("autoscaling", "HorizontalPodAutoscaler");
    let namespaces: BTreeSet<String> = plan.targets.iter().filter_map(|t| t.namespace.clone()).collect();
    plan.hpa_namespaces = namespaces.into_iter().collect();
    plan.extra = release.map(|rel| ExtraSearch {
        release: rel.clone(),
        kinds: extra_kinds(kinds, desired, &rel.also_kinds),
        claim_prefixes: statefulset_claim_prefixes(desired),
    });
    plan
}

/// Kinds to search for extra objects: the common ones plus every kind in the manifest.
pub(crate) fn extra_kinds(kinds: &Kinds, desired: &[DesiredObject], also: &[(String, String)]) -> Vec<ResolvedKind> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut add = |rk: ResolvedKind| {
        if NEVER_EXTRA.contains(&rk.resource.kind.as_str()) {
            return;
        }
        if seen.insert((rk.resource.group.clone(), rk.resource.plural.clone())) {
            out.push(rk);
        }
    };
    for (g, k) in EXTRA_KINDS {
        if let Some(rk) = kinds.resolve_preferred(g, k) {
            add(rk);
        }
    }
    let desired_kinds = desired.iter().map(|d| (d.api_version.as_str(), d.kind.as_str()));
    for (api_version, kind) in desired_kinds.chain(also.iter().map(|(a, k)| (a.as_str(), k.as_str()))) {
        if let Ok(rk) = kinds.resolve(api_version, kind) {
            add(rk);
        }
    }
    out
}

/// PVC name prefixes made by StatefulSet volumeClaimTemplates (`<template>-<statefulset>-`).
pub fn statefulset_claim_prefixes(desired: &[DesiredObject]) -> Vec<String> {
    desired
        .iter()
        .filter(|d| d.kind == "StatefulSet")
        .flat_map(|d| {
            let templates =
                d.body.pointer("/spec/volumeClaimTemplates").and_then(Value::as_array).cloned().unwrap_or_default();
            templates
                .into_iter()
                .filter_map(|t| t.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string))
                .map(|t| format!("{t}-{}-", d.name))
                .collect::<Vec<_>>()
        })
        .collect()
}
