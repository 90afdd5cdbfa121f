//! The rule per kind: which objects of a kind are examined at all, and whether one is in use
//! (and by what) or unused (and why).

use std::collections::HashSet;

use crate::engine::tree::{IObject, IValue, as_array, as_str, pointer};

use super::graph::{ReferenceGraph, ingress_backends, name_of, ns_of, str_at};
use super::inventory::{Inventory, Source};
use crate::engine::select::{label_selector_matches, map_selector_matches, selects_everything};
use crate::report::orphan_kinds::ExaminedKind;

/// In use (by what), or unused (why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Used(Vec<String>),
    Unused(String),
}

/// Names of existing objects that rules check references against.
#[derive(Debug, Default)]
pub struct Existing<'a> {
    set: HashSet<(&'static str, &'a str, &'a str)>,
}

/// Kinds an HPA can target whose existence is checked.
const SCALABLE: &[&str] = &["Deployment", "StatefulSet", "ReplicaSet", "Rollout"];

impl<'a> Existing<'a> {
    pub fn from_inventory(inv: &'a Inventory) -> Existing<'a> {
        let mut set = HashSet::new();
        let sources: [(Source, &'static str); 10] = [
            (Source::Roles, "Role"),
            (Source::ClusterRoles, "ClusterRole"),
            (Source::ServiceAccounts, "ServiceAccount"),
            (Source::SubjectServiceAccounts, "ServiceAccount"),
            (Source::Services, "Service"),
            (Source::Deployments, "Deployment"),
            (Source::StatefulSets, "StatefulSet"),
            (Source::ReplicaSets, "ReplicaSet"),
            (Source::Rollouts, "Rollout"),
            (Source::PersistentVolumeClaims, "PersistentVolumeClaim"),
        ];
        for (source, kind) in sources {
            for o in inv.get(source) {
                set.insert((kind, ns_of(o), name_of(o)));
            }
        }
        Existing { set }
    }

    fn has(&self, kind: &'static str, namespace: &str, name: &str) -> bool {
        self.set.contains(&(kind, namespace, name))
    }
}

/// Whether an object of `kind` is examined at all: Deployments and StatefulSets only when
/// scaled to zero, Jobs only when finished and not kept by a CronJob.
pub fn is_candidate(kind: ExaminedKind, o: &IValue) -> bool {
    match kind {
        ExaminedKind::Deployment | ExaminedKind::StatefulSet => {
            pointer(o, "/spec/replicas").and_then(IValue::to_i64) == Some(0)
        }
        ExaminedKind::Job => {
            let cron_owned = pointer(o, "/metadata/ownerReferences")
                .and_then(as_array)
                .is_some_and(|a| a.iter().any(|r| str_at(r, "/kind") == Some("CronJob")));
            !cron_owned && job_finished(o).is_some()
        }
        _ => true,
    }
}

fn job_finished(o: &IValue) -> Option<&'static str> {
    let conds = pointer(o, "/status/conditions").and_then(as_array)?;
    for c in conds {
        if str_at(c, "/status") == Some("True") {
            match str_at(c, "/type") {
                Some("Complete") => return Some("Complete"),
                Some("Failed") => return Some("Failed"),
                _ => {}
            }
        }
    }
    None
}

/// Everything a rule may consult.
pub struct UsageContext<'a> {
    pub graph: &'a ReferenceGraph,
    pub existing: &'a Existing<'a>,
}

fn used_or(uses: Vec<String>, reason: &str) -> Verdict {
    if uses.is_empty() { Verdict::Unused(reason.to_string()) } else { Verdict::Used(uses) }
}

fn selected_by(ctx: &UsageContext, ns: &str, matches: impl Fn(&IObject) -> bool) -> Vec<String> {
    let mut out: Vec<String> = ctx
        .graph
        .pod_labels
        .get(ns)
        .into_iter()
        .flatten()
        .filter(|p| matches(&p.labels))
        .map(|p| format!("selects {}", p.who))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Judge one examined object.
pub fn judge(kind: ExaminedKind, o: &IValue, ctx: &UsageContext) -> Verdict {
    use ExaminedKind as K;
    let (ns, name) = (ns_of(o), name_of(o));
    let uses = ctx.graph.uses(kind, ns, name);
    match kind {
        K::ConfigMap => used_or(uses, "no pod, pod template, Ingress or custom resource references it"),
        K::Secret => used_or(
            uses,
            "no pod, pod template, ServiceAccount, Ingress, volume, storage class, Gateway or custom resource references it",
        ),
        K::ServiceAccount => {
            used_or(uses, "no pod or pod template runs as it and no binding or custom resource names it")
        }
        K::PriorityClass => used_or(uses, "no pod or pod template uses it"),
        K::Role => used_or(uses, "no RoleBinding refers to it"),
        K::ClusterRole => used_or(uses, "no binding refers to it and it is not aggregated into another ClusterRole"),
        K::StorageClass => used_or(uses, "no PersistentVolume or claim uses it"),
        K::Deployment | K::StatefulSet => used_or(uses, "scaled to zero (spec.replicas: 0)"),
        K::Job => Verdict::Unused(format!("finished ({}) and no CronJob keeps it", job_finished(o).unwrap_or("done"))),
        K::PersistentVolumeClaim => {
            let mut uses = uses;
            for (prefix, who) in ctx.graph.claim_templates.get(ns).into_iter().flatten() {
                if name
                    .strip_prefix(prefix.as_str())
                    .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
                {
                    uses.push(who.clone());
                }
            }
            used_or(uses, "no pod, pod template or custom resource mounts it")
        }
        K::PersistentVolume => {
            let claim = (str_at(o, "/spec/claimRef/namespace"), str_at(o, "/spec/claimRef/name"));
            let phase = str_at(o, "/status/phase").unwrap_or("unknown");
            match claim {
                (Some(cns), Some(cn)) if ctx.existing.has("PersistentVolumeClaim", cns, cn) => {
                    Verdict::Used(vec![format!("bound to PersistentVolumeClaim {cns}/{cn}")])
                }
                (Some(cns), Some(cn)) => {
                    Verdict::Unused(format!("its claim {cns}/{cn} no longer exists (phase {phase})"))
                }
                _ => Verdict::Unused(format!("not bound to any claim (phase {phase})")),
            }
        }
        K::Service => {
            let mut uses = uses;
            if pointer(o, "/spec/type").and_then(as_str) == Some("ExternalName") {
                uses.push(format!(
                    "ExternalName alias of {} (who resolves it cannot be seen)",
                    str_at(o, "/spec/externalName").unwrap_or("?")
                ));
            }
            let selector = pointer(o, "/spec/selector").and_then(IValue::as_object);
            if let Some(sel) = selector.filter(|s| !s.is_empty()) {
                uses.extend(selected_by(ctx, ns, |labels| map_selector_matches(sel, labels)));
                used_or(
                    uses,
                    "its selector matches no pod or pod template, it has no endpoints, and nothing routes to it",
                )
            } else {
                used_or(uses, "it has no selector, no endpoints, and nothing routes to it")
            }
        }
        K::PodDisruptionBudget => {
            let sel = pointer(o, "/spec/selector").cloned().unwrap_or(IValue::NULL);
            used_or(
                selected_by(ctx, ns, |l| label_selector_matches(&sel, l)),
                "its selector matches no pod or pod template",
            )
        }
        K::NetworkPolicy => {
            let sel = pointer(o, "/spec/podSelector").cloned().unwrap_or(IValue::NULL);
            if selects_everything(&sel) {
                Verdict::Used(vec!["applies to every pod in the namespace (empty podSelector)".into()])
            } else {
                used_or(
                    selected_by(ctx, ns, |l| label_selector_matches(&sel, l)),
                    "its podSelector matches no pod or pod template",
                )
            }
        }
        K::Ingress => {
            let backends = ingress_backends(o);
            let has_other = pointer(o, "/spec/defaultBackend/resource").is_some()
                || pointer(o, "/spec/rules").and_then(as_array).into_iter().flatten().any(|r| {
                    pointer(r, "/http/paths")
                        .and_then(as_array)
                        .into_iter()
                        .flatten()
                        .any(|p| pointer(p, "/backend/resource").is_some())
                });
            let mut uses: Vec<String> = backends
                .iter()
                .filter(|s| ctx.existing.has("Service", ns, s))
                .map(|s| format!("routes to Service {ns}/{s}"))
                .collect();
            if has_other {
                uses.push("routes to a resource backend (not checked)".into());
            }
            if backends.is_empty() {
                used_or(uses, "it has no backends")
            } else {
                let missing: Vec<&str> = backends.iter().map(String::as_str).collect();
                used_or(uses, &format!("none of its backend Services exist ({})", missing.join(", ")))
            }
        }
        K::HorizontalPodAutoscaler => {
            let tk = str_at(o, "/spec/scaleTargetRef/kind").unwrap_or("?");
            let tn = str_at(o, "/spec/scaleTargetRef/name").unwrap_or("?");
            match SCALABLE.iter().find(|k| **k == tk) {
                None => Verdict::Used(vec![format!("scales {tk} {ns}/{tn} (a kind not checked)")]),
                Some(k) if ctx.existing.has(k, ns, tn) => Verdict::Used(vec![format!("scales {tk} {ns}/{tn}")]),
                Some(_) => Verdict::Unused(format!("its target {tk} {tn} does not exist")),
            }
        }
        K::RoleBinding | K::ClusterRoleBinding => binding(o, ctx),
    }
}

fn binding(o: &IValue, ctx: &UsageContext) -> Verdict {
    let ns = ns_of(o);
    let rk = str_at(o, "/roleRef/kind").unwrap_or("?");
    let rn = str_at(o, "/roleRef/name").unwrap_or("?");
    let role_exists = match rk {
        "Role" => ctx.existing.has("Role", ns, rn),
        "ClusterRole" => ctx.existing.has("ClusterRole", "", rn),
        _ => true,
    };
    if !role_exists {
        return Verdict::Unused(format!("its {rk} {rn} does not exist"));
    }
    let subjects = o.get("subjects").and_then(as_array).unwrap_or(&[]);
    if subjects.is_empty() {
        return Verdict::Unused("it has no subjects".into());
    }
    let mut uses = Vec::new();
    let mut missing = Vec::new();
    for s in subjects {
        let sk = str_at(s, "/kind").unwrap_or("?");
        let sn = str_at(s, "/name").unwrap_or("?");
        if sk == "ServiceAccount" {
            let sns = str_at(s, "/namespace").unwrap_or(ns);
            if ctx.existing.has("ServiceAccount", sns, sn) {
                uses.push(format!("grants {rk} {rn} to ServiceAccount {sns}/{sn}"));
            } else {
                missing.push(format!("ServiceAccount {sns}/{sn}"));
            }
        } else {
            uses.push(format!("grants {rk} {rn} to {sk} {sn}"));
        }
    }
    used_or(uses, &format!("none of its subjects exist ({})", missing.join(", ")))
}
