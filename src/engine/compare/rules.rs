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
//! controller's object (an Argo CD Application's `spec.ignoreDifferences`, Flux's rules through
//! [`flux_rules`]): they add an API group (Argo CD) or Flux's `target` selector ([`FluxTarget`])
//! and select fields in the controller's shapes ([`FieldMatch`]: a JSON pointer, a jq path
//! expression, the fields some field managers own) instead of a path glob, and name the object
//! that wrote them (`by`) in the reason. Flux's rules (a HelmRelease's `spec.driftDetection.ignore`,
//! a Kustomization's `spec.ignore`) are matched here only: selection by [`FluxTarget`], fields by
//! [`ObjectRules::covering`], for a release's objects and a Kustomization's alike.

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use crate::engine::compare::jq::JqPath;
use crate::engine::compare::managed::ManagedFields;
use crate::engine::select::{RuleError, Selector, compile_selector, glob};
use crate::report::field::Drift;
use crate::report::path::FieldPath;
use crate::source::gitops::{FluxIgnore, FluxSelector};

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
    /// Flux's `target` selector (Flux's rules only): the object must match it too.
    #[serde(skip)]
    pub target: Option<FluxTarget>,
}

/// Flux's object selector, the `target` of an ignore rule (fluxcd/pkg `jsondiff.Selector`, which
/// helm-controller and kustomize-controller both use), compiled once per rule: `group`,
/// `version`, `kind`, `namespace` and `name` are regular expressions matched whole (Flux anchors
/// them; unset or empty matches any), `labelSelector` and `annotationSelector` label selectors over
/// the desired object's labels and annotations (Flux matches the object it would apply). A
/// pattern or selector that does not parse matches nothing (Flux refuses the whole diff).
#[derive(Debug, Clone, Default)]
pub struct FluxTarget {
    /// group, version, kind, namespace, name, in that order.
    patterns: [Option<Result<Regex, regex::Error>>; 5],
    label_selector: Option<String>,
    annotation_selector: Option<String>,
}

impl FluxTarget {
    pub fn new(sel: &FluxSelector) -> FluxTarget {
        let whole =
            |p: &Option<String>| p.as_ref().filter(|p| !p.is_empty()).map(|p| Regex::new(&format!("^(?:{p})$")));
        let given = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
        FluxTarget {
            patterns: [&sel.group, &sel.version, &sel.kind, &sel.namespace, &sel.name].map(whole),
            label_selector: given(&sel.label_selector),
            annotation_selector: given(&sel.annotation_selector),
        }
    }

    /// Whether it selects the object (its version from the desired object's `apiVersion`, else
    /// the live one's).
    pub fn selects(&self, subject: &Subject) -> bool {
        let api_version = [subject.desired, subject.live]
            .iter()
            .find_map(|o| o.get("apiVersion").and_then(Value::as_str))
            .unwrap_or("");
        let (_, version) = crate::report::group_version(api_version);
        let values = [subject.group, version, subject.kind, subject.namespace, subject.name];
        let patterns = self
            .patterns
            .iter()
            .zip(values)
            .all(|(pattern, value)| pattern.as_ref().is_none_or(|r| r.as_ref().is_ok_and(|r| r.is_match(value))));
        let empty = serde_json::Map::new();
        let by = |selector: Option<&str>, at: &str| {
            selector.is_none_or(|s| {
                let map = subject.desired.pointer(at).and_then(Value::as_object).unwrap_or(&empty);
                crate::source::live::selector_matches(s, map).unwrap_or(false)
            })
        };
        patterns
            && by(self.label_selector.as_deref(), "/metadata/labels")
            && by(self.annotation_selector.as_deref(), "/metadata/annotations")
    }
}

/// Flux's ignore rules (a HelmRelease's `spec.driftDetection.ignore`, a Kustomization's
/// `spec.ignore`: JSON pointers and a `target`) as rules of the one type, one per pointer, named
/// `FIELD POINTER` after `by` (`HelmRelease flux-system/shop`). The pointer `""` is the whole
/// object, as Flux's diff removes the whole document then.
pub fn flux_rules(by: &str, field: &str, rules: &[FluxIgnore]) -> Vec<IgnoreRule> {
    let mut out = Vec::new();
    for r in rules {
        let target = r.target.as_ref().map(FluxTarget::new);
        for p in &r.paths {
            out.push(IgnoreRule {
                source: if p.is_empty() { format!("{field}: the whole object") } else { format!("{field} {p}") },
                field: Some(FieldMatch::Pointer(p.clone())),
                target: target.clone(),
                by: Some(by.to_string()),
                ..IgnoreRule::default()
            });
        }
    }
    out
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

    /// Whether the rule selects this object, group and Flux's target included.
    fn selects(&self, subject: &Subject) -> bool {
        self.group.as_deref().is_none_or(|g| glob(g, subject.group))
            && self.matches_object(subject.kind, subject.namespace, subject.name)
            && self.target.as_ref().is_none_or(|t| t.selects(subject))
    }
}

/// The rules that select one object, with what each names in it (jq paths, managedFields)
/// worked out once for all its fields.
pub struct ObjectRules<'r, 'a> {
    subject: Subject<'a>,
    rules: Vec<&'r IgnoreRule>,
    pointers: Vec<Vec<String>>,
    managed: Option<ManagedFields>,
}

impl<'r, 'a> ObjectRules<'r, 'a> {
    pub fn new(rules: &'r [IgnoreRule], subject: Subject<'a>) -> ObjectRules<'r, 'a> {
        let rules: Vec<&IgnoreRule> = rules.iter().filter(|r| r.selects(&subject)).collect();
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
        ObjectRules { subject, rules, pointers, managed }
    }

    /// The first rule that covers a difference at `path` (`desired` and `live`: the two values
    /// there).
    pub fn covering(&self, path: &FieldPath, desired: Option<&Value>, live: Option<&Value>) -> Option<&'r IgnoreRule> {
        let subject = &self.subject;
        let rendered = path.to_string();
        let pointer = path
            .json_pointer(subject.live)
            .or_else(|| path.json_pointer(subject.desired))
            .or_else(|| plain_pointer(path));
        let covered = self.rules.iter().zip(&self.pointers).find(|(r, ps)| match &r.field {
            None => r.path.as_deref().is_none_or(|p| glob(p, &rendered)),
            Some(FieldMatch::Managers(ms)) => {
                self.managed.as_ref().is_some_and(|m| m.owned_by(ms, path, subject.live).is_some())
            }
            Some(FieldMatch::Pointer(_) | FieldMatch::Jq(_)) => {
                pointer.as_deref().is_some_and(|at| covered_by_pointers(at, ps, desired, live))
            }
        });
        covered.map(|(r, _)| *r)
    }

    /// The first rule that covers the whole object (a pointer `""`).
    pub fn whole_object(&self) -> Option<&'r IgnoreRule> {
        self.rules.iter().copied().find(|r| matches!(&r.field, Some(FieldMatch::Pointer(p)) if p.is_empty()))
    }
}

/// Mark the drifts of one object that a rule covers as ignored, with the first such rule's reason.
/// A field a pointer or jq rule names is ignored with all below it; a difference above such
/// fields (a map added whole) is ignored when the two sides are equal without them, as Argo CD
/// removes those fields from both objects before comparing (and then drops maps and lists left
/// empty).
pub fn apply(rules: &[IgnoreRule], subject: &Subject, drifts: &mut [Drift]) {
    // Nothing to judge (a clean object): no jq run, no managedFields parsed.
    if drifts.iter().all(|d| d.ignored.is_some()) {
        return;
    }
    let judged = ObjectRules::new(rules, *subject);
    if judged.rules.is_empty() {
        return;
    }
    for d in drifts.iter_mut().filter(|d| d.ignored.is_none()) {
        if let Some(rule) = judged.covering(&d.path, d.desired.as_ref(), d.live.as_ref()) {
            d.ignored = Some(rule.describe());
        }
    }
}

/// The JSON pointer of a path made of keys and indexes only (a path neither object resolves).
fn plain_pointer(path: &FieldPath) -> Option<String> {
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

    /// Flux's rules (HelmRelease `driftDetection.ignore`, Kustomization `spec.ignore`): one
    /// IgnoreRule per pointer, named after their object and field.
    fn flux(paths: &[&str], target: Option<FluxSelector>) -> Vec<IgnoreRule> {
        let rule = FluxIgnore { paths: paths.iter().map(|p| p.to_string()).collect(), target };
        flux_rules("Kustomization flux-system/apps", "spec.ignore", &[rule])
    }

    fn replicas_drift() -> Vec<Drift> {
        vec![drift(vec![key("spec"), key("replicas")], Change::Changed, Some(json!(2)), Some(json!(5)))]
    }

    #[test]
    fn flux_pointers_cover_their_field_and_below_and_name_their_object() {
        let (desired, live) = (json!({"apiVersion": "apps/v1"}), live());
        let mut drifts = vec![
            drift(vec![key("spec"), key("replicas")], Change::Changed, Some(json!(2)), Some(json!(5))),
            drift(vec![key("metadata"), key("labels"), key("foo/bar")], Change::Added, None, Some(json!("x"))),
            drift(vec![key("metadata"), key("labels"), key("team")], Change::Added, None, Some(json!("a"))),
        ];
        let rules = flux(&["/spec", "/metadata/labels/foo~1bar"], None);
        assert_eq!(rules.len(), 2);
        apply(&rules, &subject(&desired, &live), &mut drifts);
        assert_eq!(
            drifts[0].ignored.as_deref(),
            Some("ignored by Kustomization flux-system/apps (spec.ignore /spec)"),
            "{drifts:?}"
        );
        assert_eq!(
            drifts[1].ignored.as_deref(),
            Some("ignored by Kustomization flux-system/apps (spec.ignore /metadata/labels/foo~1bar)")
        );
        assert!(drifts[2].ignored.is_none(), "{drifts:?}");
        // The pointer "" is the whole object.
        let whole = flux(&[""], None);
        let judged = ObjectRules::new(&whole, subject(&desired, &live));
        assert_eq!(
            judged.whole_object().map(IgnoreRule::describe).as_deref(),
            Some("ignored by Kustomization flux-system/apps (spec.ignore: the whole object)")
        );
        let mut drifts = replicas_drift();
        apply(&whole, &subject(&desired, &live), &mut drifts);
        assert!(drifts[0].ignored.is_some());
        assert!(ObjectRules::new(&flux(&["/spec"], None), subject(&desired, &live)).whole_object().is_none());
    }

    #[test]
    fn a_flux_target_selects_by_whole_regular_expressions_and_label_selectors() {
        // The desired object says the version and carries the labels and annotations matched.
        let desired = json!({"apiVersion": "apps/v1", "metadata": {
            "labels": {"tier": "web", "team": "a"}, "annotations": {"fluxcd.io/ignore": "replicas"}}});
        let live = live();
        let sel = |f: &dyn Fn(&mut FluxSelector)| {
            let mut s = FluxSelector::default();
            f(&mut s);
            Some(s)
        };
        let cases: Vec<(&str, Option<FluxSelector>, bool)> = vec![
            ("no target", None, true),
            ("empty target", sel(&|_| {}), true),
            ("kind", sel(&|s| s.kind = Some("Deployment".into())), true),
            ("kind regex", sel(&|s| s.kind = Some("Deploy.*".into())), true),
            ("kind matched whole", sel(&|s| s.kind = Some("Deploy".into())), false),
            ("other kind", sel(&|s| s.kind = Some("StatefulSet".into())), false),
            ("group", sel(&|s| s.group = Some("apps".into())), true),
            ("core group", sel(&|s| s.group = Some("".into())), true), // empty: any, as Flux
            ("other group", sel(&|s| s.group = Some("batch".into())), false),
            ("version", sel(&|s| s.version = Some("v1".into())), true),
            ("other version", sel(&|s| s.version = Some("v1beta1".into())), false),
            ("name regex", sel(&|s| s.name = Some("w.b".into())), true),
            ("name alternation", sel(&|s| s.name = Some("api|web".into())), true),
            ("other name", sel(&|s| s.name = Some("api".into())), false),
            ("namespace", sel(&|s| s.namespace = Some("sh.*".into())), true),
            ("other namespace", sel(&|s| s.namespace = Some("prod".into())), false),
            ("labels", sel(&|s| s.label_selector = Some("tier=web,team in (a,b)".into())), true),
            ("labels not matched", sel(&|s| s.label_selector = Some("tier=db".into())), false),
            ("annotations", sel(&|s| s.annotation_selector = Some("fluxcd.io/ignore=replicas".into())), true),
            ("annotations not matched", sel(&|s| s.annotation_selector = Some("!fluxcd.io/ignore".into())), false),
            ("a bad regex matches nothing", sel(&|s| s.kind = Some("Deploy(".into())), false),
            (
                "all of them",
                sel(&|s| {
                    s.group = Some("apps".into());
                    s.kind = Some("Deployment".into());
                    s.name = Some("web".into());
                    s.label_selector = Some("tier".into());
                }),
                true,
            ),
        ];
        for (what, target, expect) in cases {
            let mut drifts = replicas_drift();
            apply(&flux(&["/spec/replicas"], target), &subject(&desired, &live), &mut drifts);
            assert_eq!(drifts[0].ignored.is_some(), expect, "{what}");
        }
        // Labels are the desired object's, as Flux matches the object it applies.
        let plain = json!({"apiVersion": "apps/v1"});
        let mut drifts = replicas_drift();
        let rules = flux(&["/spec/replicas"], sel(&|s| s.label_selector = Some("foo/bar=x".into())));
        apply(&rules, &subject(&plain, &live), &mut drifts);
        assert!(drifts[0].ignored.is_none(), "the live object's label does not select it");
        // Without a desired apiVersion, the live one says the version.
        let mut drifts = replicas_drift();
        let rules = flux(&["/spec/replicas"], sel(&|s| s.version = Some("v1".into())));
        apply(&rules, &subject(&json!({}), &live), &mut drifts);
        assert!(drifts[0].ignored.is_some());
    }
}
