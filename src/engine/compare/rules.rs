//! Ignore rules: fields (or whole objects) the user says are not drift.
//!
//! From the command line: `--ignore PATH`, `--ignore KIND:PATH` or
//! `--ignore KIND:NAMESPACE/NAME:PATH`; from a config file (`--config`):
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

use std::path::Path;

use regex::Regex;
use serde::Deserialize;

use crate::engine::select::{RuleError, compile_selector, glob, selects};

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

/// The `--config` file, one for every subcommand: `ignore:` (release and manifests rules) and
/// `orphans:` (see `orphans::rules`) and `versions:` (see `engine::versions::config`). Read whole and typed by [`read_config`], so a key nobody
/// knows is an error naming it, its line and the keys expected there.
///
/// `S` is the type of the `serve:` section: `kubectl drift serve` reads the file with its own
/// section type ([`read_config_as`]); every other subcommand checks that the section is YAML and
/// skips it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesFile<S = serde::de::IgnoredAny> {
    #[serde(default)]
    pub ignore: Vec<IgnoreRule>,
    #[serde(default)]
    pub orphans: Option<crate::engine::orphans::rules::Section>,
    /// The `versions:` section (see `engine::versions::config`).
    #[serde(default)]
    pub versions: Option<crate::engine::versions::config::VersionsConfig>,
    /// `kubectl drift serve`'s section (typed by `app::serve`, which reads the file with
    /// [`read_config_as`]).
    #[serde(default = "Option::default")]
    pub serve: Option<S>,
}

/// Read and check the `--config` file (the one loader).
pub fn read_config(path: &Path) -> Result<RulesFile, RuleError> {
    read_config_as(path)
}

/// [`read_config`] with the `serve:` section read as `S`.
pub fn read_config_as<S: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<RulesFile<S>, RuleError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| RuleError::Read { path: shown.clone(), source })?;
    if text.trim().is_empty() {
        return Ok(RulesFile::default());
    }
    serde_saphyr::from_str(&text).map_err(|e| RuleError::Parse { path: shown, message: e.to_string() })
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

    /// Whether the rule covers this object (all given selectors match: `select::selects`).
    pub fn matches_object(&self, kind: &str, namespace: &str, name: &str) -> bool {
        let (k, ns, n) = (self.kind.as_deref(), self.namespace.as_deref(), self.name.as_deref());
        selects(k, ns, n, self.compiled_regex.as_ref(), (kind, namespace, name))
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

/// Load rules from `--config FILE` and `--ignore` values.
pub fn load_rules(config: Option<&Path>, cli: &[String]) -> Result<Vec<IgnoreRule>, RuleError> {
    let mut rules = Vec::new();
    if let Some(path) = config {
        let shown = path.display().to_string();
        let file = read_config(path)?;
        for (i, mut r) in file.ignore.into_iter().enumerate() {
            r.source = format!("{shown} rule {}", i + 1);
            r.compile()?;
            rules.push(r);
        }
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

    #[test]
    fn config_file_rules() {
        let dir = std::env::temp_dir().join(format!("drift-rules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("rules.yaml");
        std::fs::write(&f, "ignore:\n  - kind: Deployment\n    name_regex: '^web-'\n    path: spec.replicas\n    reason: KEDA scales it\n").unwrap();
        let rules = load_rules(Some(&f), &[]).unwrap();
        assert_eq!(rules.len(), 1);
        assert!(rules[0].matches_field("Deployment", "x", "web-1", "spec.replicas"));
        assert!(!rules[0].matches_field("Deployment", "x", "api", "spec.replicas"));
        assert!(rules[0].describe().contains("KEDA scales it"));
        // The orphans section is another subcommand's: accepted, not used here.
        std::fs::write(&f, "ignore: []\norphans:\n  ignore:\n    - kind: ConfigMap\n").unwrap();
        assert!(load_rules(Some(&f), &[]).unwrap().is_empty());
        std::fs::write(&f, "ignore:\n  - kind: Deployment\n    colour: red\n").unwrap();
        let err = load_rules(Some(&f), &[]).unwrap_err().to_string();
        assert!(err.contains("rules.yaml") && err.contains("colour") && err.contains("line 3"), "{err}");
        assert!(err.contains("name_regex"), "the keys expected: {err}");
        // One loader for the whole file: a mistake in the orphans section is named here too.
        std::fs::write(&f, "ignore: []\norphans:\n  ignroe: []\n").unwrap();
        let err = load_rules(Some(&f), &[]).unwrap_err().to_string();
        assert!(err.contains("ignroe") && err.contains("line 3"), "{err}");
        // One case rule for kinds, as in orphans rules.
        let r = IgnoreRule::parse_cli("deploy*:spec.replicas").unwrap();
        assert!(r.matches_field("Deployment", "x", "web", "spec.replicas"));
        std::fs::write(&f, "ignore:\n  - name_regex: '(['\n").unwrap();
        assert!(load_rules(Some(&f), &[]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
