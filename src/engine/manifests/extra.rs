//! Extra objects for manifests: live objects that carry the labels of the checked manifests but
//! are in none of their files (made by hand next to them, or left over when a file was removed).
//!
//! What "the manifests' labels" are is never guessed from names:
//! - **ApplySet**: a folder applied with `kubectl apply --prune --applyset=NAME` has every
//!   member labelled `applyset.kubernetes.io/part-of: <id>`, and a parent object (a Secret or
//!   ConfigMap labelled `applyset.kubernetes.io/id: <id>`) listing the kinds the set ever held.
//!   The ids are read from the folder's own live objects, so no flag is needed.
//! - **`--selector LABELS`**: what `kubectl apply --prune -l LABELS` would prune.
//!
//! Without either nothing is searched (a folder's objects share no label that says "this
//! folder"). The search is metadata-only LISTs with a label selector, in the namespaces of the
//! checked objects (plus the ApplySet's `additional-namespaces`): Secret data never leaves the
//! API server. Objects owned by another object (a controller's children) are never extra, nor
//! are objects created from a checked `generateName` document.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::engine::drift::Engine;
use crate::engine::reconcile::Reconciler;
use crate::report::{ExtraOrigin, ExtraReport, ObjectReport, ObjectState, Problem, Status};
use crate::source::live::ResolvedKind;
use crate::source::manifest::{DesiredObject, SkippedObject};

/// The label kubectl puts on every member of an ApplySet.
pub const PART_OF_LABEL: &str = "applyset.kubernetes.io/part-of";
/// The label of an ApplySet's parent object.
pub const ID_LABEL: &str = "applyset.kubernetes.io/id";
/// The parent's list of the kinds its members have (`Deployment.apps,Service`).
pub const GROUP_KINDS_ANNOTATION: &str = "applyset.kubernetes.io/contains-group-kinds";
/// The parent's list of namespaces other than its own that hold members.
pub const NAMESPACES_ANNOTATION: &str = "applyset.kubernetes.io/additional-namespaces";

/// What the checked manifests are: their objects, their skipped `generateName` documents, and
/// the live objects found for them.
pub struct Checked<'a> {
    pub desired: Vec<&'a DesiredObject>,
    pub skipped: Vec<&'a SkippedObject>,
    pub live: Vec<&'a Value>,
    pub default_namespace: &'a str,
}

/// The ApplySet ids the live objects belong to.
pub fn applyset_ids<'v>(live: impl IntoIterator<Item = &'v Value>) -> BTreeSet<String> {
    live.into_iter()
        .filter_map(|o| o.pointer("/metadata/labels").and_then(|l| l.get(PART_OF_LABEL)).and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// One label selector to search by, and where.
struct Search {
    selector: String,
    kinds: Vec<ResolvedKind>,
    namespaces: BTreeSet<String>,
}

/// Search for extra objects; `None` when there is nothing to search by.
pub async fn find(
    engine: &Engine,
    checked: &Checked<'_>,
    selector: Option<&str>,
    reconciler: &Reconciler,
) -> Option<ExtraReport> {
    let ids = applyset_ids(checked.live.iter().copied());
    if ids.is_empty() && selector.is_none() {
        return None;
    }
    let mut errors = Vec::new();
    let mut desired_keys = BTreeSet::new();
    let mut namespaces = BTreeSet::new();
    for d in &checked.desired {
        let Ok(rk) = engine.kinds.resolve(&d.api_version, &d.kind) else { continue };
        let ns = super::live_namespace(&rk, d.namespace.as_deref(), checked.default_namespace);
        if rk.namespaced {
            namespaces.insert(ns.clone());
        }
        desired_keys.insert((rk.resource.group.clone(), rk.resource.kind.clone(), ns, d.name.clone()));
    }
    let generated: BTreeSet<(String, String, String)> = checked
        .skipped
        .iter()
        .filter_map(|s| {
            let rk = engine.kinds.resolve(&s.api_version, &s.kind).ok()?;
            let ns = super::live_namespace(&rk, s.namespace.as_deref(), checked.default_namespace);
            Some((rk.resource.kind, ns, s.generate_name.clone()))
        })
        .collect();
    let owned: Vec<DesiredObject> = checked.desired.iter().map(|d| (*d).clone()).collect();
    let common_kinds = engine.extra_kinds(&owned, &[]);

    let mut searches = Vec::new();
    for id in &ids {
        let (parent_kinds, parent_namespaces) = parent_of(engine, id, &namespaces, &mut errors).await;
        let mut kinds = common_kinds.clone();
        for rk in parent_kinds {
            if !kinds.iter().any(|k| k.resource.group == rk.resource.group && k.resource.kind == rk.resource.kind) {
                kinds.push(rk);
            }
        }
        let mut ns = namespaces.clone();
        ns.extend(parent_namespaces);
        searches.push(Search { selector: format!("{PART_OF_LABEL}={id}"), kinds, namespaces: ns });
    }
    if let Some(sel) = selector {
        searches.push(Search {
            selector: sel.to_string(),
            kinds: common_kinds.clone(),
            namespaces: namespaces.clone(),
        });
    }

    // Every (selector, kind, namespace) LIST at once; the reader bounds the concurrency.
    let mut lists = Vec::new();
    for s in &searches {
        for rk in &s.kinds {
            let scopes: Vec<Option<&str>> =
                if rk.namespaced { s.namespaces.iter().map(|n| Some(n.as_str())).collect() } else { vec![None] };
            for ns in scopes {
                lists.push(async move { (rk, engine.lists.list_metadata(rk, ns, &s.selector).await) });
            }
        }
    }
    let mut found: BTreeMap<(String, String, String), ObjectReport> = BTreeMap::new();
    for (rk, listing) in futures::future::join_all(lists).await {
        let items = match listing {
            Ok(items) => items,
            Err(e) => {
                errors.push(format!("while looking for extra objects: {e}"));
                continue;
            }
        };
        for o in items.iter() {
            let (ns, name) = crate::source::live::object_key(o);
            let key = (rk.resource.group.clone(), rk.resource.kind.clone(), ns.clone(), name.clone());
            if desired_keys.contains(&key) || is_owned(o) {
                continue;
            }
            let generate_name = o.pointer("/metadata/generateName").and_then(Value::as_str).unwrap_or("");
            if !generate_name.is_empty()
                && generated.contains(&(rk.resource.kind.clone(), ns.clone(), generate_name.to_string()))
            {
                continue;
            }
            let ignored =
                engine.rules.iter().any(|r| r.is_whole_object() && r.matches_object(&rk.resource.kind, &ns, &name));
            found.insert(
                (rk.resource.kind.clone(), ns.clone(), name.clone()),
                ObjectReport::new(
                    rk.resource.api_version.clone(),
                    rk.resource.kind.clone(),
                    rk.namespaced.then_some(ns),
                    name,
                    if ignored { ObjectState::Ignored } else { ObjectState::Extra },
                ),
            );
        }
    }
    let objects: Vec<ObjectReport> = found.into_values().collect();
    errors.sort();
    errors.dedup();
    let status = Status::judge(!errors.is_empty(), objects.iter().any(ObjectReport::is_drift), false);
    let selectors: Vec<String> = searches.iter().map(|s| s.selector.clone()).collect();
    let why = format!("extra object ({}): review before deleting", selectors.join(", "));
    let reconcile = objects
        .iter()
        .filter(|o| o.state == ObjectState::Extra)
        .map(|o| reconciler.delete_commented(o, &why))
        .collect();
    let mut all_namespaces: BTreeSet<String> = BTreeSet::new();
    for s in &searches {
        all_namespaces.extend(s.namespaces.iter().cloned());
    }
    Some(ExtraReport {
        problem: Problem::from_messages(errors),
        objects,
        reconcile,
        ..ExtraReport::new(ExtraOrigin { selectors, namespaces: all_namespaces.into_iter().collect() }, status)
    })
}

/// A search that could not run (the cluster could not be reached, the `--timeout`).
pub fn failed(selectors: Vec<String>, error: String) -> ExtraReport {
    ExtraReport::failed(ExtraOrigin { selectors, namespaces: Vec::new() }, error)
}

/// Whether another object owns it (a controller's child: never extra).
fn is_owned(o: &Value) -> bool {
    o.pointer("/metadata/ownerReferences").and_then(Value::as_array).is_some_and(|a| !a.is_empty())
}

/// The kinds and extra namespaces an ApplySet's parent lists. The parent is looked for among the
/// Secrets and ConfigMaps of the checked namespaces (kubectl's parent kinds; a custom parent kind
/// is not looked for, and then only the common kinds and the folder's are searched).
async fn parent_of(
    engine: &Engine,
    id: &str,
    namespaces: &BTreeSet<String>,
    errors: &mut Vec<String>,
) -> (Vec<ResolvedKind>, Vec<String>) {
    let selector = format!("{ID_LABEL}={id}");
    let parent_kinds: Vec<ResolvedKind> =
        ["Secret", "ConfigMap"].iter().filter_map(|k| engine.kinds.resolve_preferred("", k)).collect();
    let mut lists = Vec::new();
    for rk in &parent_kinds {
        for ns in namespaces {
            lists.push(engine.lists.list_metadata(rk, Some(ns), &selector));
        }
    }
    let mut kinds = Vec::new();
    let mut extra_namespaces = Vec::new();
    for listing in futures::future::join_all(lists).await {
        match listing {
            Ok(items) => {
                for parent in items.iter() {
                    let annotation = |k: &str| {
                        parent.pointer("/metadata/annotations").and_then(|a| a.get(k)).and_then(Value::as_str)
                    };
                    for gk in split_list(annotation(GROUP_KINDS_ANNOTATION)) {
                        let (kind, group) = gk.split_once('.').unwrap_or((gk, ""));
                        if let Some(rk) = engine.kinds.resolve_preferred(group, kind) {
                            kinds.push(rk);
                        }
                    }
                    extra_namespaces.extend(split_list(annotation(NAMESPACES_ANNOTATION)).map(str::to_string));
                }
            }
            Err(e) => errors.push(format!("while looking for the ApplySet parent of {id}: {e}")),
        }
    }
    (kinds, extra_namespaces)
}

fn split_list(v: Option<&str>) -> impl Iterator<Item = &str> {
    v.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn applyset_ids_come_from_the_part_of_label() {
        let a = json!({"metadata": {"labels": {PART_OF_LABEL: "applyset-abc-v1"}}});
        let b = json!({"metadata": {"labels": {"app": "x"}}});
        let c = json!({"metadata": {"labels": {PART_OF_LABEL: "applyset-abc-v1"}}});
        let d = json!({"metadata": {"labels": {PART_OF_LABEL: "applyset-def-v1"}}});
        assert_eq!(
            applyset_ids([&a, &b, &c, &d]),
            BTreeSet::from(["applyset-abc-v1".into(), "applyset-def-v1".into()])
        );
        assert!(applyset_ids([&b]).is_empty());
    }

    #[test]
    fn owned_objects_and_lists() {
        assert!(is_owned(&json!({"metadata": {"ownerReferences": [{"kind": "ReplicaSet"}]}})));
        assert!(!is_owned(&json!({"metadata": {"ownerReferences": []}})));
        assert_eq!(
            split_list(Some("Deployment.apps, ConfigMap,,")).collect::<Vec<_>>(),
            vec!["Deployment.apps", "ConfigMap"]
        );
        assert_eq!(split_list(None).count(), 0);
    }
}
