//! The field-by-field walk of a desired object against its live counterpart.
//!
//! Only what the desired object sets is compared (so API defaults are never drift); list items are
//! matched by merge key where the list has one; a few maps (ConfigMap/Secret data) also report
//! keys present only live. Values are compared after normalisation: zero values equal absence,
//! numbers by value, int-or-string by value, quantities by amount.

use serde_json::{Map, Value};

use super::quantity::same_quantity;
use crate::report::field::Change;
use crate::report::path::{FieldPath, Seg, scalar_text};

/// One difference found by the walk.
#[derive(Debug, Clone, PartialEq)]
pub struct RawDrift {
    pub path: FieldPath,
    pub change: Change,
    pub desired: Option<Value>,
    pub live: Option<Value>,
}

/// Metadata fields owned by the server, never compared.
const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
    "generateName",
];

/// Annotations that controllers and tools write as a matter of course: not drift.
pub fn is_well_known_annotation(key: &str) -> bool {
    const EXACT: &[&str] = &[
        "kubectl.kubernetes.io/last-applied-configuration",
        "kubectl.kubernetes.io/restartedAt",
        "deployment.kubernetes.io/revision",
        "deployment.kubernetes.io/desired-replicas",
        "deployment.kubernetes.io/max-replicas",
        "deprecated.daemonset.template.generation",
        "meta.helm.sh/release-name",
        "meta.helm.sh/release-namespace",
        "control-plane.alpha.kubernetes.io/leader",
        "kubernetes.io/change-cause",
    ];
    const PREFIXES: &[&str] = &[
        "autoscaling.alpha.kubernetes.io/",
        "pv.kubernetes.io/",
        "volume.kubernetes.io/",
        "volume.beta.kubernetes.io/",
        "endpoints.kubernetes.io/",
        "batch.kubernetes.io/",
    ];
    EXACT.contains(&key) || PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Labels that controllers add: not drift.
pub fn is_well_known_label(key: &str) -> bool {
    matches!(
        key,
        "pod-template-hash"
            | "controller-uid"
            | "job-name"
            | "controller-revision-hash"
            | "statefulset.kubernetes.io/pod-name"
    ) || key.starts_with("batch.kubernetes.io/")
}

/// Whether a path is never compared and never reported (status, server metadata, well-known
/// annotations and labels anywhere in the object, including pod templates).
pub fn is_skipped(path: &FieldPath) -> bool {
    let segs = path.segs();
    match segs.first() {
        Some(Seg::Key(k)) if k == "status" => return true,
        Some(Seg::Key(k)) if k == "metadata" => {
            if let Some(Seg::Key(f)) = segs.get(1)
                && SERVER_METADATA.contains(&f.as_str())
            {
                return true;
            }
        }
        _ => {}
    }
    // `...metadata.annotations[<key>]` / `...metadata.labels[<key>]` at any depth.
    for w in segs.windows(3) {
        if let [Seg::Key(m), Seg::Key(kind), Seg::Key(key)] = w {
            if m == "metadata" && kind == "annotations" && is_well_known_annotation(key) {
                return true;
            }
            if m == "metadata" && kind == "labels" && is_well_known_label(key) {
                return true;
            }
        }
    }
    false
}

/// Whether `value` is the API server's default for the field at `path`: a person's tool that
/// re-sends a defaulted field (for example when it replaces a whole list item) owns it without
/// changing anything.
pub fn is_api_default(path: &FieldPath, value: &Value) -> bool {
    let field = path.last_key().unwrap_or("");
    match (field, value) {
        ("protocol", Value::String(s)) => s == "TCP",
        ("terminationMessagePath", Value::String(s)) => s == "/dev/termination-log",
        ("terminationMessagePolicy", Value::String(s)) => s == "File",
        ("dnsPolicy", Value::String(s)) => s == "ClusterFirst",
        ("schedulerName", Value::String(s)) => s == "default-scheduler",
        ("sessionAffinity", Value::String(s)) => s == "None",
        ("defaultMode", Value::Number(n)) => n.as_u64() == Some(420),
        ("terminationGracePeriodSeconds", Value::Number(n)) => n.as_u64() == Some(30),
        ("revisionHistoryLimit", Value::Number(n)) => n.as_u64() == Some(10),
        ("progressDeadlineSeconds", Value::Number(n)) => n.as_u64() == Some(600),
        ("successThreshold", Value::Number(n)) => n.as_u64() == Some(1),
        ("failureThreshold", Value::Number(n)) => n.as_u64() == Some(3),
        ("timeoutSeconds", Value::Number(n)) => n.as_u64() == Some(1),
        ("periodSeconds", Value::Number(n)) => n.as_u64() == Some(10),
        (_, v) => is_empty(v),
    }
}

/// A value that means "nothing": null, zero values of Go types (omitted by the API server),
/// empty lists and maps.
pub fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}

/// A desired value that means "not set": `null`, `{}`, `[]`, and `""` except as the value of a
/// string map (labels, annotations, ConfigMap/Secret data, selectors), where the API server keeps
/// an empty string as a value. The API server drops or defaults all of these (Go `omitempty`
/// fields), so what is live in their place is drift only when managedFields say a person put it
/// there. `0` and `false` are values: `replicas: 0` against a live 3 is drift.
pub fn is_unset(path: &FieldPath, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::String(s) => s.is_empty() && !in_string_map(path),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Whether `path` is a value in a map of strings, where `""` is a value like any other.
fn in_string_map(path: &FieldPath) -> bool {
    const STRING_MAPS: &[&str] = &[
        "labels",
        "annotations",
        "data",
        "binaryData",
        "stringData",
        "nodeSelector",
        "matchLabels",
        "selector",
        "parameters",
    ];
    let segs = path.segs();
    segs.len() >= 2 && matches!(&segs[segs.len() - 2], Seg::Key(k) if STRING_MAPS.contains(&k.as_str()))
}

/// The desired object without `null` map values, at any depth: a key whose value is null is a key
/// that is not set (Helm and the API server read YAML `key:` with nothing after it that way).
pub fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Fields whose values are resource quantities (compared by amount).
fn is_quantity_path(path: &FieldPath) -> bool {
    const PARENTS: &[&str] = &[
        "requests",
        "limits",
        "capacity",
        "allocatable",
        "hard",
        "overhead",
        "default",
        "defaultRequest",
        "max",
        "min",
        "maxLimitRequestRatio",
    ];
    let segs = path.segs();
    let parent = segs.len().checked_sub(2).and_then(|i| match &segs[i] {
        Seg::Key(k) => Some(k.as_str()),
        _ => None,
    });
    parent.is_some_and(|p| PARENTS.contains(&p)) || path.last_key() == Some("sizeLimit")
}

/// Maps whose extra live keys are additions to report (keys added to a ConfigMap or Secret).
fn reports_added_keys(path: &FieldPath, kind: &str) -> bool {
    matches!(kind, "ConfigMap" | "Secret")
        && path.segs().len() == 1
        && matches!(path.last_key(), Some("data" | "binaryData"))
}

/// Equal scalars after normalisation.
pub fn scalars_equal(path: &FieldPath, d: &Value, l: &Value) -> bool {
    if d == l {
        return true;
    }
    match (d, l) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => {
            if s.parse::<f64>().ok() == n.as_f64() && !s.trim().is_empty() {
                return true;
            }
            is_quantity_path(path) && same_quantity(s, &n.to_string()) == Some(true)
        }
        (Value::String(a), Value::String(b)) => is_quantity_path(path) && same_quantity(a, b) == Some(true),
        _ => false,
    }
}

/// Key field for a list at `path`, chosen from the desired items (every item must have it, with
/// distinct values). `name` first, then the list's merge key from the Kubernetes API.
fn list_key(path: &FieldPath, desired: &[Value]) -> Option<&'static str> {
    let candidates: &[&'static str] = match path.last_key() {
        Some("ports") => &["name", "containerPort", "port"],
        Some("volumeMounts") => &["mountPath", "name"],
        Some("volumeDevices") => &["devicePath"],
        Some("hostAliases") => &["ip"],
        Some("readinessGates") => &["conditionType"],
        Some("topologySpreadConstraints") => &["topologyKey"],
        Some("conditions") => &["type"],
        _ => &["name"],
    };
    candidates.iter().copied().find(|f| {
        let mut seen = std::collections::HashSet::new();
        !desired.is_empty()
            && desired.iter().all(|item| {
                item.get(*f).is_some_and(|v| !v.is_object() && !v.is_array() && seen.insert(scalar_text(v)))
            })
    })
}

/// How to address a live item that matched no desired item: by its own key, else its index.
fn live_item_seg(path: &FieldPath, key: Option<&'static str>, item: &Value, index: usize) -> Seg {
    let fallback: &[&str] = match path.last_key() {
        Some("ports") => &["name", "containerPort", "port"],
        Some("volumeMounts") => &["mountPath"],
        _ => &["name"],
    };
    key.into_iter()
        .chain(fallback.iter().copied())
        .find_map(|f| {
            item.get(f)
                .filter(|v| !v.is_object() && !v.is_array())
                .map(|v| Seg::Item { field: f.to_string(), value: scalar_text(v) })
        })
        .unwrap_or(Seg::Index(index))
}

/// Walks one object pair.
pub struct Walker<'a> {
    kind: &'a str,
    out: Vec<RawDrift>,
}

impl<'a> Walker<'a> {
    /// Compare `desired` against `live` for an object of `kind`.
    pub fn compare(kind: &'a str, desired: &Value, live: &Value) -> Vec<RawDrift> {
        let mut w = Walker { kind, out: Vec::new() };
        w.walk(&FieldPath::root(), desired, Some(live));
        w.out
    }

    fn push(&mut self, path: FieldPath, change: Change, desired: Option<&Value>, live: Option<&Value>) {
        self.out.push(RawDrift { path, change, desired: desired.cloned(), live: live.cloned() });
    }

    fn walk(&mut self, path: &FieldPath, d: &Value, l: Option<&Value>) {
        if is_skipped(path) {
            return;
        }
        let l = l.filter(|v| !v.is_null());
        match (d, l) {
            (_, None) => {
                if !is_empty(d) {
                    self.push(path.clone(), Change::Removed, Some(d), None);
                }
            }
            (Value::Object(dm), Some(Value::Object(lm))) => self.walk_map(path, dm, lm),
            // Not set in the desired object: whatever is live there (an API default, a value
            // written at admission, an edit) is left to managedFields.
            (_, Some(_)) if is_unset(path, d) => {}
            (Value::Array(da), Some(Value::Array(la))) => self.walk_list(path, da, la),
            (Value::Object(_) | Value::Array(_), Some(lv)) | (_, Some(lv @ (Value::Object(_) | Value::Array(_)))) => {
                if !(is_empty(d) && is_empty(lv)) {
                    self.push(path.clone(), Change::Changed, Some(d), Some(lv));
                }
            }
            (_, Some(lv)) => {
                if !(scalars_equal(path, d, lv) || (is_empty(d) && is_empty(lv))) {
                    self.push(path.clone(), Change::Changed, Some(d), Some(lv));
                }
            }
        }
    }

    fn walk_map(&mut self, path: &FieldPath, dm: &Map<String, Value>, lm: &Map<String, Value>) {
        let at_metadata = path.segs() == [Seg::Key("metadata".into())];
        let at_root = path.segs().is_empty();
        for (k, dv) in dm {
            // apiVersion and kind identify the object (list items do not even carry them).
            if at_root && matches!(k.as_str(), "apiVersion" | "kind") {
                continue;
            }
            // In metadata only labels and annotations are the user's to compare; name and
            // namespace identify the object and the rest belongs to the server.
            if at_metadata && !matches!(k.as_str(), "labels" | "annotations") {
                continue;
            }
            self.walk(&path.key(k), dv, lm.get(k));
        }
        if reports_added_keys(path, self.kind) {
            for (k, lv) in lm {
                if !dm.contains_key(k) {
                    self.push(path.key(k), Change::Added, None, Some(lv));
                }
            }
        }
    }

    fn walk_list(&mut self, path: &FieldPath, da: &[Value], la: &[Value]) {
        let scalar = |v: &Value| !v.is_object() && !v.is_array();
        if da.iter().all(scalar) && la.iter().all(scalar) {
            // Lists of scalars (args, command, verbs, accessModes) are atomic: compared whole.
            let same = da.len() == la.len() && da.iter().zip(la).all(|(d, l)| scalars_equal(path, d, l));
            if !same {
                self.push(
                    path.clone(),
                    Change::Changed,
                    Some(&Value::Array(da.to_vec())),
                    Some(&Value::Array(la.to_vec())),
                );
            }
            return;
        }
        match list_key(path, da) {
            Some(key) => {
                let mut matched = vec![false; la.len()];
                for d_item in da {
                    let kv = scalar_text(&d_item[key]);
                    let seg = Seg::Item { field: key.to_string(), value: kv.clone() };
                    let found = la
                        .iter()
                        .enumerate()
                        .find(|(i, l)| !matched[*i] && l.get(key).is_some_and(|x| scalar_text(x) == kv));
                    match found {
                        Some((i, l_item)) => {
                            matched[i] = true;
                            self.walk(&path.child(seg), d_item, Some(l_item));
                        }
                        None => self.push(path.child(seg), Change::Removed, Some(d_item), None),
                    }
                }
                for (i, l_item) in la.iter().enumerate() {
                    if !matched[i] {
                        let seg = live_item_seg(path, Some(key), l_item, i);
                        self.push(path.child(seg), Change::Added, None, Some(l_item));
                    }
                }
            }
            None => {
                for i in 0..da.len().max(la.len()) {
                    let p = path.child(Seg::Index(i));
                    match (da.get(i), la.get(i)) {
                        (Some(d), Some(l)) => self.walk(&p, d, Some(l)),
                        (Some(d), None) => {
                            if !is_empty(d) {
                                self.push(p, Change::Removed, Some(d), None)
                            }
                        }
                        (None, Some(l)) => self.push(p, Change::Added, None, Some(l)),
                        (None, None) => {}
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diffs(kind: &str, d: Value, l: Value) -> Vec<(String, Change)> {
        Walker::compare(kind, &d, &l).into_iter().map(|r| (r.path.to_string(), r.change)).collect()
    }

    #[test]
    fn defaults_and_server_fields_are_not_drift() {
        let d = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "labels": {"x": "1"}, "creationTimestamp": null},
                       "spec": {"ports": [{"name": "http", "port": 80, "targetPort": "http"}], "selector": {"app": "a"}}});
        let l = json!({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "a", "namespace": "n", "uid": "u", "resourceVersion": "9", "labels": {"x": "1"},
                                    "annotations": {"meta.helm.sh/release-name": "r"}},
                       "spec": {"ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
                                "selector": {"app": "a"}, "clusterIP": "10.0.0.5", "type": "ClusterIP", "sessionAffinity": "None"},
                       "status": {"loadBalancer": {}}});
        assert_eq!(diffs("Service", d, l), vec![]);
    }

    #[test]
    fn equal_values_in_other_forms() {
        let d = json!({"spec": {"resources": {"requests": {"cpu": "0.5", "memory": "1Gi"}, "limits": {"cpu": 1}},
                                "replicas": 2, "port": "8080", "ratio": 1, "empty": {}, "none": null, "list": [], "flag": false, "text": ""}});
        let l = json!({"spec": {"resources": {"requests": {"cpu": "500m", "memory": "1024Mi"}, "limits": {"cpu": "1"}},
                                "replicas": 2.0, "port": 8080, "ratio": 1.0}});
        assert_eq!(diffs("Deployment", d, l), vec![]);
    }

    #[test]
    fn null_and_empty_desired_values_are_not_set_at_any_depth() {
        let mut d = json!({"metadata": {"annotations": null, "labels": {"app": "a"}},
            "spec": {"clusterIP": "", "ports": [{"name": "http", "port": 80, "nodePort": null}],
                     "template": {"spec": {"imagePullSecrets": [], "securityContext": {}, "containers": [
                        {"name": "c", "resources": {}, "args": [], "env": null, "imagePullPolicy": ""}]}}}});
        strip_nulls(&mut d);
        assert!(d.pointer("/metadata/annotations").is_none() && d.pointer("/spec/ports/0/nodePort").is_none());
        let l = json!({"metadata": {"annotations": {"meta.helm.sh/release-name": "r", "team": "x"}, "labels": {"app": "a"}},
            "spec": {"clusterIP": "10.0.0.1", "ports": [{"name": "http", "port": 80, "nodePort": 30080}],
                     "template": {"spec": {"imagePullSecrets": [{"name": "regcred"}], "securityContext": {"runAsUser": 1},
                        "containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}, "args": ["--x"],
                                        "env": [{"name": "A"}], "imagePullPolicy": "Always"}]}}}});
        assert_eq!(diffs("Service", d, l), vec![]);
    }

    #[test]
    fn empty_strings_are_values_in_string_maps_and_zero_is_a_value() {
        let d =
            json!({"data": {"a": ""}, "metadata": {"labels": {"tier": ""}}, "spec": {"replicas": 0, "paused": false}});
        let l = json!({"data": {"a": "x"}, "metadata": {"labels": {"tier": "db"}}, "spec": {"replicas": 3, "paused": true}});
        assert_eq!(
            diffs("ConfigMap", d, l),
            vec![
                ("data.a".to_string(), Change::Changed),
                ("metadata.labels.tier".to_string(), Change::Changed),
                ("spec.paused".to_string(), Change::Changed),
                ("spec.replicas".to_string(), Change::Changed),
            ]
        );
    }

    #[test]
    fn quantities_are_only_normalised_where_the_field_is_a_quantity() {
        let d = json!({"data": {"size": "1000m"}});
        let l = json!({"data": {"size": "1"}});
        assert_eq!(diffs("ConfigMap", d, l), vec![(r#"data.size"#.to_string(), Change::Changed)]);
    }

    #[test]
    fn changed_removed_and_added_items_by_merge_key() {
        let d = json!({"spec": {"containers": [{"name": "web", "image": "a:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                                                 "ports": [{"containerPort": 8080}]}]}});
        let l = json!({"spec": {"containers": [{"name": "web", "image": "a:2", "env": [{"name": "C", "value": "3"}, {"name": "A", "value": "9"}],
                                                 "ports": [{"containerPort": 8080, "protocol": "TCP"}, {"containerPort": 9090, "protocol": "TCP"}]},
                                                {"name": "debug", "image": "busybox"}]}});
        let got = diffs("Deployment", d, l);
        assert_eq!(
            got,
            vec![
                ("spec.containers[name=web].env[name=A].value".to_string(), Change::Changed),
                ("spec.containers[name=web].env[name=B]".to_string(), Change::Removed),
                ("spec.containers[name=web].env[name=C]".to_string(), Change::Added),
                ("spec.containers[name=web].image".to_string(), Change::Changed),
                ("spec.containers[name=web].ports[containerPort=9090]".to_string(), Change::Added),
                ("spec.containers[name=debug]".to_string(), Change::Added),
            ]
        );
    }

    #[test]
    fn configmap_keys_added_live_are_reported() {
        let d = json!({"data": {"a": "1"}});
        let l = json!({"data": {"a": "1", "extra.conf": "x"}});
        assert_eq!(
            diffs("ConfigMap", d.clone(), l.clone()),
            vec![(r#"data["extra.conf"]"#.to_string(), Change::Added)]
        );
        // For other kinds an extra map key is not an addition by itself (managedFields decide).
        assert_eq!(diffs("Deployment", d, l), vec![]);
    }

    #[test]
    fn scalar_lists_are_atomic_and_index_lists_compare_by_position() {
        let d = json!({"args": ["--a", "--b"], "rules": [{"host": "a"}, {"host": "b"}]});
        let l = json!({"args": ["--a"], "rules": [{"host": "a"}, {"host": "c"}, {"host": "d"}]});
        assert_eq!(
            diffs("Ingress", d, l),
            vec![
                ("args".to_string(), Change::Changed),
                ("rules[1].host".to_string(), Change::Changed),
                ("rules[2]".to_string(), Change::Added),
            ]
        );
    }

    #[test]
    fn metadata_compares_only_labels_and_annotations() {
        let d =
            json!({"metadata": {"name": "a", "namespace": "x", "labels": {"app": "a"}, "annotations": {"team": "t"}}});
        let l = json!({"metadata": {"name": "a", "namespace": "y", "labels": {"app": "b"}}});
        assert_eq!(
            diffs("ConfigMap", d, l),
            vec![
                ("metadata.annotations".to_string(), Change::Removed),
                ("metadata.labels.app".to_string(), Change::Changed)
            ]
        );
    }

    #[test]
    fn skipped_paths() {
        let p = |s: &[&str]| FieldPath(s.iter().map(|k| Seg::Key(k.to_string())).collect());
        assert!(is_skipped(&p(&["status", "replicas"])));
        assert!(is_skipped(&p(&["metadata", "managedFields"])));
        assert!(is_skipped(&p(&["spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt"])));
        assert!(is_skipped(&p(&["metadata", "labels", "pod-template-hash"])));
        assert!(!is_skipped(&p(&["metadata", "labels", "app"])));
        assert!(!is_skipped(&p(&["spec", "replicas"])));
    }
}
