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

use regex::Regex;
use serde::Deserialize;

use crate::engine::select::{RuleError, Selector, compile_selector, glob};

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

    /// Whether the rule covers this field of this object.
    pub fn matches_field(&self, kind: &str, namespace: &str, name: &str, path: &str) -> bool {
        self.matches_object(kind, namespace, name) && self.path.as_deref().is_none_or(|p| glob(p, path))
    }

    /// The reason shown with an ignored field.
    pub fn describe(&self) -> String {
        match &self.reason {
            Some(r) => format!("ignored by rule ({}): {r}", self.source),
            None => format!("ignored by rule ({})", self.source),
        }
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
}
