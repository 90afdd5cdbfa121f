//! Selecting objects: `*` globs (and the versions config's image globs over `repo` or
//! `repo:tag`), the one object selector (kind, namespace, name, name_regex) that every kind of
//! rule shares (the release and manifests ignore rules, `compare::rules`; orphans' ignore and
//! protect rules, `orphans::rules`; versions' ignore rules and probes, `versions::config`,
//! `versions::probes`), the rule type orphans and versions share ([`ObjectRule`]), and label
//! selectors as the API server evaluates them. Below those engines, importing none of them.

use regex::Regex;
use serde::Deserialize;

use crate::engine::tree::{IObject, IValue, Tree, TreeMap, as_array, as_str};

/// The one object selector, for every kind of rule (release, manifests, orphans and versions
/// ignore rules, protect rules): each selector given must match; `kind` is a glob compared
/// case-insensitively (`deployment`, `Deploy*`), `namespace` and `name` are globs, `name_regex` a
/// regex over the name (compiled by [`compile_selector`]). Each rule declares these keys itself, as
/// the config file writes them (serde cannot flatten a struct into one that refuses unknown keys),
/// and selects through this.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selector<'a> {
    pub kind: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
    pub name_regex: Option<&'a Regex>,
}

impl Selector<'_> {
    /// Whether every selector given matches the object.
    pub fn selects(&self, kind: &str, namespace: &str, name: &str) -> bool {
        self.kind.is_none_or(|k| glob(&k.to_ascii_lowercase(), &kind.to_ascii_lowercase()))
            && self.namespace.is_none_or(|n| glob(n, namespace))
            && self.name.is_none_or(|n| glob(n, name))
            && self.name_regex.is_none_or(|re| re.is_match(name))
    }
}

/// Check a rule written as `origin`: compile its `name_regex`, and refuse a rule that selects
/// nothing (`keys`: what it could have given).
pub(crate) fn compile_selector(
    origin: &str,
    name_regex: Option<&str>,
    selects_something: bool,
    keys: &str,
) -> Result<Option<Regex>, RuleError> {
    let invalid = |message: String| RuleError::Invalid { rule: origin.to_string(), message };
    if !selects_something {
        return Err(invalid(format!("the rule selects nothing: give {keys}")));
    }
    name_regex.map(|re| Regex::new(re).map_err(|e| invalid(format!("name_regex: {e}")))).transpose()
}

/// `*` matches any run of characters; everything else literally.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while ti < t.len() {
        if pi < p.len() && p[pi] != '*' && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Whether an image glob of the versions config (`images`, `probes`) selects a repository (`host/path`)
/// or its `repo:tag`.
pub fn image_glob(pattern: &str, repository: &str, tag: Option<&str>) -> bool {
    glob(pattern, repository) || tag.is_some_and(|t| glob(pattern, &format!("{repository}:{t}")))
}

/// One rule selecting objects, as orphans' ignore and protect rules and versions' ignore rules
/// are written (`--ignore RULE`, or the config file's `orphans:` and `versions:` sections): the
/// selector, plus `source`, a glob over the object's origins (`helm:<release>`,
/// `managed-by:<label>`, `manager:<fieldManager>`), and a note.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectRule {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub name_regex: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default, alias = "reason")]
    pub note: Option<String>,
    #[serde(skip)]
    compiled: Option<Regex>,
    /// How the rule was given (`--ignore ...`, `rules.yaml ignore rule 2`).
    #[serde(skip)]
    pub origin: String,
}

impl ObjectRule {
    /// Parse a command-line rule.
    pub fn parse_cli(flag: &str, s: &str) -> Result<ObjectRule, RuleError> {
        let origin = format!("{flag} {s}");
        let invalid = |message: String| RuleError::Invalid { rule: origin.clone(), message };
        let mut rule = ObjectRule { origin: origin.clone(), ..Default::default() };
        if s.contains('=') {
            for part in s.split(',') {
                let (k, v) = part.split_once('=').ok_or_else(|| invalid(format!("{part:?} is not key=value")))?;
                let v = Some(v.trim().to_string());
                match k.trim() {
                    "kind" => rule.kind = v,
                    "namespace" => rule.namespace = v,
                    "name" => rule.name = v,
                    "name_regex" => rule.name_regex = v,
                    "source" => rule.source = v,
                    "note" | "reason" => rule.note = v,
                    other => {
                        return Err(invalid(format!(
                            "unknown key {other:?} (kind, namespace, name, name_regex, source, note)"
                        )));
                    }
                }
            }
        } else {
            let (kind, rest) = match s.split_once(':') {
                Some((k, r)) => (k, Some(r)),
                None => (s, None),
            };
            if kind.is_empty() {
                return Err(invalid("the kind is empty".into()));
            }
            rule.kind = Some(kind.to_string());
            match rest.map(|r| r.split_once('/').map_or((None, r), |(n, m)| (Some(n), m))) {
                None => {}
                Some((_, "")) => return Err(invalid("the name is empty".into())),
                Some((ns, name)) => {
                    rule.namespace = ns.map(str::to_string);
                    rule.name = Some(name.to_string());
                }
            }
        }
        rule.compile()?;
        Ok(rule)
    }

    pub fn compile(&mut self) -> Result<(), RuleError> {
        let given = self.kind.is_some()
            || self.namespace.is_some()
            || self.name.is_some()
            || self.name_regex.is_some()
            || self.source.is_some();
        let keys = "kind, namespace, name, name_regex or source";
        self.compiled = compile_selector(&self.origin, self.name_regex.as_deref(), given, keys)?;
        Ok(())
    }

    /// The rule's object selector.
    pub fn selector(&self) -> Selector<'_> {
        Selector {
            kind: self.kind.as_deref(),
            namespace: self.namespace.as_deref(),
            name: self.name.as_deref(),
            name_regex: self.compiled.as_ref(),
        }
    }

    /// Whether every selector given matches. `sources` are the object's origins
    /// (`helm:<release>`, `managed-by:<label>`, `manager:<fieldManager>`).
    pub fn matches(&self, kind: &str, namespace: &str, name: &str, sources: &[String]) -> bool {
        self.selector().selects(kind, namespace, name)
            && self.source.as_deref().is_none_or(|p| sources.iter().any(|s| glob(p, s)))
    }

    /// What the user sees as the reason: the rule and its note.
    pub fn describe(&self) -> String {
        match &self.note {
            Some(n) if !n.is_empty() => format!("{}: {n}", self.origin),
            _ => self.origin.clone(),
        }
    }
}

// Label selectors, as the API server evaluates them: `matchLabels` and `matchExpressions`
// (PodDisruptionBudget, NetworkPolicy, ClusterRole aggregation, workloads' pods) and plain maps
// (Service).

/// Does a `LabelSelector` select these labels? `{}` selects everything; a missing (null)
/// selector selects nothing.
pub fn label_selector_matches(selector: &(impl Tree + ?Sized), labels: &(impl TreeMap + ?Sized)) -> bool {
    let (selector, labels) = (&*selector.tree(), &*labels.tree_map());
    let Some(sel) = selector.as_object() else { return false };
    if let Some(ml) = sel.get("matchLabels").and_then(IValue::as_object)
        && !ml.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    let Some(exprs) = sel.get("matchExpressions").and_then(as_array) else { return true };
    exprs.iter().all(|e| {
        let key = e.get("key").and_then(as_str).unwrap_or("");
        let values: Vec<&str> =
            e.get("values").and_then(as_array).map(|a| a.iter().filter_map(as_str).collect()).unwrap_or_default();
        let have = labels.get(key).and_then(as_str);
        match e.get("operator").and_then(as_str).unwrap_or("") {
            "In" => have.is_some_and(|h| values.contains(&h)),
            "NotIn" => have.is_none_or(|h| !values.contains(&h)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            // An operator we do not know: do not claim a match we cannot prove.
            _ => false,
        }
    })
}

/// Does a selector select every object (`{}`)?
pub fn selects_everything(selector: &(impl Tree + ?Sized)) -> bool {
    let selector = &*selector.tree();
    selector.as_object().is_some_and(|m| {
        m.get("matchLabels").and_then(IValue::as_object).is_none_or(IObject::is_empty)
            && m.get("matchExpressions").and_then(as_array).is_none_or(<[IValue]>::is_empty)
    })
}

/// Does a Service-style selector (a plain map) select these labels? An empty map selects nothing.
pub fn map_selector_matches(selector: &(impl TreeMap + ?Sized), labels: &(impl TreeMap + ?Sized)) -> bool {
    let (selector, labels) = (&*selector.tree_map(), &*labels.tree_map());
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// Why a rule cannot be used (the config file's own errors, reading and parsing it, are the
/// app's: `app::config`).
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// An --ignore/--protect value or a rule field is malformed.
    #[error("invalid rule {rule}: {message}")]
    Invalid { rule: String, message: String },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    #[test]
    fn globbing() {
        assert!(glob("spec.replicas", "spec.replicas"));
        assert!(!glob("spec.replicas", "spec.replicasX"));
        assert!(glob("metadata.annotations*", r#"metadata.annotations["a/b"]"#));
        assert!(glob("spec.template.spec.containers[*].image", "spec.template.spec.containers[name=web].image"));
        assert!(glob("*", "anything"));
        assert!(!glob("a*c", "abd"));
    }

    #[test]
    fn cli_forms() {
        let r = ObjectRule::parse_cli("--ignore", "ConfigMap").unwrap();
        assert!(r.matches("ConfigMap", "a", "b", &[]));
        assert!(!r.matches("Secret", "a", "b", &[]));
        let r = ObjectRule::parse_cli("--ignore", "configmap:shop/legacy-*").unwrap();
        assert!(r.matches("ConfigMap", "shop", "legacy-1", &[]));
        assert!(!r.matches("ConfigMap", "other", "legacy-1", &[]));
        let r = ObjectRule::parse_cli("--ignore", "StorageClass:slow").unwrap();
        assert!(r.matches("StorageClass", "", "slow", &[]));
        let r = ObjectRule::parse_cli("--ignore", "kind=*,source=helm:old-*,note=going away").unwrap();
        assert!(r.matches("Secret", "x", "y", &["helm:old-shop".into()]));
        assert!(!r.matches("Secret", "x", "y", &["manager:kubectl".into()]));
        assert_eq!(r.describe(), "--ignore kind=*,source=helm:old-*,note=going away: going away");
        assert!(ObjectRule::parse_cli("--ignore", "").is_err());
        assert!(ObjectRule::parse_cli("--ignore", "Secret:").is_err());
        assert!(ObjectRule::parse_cli("--ignore", "colour=red").is_err());
        assert!(ObjectRule::parse_cli("--ignore", "name_regex=([").is_err());
    }

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn match_labels_and_expressions() {
        let l = labels(json!({"app": "web", "tier": "front"}));
        assert!(label_selector_matches(&json!({}), &l));
        assert!(!label_selector_matches(&Value::Null, &l));
        assert!(label_selector_matches(&json!({"matchLabels": {"app": "web"}}), &l));
        assert!(!label_selector_matches(&json!({"matchLabels": {"app": "db"}}), &l));
        assert!(label_selector_matches(
            &json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "x"]}]}),
            &l
        ));
        assert!(!label_selector_matches(
            &json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}),
            &l
        ));
        assert!(label_selector_matches(
            &json!({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}),
            &l
        ));
        assert!(!label_selector_matches(&json!({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}), &l));
        assert!(!label_selector_matches(
            &json!({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}),
            &l
        ));
        assert!(selects_everything(&json!({})));
        assert!(!selects_everything(&json!({"matchLabels": {"a": "b"}})));
        assert!(!selects_everything(&Value::Null));
    }

    #[test]
    fn map_selectors() {
        let l = labels(json!({"app": "web"}));
        assert!(map_selector_matches(&labels(json!({"app": "web"})), &l));
        assert!(!map_selector_matches(&labels(json!({})), &l));
        assert!(!map_selector_matches(&labels(json!({"app": "web", "x": "y"})), &l));
    }
}
