//! Who changed a field: the live object's `metadata.managedFields`.
//!
//! Each entry names a field manager and the set of fields it owns (`fieldsV1`: `f:<field>` for
//! map keys, `k:{...}` for list items by key, `v:<value>` for set members, `i:<n>` for indexes,
//! `.` for the item itself). A field is attributed to the manager whose set contains it, or
//! contains an ancestor that it owns atomically.

use serde_json::{Map, Value};

use crate::report::field::Owner;
use crate::report::path::{FieldPath, Seg, scalar_text};

/// What kind of actor a field manager is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManagerClass {
    /// The tool that deployed the desired state (helm, or the applier of a manifests folder).
    Deployer,
    /// A person's tool: kubectl edit/patch/set/label/..., dashboards.
    Person,
    /// A controller or anything else automatic.
    Controller,
}

/// Classify a manager name given the deployer's names.
pub fn classify(manager: &str, deployers: &[String]) -> ManagerClass {
    if deployers.iter().any(|d| d == manager) {
        return ManagerClass::Deployer;
    }
    const PERSON_TOOLS: &[&str] =
        &["k9s", "Mozilla", "lens", "Lens", "OpenLens", "headlamp", "kubernetes-dashboard", "kubie", "kubecolor"];
    if manager.starts_with("kubectl") || PERSON_TOOLS.contains(&manager) {
        ManagerClass::Person
    } else {
        ManagerClass::Controller
    }
}

/// One managedFields entry.
#[derive(Debug, Clone)]
pub struct ManagerEntry {
    pub manager: String,
    pub operation: String,
    pub time: Option<String>,
    pub subresource: Option<String>,
    fields: Value,
}

/// The parsed managedFields of a live object.
#[derive(Debug, Clone, Default)]
pub struct ManagedFields {
    pub entries: Vec<ManagerEntry>,
}

impl ManagedFields {
    pub fn from_object(live: &Value) -> ManagedFields {
        let entries = live
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .map(|arr| {
                arr.iter()
                    .filter_map(|e| {
                        Some(ManagerEntry {
                            manager: e.get("manager")?.as_str()?.to_string(),
                            operation: e.get("operation").and_then(Value::as_str).unwrap_or("").to_string(),
                            time: e.get("time").and_then(Value::as_str).map(str::to_string),
                            subresource: e.get("subresource").and_then(Value::as_str).map(str::to_string),
                            fields: e.get("fieldsV1").cloned().unwrap_or(Value::Null),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        ManagedFields { entries }
    }

    /// Who owns `path` (resolved against the live object `live`). When several managers share a
    /// field (server-side apply), the most recent writer is named.
    pub fn owner(&self, path: &FieldPath, live: &Value) -> Option<Owner> {
        let mut best: Option<&ManagerEntry> = None;
        let mut best_depth = 0usize;
        for e in &self.entries {
            if let Some(depth) = owned_depth(&e.fields, path, live) {
                let better = match best {
                    None => true,
                    Some(b) => depth > best_depth || (depth == best_depth && e.time > b.time),
                };
                if better {
                    best = Some(e);
                    best_depth = depth;
                }
            }
        }
        best.map(|e| Owner { manager: e.manager.clone(), time: e.time.clone() })
    }

    /// The first of `managers` whose field set reaches `path` (it owns the field, something
    /// below it, or an ancestor atomically), resolved against the live object `live`.
    pub fn owned_by<'m>(&self, managers: &'m [String], path: &FieldPath, live: &Value) -> Option<&'m str> {
        managers
            .iter()
            .map(String::as_str)
            .find(|m| self.entries.iter().any(|e| e.manager == *m && owned_depth(&e.fields, path, live).is_some()))
    }

    /// Whether `path` (resolved against `live`) has owners and every one of them is among
    /// `managers` (entries of subresources included: `kubectl scale` writes `spec.replicas`
    /// through `/scale`). The API server computes ownership from the request before mutating
    /// admission runs, so a value only the writer owns that differs from what it sent was changed
    /// at admission (`compare::changed_at_admission`).
    pub fn only_owned_by(&self, managers: &[String], path: &FieldPath, live: &Value) -> bool {
        let mut owners = self.entries.iter().filter(|e| owned_depth(&e.fields, path, live).is_some()).peekable();
        owners.peek().is_some() && owners.all(|e| managers.contains(&e.manager))
    }

    /// Every leaf field owned by managers of class `Person`, as paths in the live object.
    pub fn person_owned_leaves(&self, live: &Value, deployers: &[String]) -> Vec<(FieldPath, Owner)> {
        let mut out = Vec::new();
        for e in &self.entries {
            if classify(&e.manager, deployers) != ManagerClass::Person {
                continue;
            }
            let owner = Owner { manager: e.manager.clone(), time: e.time.clone() };
            collect_leaves(&e.fields, &FieldPath::root(), Some(live), &mut |p| out.push((p, owner.clone())));
        }
        out
    }

    /// Every leaf field owned by managers that are not of class `Person` (the deployer,
    /// controllers), as paths in the live object.
    pub fn other_owned_leaves(&self, live: &Value, deployers: &[String]) -> Vec<FieldPath> {
        let mut out = Vec::new();
        for e in self.entries.iter().filter(|e| classify(&e.manager, deployers) != ManagerClass::Person) {
            collect_leaves(&e.fields, &FieldPath::root(), Some(live), &mut |p| out.push(p));
        }
        out
    }
}

impl ManagedFields {
    /// The part of `live` that `managers` own on the object itself (not its subresources): for
    /// a server-side applier, exactly the fields it last applied, with their live values. Kept
    /// with the object's apiVersion, kind, name and namespace. List items keep their key fields.
    pub fn projection(&self, managers: &[String], live: &Value) -> Value {
        let mut set = Value::Object(Map::new());
        for e in self
            .entries
            .iter()
            .filter(|e| managers.contains(&e.manager) && e.subresource.as_deref().is_none_or(str::is_empty))
        {
            union(&mut set, &e.fields);
        }
        let mut out = project(&set, live).unwrap_or_else(|| Value::Object(Map::new()));
        if let Some(map) = out.as_object_mut() {
            for k in ["apiVersion", "kind"] {
                if let Some(v) = live.get(k) {
                    map.insert(k.to_string(), v.clone());
                }
            }
            let meta = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                for k in ["name", "namespace"] {
                    if let Some(v) = live.pointer(&format!("/metadata/{k}")) {
                        meta.insert(k.to_string(), v.clone());
                    }
                }
            }
        }
        out
    }
}

/// Merge field set `from` into `into`.
fn union(into: &mut Value, from: &Value) {
    let (Some(a), Some(b)) = (into.as_object_mut(), from.as_object()) else { return };
    for (k, v) in b {
        match a.get_mut(k) {
            Some(existing) => union(existing, v),
            None => {
                a.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The part of `live` that field set `node` covers (`None` when it covers nothing there).
fn project(node: &Value, live: &Value) -> Option<Value> {
    let map = node.as_object()?;
    let children: Vec<(&String, &Value)> = map.iter().filter(|(k, _)| k.as_str() != ".").collect();
    if children.is_empty() {
        return Some(live.clone());
    }
    match live {
        Value::Object(fields) => {
            let mut out = Map::new();
            for (k, child) in children {
                let Some(name) = k.strip_prefix("f:") else { continue };
                if let Some(v) = fields.get(name).and_then(|lv| project(child, lv)) {
                    out.insert(name.to_string(), v);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let by_key = find_item_key(map, item).and_then(|k| map.get(&k).map(|c| (k, c)));
                let by_index = map.get(&format!("i:{i}"));
                let member = map
                    .keys()
                    .filter_map(|k| k.strip_prefix("v:"))
                    .any(|v| serde_json::from_str::<Value>(v).is_ok_and(|v| scalar_text(&v) == scalar_text(item)));
                if let Some((key, child)) = by_key {
                    let mut projected = project(child, item).unwrap_or_else(|| Value::Object(Map::new()));
                    // The item's identity, even when the set does not list its key fields.
                    if let (Some(p), Ok(k)) =
                        (projected.as_object_mut(), serde_json::from_str::<Map<String, Value>>(&key[2..]))
                    {
                        for f in k.keys() {
                            if let Some(v) = item.get(f) {
                                p.entry(f.clone()).or_insert_with(|| v.clone());
                            }
                        }
                    }
                    out.push(projected);
                } else if let Some(child) = by_index {
                    out.push(project(child, item).unwrap_or(Value::Null));
                } else if member {
                    out.push(item.clone());
                }
            }
            Some(Value::Array(out))
        }
        other => Some(other.clone()),
    }
}

/// Managers that change objects by hand; never taken as the deployer of a manifest.
const HAND_EDIT_MANAGERS: &[&str] = &[
    "kubectl-edit",
    "kubectl-patch",
    "kubectl-set",
    "kubectl-label",
    "kubectl-annotate",
    "kubectl-rollout",
    "kubectl-scale",
    "kubectl-taint",
    "kubectl-autoscale",
];

impl ManagedFields {
    /// The entry that most likely deployed `desired` (manifests drift, where no fixed deployer
    /// name is known): among entries written to the object itself (not the `status` or `scale`
    /// subresource), other than hand-edit tools and `before-first-apply`, the one owning the most
    /// leaves that the manifest sets; ties go to the one owning more leaves overall, then to
    /// server-side apply. `desired` may be given in two forms (as written, and as the API server
    /// would store it: Secret `stringData` as `data`); a leaf set in either counts.
    pub fn likely_deployer(&self, desired: &[&Value], live: &Value) -> Option<&ManagerEntry> {
        let mut best: Option<(&ManagerEntry, (usize, usize, bool))> = None;
        for e in &self.entries {
            if e.subresource.as_deref().is_some_and(|s| !s.is_empty())
                || HAND_EDIT_MANAGERS.contains(&e.manager.as_str())
                || e.manager == "before-first-apply"
            {
                continue;
            }
            let mut in_manifest = 0usize;
            let mut total = 0usize;
            collect_leaves(&e.fields, &FieldPath::root(), Some(live), &mut |p| {
                total += 1;
                if desired.iter().any(|d| p.get(d).is_some()) {
                    in_manifest += 1;
                }
            });
            if total == 0 {
                continue;
            }
            let score = (in_manifest, total, e.operation == "Apply");
            if best.as_ref().is_none_or(|(_, s)| score > *s) {
                best = Some((e, score));
            }
        }
        best.map(|(e, _)| e)
    }
}

/// How deep along `path` the field set reaches as an owned node (`Some(depth)` when it owns the
/// field itself or an ancestor atomically), `None` when it does not own the field.
fn owned_depth(fields: &Value, path: &FieldPath, live: &Value) -> Option<usize> {
    let mut node = fields.as_object()?;
    let mut cur = live;
    for (depth, seg) in path.segs().iter().enumerate() {
        let (child_key, next_live) = match seg {
            Seg::Key(k) => (Some(format!("f:{k}")), cur.get(k)),
            Seg::Index(i) => (Some(format!("i:{i}")), cur.get(*i)),
            Seg::Item { field, value } => {
                let item = cur
                    .as_array()
                    .and_then(|a| a.iter().find(|it| it.get(field).is_some_and(|x| scalar_text(x) == *value)));
                (item.and_then(|it| find_item_key(node, it)), item)
            }
        };
        let Some(next) = child_key.and_then(|k| node.get(&k)).and_then(Value::as_object) else {
            // The set does not list this step. If the node we are at is a leaf (an empty map),
            // the manager owns the whole value at that point atomically.
            return (depth > 0 && node.is_empty()).then_some(depth);
        };
        node = next;
        cur = next_live.unwrap_or(&Value::Null);
    }
    Some(path.segs().len())
}

/// The `k:{...}` key in `node` that identifies list item `item` (all key fields match).
fn find_item_key(node: &Map<String, Value>, item: &Value) -> Option<String> {
    node.keys()
        .filter(|k| k.starts_with("k:"))
        .find(|k| {
            serde_json::from_str::<Map<String, Value>>(&k[2..])
                .is_ok_and(|key| key.iter().all(|(f, v)| item.get(f).is_some_and(|x| scalar_text(x) == scalar_text(v))))
        })
        .cloned()
}

/// Walk a field set and report each owned leaf as a path in the live object. List items named
/// by `k:{...}` become `[field=value]` (using `name` when it is among the key fields).
fn collect_leaves(node: &Value, at: &FieldPath, live: Option<&Value>, emit: &mut dyn FnMut(FieldPath)) {
    let Some(map) = node.as_object() else { return };
    let children: Vec<(&String, &Value)> = map.iter().filter(|(k, _)| k.as_str() != ".").collect();
    if children.is_empty() {
        if !at.segs().is_empty() {
            emit(at.clone());
        }
        return;
    }
    if map.contains_key(".") && !at.segs().is_empty() {
        // The manager owns the item itself as well as some of its fields.
        emit(at.clone());
    }
    for (k, child) in children {
        if let Some(name) = k.strip_prefix("f:") {
            let next_live = live.and_then(|l| l.get(name));
            collect_leaves(child, &at.key(name), next_live, emit);
        } else if let Some(key_json) = k.strip_prefix("k:") {
            let Ok(key) = serde_json::from_str::<Map<String, Value>>(key_json) else { continue };
            let next_live = live.and_then(Value::as_array).and_then(|a| {
                a.iter().find(|it| key.iter().all(|(f, v)| it.get(f).is_some_and(|x| scalar_text(x) == scalar_text(v))))
            });
            // Address the item as the comparison does: by `name` when the live item has one
            // (whatever the merge key), else by the first key field.
            let named = next_live.and_then(|it| it.get("name")).filter(|v| v.is_string());
            let (field, value) = match named.or_else(|| key.get("name")) {
                Some(v) => ("name".to_string(), scalar_text(v)),
                None => match key.iter().next() {
                    Some((f, v)) => (f.clone(), scalar_text(v)),
                    None => continue,
                },
            };
            collect_leaves(child, &at.child(Seg::Item { field, value }), next_live, emit);
        } else if let Some(idx) = k.strip_prefix("i:") {
            if let Ok(i) = idx.parse::<usize>() {
                collect_leaves(child, &at.child(Seg::Index(i)), live.and_then(|l| l.get(i)), emit);
            }
        } else if k.starts_with("v:") {
            // A member of a set-like list of scalars: the list itself is the reported field.
            emit(at.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live() -> Value {
        json!({
            "metadata": {"name": "web", "managedFields": [
                {"manager": "helm", "operation": "Update", "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}, "f:env": {
                        "k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}}}}}}}}},
                {"manager": "kubectl-set", "operation": "Update", "time": "2026-01-02T00:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {"f:env": {"k:{\"name\":\"B\"}": {".": {}, "f:name": {}, "f:value": {}}}}}}}}}},
                {"manager": "kubectl", "operation": "Update", "subresource": "scale", "time": "2026-01-03T00:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
            ]},
            "spec": {"replicas": 5, "template": {"spec": {"containers": [
                {"name": "web", "image": "x", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}}}
        })
    }

    fn path(s: &[Seg]) -> FieldPath {
        FieldPath(s.to_vec())
    }
    fn k(s: &str) -> Seg {
        Seg::Key(s.into())
    }
    fn item(v: &str) -> Seg {
        Seg::Item { field: "name".into(), value: v.into() }
    }

    #[test]
    fn attributes_fields_to_their_manager() {
        let l = live();
        let mf = ManagedFields::from_object(&l);
        let env = |n: &str| {
            path(&[k("spec"), k("template"), k("spec"), k("containers"), item("web"), k("env"), item(n), k("value")])
        };
        assert_eq!(mf.owner(&env("A"), &l).unwrap().manager, "helm");
        assert_eq!(mf.owner(&env("B"), &l).unwrap().manager, "kubectl-set");
        // Shared by two entries in this synthetic object: the most recent writer is named.
        assert_eq!(mf.owner(&path(&[k("spec"), k("replicas")]), &l).unwrap().manager, "kubectl");
        assert!(mf.owner(&path(&[k("spec"), k("paused")]), &l).is_none());
    }

    #[test]
    fn lists_leaves_owned_by_people() {
        let l = live();
        let mf = ManagedFields::from_object(&l);
        let leaves: Vec<String> =
            mf.person_owned_leaves(&l, &["helm".to_string()]).into_iter().map(|(p, _)| p.to_string()).collect();
        assert!(leaves.contains(&"spec.template.spec.containers[name=web].env[name=B]".to_string()), "{leaves:?}");
        assert!(
            leaves.contains(&"spec.template.spec.containers[name=web].env[name=B].value".to_string()),
            "{leaves:?}"
        );
        assert!(leaves.contains(&"spec.replicas".to_string()));
        assert!(!leaves.iter().any(|p| p.contains("name=A")));
    }

    #[test]
    fn likely_deployer_is_the_applier_not_a_hand_edit_or_a_subresource() {
        let desired = json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "x",
            "env": [{"name": "A", "value": "1"}]}]}}}});
        let l = live();
        let mf = ManagedFields::from_object(&l);
        let e = mf.likely_deployer(&[&desired], &l).unwrap();
        assert_eq!(e.manager, "helm");
        // Server-side apply: an Apply entry owning little still beats hand edits owning more.
        let l = json!({"metadata": {"managedFields": [
                {"manager": "kubectl-set", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:a": {}, "f:b": {}, "f:c": {}}}},
                {"manager": "kubectl", "operation": "Update", "subresource": "scale", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:replicas": {}}}},
                {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:stringData": {"f:password": {}}}}]},
            "spec": {"a": 1, "b": 2, "c": 3, "replicas": 4}, "data": {"password": "eA=="}});
        let mf = ManagedFields::from_object(&l);
        let raw = json!({"spec": {"a": 0, "replicas": 1}, "stringData": {"password": "x"}});
        let e = mf.likely_deployer(&[&raw], &l).unwrap();
        assert_eq!((e.manager.as_str(), e.operation.as_str()), ("kubectl", "Apply"));
        // Only hand edits: no deployer.
        let l = json!({"metadata": {"managedFields": [{"manager": "kubectl-patch", "operation": "Update",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]}, "data": {"a": "2"}});
        assert!(ManagedFields::from_object(&l).likely_deployer(&[&json!({"data": {"a": "1"}})], &l).is_none());
    }

    #[test]
    fn classifies_managers() {
        let d = vec!["helm".to_string()];
        assert_eq!(classify("helm", &d), ManagerClass::Deployer);
        assert_eq!(classify("kubectl-edit", &d), ManagerClass::Person);
        assert_eq!(classify("kubectl", &d), ManagerClass::Person);
        assert_eq!(classify("kube-controller-manager", &d), ManagerClass::Controller);
        let d = vec!["kubectl-client-side-apply".to_string()];
        assert_eq!(classify("kubectl-client-side-apply", &d), ManagerClass::Deployer);
    }
}
