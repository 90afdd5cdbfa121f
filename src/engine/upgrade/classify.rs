//! The three-way comparison of one release's upgrade, pure: the current manifest, the new render
//! and the live objects in, one class per difference out (docs/upgrade.md "How each class is
//! found").
//!
//! What the upgrade writes is modelled as Helm writes it:
//! - three-way merge (Helm 3; Helm 4 on a release recorded client-side): the patch is
//!   `CreateThreeWayMergePatch(current manifest, new render, live)`: every field the new render
//!   sets that differs live is set to the render's value, every field the current manifest set
//!   that the new render does not is deleted, and what neither sets (a person's additions) stays;
//! - server-side apply (Helm 4 on a release recorded `ssa`, `--force-conflicts` off by default):
//!   a field the new render sets, with another value live, that another manager owns is a
//!   conflict and the upgrade fails; a field Helm no longer applies stays when another manager
//!   owns it.
//!
//! Whatever the method, a change to an immutable field fails the upgrade with the API server's
//! own error, named here as it words it.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::engine::compare::managed::ManagedFields;
use crate::engine::compare::prepare_desired;
use crate::engine::compare::walk::{RawDrift, Walker};
use crate::engine::drift::helm_deployers;
use crate::engine::lifecycle::LiveObjects;
use crate::report::adopt::ObjectRef;
use crate::report::field::Change;
use crate::report::path::{FieldPath, Seg};
use crate::report::secret::{is_secret_field, redact_value};
use crate::report::upgrade::{ApplyMethod, UpgradeChange, UpgradeClass};
use crate::report::{FieldReport, ObjectReport, ObjectState};
use crate::source::manifest::DesiredObject;

/// What the classification is told besides the three sides.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Method {
    pub apply: ApplyMethod,
    /// `--force-conflicts`: a server-side apply conflict takes the field over instead of failing.
    pub force_conflicts: bool,
    pub show_secrets: bool,
}

/// The three sides of one release.
pub(crate) struct Sides<'a> {
    pub namespace: &'a str,
    /// The release's current manifest, as compared (Helm's metadata set).
    pub current: &'a [DesiredObject],
    /// The new render (hooks left out), Helm's metadata set.
    pub rendered: &'a [DesiredObject],
    /// The drift check's objects: live against the current manifest, with who and when.
    pub drift: &'a [ObjectReport],
    pub live: &'a LiveObjects,
}

/// One object's key: kind, namespace (the release's when the manifest leaves it out), name.
pub(crate) type Key = (String, String, String);

pub(crate) fn key_of(d: &DesiredObject, namespace: &str) -> Key {
    (d.kind.clone(), d.namespace.clone().unwrap_or_else(|| namespace.to_string()), d.name.clone())
}

pub(crate) fn object_ref(d: &DesiredObject, namespace: &str) -> ObjectRef {
    ObjectRef {
        api_version: d.api_version.clone(),
        kind: d.kind.clone(),
        namespace: Some(d.namespace.clone().unwrap_or_else(|| namespace.to_string())),
        name: d.name.clone(),
    }
}

/// The live object of a key (cluster-scoped objects are kept without a namespace).
pub(crate) fn live_of<'l>(live: &'l LiveObjects, k: &Key) -> Option<&'l Value> {
    live.get(k).or_else(|| live.get(&(k.0.clone(), String::new(), k.2.clone())))
}

/// Every difference of the upgrade, in one class each, in the order they are shown.
pub(crate) fn classify(sides: &Sides<'_>, method: Method) -> Vec<UpgradeChange> {
    let ns = sides.namespace;
    let mut out = Vec::new();
    let rendered_keys: BTreeSet<Key> = sides.rendered.iter().map(|d| key_of(d, ns)).collect();
    for cur in sides.current {
        let k = key_of(cur, ns);
        let Some(new) = sides.rendered.iter().find(|d| key_of(d, ns) == k) else {
            if let Some(live) = live_of(sides.live, &k) {
                out.push(whole(UpgradeClass::Delete, cur, ns, deleted_why(live)));
            }
            continue;
        };
        let drift = sides.drift.iter().find(|o| {
            o.kind == k.0 && o.name == k.2 && o.namespace.as_deref().is_none_or(|n| n.is_empty() || n == k.1)
        });
        match live_of(sides.live, &k) {
            Some(live) => object_changes(cur, new, live, drift, ns, method, &mut out),
            None if drift.is_some_and(|o| o.state == ObjectState::Missing) => out.push(whole(
                UpgradeClass::Overwritten,
                cur,
                ns,
                "deleted by hand: the upgrade creates it again".into(),
            )),
            None => {}
        }
    }
    let current_keys: BTreeSet<Key> = sides.current.iter().map(|d| key_of(d, ns)).collect();
    for new in sides.rendered.iter().filter(|d| !current_keys.contains(&key_of(d, ns))) {
        out.push(whole(UpgradeClass::Create, new, ns, "new in the render".into()));
    }
    debug_assert!(rendered_keys.len() <= sides.rendered.len());
    out.sort_by(|a, b| {
        (a.class, &a.object.kind, &a.object.name, &a.path).cmp(&(b.class, &b.object.kind, &b.object.name, &b.path))
    });
    out
}

fn deleted_why(live: &Value) -> String {
    let keep = live.pointer("/metadata/annotations/helm.sh~1resource-policy").and_then(Value::as_str) == Some("keep");
    if keep {
        "no longer in the render, but annotated helm.sh/resource-policy: keep: Helm leaves it (unmanaged)".into()
    } else {
        "no longer in the render: Helm deletes it".into()
    }
}

fn whole(class: UpgradeClass, d: &DesiredObject, ns: &str, why: String) -> UpgradeChange {
    UpgradeChange::whole(class, object_ref(d, ns), why)
}

/// Whether two paths are one the other's ancestor (or the same).
fn overlaps(a: &FieldPath, b: &FieldPath) -> bool {
    a.is_under(b) || b.is_under(a)
}

/// The changes of one object in both the current manifest and the new render, live.
fn object_changes(
    cur: &DesiredObject,
    new: &DesiredObject,
    live: &Value,
    drift: Option<&ObjectReport>,
    ns: &str,
    method: Method,
    out: &mut Vec<UpgradeChange>,
) {
    let kind = cur.kind.as_str();
    let (cur_body, new_body) = (prepare_desired(kind, &cur.body), prepare_desired(kind, &new.body));
    let secret = |path: &FieldPath, v: Option<Value>| -> Option<Value> {
        match v {
            Some(v) if !method.show_secrets && is_secret_field(kind, path) => Some(redact_value(&v, kind == "Secret")),
            v => v,
        }
    };
    let change = |class: UpgradeClass, path: &FieldPath, why: String| UpgradeChange {
        path: Some(path.clone()),
        current: secret(path, path.get(&cur_body).cloned()),
        rendered: secret(path, path.get(&new_body).cloned()),
        live: secret(path, path.get(live).cloned()),
        why,
        ..whole(class, cur, ns, String::new())
    };
    let managed = ManagedFields::from_object(live);
    let deployers = helm_deployers();
    // What the upgrade writes live: each field the new render sets with another value live. An
    // item or key only live (a person's env var, a data key) is left by both writes (a keyed list
    // and a map merge); an item of a list without keys is not (the list is written whole).
    let writes: Vec<RawDrift> = Walker::compare(kind, &new_body, live)
        .into_iter()
        .filter(|w| w.change != Change::Added || matches!(w.path.segs().last(), Some(Seg::Index(_))))
        .collect();
    let mut blocked: Vec<FieldPath> = Vec::new();
    for w in &writes {
        if let Some(error) = immutable_error(cur, live, &w.path) {
            if blocked.iter().any(|b| w.path.is_under(b)) {
                continue;
            }
            let path = immutable_root(kind, &w.path);
            let mut c = change(UpgradeClass::Blocking, &path, "an immutable field changes".into());
            c.error = Some(error);
            out.push(c);
            blocked.push(path);
        }
    }
    let conflict_of = |path: &FieldPath| -> Option<(String, Option<String>)> {
        if method.apply != ApplyMethod::ServerSideApply || method.force_conflicts {
            return None;
        }
        let owner = managed.owner(path, live)?;
        (!deployers.contains(&owner.manager)).then_some((owner.manager, owner.time))
    };
    let api_version = live.get("apiVersion").and_then(Value::as_str).unwrap_or(&cur.api_version).to_string();
    let conflict = |path: &FieldPath, manager: &str| {
        format!("Apply failed with 1 conflict: conflict with \"{manager}\" using {api_version}: {}", ssa_path(path))
    };
    let hand: Vec<&FieldReport> = drift
        .map(|o| o.fields.iter().filter(|f| f.reason.is_none() && f.from_revision.is_none()).collect())
        .unwrap_or_default();
    let mut explained: Vec<FieldPath> = blocked.clone();
    // Hand edits: overwritten, kept, or (server-side) a conflict.
    for f in &hand {
        if blocked.iter().any(|b| f.path.is_under(b)) {
            continue;
        }
        let touched = writes.iter().any(|w| overlaps(&w.path, &f.path));
        let in_render = f.path.get(&new_body).is_some();
        let mut c = change(UpgradeClass::Kept, &f.path, String::new());
        c.manager = f.manager.clone();
        c.time = f.time.clone();
        let (class, why) = match (f.change, touched, in_render) {
            (Change::Removed, true, _) => {
                (UpgradeClass::Overwritten, "removed by hand: the upgrade sets it again".into())
            }
            (Change::Removed, false, _) => {
                (UpgradeClass::Kept, "removed by hand: the new render does not set it".into())
            }
            (_, true, _) => match conflict_of(&f.path) {
                Some((manager, _)) => {
                    c.error = Some(conflict(&f.path, &manager));
                    (
                        UpgradeClass::Blocking,
                        format!("server-side apply conflict: {manager} owns it and the new render sets it"),
                    )
                }
                None if method.force_conflicts && method.apply == ApplyMethod::ServerSideApply => (
                    UpgradeClass::Overwritten,
                    "--force-conflicts: Helm takes the field over and sets the new render's value".into(),
                ),
                None => (UpgradeClass::Overwritten, "the new render sets it: set back to the render's value".into()),
            },
            (_, false, true) => (UpgradeClass::Kept, "the new render sets the value it has live".into()),
            (Change::Changed, false, false) if method.apply == ApplyMethod::ThreeWayMerge => (
                UpgradeClass::Overwritten,
                "the current manifest sets it and the new render does not: the three-way merge deletes it".into(),
            ),
            (Change::Changed, false, false) => (
                UpgradeClass::Kept,
                format!(
                    "the new render does not set it and {} owns it: Helm stops applying it, the value stays",
                    f.manager.as_deref().unwrap_or("another manager")
                ),
            ),
            (_, false, false) => (UpgradeClass::Kept, "the new render does not set it".into()),
        };
        c.class = class;
        c.why = why;
        explained.push(f.path.clone());
        out.push(c);
    }
    // The chart's changes: new against current, both ways.
    let forward = Walker::compare(kind, &new_body, &cur_body);
    let backward = Walker::compare(kind, &cur_body, &new_body);
    let mut seen: BTreeSet<FieldPath> = BTreeSet::new();
    let chart_changes = forward
        .iter()
        .map(|r| (r, r.change))
        .chain(backward.iter().filter(|r| r.change == Change::Removed).map(|r| (r, Change::Added)));
    for (r, change_kind) in chart_changes {
        if !seen.insert(r.path.clone()) || explained.iter().any(|e| overlaps(e, &r.path)) {
            continue;
        }
        let why = match change_kind {
            Change::Changed => "changed by the chart or values",
            Change::Removed => "set by the new render, not by the current manifest",
            Change::Added => "set by the current manifest, not by the new render: removed",
        };
        let mut c = change(UpgradeClass::ChartChange, &r.path, why.into());
        if let Some((manager, time)) =
            conflict_of(&r.path).filter(|_| writes.iter().any(|w| overlaps(&w.path, &r.path)))
        {
            c.class = UpgradeClass::Blocking;
            c.error = Some(conflict(&r.path, &manager));
            c.why = format!("server-side apply conflict: {manager} owns it and the new render changes it");
            c.manager = Some(manager);
            c.time = time;
        }
        out.push(c);
    }
    // Differences the drift check ignores (an HPA's replicas, an ignore rule) that the new render
    // still writes: Helm writes them all the same.
    for w in &writes {
        if explained.iter().any(|e| overlaps(e, &w.path)) || seen.iter().any(|s| overlaps(s, &w.path)) {
            continue;
        }
        let ignored = drift.and_then(|o| o.fields.iter().find(|f| overlaps(&f.path, &w.path) && f.reason.is_some()));
        let why = match ignored {
            Some(f) => format!(
                "the new render sets it (the drift check ignores its difference: {})",
                f.reason.as_deref().unwrap_or_default()
            ),
            None => "the new render sets it: set to the render's value".into(),
        };
        let mut c = change(UpgradeClass::Overwritten, &w.path, why);
        if let Some(owner) = managed.owner(&w.path, live) {
            c.manager = Some(owner.manager);
            c.time = owner.time;
        }
        if let Some((manager, _)) = conflict_of(&w.path) {
            c.class = UpgradeClass::Blocking;
            c.error = Some(conflict(&w.path, &manager));
        }
        seen.insert(w.path.clone());
        out.push(c);
    }
}

/// A path as server-side apply's conflict error writes it: `.spec.template.spec.containers[name="web"].image`.
pub(crate) fn ssa_path(path: &FieldPath) -> String {
    let mut out = String::new();
    for seg in path.segs() {
        match seg {
            Seg::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::Item { field, value } => out.push_str(&format!("[{field}=\"{value}\"]")),
        }
    }
    out
}

/// `Deployment.apps`, `Service`: the kind as the API server's errors name it.
fn qualified_kind(d: &DesiredObject) -> String {
    match d.group() {
        "" => d.kind.clone(),
        g => format!("{}.{g}", d.kind),
    }
}

const STATEFULSET_MUTABLE: &[&str] = &[
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

/// The field the API server names for an immutable change at `path` (`spec.selector`).
fn immutable_root(kind: &str, path: &FieldPath) -> FieldPath {
    let depth = match kind {
        "StatefulSet" | "PersistentVolumeClaim" => 2,
        _ => 2.min(path.segs().len()),
    };
    FieldPath(path.segs()[..depth.min(path.segs().len())].to_vec())
}

/// The API server's error when the upgrade writes `path` of this object, if the field is
/// immutable (as kube-apiserver's validation words it; the detail after "Invalid value" is left
/// out: `...`).
fn immutable_error(d: &DesiredObject, live: &Value, path: &FieldPath) -> Option<String> {
    let kk = qualified_kind(d);
    let name = &d.name;
    let invalid = |field: &str, detail: &str| Some(format!("{kk} \"{name}\" is invalid: {field}: {detail}"));
    let under = |p: &[&str]| path.starts_with(p);
    match (d.group(), d.kind.as_str()) {
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") if under(&["spec", "selector"]) => {
            invalid("spec.selector", "Invalid value: ...: field is immutable")
        }
        ("apps", "StatefulSet") if under(&["spec"]) => {
            let field = match path.segs().get(1) {
                Some(Seg::Key(k)) => k.as_str(),
                _ => return None,
            };
            (!STATEFULSET_MUTABLE.contains(&field)).then(|| {
                format!(
                    "{kk} \"{name}\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than \
                     'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', \
                     'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
                )
            })
        }
        ("batch", "Job") if under(&["spec", "template"]) => {
            invalid("spec.template", "Invalid value: ...: field is immutable")
        }
        ("batch", "Job") if under(&["spec", "selector"]) => {
            invalid("spec.selector", "Invalid value: ...: field is immutable")
        }
        ("", "Service") if under(&["spec", "clusterIP"]) || under(&["spec", "clusterIPs"]) => {
            let set = live.pointer("/spec/clusterIP").and_then(Value::as_str).is_some_and(|ip| !ip.is_empty());
            set.then(|| {
                format!("{kk} \"{name}\" is invalid: spec.clusterIPs[0]: Invalid value: ...: may not change once set")
            })
        }
        ("", "PersistentVolumeClaim")
            if under(&["spec"])
                && !under(&["spec", "resources", "requests"])
                && !under(&["spec", "volumeAttributesClassName"]) =>
        {
            invalid(
                "spec",
                "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            )
        }
        ("", "ConfigMap" | "Secret")
            if live.get("immutable") == Some(&Value::Bool(true)) && (under(&["data"]) || under(&["binaryData"])) =>
        {
            let field = if under(&["data"]) { "data" } else { "binaryData" };
            invalid(field, "Forbidden: field is immutable when `immutable` is set")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(body: Value) -> DesiredObject {
        DesiredObject {
            api_version: body["apiVersion"].as_str().unwrap().into(),
            kind: body["kind"].as_str().unwrap().into(),
            name: body["metadata"]["name"].as_str().unwrap().into(),
            namespace: None,
            body,
            source: "t".into(),
        }
    }

    fn deploy(selector: &str, image: &str, replicas: u32) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": selector}},
                        "template": {"metadata": {"labels": {"app": selector}},
                                     "spec": {"containers": [{"name": "web", "image": image}]}}}})
    }

    fn managed(live: &mut Value, entries: Value) {
        live["metadata"]["managedFields"] = entries;
    }

    fn field(path: &str, change: Change, manager: &str) -> FieldReport {
        FieldReport {
            path: path.parse().unwrap(),
            change,
            desired: None,
            live: None,
            manager: Some(manager.into()),
            time: Some("2026-12-05T05:00:00Z".into()),
            reason: None,
            from_revision: None,
            history: None,
            admission: None,
        }
    }

    fn run(
        current: Vec<Value>,
        rendered: Vec<Value>,
        live: Vec<Value>,
        drift: Vec<ObjectReport>,
        apply: ApplyMethod,
        force: bool,
    ) -> Vec<UpgradeChange> {
        let (current, rendered): (Vec<_>, Vec<_>) =
            (current.into_iter().map(obj).collect(), rendered.into_iter().map(obj).collect());
        let live: LiveObjects = live
            .into_iter()
            .map(|l| {
                let k =
                    (l["kind"].as_str().unwrap().into(), "shop".into(), l["metadata"]["name"].as_str().unwrap().into());
                (k, l)
            })
            .collect();
        let sides = Sides { namespace: "shop", current: &current, rendered: &rendered, drift: &drift, live: &live };
        classify(&sides, Method { apply, force_conflicts: force, show_secrets: false })
    }

    fn summary(changes: &[UpgradeChange]) -> Vec<String> {
        changes
            .iter()
            .map(|c| {
                let path = c.path.as_ref().map(ToString::to_string).unwrap_or_default();
                format!("{:?} {} {} {}", c.class, c.object.kind, c.object.name, path)
            })
            .collect()
    }

    /// A hand-edited image that the new render still sets, a hand-added env var the render does
    /// not touch, and a chart change of the replicas.
    fn edited_live() -> (Value, ObjectReport) {
        let mut live = deploy("web", "web:hotfix", 2);
        live["spec"]["template"]["spec"]["containers"][0]["env"] = json!([{"name": "DEBUG", "value": "1"}]);
        managed(
            &mut live,
            json!([
                {"manager": "helm", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-12-05T04:00:00Z",
                 "fieldsV1": {"f:spec": {"f:replicas": {}, "f:selector": {}}}},
                {"manager": "kubectl-set", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-12-05T05:00:00Z",
                 "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {
                     "f:image": {}, "f:env": {"k:{\"name\":\"DEBUG\"}": {".": {}, "f:name": {}, "f:value": {}}}}}}}}}}
            ]),
        );
        let report = ObjectReport {
            fields: vec![
                field("spec.template.spec.containers[name=web].env[name=DEBUG]", Change::Added, "kubectl-set"),
                field("spec.template.spec.containers[name=web].image", Change::Changed, "kubectl-set"),
            ],
            ..ObjectReport::new("apps/v1", "Deployment", Some("shop".into()), "web", ObjectState::Changed)
        };
        (live, report)
    }

    #[test]
    fn three_way_merge_overwrites_a_set_field_and_keeps_an_addition() {
        let (live, report) = edited_live();
        let changes = run(
            vec![deploy("web", "web:1", 2)],
            vec![deploy("web", "web:1", 3)],
            vec![live],
            vec![report],
            ApplyMethod::ThreeWayMerge,
            false,
        );
        assert_eq!(
            summary(&changes),
            vec![
                "Overwritten Deployment web spec.template.spec.containers[name=web].image",
                "ChartChange Deployment web spec.replicas",
                "Kept Deployment web spec.template.spec.containers[name=web].env[name=DEBUG]",
            ]
        );
        assert_eq!(changes[0].manager.as_deref(), Some("kubectl-set"));
        assert_eq!(changes[0].rendered, Some(json!("web:1")));
        // The render's own env list does not write the item added live (as the real upgrade
        // keeps it, docs/upgrade.md): still kept.
        let (live, report) = edited_live();
        let mut with_env = deploy("web", "web:1", 3);
        with_env["spec"]["template"]["spec"]["containers"][0]["env"] = json!([{"name": "LOG", "value": "info"}]);
        let changes = run(
            vec![deploy("web", "web:1", 2)],
            vec![with_env],
            vec![live],
            vec![report],
            ApplyMethod::ServerSideApply,
            false,
        );
        let debug =
            changes.iter().find(|c| c.path.as_ref().is_some_and(|p| p.to_string().ends_with("DEBUG]"))).unwrap();
        assert_eq!(debug.class, UpgradeClass::Kept, "{changes:#?}");
        assert_eq!(changes[0].live, Some(json!("web:hotfix")));
    }

    #[test]
    fn server_side_apply_conflicts_on_a_field_another_manager_owns_unless_forced() {
        let (live, report) = edited_live();
        let args = || {
            (vec![deploy("web", "web:1", 2)], vec![deploy("web", "web:1", 3)], vec![live.clone()], vec![report.clone()])
        };
        let (c, r, l, d) = args();
        let changes = run(c, r, l, d, ApplyMethod::ServerSideApply, false);
        assert_eq!(changes[0].class, UpgradeClass::Blocking, "{changes:#?}");
        assert_eq!(
            changes[0].error.as_deref(),
            Some(
                "Apply failed with 1 conflict: conflict with \"kubectl-set\" using apps/v1: \
                 .spec.template.spec.containers[name=\"web\"].image"
            )
        );
        // Helm owns the replicas: the chart's change applies, no conflict.
        assert!(summary(&changes).contains(&"ChartChange Deployment web spec.replicas".to_string()));
        let (c, r, l, d) = args();
        let forced = run(c, r, l, d, ApplyMethod::ServerSideApply, true);
        assert_eq!(forced[0].class, UpgradeClass::Overwritten, "{forced:#?}");
    }

    #[test]
    fn a_field_the_new_render_drops_is_deleted_by_the_merge_and_kept_by_apply() {
        let (live, report) = edited_live();
        let mut new = deploy("web", "web:1", 2);
        new["spec"]["template"]["spec"]["containers"][0].as_object_mut().unwrap().remove("image");
        let for_method = |m| {
            run(vec![deploy("web", "web:1", 2)], vec![new.clone()], vec![live.clone()], vec![report.clone()], m, false)
        };
        let merge = for_method(ApplyMethod::ThreeWayMerge);
        assert_eq!(merge[0].class, UpgradeClass::Overwritten, "{merge:#?}");
        assert!(merge[0].why.contains("deletes"));
        let apply = for_method(ApplyMethod::ServerSideApply);
        let image = apply.iter().find(|c| c.path.as_ref().is_some_and(|p| p.to_string().ends_with("image"))).unwrap();
        assert_eq!(image.class, UpgradeClass::Kept, "{apply:#?}");
    }

    #[test]
    fn an_immutable_selector_blocks_with_the_api_servers_error() {
        let live = deploy("web", "web:1", 2);
        let changes = run(
            vec![deploy("web", "web:1", 2)],
            vec![deploy("web-v2", "web:1", 2)],
            vec![live],
            vec![],
            ApplyMethod::ThreeWayMerge,
            false,
        );
        assert_eq!(changes[0].class, UpgradeClass::Blocking);
        assert_eq!(changes[0].path.as_ref().unwrap().to_string(), "spec.selector");
        assert_eq!(
            changes[0].error.as_deref(),
            Some("Deployment.apps \"web\" is invalid: spec.selector: Invalid value: ...: field is immutable")
        );
        // Only one blocking change for the selector; the template's label is a chart change.
        assert_eq!(changes.iter().filter(|c| c.class == UpgradeClass::Blocking).count(), 1, "{changes:#?}");
        assert!(
            summary(&changes).contains(&"ChartChange Deployment web spec.template.metadata.labels.app".to_string())
        );
    }

    #[test]
    fn objects_created_deleted_and_deleted_by_hand() {
        let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}});
        let gone = ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "gone", ObjectState::Missing);
        let changes = run(
            vec![cm("old"), cm("gone")],
            vec![cm("new"), cm("gone")],
            vec![cm("old")],
            vec![gone],
            ApplyMethod::ThreeWayMerge,
            false,
        );
        assert_eq!(
            summary(&changes),
            vec!["Overwritten ConfigMap gone ", "Create ConfigMap new ", "Delete ConfigMap old "]
        );
    }

    #[test]
    fn secret_values_are_redacted() {
        let secret = |pw: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "data": {"password": pw}});
        let (old, new, hand) = ("b2xkLXB3", "bmV3LXB3", "aGFuZC1wdw==");
        let report = ObjectReport {
            fields: vec![field("data.password", Change::Changed, "kubectl-edit")],
            ..ObjectReport::new("v1", "Secret", Some("shop".into()), "db", ObjectState::Changed)
        };
        let changes = run(
            vec![secret(old)],
            vec![secret(new)],
            vec![secret(hand)],
            vec![report],
            ApplyMethod::ThreeWayMerge,
            false,
        );
        let text = serde_json::to_string(&changes).unwrap();
        for s in [old, new, hand] {
            assert!(!text.contains(s), "{text}");
        }
        assert_eq!(changes[0].class, UpgradeClass::Overwritten);
    }
}
