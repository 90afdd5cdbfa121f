//! The user's rules: `ignore` (class an object ignored, with the rule's note) and `protect`
//! (never offer it for deletion). From `--ignore RULE` or the `orphans:` section of `--config`
//! (read by the app, `app::config`, which names each rule by its place in the file):
//!
//! ```yaml
//! orphans:
//!   ignore:
//!     - kind: ConfigMap        # optional; glob, case-insensitive
//!       namespace: shop        # optional; glob
//!       name: "legacy-*"       # optional; glob
//!       name_regex: "^tmp-"    # optional
//!       source: "helm:*"       # optional; glob over helm:<release>, managed-by:<label>, manager:<fieldManager>
//!       note: the batch job reads it by name
//!   protect:
//!     - kind: Secret
//!       name: "*-tls"
//!       note: certificates are kept
//! ```
//! On the command line a rule is `KIND`, `KIND:NAME`, `KIND:NAMESPACE/NAME` (globs allowed), or
//! `key=value,...` with the keys above.

use super::tree::{Tree, as_array, as_str, pointer};
use regex::Regex;
use serde::Deserialize;

use crate::engine::select::{compile_selector, glob, selects};

/// One rule selecting objects.
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

/// The user's ignore and protect rules.
#[derive(Debug, Clone, Default)]
pub struct OrphanRules {
    pub ignore: Vec<ObjectRule>,
    pub protect: Vec<ObjectRule>,
}

/// The `orphans:` section of the `--config` file, as the app read it (its rules named by their
/// place in the file, not yet checked).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    #[serde(default)]
    pub ignore: Vec<ObjectRule>,
    #[serde(default)]
    pub protect: Vec<ObjectRule>,
}

/// Why a rule cannot be used: the same error as the release ignore rules' (one selector rule
/// serves both, `engine::select`).
pub use crate::engine::select::RuleError as OrphanRuleError;

impl ObjectRule {
    /// Parse a command-line rule.
    pub fn parse_cli(flag: &str, s: &str) -> Result<ObjectRule, OrphanRuleError> {
        let origin = format!("{flag} {s}");
        let invalid = |message: String| OrphanRuleError::Invalid { rule: origin.clone(), message };
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

    pub fn compile(&mut self) -> Result<(), OrphanRuleError> {
        let given = self.kind.is_some()
            || self.namespace.is_some()
            || self.name.is_some()
            || self.name_regex.is_some()
            || self.source.is_some();
        let keys = "kind, namespace, name, name_regex or source";
        self.compiled = compile_selector(&self.origin, self.name_regex.as_deref(), given, keys)?;
        Ok(())
    }

    /// Whether every selector given matches. `sources` are the object's origins
    /// (`helm:<release>`, `managed-by:<label>`, `manager:<fieldManager>`).
    pub fn matches(&self, kind: &str, namespace: &str, name: &str, sources: &[String]) -> bool {
        let (k, ns, n) = (self.kind.as_deref(), self.namespace.as_deref(), self.name.as_deref());
        selects(k, ns, n, self.compiled.as_ref(), (kind, namespace, name))
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

/// The origins of an object that a rule's `source` can match.
pub fn object_sources(obj: &(impl Tree + ?Sized)) -> Vec<String> {
    let obj = &*obj.tree();
    let mut out = Vec::new();
    if let Some(r) = pointer(obj, "/metadata/annotations/meta.helm.sh~1release-name").and_then(as_str) {
        out.push(format!("helm:{r}"));
    }
    if let Some(m) = pointer(obj, "/metadata/labels/app.kubernetes.io~1managed-by").and_then(as_str) {
        out.push(format!("managed-by:{m}"));
    }
    for mf in pointer(obj, "/metadata/managedFields").and_then(as_array).into_iter().flatten() {
        if let Some(m) = mf.get("manager").and_then(as_str) {
            let s = format!("manager:{m}");
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

impl OrphanRules {
    /// The rules of the config file's `orphans:` section (`None`: no `--config`), checked, then
    /// the `--ignore` flags.
    pub(crate) fn new(section: Option<Section>, ignore: &[String]) -> Result<OrphanRules, OrphanRuleError> {
        let mut rules = OrphanRules::default();
        if let Some(section) = section {
            for (list, out) in [(section.ignore, &mut rules.ignore), (section.protect, &mut rules.protect)] {
                for mut r in list {
                    r.compile()?;
                    out.push(r);
                }
            }
        }
        for s in ignore {
            rules.ignore.push(ObjectRule::parse_cli("--ignore", s)?);
        }
        Ok(rules)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn sources_of_an_object() {
        let o = json!({"metadata": {"annotations": {"meta.helm.sh/release-name": "shop"}, "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "managedFields": [{"manager": "helm"}, {"manager": "helm"}, {"manager": "kubectl-edit"}]}});
        assert_eq!(object_sources(&o), vec!["helm:shop", "managed-by:Helm", "manager:helm", "manager:kubectl-edit"]);
    }
}
