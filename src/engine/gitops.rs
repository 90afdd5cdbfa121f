//! GitOps-aware drift (docs/gitops.md).
//!
//! A Helm release that Flux's helm-controller manages is part of the release check itself
//! (`engine::drift::flux`); this module holds the GitOps controllers' own targets, above drift:
//! - **Flux Kustomization** and **Argo CD Application**: targets of their own. The desired set is
//!   the controller's inventory (`status.inventory.entries`, `status.resources`); neither stores
//!   the rendered manifests, so the desired fields of an object are those its field manager owns
//!   (both apply server-side): what another manager's tool owns is drift by hand, with who and
//!   when; an inventory object gone live is missing; for Flux, an object labelled for the
//!   Kustomization but not in its inventory is extra.
//! - An Argo CD Application's `spec.ignoreDifferences` and a Flux Kustomization's `spec.ignore`
//!   are ignore rules of the one rule type (`compare::rules`), each naming its object and entry in
//!   the reason; an Application's objects are tracked (for extra objects) by the method Argo CD's
//!   `argocd-cm` says, or a flag.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::engine::compare::jq::JqPath;
use crate::engine::compare::rules::{FieldMatch, IgnoreRule, Subject, flux_rules};
use crate::engine::compare::{CompareContext, ManagedFields, compare_object};
use crate::engine::drift::{DriftError, Engine};
use crate::engine::reconcile::Reconciler;
use crate::report::gitops::{Condition, GitOps};
use crate::report::progress::{Counter, Progress};
use crate::report::{
    FileOrigin, FileReport, ManifestsReport, ObjectReport, ObjectState, Problem, SourceType, Status, field_report,
};
use crate::source::cluster::Cluster;
use crate::source::gitops::{
    ARGO_CM, ARGO_DEFAULT_INSTANCE_LABEL, ARGO_GROUP, Application, ArgoSettings, FLUX_KUSTOMIZE_GROUP,
    FLUX_KUSTOMIZE_NAME_LABEL, FLUX_KUSTOMIZE_NAMESPACE_LABEL, InventoryEntry, Kustomization, TrackingMethod,
};
use crate::source::manifest::DesiredObject;

/// kustomize-controller's field manager (it always applies server-side).
pub const FLUX_KUSTOMIZE_MANAGER: &str = "kustomize-controller";
/// Argo CD's field managers: `argocd-controller` for server-side apply syncs (its constant
/// `ArgoCDSSAManager`), `argocd-application-controller` for client-side ones.
pub const ARGO_MANAGERS: &[&str] = &["argocd-controller", "argocd-application-controller"];

type Key = (String, String, String);

/// Which GitOps objects a run checks.
#[derive(Debug, Clone, Default)]
pub struct GitOpsSelection {
    pub names: Vec<String>,
    pub all: bool,
    pub all_namespaces: bool,
    pub namespace: String,
    /// Argo CD only: how its objects are tracked and where its settings are.
    pub argo: ArgoOptions,
}

/// What the user says of Argo CD's settings (`application --tracking-method`, `--argocd-namespace`).
#[derive(Debug, Clone, Default)]
pub struct ArgoOptions {
    /// The tracking method, over what `argocd-cm` says.
    pub tracking: Option<TrackingMethod>,
    /// Argo CD's own namespace (where `argocd-cm` is); default: each Application's namespace.
    pub namespace: Option<String>,
}

/// One inventory to check: its GitOps object, the objects it says it manages, whose fields are
/// desired, and how extra objects are recognised.
struct Inventory {
    gitops: GitOps,
    source_type: SourceType,
    entries: Vec<InventoryEntry>,
    managers: Vec<String>,
    /// How an object says it belongs here (for extra objects).
    extra: Option<Belongs>,
    /// The GitOps object's own ignore rules (Argo CD's `spec.ignoreDifferences`, Flux's
    /// `spec.ignore`).
    rules: Vec<IgnoreRule>,
    problems: Vec<String>,
}

/// The GitOps objects that are targets of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitOpsKind {
    FluxKustomization,
    ArgoApplication,
}

/// How a live object says which GitOps object it belongs to.
#[derive(Debug, Clone)]
enum Belongs {
    /// Labels (a label selector): Flux's, Argo CD's label tracking.
    Labels(String),
    /// Argo CD: its tracking annotation (`argocd.argoproj.io/tracking-id`:
    /// `APP:GROUP/KIND:NAMESPACE/NAME`, `APP` being `NAMESPACE_NAME` for an Application outside
    /// Argo CD's own namespace) starting with one of these.
    Annotation { key: &'static str, prefixes: Vec<String> },
}

/// Argo CD's tracking annotation (its default tracking method).
pub const ARGO_TRACKING_ANNOTATION: &str = "argocd.argoproj.io/tracking-id";

/// `kubectl drift kustomization` (each selected Flux Kustomization's inventory) or `kubectl drift
/// application` (each selected Argo CD Application's resources) on one cluster.
pub async fn check(
    cluster: &Cluster,
    kind: GitOpsKind,
    sel: &GitOpsSelection,
    rules: Vec<IgnoreRule>,
    show_secrets: bool,
    progress: &dyn Progress,
) -> Result<ManifestsReport, DriftError> {
    let inventories = match kind {
        GitOpsKind::FluxKustomization => read_selected(cluster, sel, FLUX_KUSTOMIZE_GROUP, "Kustomization")
            .await?
            .into_iter()
            .map(|v| v.map(|v| kustomization_inventory(&Kustomization::from_value(&v))))
            .collect(),
        GitOpsKind::ArgoApplication => {
            let selected = read_selected(cluster, sel, ARGO_GROUP, "Application").await?;
            // argocd-cm is read once per namespace it is looked for in.
            let mut settings: HashMap<String, Result<Option<ArgoSettings>, String>> = HashMap::new();
            let mut out = Vec::new();
            for v in selected {
                let v = match v {
                    Ok(v) => v,
                    Err(not_found) => {
                        out.push(Err(not_found));
                        continue;
                    }
                };
                let app = Application::from_value(&v);
                let ns = sel.argo.namespace.clone().unwrap_or_else(|| app.namespace.clone());
                if !settings.contains_key(&ns) {
                    let read = crate::source::gitops::argo_settings(cluster.client(), &ns).await;
                    settings.insert(ns.clone(), read);
                }
                let tracking = Tracking::resolve(&sel.argo, &ns, &settings[&ns]);
                out.push(Ok(application_inventory(&app, &tracking)));
            }
            out
        }
    };
    check_inventories(cluster, inventories, rules, show_secrets, progress).await
}

/// Read the selected objects of a GitOps kind; a name not found is a failed target of its own.
async fn read_selected(
    cluster: &Cluster,
    sel: &GitOpsSelection,
    group: &str,
    kind: &str,
) -> Result<Vec<Result<Value, (String, String)>>, DriftError> {
    let kinds = cluster.kinds().await?;
    let reader = cluster.reader();
    let scope = if sel.all && sel.all_namespaces { None } else { Some(sel.namespace.as_str()) };
    let Some((_, items)) = crate::source::gitops::list(&kinds, &reader, group, kind, scope).await? else {
        return Err(DriftError::Live(crate::source::live::LiveError::NotServed {
            api_version: group.to_string(),
            kind: format!("{kind} (is {} installed?)", if group == ARGO_GROUP { "Argo CD" } else { "Flux" }),
        }));
    };
    let name_of = |v: &Value| v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
    let mut out: Vec<Result<Value, (String, String)>> = Vec::new();
    if sel.all {
        out.extend(items.iter().map(|v| Ok(v.clone())));
    } else {
        for name in &sel.names {
            match items.iter().find(|v| &name_of(v) == name) {
                Some(v) => out.push(Ok(v.clone())),
                None => out.push(Err((
                    format!("{}/{name}", sel.namespace),
                    format!("{kind} {}/{name} not found", sel.namespace),
                ))),
            }
        }
    }
    Ok(out)
}

fn kustomization_inventory(k: &Kustomization) -> Inventory {
    let mut problems: Vec<String> =
        k.bad_entries.iter().map(|id| format!("inventory entry {id:?} could not be read")).collect();
    if k.inventory.is_none() {
        problems.push(
            "the Kustomization has no inventory (status.inventory): Flux has not applied it yet, or it was applied \
             before inventories were kept"
                .into(),
        );
    }
    let interval = k.interval.clone().map(|i| format!(" (every {i})")).unwrap_or_default();
    let next = if k.suspended {
        "nothing: the Kustomization is suspended, so Flux applies nothing until it is resumed".to_string()
    } else {
        format!(
            "Flux applies the source again at its next reconcile{interval}, server-side with force, and takes over \
             the fields kubectl wrote: what kubectl changed returns to Git's values and what it added is removed; \
             fields other tools set stay{}",
            if k.prune { "; objects removed from Git are deleted (prune)" } else { "" }
        )
    };
    Inventory {
        gitops: GitOps {
            controller: "flux".into(),
            kind: "Kustomization".into(),
            namespace: k.namespace.clone(),
            name: k.name.clone(),
            drift_detection: None,
            next,
            revision: k.revision.clone(),
            source: match (&k.source, &k.path) {
                (Some(s), Some(p)) => Some(format!("{s} path {p}")),
                (s, _) => s.clone(),
            },
            conditions: k.conditions.clone(),
            tracking: None,
            tracking_from: None,
            error: None,
            verdict: None,
        },
        source_type: SourceType::FluxKustomization,
        entries: k.inventory.clone().unwrap_or_default(),
        managers: vec![FLUX_KUSTOMIZE_MANAGER.to_string()],
        extra: Some(Belongs::Labels(format!(
            "{FLUX_KUSTOMIZE_NAME_LABEL}={},{FLUX_KUSTOMIZE_NAMESPACE_LABEL}={}",
            k.name, k.namespace
        ))),
        rules: flux_rules(&format!("Kustomization {}/{}", k.namespace, k.name), "spec.ignore", &k.ignore),
        problems,
    }
}

/// How an Application's objects are tracked (for extra objects), and how we know.
#[derive(Debug, Clone, PartialEq)]
struct Tracking {
    method: TrackingMethod,
    /// The instance label (label tracking).
    label_key: String,
    /// Argo CD's own namespace, when known (an Application there is tracked by its name, one
    /// elsewhere by `NAMESPACE_NAME`); unknown, either is taken.
    control_plane: Option<String>,
    /// Where the method comes from, for the report.
    from: String,
}

impl Tracking {
    /// The method: `--tracking-method`, else `application.resourceTrackingMethod` of `argocd-cm`
    /// in `namespace` (Argo CD's own: `--argocd-namespace`, else the Application's), else Argo
    /// CD's default, annotation (also what it makes of a value it does not know).
    fn resolve(opts: &ArgoOptions, namespace: &str, read: &Result<Option<ArgoSettings>, String>) -> Tracking {
        let settings = read.as_ref().ok().and_then(Option::as_ref);
        let label_key = settings
            .and_then(|s| s.instance_label_key.clone())
            .unwrap_or_else(|| ARGO_DEFAULT_INSTANCE_LABEL.to_string());
        let control_plane = match (&opts.namespace, settings) {
            (Some(ns), _) => Some(ns.clone()),
            (None, Some(s)) => Some(s.namespace.clone()),
            (None, None) => None,
        };
        let written = settings.and_then(|s| s.tracking_method.clone());
        let (method, from) = match (opts.tracking, &written, read) {
            (Some(m), _, _) => (m, "--tracking-method".to_string()),
            (None, Some(w), _) => match TrackingMethod::parse(w) {
                Some(m) => (m, format!("{ARGO_CM} in {namespace}")),
                None => (
                    TrackingMethod::Annotation,
                    format!("{ARGO_CM} in {namespace} says {w:?}, which Argo CD takes as annotation"),
                ),
            },
            (None, None, Ok(Some(_))) => {
                (TrackingMethod::Annotation, format!("Argo CD's default: {ARGO_CM} in {namespace} sets none"))
            }
            (None, None, Ok(None)) => {
                (TrackingMethod::Annotation, format!("Argo CD's default: no {ARGO_CM} in {namespace}"))
            }
            (None, None, Err(e)) => (TrackingMethod::Annotation, format!("Argo CD's default: {e}")),
        };
        Tracking { method, label_key, control_plane, from }
    }

    /// The names Argo CD tracks an Application by: its instance name.
    fn instance_names(&self, a: &Application) -> Vec<String> {
        let qualified = format!("{}_{}", a.namespace, a.name);
        match &self.control_plane {
            Some(ns) if *ns == a.namespace => vec![a.name.clone()],
            Some(_) => vec![qualified],
            None => vec![a.name.clone(), qualified],
        }
    }

    /// How a live object says it belongs to the Application.
    fn belongs(&self, a: &Application) -> Belongs {
        let names = self.instance_names(a);
        match self.method {
            TrackingMethod::Label => {
                // A label value is at most 63 characters: a longer name cannot be in one.
                let values: Vec<&str> = names.iter().map(String::as_str).filter(|n| n.len() <= 63).collect();
                Belongs::Labels(format!("{} in ({})", self.label_key, values.join(",")))
            }
            TrackingMethod::Annotation | TrackingMethod::AnnotationAndLabel => Belongs::Annotation {
                key: ARGO_TRACKING_ANNOTATION,
                prefixes: names.into_iter().map(|n| format!("{n}:")).collect(),
            },
        }
    }
}

/// An Application's `spec.ignoreDifferences` as ignore rules: one per JSON pointer and jq
/// expression, one per entry for its managers; a jq expression that does not compile is a
/// problem naming the entry and the expression.
fn argo_rules(a: &Application) -> (Vec<IgnoreRule>, Vec<String>) {
    let by = format!("Application {}/{}", a.namespace, a.name);
    let (mut rules, mut problems) = (Vec::new(), Vec::new());
    for (i, entry) in a.ignore.iter().enumerate() {
        // Argo CD matches group and kind as globs (`""`: the core group), name and namespace
        // exactly when given.
        let mut base = IgnoreRule::default();
        base.group = Some(entry.group.clone());
        base.kind = Some(entry.kind.clone());
        base.name = entry.name.clone();
        base.namespace = entry.namespace.clone();
        base.by = Some(by.clone());
        let rule = |source: String, field: FieldMatch| {
            let mut r = base.clone();
            r.source = source;
            r.field = Some(field);
            r
        };
        for p in &entry.json_pointers {
            rules.push(rule(format!("ignoreDifferences[{i}] jsonPointers {p}"), FieldMatch::Pointer(p.clone())));
        }
        for expr in &entry.jq_path_expressions {
            match JqPath::compile(expr) {
                Ok(jq) => {
                    rules.push(rule(format!("ignoreDifferences[{i}] jqPathExpressions {expr}"), FieldMatch::Jq(jq)))
                }
                Err(why) => problems.push(format!(
                    "{by}: spec.ignoreDifferences[{i}].jqPathExpressions {expr:?} is not a jq path expression: {why}"
                )),
            }
        }
        if !entry.managed_fields_managers.is_empty() {
            rules.push(rule(
                format!("ignoreDifferences[{i}] managedFieldsManagers {}", entry.managed_fields_managers.join(", ")),
                FieldMatch::Managers(entry.managed_fields_managers.clone()),
            ));
        }
    }
    (rules, problems)
}

fn application_inventory(a: &Application, tracking: &Tracking) -> Inventory {
    let next = match (a.automated, a.self_heal) {
        (true, true) => "Argo CD syncs again when it sees drift (automated sync with selfHeal): what it compares \
                         returns to Git's values; fields added by hand that the manifests do not set stay"
            .to_string(),
        (true, false) => "Argo CD syncs only when Git changes (automated sync without selfHeal): the drift stays \
                          until the next commit or a manual sync"
            .into(),
        _ => "Argo CD does not sync by itself (no automated sync policy): the drift stays until someone syncs".into(),
    };
    let (rules, problems) = argo_rules(a);
    let mut conditions = a.conditions.clone();
    let out_of_sync: Vec<String> = a
        .resources
        .iter()
        .filter(|r| r.sync.as_deref() == Some("OutOfSync"))
        .map(|r| {
            if r.namespace.is_empty() {
                format!("{} {}", r.kind, r.name)
            } else {
                format!("{} {}/{}", r.kind, r.namespace, r.name)
            }
        })
        .collect();
    if !out_of_sync.is_empty() {
        conditions.push(Condition {
            kind: "OutOfSync".into(),
            status: out_of_sync.len().to_string(),
            message: Some(out_of_sync.join(", ")),
            ..Condition::default()
        });
    }
    Inventory {
        gitops: GitOps {
            controller: "argocd".into(),
            kind: "Application".into(),
            namespace: a.namespace.clone(),
            name: a.name.clone(),
            drift_detection: None,
            next,
            revision: a.revision.clone(),
            source: a.source.clone(),
            conditions,
            tracking: Some(tracking.method.as_str().to_string()),
            tracking_from: Some(tracking.from.clone()),
            error: None,
            verdict: None,
        },
        source_type: SourceType::ArgoApplication,
        entries: a.resources.clone(),
        managers: ARGO_MANAGERS.iter().map(|m| m.to_string()).collect(),
        extra: Some(tracking.belongs(a)),
        rules,
        problems,
    }
}

async fn check_inventories(
    cluster: &Cluster,
    inventories: Vec<Result<Inventory, (String, String)>>,
    rules: Vec<IgnoreRule>,
    show_secrets: bool,
    progress: &dyn Progress,
) -> Result<ManifestsReport, DriftError> {
    let engine = Engine::connect(cluster, rules, show_secrets).await?;
    let reconciler = Reconciler::from(cluster.target());
    progress.start("inventories", Some(inventories.len() as u64));
    let mut files = Vec::new();
    let mut checked = 0;
    for inv in inventories {
        match inv {
            Ok(inv) => {
                let title = inv.gitops.title();
                let (report, n) = check_inventory(&engine, inv, &reconciler).await;
                checked += n;
                progress.add(Counter::Objects, n as u64);
                progress.step(&title);
                files.push(report);
            }
            Err((path, message)) => {
                files.push(FileReport::failed(FileOrigin { path, ..FileOrigin::default() }, message));
            }
        }
    }
    let mut report = ManifestsReport::new(files, checked);
    report.cluster = cluster.name().to_string();
    Ok(report)
}

/// Check one inventory: each object's fields owned by other managers' tools, missing objects,
/// and (Flux) extra objects labelled for it.
async fn check_inventory(engine: &Engine, inv: Inventory, reconciler: &Reconciler) -> (FileReport, usize) {
    let Inventory { gitops, source_type, entries, managers, extra: belongs, rules: own_rules, mut problems } = inv;
    // The user's rules first (their reasons are theirs), then the GitOps object's own.
    let rules: Vec<IgnoreRule> = engine.rules.iter().cloned().chain(own_rules).collect();
    let ctx = CompareContext { deployers: managers.clone(), owned_leaves: true, ..Default::default() };
    let mut objects = Vec::new();
    let mut live_keys: BTreeSet<Key> = BTreeSet::new();
    let mut synthetic = Vec::new();
    let mut namespaces: BTreeSet<String> = BTreeSet::new();
    for e in &entries {
        let api_version = e.api_version();
        let ns_opt = (!e.namespace.is_empty()).then(|| e.namespace.clone());
        // An object that could not be read: a problem of the target, and an object in error.
        let unreadable = |problems: &mut Vec<String>, objects: &mut Vec<ObjectReport>, err: String| {
            problems.push(format!("{} {}: {err}", e.kind, e.name));
            objects.push(ObjectReport {
                error: Some(err),
                ..ObjectReport::new(
                    api_version.clone(),
                    e.kind.clone(),
                    ns_opt.clone(),
                    e.name.clone(),
                    ObjectState::Error,
                )
            });
        };
        let rk = match engine.kinds.resolve(&api_version, &e.kind) {
            Ok(rk) => rk,
            Err(err) => {
                unreadable(&mut problems, &mut objects, err.to_string());
                continue;
            }
        };
        if rk.namespaced {
            namespaces.insert(e.namespace.clone());
        }
        live_keys.insert((e.kind.clone(), e.namespace.clone(), e.name.clone()));
        synthetic.push(DesiredObject {
            api_version: api_version.clone(),
            kind: e.kind.clone(),
            name: e.name.clone(),
            namespace: ns_opt.clone(),
            body: serde_json::json!({"apiVersion": api_version, "kind": e.kind, "metadata": {"name": e.name}}),
            source: gitops.title(),
        });
        let items = match engine.reader.list(&rk, rk.namespaced.then_some(e.namespace.as_str())).await {
            Ok(items) => items,
            Err(err) => {
                unreadable(&mut problems, &mut objects, err.to_string());
                continue;
            }
        };
        let Some(live) = items.iter().find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(&e.name))
        else {
            objects.push(ObjectReport::new(api_version, e.kind.clone(), ns_opt, e.name.clone(), ObjectState::Missing));
            continue;
        };
        let desired = ManagedFields::from_object(live).projection(&managers, live);
        let mut drifts = compare_object(&desired, live, &ctx);
        let subject =
            Subject { group: &e.group, kind: &e.kind, namespace: &e.namespace, name: &e.name, desired: &desired, live };
        crate::engine::compare::rules::apply(&rules, &subject, &mut drifts);
        if drifts.is_empty() {
            continue;
        }
        let state =
            if drifts.iter().any(|d| d.ignored.is_none()) { ObjectState::Changed } else { ObjectState::Ignored };
        objects.push(ObjectReport {
            fields: drifts.iter().map(|d| field_report(&e.kind, d, engine.show_secrets)).collect(),
            ..ObjectReport::new(api_version, e.kind.clone(), ns_opt, e.name.clone(), state)
        });
    }

    // Extra: marked as its own (labels, tracking annotation), not in its inventory, owned by no
    // other object.
    let mut extra = Vec::new();
    if let Some(belongs) = &belongs {
        let selector = match belongs {
            Belongs::Labels(s) => s.as_str(),
            Belongs::Annotation { .. } => "",
        };
        let marked = |o: &Value| match belongs {
            Belongs::Labels(_) => true,
            Belongs::Annotation { key, prefixes } => o
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(*key))
                .and_then(Value::as_str)
                .is_some_and(|v| prefixes.iter().any(|p| v.starts_with(p.as_str()))),
        };
        if namespaces.is_empty() {
            namespaces.insert(gitops.namespace.clone());
        }
        for rk in engine.extra_kinds(&synthetic, &[]) {
            let scopes: Vec<Option<&str>> =
                if rk.namespaced { namespaces.iter().map(|n| Some(n.as_str())).collect() } else { vec![None] };
            for ns in scopes {
                match engine.lists.list_metadata(&rk, ns, selector).await {
                    Ok(items) => {
                        for o in items.iter() {
                            let (ons, oname) = crate::source::live::object_key(o);
                            let owned = o
                                .pointer("/metadata/ownerReferences")
                                .and_then(Value::as_array)
                                .is_some_and(|a| !a.is_empty());
                            if owned
                                || !marked(o)
                                || live_keys.contains(&(rk.resource.kind.clone(), ons.clone(), oname.clone()))
                            {
                                continue;
                            }
                            let ignored = rules
                                .iter()
                                .any(|r| r.is_whole_object() && r.matches_object(&rk.resource.kind, &ons, &oname));
                            extra.push(ObjectReport::new(
                                rk.resource.api_version.clone(),
                                rk.resource.kind.clone(),
                                rk.namespaced.then_some(ons),
                                oname,
                                if ignored { ObjectState::Ignored } else { ObjectState::Extra },
                            ));
                        }
                    }
                    Err(err) => problems.push(format!("while looking for extra objects: {err}")),
                }
            }
        }
    }
    extra.sort_by(|a, b| (&a.kind, &a.namespace, &a.name).cmp(&(&b.kind, &b.namespace, &b.name)));
    extra.dedup_by(|a, b| (&a.kind, &a.namespace, &a.name) == (&b.kind, &b.namespace, &b.name));
    objects.extend(extra);
    problems.sort();
    problems.dedup();

    let object_errors = objects.iter().filter(|o| o.state == ObjectState::Error).count();
    let drifted = objects.iter().any(ObjectReport::is_drift);
    let status = Status::judge(!problems.is_empty(), drifted, false);
    let reconcile = if drifted {
        match source_type {
            SourceType::ArgoApplication => reconciler.for_argo_application(&gitops.namespace, &gitops.name, &objects),
            _ => {
                let extras: Vec<&ObjectReport> = objects.iter().filter(|o| o.state == ObjectState::Extra).collect();
                reconciler.for_flux_kustomization(&gitops.namespace, &gitops.name, &extras)
            }
        }
    } else {
        Vec::new()
    };
    let only_object_errors = problems.len() == object_errors && object_errors > 0;
    let report = FileReport {
        problem: if problems.is_empty() {
            None
        } else if only_object_errors {
            Some(Problem::ObjectsUnchecked(object_errors))
        } else {
            Some(Problem::Failed(problems))
        },
        objects,
        reconcile,
        ..FileReport::new(
            FileOrigin {
                path: format!("{}/{}", gitops.namespace, gitops.name),
                field_manager: Some(managers.join(", ")),
                server_side: true,
                source_type,
                skipped: Vec::new(),
                gitops: Some(gitops),
            },
            status,
        )
    };
    (report, entries.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::report::Change;

    fn app(namespace: &str, ignore: serde_json::Value) -> Application {
        Application::from_value(&json!({
            "metadata": {"namespace": namespace, "name": "shop"},
            "spec": {"ignoreDifferences": ignore}
        }))
    }

    #[test]
    fn the_tracking_method_comes_from_the_flag_then_argocd_cm_then_argo_cd_s_default() {
        let cm = |method: Option<&str>| {
            Ok(Some(ArgoSettings {
                namespace: "argocd".into(),
                tracking_method: method.map(str::to_string),
                instance_label_key: None,
            }))
        };
        let none = ArgoOptions::default();
        let t = Tracking::resolve(&none, "argocd", &cm(Some("label")));
        assert_eq!((t.method, t.from.as_str()), (TrackingMethod::Label, "argocd-cm in argocd"));
        let flag = ArgoOptions { tracking: Some(TrackingMethod::Annotation), namespace: None };
        assert_eq!(Tracking::resolve(&flag, "argocd", &cm(Some("label"))).method, TrackingMethod::Annotation);
        let t = Tracking::resolve(&none, "argocd", &cm(Some("annotation+label")));
        assert_eq!(t.method, TrackingMethod::AnnotationAndLabel);
        let t = Tracking::resolve(&none, "argocd", &cm(Some("labels")));
        assert_eq!(t.method, TrackingMethod::Annotation);
        assert!(t.from.contains("\"labels\""), "{}", t.from);
        assert_eq!(Tracking::resolve(&none, "argocd", &cm(None)).method, TrackingMethod::Annotation);
        let t = Tracking::resolve(&none, "team", &Ok(None));
        assert_eq!((t.method, t.control_plane.clone()), (TrackingMethod::Annotation, None));
        let t = Tracking::resolve(&none, "argocd", &Err("could not read ConfigMap argocd/argocd-cm: forbidden".into()));
        assert!(t.from.contains("forbidden"), "{}", t.from);
    }

    #[test]
    fn label_tracking_selects_by_the_instance_name_and_annotation_tracking_by_its_prefix() {
        let mut settings = ArgoSettings { namespace: "argocd".into(), ..ArgoSettings::default() };
        settings.tracking_method = Some("label".into());
        let t = Tracking::resolve(&ArgoOptions::default(), "argocd", &Ok(Some(settings.clone())));
        let selector = |b: Belongs| match b {
            Belongs::Labels(s) => s,
            other => panic!("{other:?}"),
        };
        // In Argo CD's namespace: its name; elsewhere: NAMESPACE_NAME.
        assert_eq!(selector(t.belongs(&app("argocd", json!([])))), "app.kubernetes.io/instance in (shop)");
        assert_eq!(selector(t.belongs(&app("team", json!([])))), "app.kubernetes.io/instance in (team_shop)");
        settings.instance_label_key = Some("argocd.argoproj.io/instance".into());
        let t = Tracking::resolve(&ArgoOptions::default(), "argocd", &Ok(Some(settings)));
        assert!(selector(t.belongs(&app("argocd", json!([])))).starts_with("argocd.argoproj.io/instance in"));
        // Unknown namespace: either name; annotation+label tracks by the annotation.
        let t = Tracking::resolve(
            &ArgoOptions { tracking: Some(TrackingMethod::AnnotationAndLabel), namespace: None },
            "x",
            &Ok(None),
        );
        match t.belongs(&app("team", json!([]))) {
            Belongs::Annotation { key, prefixes } => {
                assert_eq!(key, ARGO_TRACKING_ANNOTATION);
                assert_eq!(prefixes, vec!["shop:".to_string(), "team_shop:".to_string()]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ignore_differences_become_rules_and_a_bad_jq_expression_is_a_problem_naming_both() {
        let a = app(
            "argocd",
            json!([
                {"group": "apps", "kind": "Deployment",
                 "jsonPointers": ["/spec/replicas", "/metadata/labels/foo~1bar"],
                 "jqPathExpressions": [".spec.template.spec.containers[] | select(.name == \"app\") | .image",
                                       ".spec | select(.x == "],
                 "managedFieldsManagers": ["hpa-controller"]}
            ]),
        );
        let (rules, problems) = argo_rules(&a);
        assert_eq!(rules.len(), 4, "{rules:?}");
        assert!(rules.iter().all(|r| r.by.as_deref() == Some("Application argocd/shop")));
        assert_eq!(
            rules[0].describe(),
            "ignored by Application argocd/shop (ignoreDifferences[0] jsonPointers /spec/replicas)"
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("Application argocd/shop") && problems[0].contains(".spec | select(.x == "),
            "{problems:?}"
        );
        // The inventory carries the problem: the target is an error (exit 2), not clean.
        let t = Tracking::resolve(&ArgoOptions::default(), "argocd", &Ok(None));
        let inv = application_inventory(&a, &t);
        assert_eq!(inv.problems, problems);
        assert_eq!(inv.gitops.tracking.as_deref(), Some("annotation"));
    }

    #[test]
    fn a_kustomization_object_desires_what_flux_owns_and_finds_what_people_added() {
        let live = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "managedFields": [
                {"manager": "kustomize-controller", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}},
                {"manager": "kubectl-set", "operation": "Update", "time": "2026-12-02T01:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:spec": {"f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"web\"}": {"f:env": {".": {}, "k:{\"name\":\"DEBUG\"}": {".": {}, "f:name": {}, "f:value": {}}}}}}}}}}
            ]},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1", "env": [{"name": "DEBUG", "value": "1"}]}]}}}
        });
        let desired = ManagedFields::from_object(&live).projection(&[FLUX_KUSTOMIZE_MANAGER.to_string()], &live);
        assert_eq!(
            desired.pointer("/spec/template/spec/containers/0"),
            Some(&json!({"name": "web", "image": "nginx:1"}))
        );
        assert_eq!(desired.pointer("/metadata/name"), Some(&json!("web")));
        let ctx =
            CompareContext { deployers: vec![FLUX_KUSTOMIZE_MANAGER.into()], owned_leaves: true, ..Default::default() };
        let drifts = compare_object(&desired, &live, &ctx);
        assert_eq!(drifts.len(), 1, "{drifts:?}");
        assert_eq!(drifts[0].change, Change::Added);
        assert_eq!(drifts[0].owner.as_ref().unwrap().manager, "kubectl-set");
        assert_eq!(drifts[0].path.to_string(), "spec.template.spec.containers[name=web].env");
    }
}
