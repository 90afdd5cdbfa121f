//! Ignore rules: fields (or whole objects) the user says are not drift.
//!
//! From the command line: `--ignore PATH`, `--ignore KIND:PATH` or
//! `--ignore KIND:NAMESPACE/NAME:PATH`; from the `ignore:` section of the config file (`--config`,
//! read by the app, `app::config`, which names each rule by its place in the file):
//!
//! ```yaml
//! ignore:
//!   - kind: Deployment          # optional; glob
//!     namespace: shop           # optional; glob
//!     name: web                 # optional; glob
//!     name_regex: "^web-.*$"    # optional
//!     path: spec.replicas       # optional glob over the rendered path; all fields if omitted
//!     reason: scaled by KEDA    # shown with the ignored field
//! ```
//! Globs use `*` for any run of characters. A matched field is reported as ignored and does not
//! count as drift (nor change the exit code).
//!
//! The GitOps controllers' own rules are rules of this one type too, made by the engine from the
//! controller's object (an Argo CD Application's `spec.ignoreDifferences`): they add an API group
//! and select fields in the controller's shapes ([`FieldMatch`]: a JSON pointer, a jq path
//! expression, the fields some field managers own) instead of a path glob, and name the object
//! that wrote them (`by`) in the reason.

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use crate::engine::compare::jq::JqPath;
use crate::engine::compare::managed::ManagedFields;
use crate::engine::select::{RuleError, Selector, compile_selector, glob};
use crate::report::field::Drift;

/// One ignore rule.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IgnoreRule {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub name_regex: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(skip)]
    compiled_regex: Option<Regex>,
    /// How the rule was written, for the reason shown to the user.
    #[serde(skip)]
    pub source: String,
    /// The API group, a glob (`""` is the core group); any group when none. Only the GitOps
    /// controllers' rules give one.
    #[serde(skip)]
    pub group: Option<String>,
    /// The fields it covers in a controller's shape, instead of `path`.
    #[serde(skip)]
    pub field: Option<FieldMatch>,
    /// The object that wrote the rule, when it is not the user (`Application argocd/shop`).
    #[serde(skip)]
    pub by: Option<String>,
}

/// Which fields of a selected object a GitOps controller's rule covers.
#[derive(Debug, Clone)]
pub enum FieldMatch {
    /// An RFC 6901 JSON pointer (`/metadata/labels/foo~1bar`): the field and all below it.
    Pointer(String),
    /// A jq path expression: the fields `path(EXPR)` names in the object, and all below them.
    Jq(JqPath),
    /// The fields these field managers own (the live object's `metadata.managedFields`).
    Managers(Vec<String>),
}

/// The object whose differences the rules judge: its identity and both sides.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The API group (`""`: core).
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The desired object (a manifest, or the fields the deployer owns).
    pub desired: &'a Value,
    pub live: &'a Value,
}

impl IgnoreRule {
    /// Parse `PATH`, `KIND:PATH` or `KIND:NAMESPACE/NAME:PATH`.
    pub fn parse_cli(s: &str) -> Result<IgnoreRule, RuleError> {
        let invalid = |message: &str| RuleError::Invalid { rule: s.to_string(), message: message.to_string() };
        let looks_like_kind = |k: &str| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '*');
        let parts: Vec<&str> = s.splitn(3, ':').collect();
        let mut rule = IgnoreRule { source: format!("--ignore {s}"), ..Default::default() };
        match parts.as_slice() {
            [path] => rule.path = Some(path.to_string()),
            [kind, path] if looks_like_kind(kind) => {
                rule.kind = Some(kind.to_string());
                rule.path = Some(path.to_string());
            }
            [kind, obj, path] if looks_like_kind(kind) => {
                rule.kind = Some(kind.to_string());
                match obj.split_once('/') {
                    Some((ns, name)) => {
                        rule.namespace = Some(ns.to_string()).filter(|n| !n.is_empty());
                        rule.name = Some(name.to_string());
                    }
                    None => rule.name = Some(obj.to_string()),
                }
                rule.path = Some(path.to_string());
            }
            _ => rule.path = Some(s.to_string()),
        }
        if rule.path.as_deref() == Some("") {
            return Err(invalid("the field path is empty"));
        }
        rule.compile()?;
        Ok(rule)
    }

    fn compile(&mut self) -> Result<(), RuleError> {
        let given = self.kind.is_some()
            || self.namespace.is_some()
            || self.name.is_some()
            || self.name_regex.is_some()
            || self.path.is_some();
        let keys = "kind, namespace, name, name_regex or path";
        self.compiled_regex = compile_selector(&self.source, self.name_regex.as_deref(), given, keys)?;
        Ok(())
    }

    /// The rule's object selector.
    pub fn selector(&self) -> Selector<'_> {
        Selector {
            kind: self.kind.as_deref(),
            namespace: self.namespace.as_deref(),
            name: self.name.as_deref(),
            name_regex: self.compiled_regex.as_ref(),
        }
    }

    /// Whether the rule covers this object (all given selectors match: `select::Selector`).
    pub fn matches_object(&self, kind: &str, namespace: &str, name: &str) -> bool {
        self.selector().selects(kind, namespace, name)
    }

    /// Whether the rule covers whole objects (it names no field): an extra object it selects is
    /// ignored.
    pub fn is_whole_object(&self) -> bool {
        self.path.is_none() && self.field.is_none()
    }

    /// Whether the rule covers this field of this object.
    pub fn matches_field(&self, kind: &str, namespace: &str, name: &str, path: &str) -> bool {
        self.matches_object(kind, namespace, name) && self.path.as_deref().is_none_or(|p| glob(p, path))
    }

    /// The reason shown with an ignored field.
    pub fn describe(&self) -> String {
        match (&self.by, &self.reason) {
            (Some(by), _) => format!("ignored by {by} ({})", self.source),
            (None, Some(r)) => format!("ignored by rule ({}): {r}", self.source),
            (None, None) => format!("ignored by rule ({})", self.source),
        }
    }

    /// Whether the rule selects this object, group included.
    fn selects(&self, subject: &Subject) -> bool {
        self.group.as_deref().is_none_or(|g| glob(g, subject.group))
            && self.matches_object(subject.kind, subject.namespace, subject.name)
    }
}

/// Mark the drifts of one object that a rule covers as ignored, with the first such rule's reason.
/// A field a pointer or jq rule names is ignored with all below it; a difference above such
/// fields (a map added whole) is ignored when the two sides are equal without them, as Argo CD
/// removes those fields from both objects before comparing (and then drops maps and lists left
/// empty).
pub fn apply(rules: &[IgnoreRule], subject: &Subject, drifts: &mut [Drift]) {
    let rules: Vec<&IgnoreRule> = rules.iter().filter(|r| r.selects(subject)).collect();
    // Nothing to judge (a clean object): no jq run, no managedFields parsed.
    if rules.is_empty() || drifts.iter().all(|d| d.ignored.is_some()) {
        return;
    }
    // What each rule names in this object, worked out once.
    let managed = rules
        .iter()
        .any(|r| matches!(r.field, Some(FieldMatch::Managers(_))))
        .then(|| ManagedFields::from_object(subject.live));
    let pointers: Vec<Vec<String>> = rules
        .iter()
        .map(|r| match &r.field {
            Some(FieldMatch::Pointer(p)) => vec![p.clone()],
            Some(FieldMatch::Jq(jq)) => {
                let mut ps = jq.pointers(subject.live);
                for p in jq.pointers(subject.desired) {
                    if !ps.contains(&p) {
                        ps.push(p);
                    }
                }
                ps
            }
            _ => Vec::new(),
        })
        .collect();
    for d in drifts.iter_mut().filter(|d| d.ignored.is_none()) {
        let rendered = d.path.to_string();
        let pointer = d
            .path
            .json_pointer(subject.live)
            .or_else(|| d.path.json_pointer(subject.desired))
            .or_else(|| plain_pointer(&d.path));
        let covered = rules.iter().zip(&pointers).find(|(r, ps)| match &r.field {
            None => r.path.as_deref().is_none_or(|p| glob(p, &rendered)),
            Some(FieldMatch::Managers(ms)) => {
                managed.as_ref().is_some_and(|m| m.owned_by(ms, &d.path, subject.live).is_some())
            }
            Some(FieldMatch::Pointer(_) | FieldMatch::Jq(_)) => {
                pointer.as_deref().is_some_and(|at| covered_by_pointers(at, ps, d.desired.as_ref(), d.live.as_ref()))
            }
        });
        if let Some((rule, _)) = covered {
            d.ignored = Some(rule.describe());
        }
    }
}

/// The JSON pointer of a path made of keys and indexes only (a path neither object resolves).
fn plain_pointer(path: &crate::report::path::FieldPath) -> Option<String> {
    use crate::report::path::Seg;
    path.segs()
        .iter()
        .map(|s| match s {
            Seg::Key(k) => Some(format!("/{}", k.replace('~', "~0").replace('/', "~1"))),
            Seg::Index(i) => Some(format!("/{i}")),
            Seg::Item { .. } => None,
        })
        .collect()
}

/// Whether `pointer` is `rule` or lies under it (Argo CD and Flux remove a pointer's whole value).
pub fn under_pointer(pointer: &str, rule: &str) -> bool {
    pointer == rule || pointer.strip_prefix(rule).is_some_and(|rest| rest.starts_with('/'))
}

/// Whether a difference at `at` (with these two values there) disappears once the fields at
/// `pointers` are removed from both sides: `at` lies under one of them, or the values are
/// equal without those below it.
fn covered_by_pointers(at: &str, pointers: &[String], desired: Option<&Value>, live: Option<&Value>) -> bool {
    if pointers.iter().any(|p| under_pointer(at, p)) {
        return true;
    }
    let below: Vec<&str> =
        pointers.iter().filter_map(|p| p.strip_prefix(at)).filter(|rest| rest.starts_with('/')).collect();
    if below.is_empty() {
        return false;
    }
    let strip = |v: Option<&Value>| {
        let mut v = v.cloned().unwrap_or(Value::Null);
        for rest in &below {
            remove_pointer(&mut v, rest);
        }
        drop_empty(&mut v);
        v
    };
    strip(desired) == strip(live)
}

/// Remove the value at `pointer` (RFC 6901, relative to `v`), if it is there.
fn remove_pointer(v: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else { return };
    let unescape = |s: &str| s.replace("~1", "/").replace("~0", "~");
    let target = if parent.is_empty() { Some(v) } else { v.pointer_mut(parent) };
    match target {
        Some(Value::Object(m)) => {
            m.remove(&unescape(last));
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < a.len()
            {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// Maps and lists left empty become nothing (`null`), as Argo CD drops them after removing
/// ignored fields.
fn drop_empty(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for x in m.values_mut() {
                drop_empty(x);
            }
            m.retain(|_, x| !x.is_null());
            if m.is_empty() {
                *v = Value::Null;
            }
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                drop_empty(x);
            }
            a.retain(|x| !x.is_null());
            if a.is_empty() {
                *v = Value::Null;
            }
        }
        _ => {}
    }
}

/// The release and manifests ignore rules: those of the config file's `ignore:` section (each
/// named by its place in the file), checked, then the `--ignore` values.
pub(crate) fn ignore_rules(file: Vec<IgnoreRule>, cli: &[String]) -> Result<Vec<IgnoreRule>, RuleError> {
    let mut rules = Vec::new();
    for mut r in file {
        r.compile()?;
        rules.push(r);
    }
    for s in cli {
        rules.push(IgnoreRule::parse_cli(s)?);
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_forms() {
        let r = IgnoreRule::parse_cli("spec.replicas").unwrap();
        assert!(r.matches_field("Deployment", "ns", "web", "spec.replicas"));
        let r = IgnoreRule::parse_cli("Deployment:spec.replicas").unwrap();
        assert!(r.matches_field("Deployment", "ns", "web", "spec.replicas"));
        assert!(!r.matches_field("StatefulSet", "ns", "web", "spec.replicas"));
        let r = IgnoreRule::parse_cli("Deployment:shop/web:spec.template.*").unwrap();
        assert!(r.matches_field("Deployment", "shop", "web", "spec.template.spec.containers[name=web].image"));
        assert!(!r.matches_field("Deployment", "shop", "api", "spec.template.x"));
        assert!(IgnoreRule::parse_cli("Deployment:").is_err());
    }

    use serde_json::json;

    use crate::report::field::{Change, Owner};
    use crate::report::path::{FieldPath, Seg};

    fn key(k: &str) -> Seg {
        Seg::Key(k.to_string())
    }

    fn drift(path: Vec<Seg>, change: Change, desired: Option<Value>, live: Option<Value>) -> Drift {
        Drift { path: FieldPath(path), change, desired, live, owner: None, ignored: None }
    }

    /// An Argo CD-shaped rule: group and kind, covering `field`.
    fn argo(group: &str, kind: &str, field: FieldMatch) -> IgnoreRule {
        IgnoreRule {
            group: Some(group.into()),
            kind: Some(kind.into()),
            by: Some("Application argocd/shop".into()),
            source: "ignoreDifferences[0]".into(),
            field: Some(field),
            ..IgnoreRule::default()
        }
    }

    fn live() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"foo/bar": "x", "team": "a"},
                "managedFields": [
                    {"manager": "argocd-controller", "operation": "Apply", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
                         "k:{\"name\":\"app\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}},
                    {"manager": "hpa-controller", "operation": "Update", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:spec": {"f:replicas": {}}}},
                    {"manager": "kubectl-label", "operation": "Update", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {"f:foo/bar": {}, "f:team": {}}}}}]},
            "spec": {"replicas": 5, "template": {"spec": {"containers": [
                {"name": "sidecar", "image": "envoy:2"},
                {"name": "app", "image": "web:3"}]}}}
        })
    }

    fn subject<'a>(desired: &'a Value, live: &'a Value) -> Subject<'a> {
        Subject { group: "apps", kind: "Deployment", namespace: "shop", name: "web", desired, live }
    }

    #[test]
    fn a_json_pointer_covers_its_field_and_below_with_rfc6901_escapes() {
        let (desired, live) = (json!({}), live());
        let mut drifts = vec![
            drift(vec![key("metadata"), key("labels"), key("foo/bar")], Change::Added, None, Some(json!("x"))),
            drift(vec![key("metadata"), key("labels"), key("team")], Change::Added, None, Some(json!("a"))),
            drift(vec![key("spec"), key("replicas")], Change::Changed, Some(json!(2)), Some(json!(5))),
        ];
        let rules = vec![
            argo("apps", "Deployment", FieldMatch::Pointer("/metadata/labels/foo~1bar".into())),
            argo("apps", "Deployment", FieldMatch::Pointer("/spec".into())),
        ];
        apply(&rules, &subject(&desired, &live), &mut drifts);
        let ignored: Vec<bool> = drifts.iter().map(|d| d.ignored.is_some()).collect();
        assert_eq!(ignored, vec![true, false, true]);
        assert_eq!(drifts[0].ignored.as_deref(), Some("ignored by Application argocd/shop (ignoreDifferences[0])"));
        // `/spec/replicasX` is not under `/spec/replicas`.
        assert!(!under_pointer("/spec/replicasX", "/spec/replicas"));
        assert!(under_pointer("/spec/replicas", "/spec/replicas"));
    }

    #[test]
    fn a_map_added_whole_is_ignored_only_when_nothing_else_differs_without_the_ignored_fields() {
        let (desired, live) = (json!({}), live());
        let labels = || vec![key("metadata"), key("labels")];
        let rule = |p: &str| vec![argo("apps", "Deployment", FieldMatch::Pointer(p.into()))];
        // Both labels were added; ignoring one leaves the other: drift.
        let mut drifts = vec![drift(labels(), Change::Added, None, Some(json!({"foo/bar": "x", "team": "a"})))];
        apply(&rule("/metadata/labels/foo~1bar"), &subject(&desired, &live), &mut drifts);
        assert!(drifts[0].ignored.is_none());
        // Only the ignored label was added: nothing is left once it is removed.
        let mut drifts = vec![drift(labels(), Change::Added, None, Some(json!({"foo/bar": "x"})))];
        apply(&rule("/metadata/labels/foo~1bar"), &subject(&desired, &live), &mut drifts);
        assert!(drifts[0].ignored.is_some());
    }

    #[test]
    fn a_jq_select_covers_the_item_it_selects_only() {
        let (desired, live) = (json!({}), live());
        let containers = |name: &str| {
            vec![
                key("spec"),
                key("template"),
                key("spec"),
                key("containers"),
                Seg::Item { field: "name".into(), value: name.into() },
                key("image"),
            ]
        };
        let mut drifts = vec![
            drift(containers("app"), Change::Changed, Some(json!("web:2")), Some(json!("web:3"))),
            drift(containers("sidecar"), Change::Changed, Some(json!("envoy:1")), Some(json!("envoy:2"))),
        ];
        let jq = JqPath::compile(r#".spec.template.spec.containers[] | select(.name == "app") | .image"#).unwrap();
        apply(&[argo("apps", "Deployment", FieldMatch::Jq(jq))], &subject(&desired, &live), &mut drifts);
        assert!(drifts[0].ignored.is_some(), "{drifts:?}");
        assert!(drifts[1].ignored.is_none(), "{drifts:?}");
    }

    #[test]
    fn managers_cover_the_fields_they_own() {
        let (desired, live) = (json!({}), live());
        let mut drifts = vec![
            drift(vec![key("spec"), key("replicas")], Change::Changed, Some(json!(2)), Some(json!(5))),
            drift(vec![key("metadata"), key("labels"), key("team")], Change::Added, None, Some(json!("a"))),
        ];
        drifts[0].owner = Some(Owner { manager: "hpa-controller".into(), time: None });
        let rules = vec![argo("apps", "Deployment", FieldMatch::Managers(vec!["hpa-controller".into()]))];
        apply(&rules, &subject(&desired, &live), &mut drifts);
        assert!(drifts[0].ignored.as_deref().is_some_and(|r| r.contains("Application argocd/shop")));
        assert!(drifts[1].ignored.is_none(), "kubectl-label's field is not hpa-controller's");
    }

    #[test]
    fn group_and_kind_select_as_argo_cd_does() {
        let (desired, live) = (json!({}), live());
        let replicas =
            || vec![drift(vec![key("spec"), key("replicas")], Change::Changed, Some(json!(2)), Some(json!(5)))];
        let pointer = || FieldMatch::Pointer("/spec/replicas".into());
        for (group, kind, expect) in [
            ("apps", "Deployment", true),
            ("", "Deployment", false), // "" is the core group, not any group
            ("*", "Deployment", true),
            ("apps", "*", true),
            ("apps", "StatefulSet", false),
            ("apps", "", false),
        ] {
            let mut drifts = replicas();
            apply(&[argo(group, kind, pointer())], &subject(&desired, &live), &mut drifts);
            assert_eq!(drifts[0].ignored.is_some(), expect, "group {group:?} kind {kind:?}");
        }
        // A name or namespace given must be the object's.
        let mut named = argo("apps", "Deployment", pointer());
        named.name = Some("api".into());
        let mut drifts = replicas();
        apply(&[named], &subject(&desired, &live), &mut drifts);
        assert!(drifts[0].ignored.is_none());
        let mut core = argo("", "ConfigMap", FieldMatch::Pointer("/data".into()));
        core.namespace = Some("shop".into());
        let cm = Subject { group: "", kind: "ConfigMap", ..subject(&desired, &live) };
        let mut drifts = vec![drift(vec![key("data"), key("a")], Change::Changed, Some(json!("1")), Some(json!("2")))];
        apply(&[core], &cm, &mut drifts);
        assert!(drifts[0].ignored.is_some());
    }

    #[test]
    fn user_rules_keep_their_reason_and_whole_object_rules_are_told_apart() {
        let (desired, live) = (json!({}), live());
        let mut drifts =
            vec![drift(vec![key("spec"), key("replicas")], Change::Changed, Some(json!(2)), Some(json!(5)))];
        let rules = ignore_rules(Vec::new(), &["Deployment:spec.replicas".to_string()]).unwrap();
        apply(&rules, &subject(&desired, &live), &mut drifts);
        assert_eq!(drifts[0].ignored.as_deref(), Some("ignored by rule (--ignore Deployment:spec.replicas)"));
        assert!(!rules[0].is_whole_object());
        assert!(!argo("", "ConfigMap", FieldMatch::Managers(vec![])).is_whole_object());
        let whole = IgnoreRule { kind: Some("ConfigMap".into()), ..IgnoreRule::default() };
        assert!(whole.is_whole_object());
    }
}
