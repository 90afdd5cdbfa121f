//! Comparing one desired object with its live counterpart: normalise, walk field by field,
//! find additions made by hand through managedFields, and attribute each drift to its manager.
//!
//! Pure computation over JSON values: no I/O, no printing. The result is a list of [`Drift`]s
//! that the report layer turns into output (redacting Secret values there).

pub mod jq;
pub mod managed;
pub mod quantity;
pub mod rules;
pub mod walk;

use base64::Engine;
use serde_json::{Map, Value};

use crate::report::field::{Change, Drift};
use crate::report::path::{FieldPath, Seg};
use crate::report::secret::{api_base64, secret_bytes};
pub use managed::{ManagedFields, ManagerClass};

use walk::{RawDrift, Walker, is_skipped};

/// What the comparison needs to know beyond the two objects.
#[derive(Debug, Clone, Default)]
pub struct CompareContext {
    /// Field managers that deployed the desired state (`helm`, or a manifests folder's applier).
    pub deployers: Vec<String>,
    /// Manifests drift: take each object's deployer from its own managedFields
    /// ([`ManagedFields::likely_deployer`]); `deployers` then only apply when none is found.
    pub infer_deployer: bool,
    /// Report a person's additions at the fields their manager owns, not at the outermost field
    /// the desired object lacks: for a desired object that is a projection of the live one (a
    /// GitOps inventory's object: the fields its controller owns), where a value taken over by
    /// hand leaves its parent map absent from the desired object.
    pub owned_leaves: bool,
    /// The deployer is the target's own, known one (Helm's manager for a release): a value that
    /// differs from the desired one while only the deployer owns it was changed at admission
    /// ([`changed_at_admission`]), and this says what to make of it. `None` (manifests, whose
    /// deployer is a guess): the rule is off, such a value is drift.
    pub admission_changes: Option<AdmissionChanges>,
}

/// What a value changed at admission is (`--admission-changes`, `admission_changes:` in
/// `--config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdmissionChanges {
    /// An ignored difference, shown with its cause, never counted.
    #[default]
    Ignore,
    /// Drift, with its cause named.
    Drift,
}

/// Compare a desired object with the live one.
pub fn compare_object(desired: &Value, live: &Value, ctx: &CompareContext) -> Vec<Drift> {
    let original = desired;
    let kind = desired.get("kind").and_then(Value::as_str).unwrap_or("");
    let desired = prepare_desired(kind, desired);
    let managed = ManagedFields::from_object(live);
    let inferred: Vec<String>;
    let deployers: &[String] =
        match ctx.infer_deployer.then(|| managed.likely_deployer(&[original, &desired], live)).flatten() {
            Some(entry) => {
                inferred = vec![entry.manager.clone()];
                &inferred
            }
            None => &ctx.deployers,
        };

    let mut raw: Vec<RawDrift> = Walker::compare(kind, &desired, live);
    if matches!(kind, "Secret" | "ConfigMap") {
        raw.retain(|r| !same_bytes(kind, r));
    }

    // Additions that the walk cannot see: fields the desired object never mentions, owned now by
    // a person's tool (kubectl edit/patch/set/label/annotate, ...).
    let mut person_leaves = managed.person_owned_leaves(live, deployers);
    person_leaves.sort_by_key(|(p, _)| p.segs().len());
    let others: Vec<String> = match person_leaves.is_empty() {
        true => Vec::new(),
        false => managed.other_owned_leaves(live, deployers).iter().filter_map(|p| p.json_pointer(live)).collect(),
    };
    for (path, _owner) in person_leaves {
        if is_skipped(&path)
            || path.get(&desired).is_some_and(|v| !walk::is_unset(&path, v))
            || is_mirrored_alias(&path, live)
        {
            continue;
        }
        if raw.iter().any(|r| overlaps(&path, &r.path, live)) {
            continue;
        }
        // Report the outermost field the desired object does not have.
        let path = match ctx.owned_leaves {
            true => path,
            false => match outermost_missing(&path, &desired, live, &others) {
                Some(p) => p,
                None => continue,
            },
        };
        if raw.iter().any(|r| overlaps(&path, &r.path, live)) {
            continue;
        }
        if let Some(value) = path.get(live) {
            if walk::is_api_default(&path, value) {
                continue;
            }
            raw.push(RawDrift { path, change: Change::Added, desired: None, live: Some(value.clone()) });
        }
    }

    let mut drifts: Vec<Drift> = raw
        .into_iter()
        .filter_map(|r| {
            let owner = managed.owner(&r.path, live);
            let mut ignored = None;
            if r.change == Change::Added && !is_data_key(kind, &r.path) {
                match &owner {
                    // An item added by a controller (not the deployer, not a person) is not drift.
                    Some(o) if managed::classify(&o.manager, deployers) == ManagerClass::Controller => return None,
                    // Tracked object, keyed item, no owner: written at admission (see `ADMISSION`).
                    None if !managed.entries.is_empty() && matches!(r.path.segs().last(), Some(Seg::Item { .. })) => {
                        ignored = Some(ADMISSION.to_string())
                    }
                    _ => {}
                }
            }
            if ctx.admission_changes == Some(AdmissionChanges::Ignore)
                && ignored.is_none()
                && changed_at_admission(&managed, r.change, &r.path, live, deployers)
            {
                ignored = Some(CHANGED_AT_ADMISSION.to_string());
            }
            Some(Drift { path: r.path, change: r.change, desired: r.desired, live: r.live, owner, ignored })
        })
        .collect();
    drifts.sort_by(|a, b| a.path.cmp(&b.path));
    drifts
}

/// Why an added list item that no field manager owns is not drift. The API server records
/// managedFields before mutating admission runs, so what a mutating webhook or a built-in admission
/// plugin (ServiceAccount, LimitRanger, ...) adds has no owner, while every write by a person has
/// one (kubectl sends a manager, or its User-Agent is taken).
pub const ADMISSION: &str = "set at admission: no field manager owns it (mutating webhook or admission plugin)";

/// Why a value that differs from the desired one is not drift: its only owner in managedFields is
/// the deployer, which sent the desired value; the API server computes ownership from the request
/// before mutating admission runs, so the value the deployer never sent came from a mutating
/// webhook or policy during the deployer's own write. The release check names the likely cause
/// after it (`engine::drift::admission`) and writes the reason out in full.
pub const CHANGED_AT_ADMISSION: &str = "changed at admission";

/// Whether a difference was changed at admission: a value set in the desired object that differs
/// live (or is gone live), whose owners in managedFields are all the deployer's managers. A
/// person's later edit of the field moves it to their tool (an update takes ownership of what it
/// changes), a controller's write to the controller: then it is drift again. What it cannot tell
/// apart: a person who writes with the deployer's manager name (`--field-manager=helm`).
pub fn changed_at_admission(
    managed: &ManagedFields,
    change: Change,
    path: &FieldPath,
    live: &Value,
    deployers: &[String],
) -> bool {
    matches!(change, Change::Changed | Change::Removed) && managed.only_owned_by(deployers, path, live)
}

/// ConfigMap/Secret data keys are reported whoever added them.
fn is_data_key(kind: &str, path: &FieldPath) -> bool {
    matches!(kind, "ConfigMap" | "Secret") && (path.starts_with(&["data"]) || path.starts_with(&["binaryData"]))
}

/// The shortest prefix of `path` that `desired` does not set (absent, or an empty value: `env: []`
/// in a chart, then a whole list added by hand, is one addition, the list) and that holds nothing
/// but the person's own addition: no field another manager owns (a label added to a map that also
/// holds Helm's annotations is the key, not the map; nor is an empty map that Helm created and
/// owns; `others` are the live JSON pointers of fields owned by other managers) and no field that is never compared (`kubectl rollout restart`'s
/// `restartedAt` annotation). `None` when even `path` holds such fields: its own leaves, reported
/// one by one, are the additions.
fn outermost_missing(path: &FieldPath, desired: &Value, live: &Value, others: &[String]) -> Option<FieldPath> {
    (1..=path.segs().len()).map(|n| FieldPath(path.segs()[..n].to_vec())).find(|prefix| {
        if !prefix.get(desired).is_none_or(|v| walk::is_unset(prefix, v)) {
            return false;
        }
        let pointer = prefix.json_pointer(live).unwrap_or_default();
        // Another manager's field at or under the prefix: an empty map or list Helm 3 created
        // (`resources: {}` is stored and owned as such) holds the person's addition, so the
        // addition is the key inside it, owned by the person, not the map owned by Helm.
        let shared =
            others.iter().any(|o| o.strip_prefix(pointer.as_str()).is_some_and(|r| r.is_empty() || r.starts_with('/')));
        !shared && !prefix.get(live).is_some_and(|v| holds_skipped(prefix, v))
    })
}

/// Whether `value` (at `path`) holds a field that is never compared.
fn holds_skipped(path: &FieldPath, value: &Value) -> bool {
    match value {
        Value::Object(m) => m.iter().any(|(k, v)| {
            let p = path.key(k);
            is_skipped(&p) || holds_skipped(&p, v)
        }),
        Value::Array(a) => a.iter().enumerate().any(|(i, v)| holds_skipped(&path.child(Seg::Index(i)), v)),
        _ => false,
    }
}

/// `spec.serviceAccount`, the deprecated alias the API server keeps equal to
/// `serviceAccountName`: that field is reported, not its mirror.
fn is_mirrored_alias(path: &FieldPath, live: &Value) -> bool {
    let Some((Seg::Key(k), parent)) = path.segs().split_last() else { return false };
    if k != "serviceAccount" {
        return false;
    }
    let parent = FieldPath(parent.to_vec());
    let sibling = parent.key("serviceAccountName");
    sibling.get(live).is_some() && sibling.get(live) == path.get(live)
}

/// Whether two paths name the same field or one lies inside the other, also when they address
/// the same list item differently (`env[0]` and `env[name=FOO]`): compared as JSON pointers into
/// the live object, so one change is never reported twice.
fn overlaps(a: &FieldPath, b: &FieldPath, live: &Value) -> bool {
    if a.is_under(b) || b.is_under(a) {
        return true;
    }
    let (Some(pa), Some(pb)) = (a.json_pointer(live), b.json_pointer(live)) else { return false };
    let under = |x: &str, y: &str| x == y || x.strip_prefix(y).is_some_and(|rest| rest.starts_with('/'));
    under(&pa, &pb) || under(&pb, &pa)
}

/// Normalise the desired object the way the API server would store it: keys whose value is null
/// are not set; Secret `stringData` becomes base64 `data`.
pub fn prepare_desired(kind: &str, desired: &Value) -> Value {
    let mut d = desired.clone();
    walk::strip_nulls(&mut d);
    if kind == "Secret"
        && let Some(obj) = d.as_object_mut()
        && let Some(Value::Object(string_data)) = obj.remove("stringData")
    {
        let data = obj.entry("data").or_insert_with(|| Value::Object(Map::new()));
        if data.is_null() {
            *data = Value::Object(Map::new());
        }
        if let Some(data) = data.as_object_mut() {
            for (k, v) in string_data {
                let text = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                data.insert(k, Value::String(base64::engine::general_purpose::STANDARD.encode(text)));
            }
        }
    }
    d
}

/// The fields of a core v1 object that hold keyed data, each with whether its values are
/// base64 bytes: Secret `data`/`stringData`, ConfigMap `data`/`binaryData`.
fn data_fields(kind: &str) -> &'static [(&'static str, bool)] {
    match kind {
        "Secret" => &[("data", true), ("stringData", false)],
        "ConfigMap" => &[("data", false), ("binaryData", true)],
        _ => &[],
    }
}

/// Why the API server would refuse a desired core v1 Secret's or ConfigMap's data, as it
/// answers `kubectl apply` (checked against kube-apiserver, docs/drift.md "Secret and ConfigMap
/// data"): `data`, `stringData` or `binaryData` not a map; a value that is not a string (a
/// number, `true`, a map); bytes that are not base64; a key that is not a config key; a
/// ConfigMap key in both `data` and `binaryData`. Such an object cannot be compared (what would
/// the cluster hold?) nor applied, so it is an error naming the field, never quoting the value.
pub fn invalid_data(desired: &Value) -> Option<String> {
    if desired.get("apiVersion").and_then(Value::as_str) != Some("v1") {
        return None;
    }
    let kind = desired.get("kind").and_then(Value::as_str).unwrap_or("");
    let mut keys: Vec<&str> = Vec::new();
    for (field, bytes) in data_fields(kind) {
        let map = match desired.get(*field) {
            None | Some(Value::Null) => continue,
            Some(Value::Object(m)) => m,
            Some(other) => return Some(format!("{field} is {}, not a map of keys to values", json_type(other))),
        };
        for (k, v) in map {
            let path = FieldPath::root().key(field).key(k);
            if let Some(why) = config_key_problem(k) {
                return Some(format!("{path}: the key {why}"));
            }
            match v {
                Value::Null => continue,
                Value::String(s) if *bytes && api_base64(s).is_none() => {
                    return Some(format!("{path} is not valid base64"));
                }
                Value::String(_) => {}
                other => return Some(format!("{path} is {}, not a string", json_type(other))),
            }
            if kind == "ConfigMap" && keys.contains(&k.as_str()) {
                return Some(format!("{path}: the key is also in data (a ConfigMap key is in data or binaryData)"));
            }
            keys.push(k);
        }
    }
    None
}

/// What the API server says of a key that is not a valid ConfigMap/Secret key
/// (`IsConfigMapKey`), or `None` for a valid one.
fn config_key_problem(k: &str) -> Option<&'static str> {
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        Some("must consist of alphanumeric characters, '-', '_' or '.'")
    } else if k.len() > 253 {
        Some("must be no more than 253 characters")
    } else if k == "." {
        Some("must not be '.'")
    } else if k.starts_with("..") {
        Some("must not start with '..'")
    } else {
        None
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// Two base64 texts of the same bytes are the same value (a Secret's `data`, a ConfigMap's
/// `binaryData`; a value kept only as its fingerprint, as the watch-fed cache keeps Secret
/// values, is matched by fingerprint).
fn same_bytes(kind: &str, r: &RawDrift) -> bool {
    let field = match kind {
        "Secret" => "data",
        _ => "binaryData",
    };
    if r.change != Change::Changed || !r.path.starts_with(&[field]) {
        return false;
    }
    match (r.desired.as_ref().and_then(secret_fingerprint), r.live.as_ref().and_then(secret_fingerprint)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The fingerprint of a Secret data value: base64 text, or an already kept fingerprint.
pub fn secret_fingerprint(v: &Value) -> Option<String> {
    let s = v.as_str()?;
    if crate::source::live_cache::parse_secret_fingerprint(s).is_some() {
        return Some(s.to_string());
    }
    secret_bytes(v).map(|b| crate::source::live_cache::secret_fingerprint_of(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> CompareContext {
        CompareContext { deployers: vec!["helm".into()], ..Default::default() }
    }

    #[test]
    fn base64_is_decoded_as_the_api_server_decodes_it() {
        // Each accepted or refused by kube-apiserver 1.36 (`kubectl apply --dry-run=server`).
        for ok in ["aGVsbG8=", "aGVsbG9=", "aGVs\nbG8=", "aGVs\r\nbG8=", "aGVsbG8=\n", "", "YR=="] {
            assert!(api_base64(ok).is_some(), "{ok:?} is accepted");
        }
        assert_eq!(api_base64("aGVs\nbG8="), Some(b"hello".to_vec()));
        for bad in ["aGVsbG8", "aGVs bG8=", " aGVsbG8= ", "!!!", "aGVsbG8=aGVsbG8=", "aGVsbG8-", "aGVsbG8_"] {
            assert!(api_base64(bad).is_none(), "{bad:?} is refused");
        }
    }

    #[test]
    fn refused_data_is_named_by_field_never_by_value() {
        let secret = |body: Value| {
            let mut o = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
            o.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
            invalid_data(&o)
        };
        let canary = "c2VjcmV0LWNhbmFyeQ== x";
        assert_eq!(secret(json!({"data": {"password": canary}})).as_deref(), Some("data.password is not valid base64"));
        assert_eq!(secret(json!({"data": {"port": 5432}})).as_deref(), Some("data.port is a number, not a string"));
        assert_eq!(
            secret(json!({"stringData": {"on": true}})).as_deref(),
            Some("stringData.on is a boolean, not a string")
        );
        assert_eq!(
            secret(json!({"stringData": "x"})).as_deref(),
            Some("stringData is a string, not a map of keys to values")
        );
        assert_eq!(secret(json!({"data": ["x"]})).as_deref(), Some("data is a list, not a map of keys to values"));
        assert_eq!(
            secret(json!({"data": {"bad/key": "YQ=="}})).as_deref(),
            Some("data[\"bad/key\"]: the key must consist of alphanumeric characters, '-', '_' or '.'")
        );
        assert_eq!(
            secret(json!({"stringData": {"..a": "x"}})).as_deref(),
            Some("stringData[\"..a\"]: the key must not start with '..'")
        );
        for fine in [
            json!({"data": {"a": "YQ==", ".a": "aGVs\nbG8=", "n": null}, "stringData": {"a": "b", "n": null}}),
            json!({"data": null}),
            json!({}),
        ] {
            assert_eq!(secret(fine.clone()), None, "{fine}");
        }
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "a"}, "binaryData": {"k": "YQ=="}});
        assert_eq!(
            invalid_data(&cm).as_deref(),
            Some("binaryData.k: the key is also in data (a ConfigMap key is in data or binaryData)")
        );
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": 1}});
        assert_eq!(invalid_data(&cm).as_deref(), Some("data.k is a number, not a string"));
        // Only core v1 Secrets and ConfigMaps: a CRD of the same kind name is its own schema's.
        let other = json!({"apiVersion": "example.com/v1", "kind": "Secret", "data": {"k": "not base64"}});
        assert_eq!(invalid_data(&other), None);
    }

    #[test]
    fn base64_split_over_lines_is_the_same_value() {
        let d = json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "aGVs\nbG8="}});
        let l = json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "aGVsbG8="}});
        assert_eq!(compare_object(&d, &l, &ctx()), vec![]);
        let d = json!({"apiVersion": "v1", "kind": "ConfigMap", "binaryData": {"a": "aGVs\nbG8="}});
        let l = json!({"apiVersion": "v1", "kind": "ConfigMap", "binaryData": {"a": "aGVsbG8="}});
        assert_eq!(compare_object(&d, &l, &ctx()), vec![]);
    }

    #[test]
    fn secret_string_data_matches_live_data() {
        let d = json!({"kind": "Secret", "data": {"a": "aGVsbG8="}, "stringData": {"b": "world"}});
        let l = json!({"kind": "Secret", "data": {"a": "aGVsbG8=", "b": "d29ybGQ="}, "type": "Opaque"});
        assert_eq!(compare_object(&d, &l, &ctx()), vec![]);
        let l2 = json!({"kind": "Secret", "data": {"a": "aGVsbG8=", "b": "b3RoZXI="}});
        let got = compare_object(&d, &l2, &ctx());
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path.to_string(), "data.b");
    }

    #[test]
    fn fields_added_by_a_person_are_found_through_managed_fields() {
        let d = json!({"kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
                       "spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "a"}]}}}});
        let l = json!({"kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web", "owner": "bob"}, "managedFields": [
                {"manager": "helm", "operation": "Update", "time": "t1", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}, "f:imagePullPolicy": {}}}}}}}},
                {"manager": "kubectl-label", "operation": "Update", "time": "t2", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:labels": {"f:owner": {}}}}},
                {"manager": "kubectl-patch", "operation": "Update", "time": "t3", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:template": {"f:metadata": {"f:labels": {"f:debug": {}}}, "f:spec": {"f:nodeSelector": {".": {}, "f:disk": {}}}}}}},
                {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "time": "t4", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {"f:replicas": {}}}}
            ]},
            "spec": {"template": {"metadata": {"labels": {"app": "web", "debug": "1"}},
                     "spec": {"nodeSelector": {"disk": "ssd"}, "containers": [{"name": "web", "image": "a", "imagePullPolicy": "Always"}]}}},
            "status": {"replicas": 1}});
        let got: Vec<(String, Change, String)> = compare_object(&d, &l, &ctx())
            .into_iter()
            .map(|d| (d.path.to_string(), d.change, d.owner.map(|o| o.manager).unwrap_or_default()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("metadata.labels.owner".to_string(), Change::Added, "kubectl-label".to_string()),
                ("spec.template.metadata.labels.debug".to_string(), Change::Added, "kubectl-patch".to_string()),
                ("spec.template.spec.nodeSelector".to_string(), Change::Added, "kubectl-patch".to_string()),
            ]
        );
    }

    #[test]
    fn the_deployer_can_be_inferred_per_object() {
        let d = json!({"kind": "Deployment", "metadata": {"name": "web"},
                       "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "a"}]}}}});
        let l = json!({"kind": "Deployment",
            "metadata": {"name": "web", "labels": {"team": "x"}, "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "t1", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:team": {}}}, "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}},
                {"manager": "kubectl-set", "operation": "Update", "time": "t2", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {"f:env": {"k:{\"name\":\"DEBUG\"}": {".": {}, "f:name": {}, "f:value": {}}}}}}}}}}
            ]},
            "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "a", "env": [{"name": "DEBUG", "value": "1"}]}]}}}});
        let paths = |ctx: &CompareContext| -> Vec<String> {
            compare_object(&d, &l, ctx).into_iter().map(|x| x.path.to_string()).collect()
        };
        let inferred = CompareContext { infer_deployer: true, ..Default::default() };
        assert_eq!(paths(&inferred), vec!["spec.template.spec.containers[name=web].env"]);
        // Without inference (and no deployer named), the applier's own label looks added by hand.
        assert_eq!(paths(&CompareContext::default()).len(), 2);
    }

    #[test]
    fn a_list_added_by_hand_is_one_finding() {
        // `kubectl set env deploy/web FOO=bar` (no -c): `api` has env in the manifest, `sidecar` an
        // empty one (`env: []`), `worker` none at all.
        let d = json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
            {"name": "api", "image": "a", "env": [{"name": "A", "value": "1"}]},
            {"name": "sidecar", "image": "s", "env": []},
            {"name": "worker", "image": "w"}]}}}});
        let env_item = json!({".": {}, "f:name": {}, "f:value": {}});
        let added = json!({"f:env": {".": {}, "k:{\"name\":\"FOO\"}": env_item}});
        let l = json!({"kind": "Deployment", "metadata": {"managedFields": [
                {"manager": "helm", "operation": "Update", "time": "t1", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"api\"}": {".": {}, "f:name": {}, "f:image": {}, "f:env": {".": {}, "k:{\"name\":\"A\"}": env_item}},
                    "k:{\"name\":\"sidecar\"}": {".": {}, "f:name": {}, "f:image": {}},
                    "k:{\"name\":\"worker\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}},
                {"manager": "kubectl-set", "operation": "Update", "time": "t2", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"api\"}": {"f:env": {"k:{\"name\":\"FOO\"}": env_item}},
                    "k:{\"name\":\"sidecar\"}": added, "k:{\"name\":\"worker\"}": added}}}}}}]},
            "spec": {"template": {"spec": {"containers": [
                {"name": "api", "image": "a", "env": [{"name": "A", "value": "1"}, {"name": "FOO", "value": "bar"}]},
                {"name": "sidecar", "image": "s", "env": [{"name": "FOO", "value": "bar"}]},
                {"name": "worker", "image": "w", "env": [{"name": "FOO", "value": "bar"}]}]}}}});
        let got: Vec<(String, Change, String)> = compare_object(&d, &l, &ctx())
            .into_iter()
            .map(|d| (d.path.to_string(), d.change, d.owner.map(|o| o.manager).unwrap_or_default()))
            .collect();
        let c = "spec.template.spec.containers";
        assert_eq!(
            got,
            vec![
                (format!("{c}[name=api].env[name=FOO]"), Change::Added, "kubectl-set".to_string()),
                (format!("{c}[name=sidecar].env"), Change::Added, "kubectl-set".to_string()),
                (format!("{c}[name=worker].env"), Change::Added, "kubectl-set".to_string()),
            ]
        );
    }

    #[test]
    fn an_addition_is_reported_where_it_happened_not_on_a_shared_map() {
        // Helm's annotations and a label added by hand share a map the manifest does not set;
        // `kubectl rollout restart` adds a template annotation that is never compared.
        let d = json!({"kind": "Ingress", "metadata": {"name": "web"},
                       "spec": {"template": {"metadata": {"labels": {"app": "web"}}}}});
        let l = json!({"kind": "Ingress", "metadata": {"name": "web",
                "annotations": {"meta.helm.sh/release-name": "shop", "rewrite": "/"},
                "managedFields": [
                {"manager": "helm", "operation": "Update", "time": "t1", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:meta.helm.sh/release-name": {}}},
                              "f:spec": {"f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}}},
                {"manager": "kubectl-annotate", "operation": "Update", "time": "t2", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {"f:rewrite": {}}}}},
                {"manager": "kubectl-rollout", "operation": "Update", "time": "t3", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:template": {"f:metadata": {"f:annotations": {".": {},
                     "f:kubectl.kubernetes.io/restartedAt": {}}}}}}}]},
            "spec": {"template": {"metadata": {"labels": {"app": "web"},
                "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-30T15:51:54Z"}}}}});
        let got: Vec<(String, String)> = compare_object(&d, &l, &ctx())
            .into_iter()
            .map(|d| (d.path.to_string(), d.owner.map(|o| o.manager).unwrap_or_default()))
            .collect();
        assert_eq!(got, vec![("metadata.annotations.rewrite".to_string(), "kubectl-annotate".to_string())]);
    }

    #[test]
    fn items_added_by_controllers_are_not_drift() {
        let d = json!({"kind": "Deployment", "spec": {"containers": [{"name": "web"}]}});
        let l = json!({"kind": "Deployment", "metadata": {"managedFields": [
                {"manager": "sidecar-injector", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:containers": {"k:{\"name\":\"proxy\"}": {".": {}, "f:name": {}}}}}}]},
            "spec": {"containers": [{"name": "web"}, {"name": "proxy"}]}});
        assert_eq!(compare_object(&d, &l, &ctx()), vec![]);
        // The same addition with no owner recorded is reported.
        let l2 = json!({"kind": "Deployment", "spec": {"containers": [{"name": "web"}, {"name": "proxy"}]}});
        assert_eq!(compare_object(&d, &l2, &ctx()).len(), 1);
    }

    #[test]
    fn items_nobody_owns_on_a_tracked_object_were_added_at_admission() {
        let d = json!({"kind": "Deployment", "spec": {"imagePullSecrets": [{"name": "a"}]}});
        let l = json!({"kind": "Deployment", "metadata": {"managedFields": [
                {"manager": "helm", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:imagePullSecrets": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}}}}]},
            "spec": {"imagePullSecrets": [{"name": "a"}, {"name": "injected"}]}});
        let got = compare_object(&d, &l, &ctx());
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path.to_string(), "spec.imagePullSecrets[name=injected]");
        assert_eq!(got[0].ignored.as_deref(), Some(ADMISSION));
        // Added by a person: owned, reported.
        let mut l2 = l.clone();
        l2["metadata"]["managedFields"].as_array_mut().unwrap().push(json!({"manager": "kubectl-edit", "operation": "Update",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:imagePullSecrets": {"k:{\"name\":\"injected\"}": {".": {}, "f:name": {}}}}}}));
        let got = compare_object(&d, &l2, &ctx());
        assert_eq!((got.len(), got[0].ignored.as_deref()), (1, None));
    }

    #[test]
    fn a_value_only_the_deployer_owns_that_differs_was_changed_at_admission() {
        // Helm sent 100m and IfNotPresent; a webhook raised cpu and a policy set Always during
        // Helm's own write, so Helm owns both values it never sent.
        let d = json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "a", "imagePullPolicy": "IfNotPresent", "resources": {"requests": {"cpu": "100m"}}}]}}}});
        let helm = |op: &str| {
            json!({"manager": "helm", "operation": op, "time": "t1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                    ".": {}, "f:name": {}, "f:image": {}, "f:imagePullPolicy": {},
                    "f:resources": {"f:requests": {"f:cpu": {}}}}}}}}}})
        };
        let live = |entries: Vec<Value>, cpu: &str| {
            json!({"kind": "Deployment", "metadata": {"managedFields": entries},
                "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "a", "imagePullPolicy": "Always",
                    "resources": {"requests": {"cpu": cpu}}}]}}}})
        };
        let admission = CompareContext { admission_changes: Some(AdmissionChanges::Ignore), ..ctx() };
        let reasons = |l: &Value, ctx: &CompareContext| -> Vec<(String, Option<String>)> {
            compare_object(&d, l, ctx).into_iter().map(|x| (x.path.to_string(), x.ignored)).collect()
        };
        let c = "spec.template.spec.containers[name=app]";
        let both_admitted = vec![
            (format!("{c}.imagePullPolicy"), Some(CHANGED_AT_ADMISSION.to_string())),
            (format!("{c}.resources.requests.cpu"), Some(CHANGED_AT_ADMISSION.to_string())),
        ];
        // Helm 3 (Update) and Helm 4 (Apply) alike.
        for op in ["Update", "Apply"] {
            assert_eq!(reasons(&live(vec![helm(op)], "250m"), &admission), both_admitted, "{op}");
        }
        // The rule is off where the deployer is not known for certain (manifests), and in drift
        // mode the comparison leaves them drift (the release check names their cause).
        let off = reasons(&live(vec![helm("Update")], "250m"), &ctx());
        assert!(off.iter().all(|(_, r)| r.is_none()), "{off:?}");
        let drift = CompareContext { admission_changes: Some(AdmissionChanges::Drift), ..ctx() };
        assert!(reasons(&live(vec![helm("Update")], "250m"), &drift).iter().all(|(_, r)| r.is_none()));
        // `kubectl set resources` afterwards: the field is kubectl-set's, drift again.
        let mut helm_rest = helm("Update");
        helm_rest["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"]
            .as_object_mut()
            .unwrap()
            .remove("f:resources");
        let set = json!({"manager": "kubectl-set", "operation": "Update", "time": "t2", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                "f:resources": {"f:requests": {"f:cpu": {}}}}}}}}}});
        let got = compare_object(&d, &live(vec![helm_rest, set.clone()], "300m"), &admission);
        let cpu = got.iter().find(|x| x.path.to_string() == format!("{c}.resources.requests.cpu")).unwrap();
        assert_eq!(
            (cpu.ignored.as_deref(), cpu.owner.as_ref().map(|o| o.manager.as_str())),
            (None, Some("kubectl-set"))
        );
        // Shared with another manager (a server-side apply of the same value by hand): not only Helm's.
        let got = compare_object(&d, &live(vec![helm("Apply"), set], "250m"), &admission);
        let cpu = got.iter().find(|x| x.path.to_string() == format!("{c}.resources.requests.cpu")).unwrap();
        assert_eq!(cpu.ignored, None);
        // Nobody owns it (an object without managedFields): nothing tells, drift.
        let got = compare_object(&d, &live(Vec::new(), "250m"), &admission);
        assert!(got.iter().all(|x| x.ignored.is_none()), "{got:?}");
    }

    #[test]
    fn what_admission_fills_in_where_the_chart_is_silent_is_not_compared() {
        // A default StorageClass and IngressClass (admission plugins, after ownership is
        // recorded: unowned) and a CRD's structural-schema default (applied as the request is
        // decoded: Helm 3 owns it) fill fields the chart does not set. Not values the chart sets,
        // so neither drift nor changed at admission.
        let ctx = CompareContext { admission_changes: Some(AdmissionChanges::Ignore), ..ctx() };
        let helm = |fields: Value| json!([{"manager": "helm", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": fields}]);
        let pvc = json!({"kind": "PersistentVolumeClaim", "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}});
        let live_pvc = json!({"kind": "PersistentVolumeClaim",
            "metadata": {"managedFields": helm(json!({"f:spec": {"f:accessModes": {}, "f:resources": {"f:requests": {"f:storage": {}}}}}))},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "standard", "volumeMode": "Filesystem"}});
        assert_eq!(compare_object(&pvc, &live_pvc, &ctx), vec![]);
        let ingress = json!({"kind": "Ingress", "spec": {"rules": [{"host": "shop.example"}]}});
        let live_ingress = json!({"kind": "Ingress",
            "metadata": {"managedFields": helm(json!({"f:spec": {"f:rules": {}}}))},
            "spec": {"rules": [{"host": "shop.example"}], "ingressClassName": "nginx"}});
        assert_eq!(compare_object(&ingress, &live_ingress, &ctx), vec![]);
        let gizmo = json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "spec": {"size": 1}});
        let live_gizmo = json!({"apiVersion": "example.com/v1", "kind": "Gizmo",
            "metadata": {"managedFields": helm(json!({"f:spec": {".": {}, "f:size": {}, "f:mode": {}}}))},
            "spec": {"size": 1, "mode": "fast"}});
        assert_eq!(compare_object(&gizmo, &live_gizmo, &ctx), vec![]);
    }

    #[test]
    fn an_addition_inside_an_empty_map_helm_owns_is_the_persons_key() {
        // Helm 3 stores and owns `resources: {}`; `kubectl set resources` adds limits inside it.
        let d = json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
            {"name": "app", "resources": {}}]}}}});
        let l = json!({"kind": "Deployment", "metadata": {"managedFields": [
                {"manager": "helm", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                     ".": {}, "f:name": {}, "f:resources": {}}}}}}}},
                {"manager": "kubectl-set", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                     "f:resources": {"f:limits": {".": {}, "f:cpu": {}}}}}}}}}}]},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "2"}}}]}}}});
        let got = compare_object(&d, &l, &ctx());
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].path.to_string(), "spec.template.spec.containers[name=app].resources.limits");
        assert_eq!(got[0].owner.as_ref().map(|o| o.manager.as_str()), Some("kubectl-set"));
    }

    #[test]
    fn a_person_setting_a_field_the_chart_left_empty_is_reported() {
        let d =
            json!({"kind": "Service", "metadata": {"annotations": null}, "spec": {"loadBalancerIP": "", "ports": []}});
        let l = json!({"kind": "Service", "metadata": {"annotations": {"meta.helm.sh/release-name": "r"}, "managedFields": [
                {"manager": "helm", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {"f:meta.helm.sh/release-name": {}}}}},
                {"manager": "kubectl-edit", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:loadBalancerIP": {}}}}]},
            "spec": {"loadBalancerIP": "10.1.1.1", "ports": [{"port": 80}]}});
        let got: Vec<(String, Change)> =
            compare_object(&d, &l, &ctx()).into_iter().map(|d| (d.path.to_string(), d.change)).collect();
        assert_eq!(got, vec![("spec.loadBalancerIP".to_string(), Change::Added)]);
    }
}
