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

/// The one selector rule, for every kind of rule (release, manifests and orphans ignore rules,
/// protect rules): each selector given must match; `kind` is a glob compared case-insensitively
/// (`deployment`, `Deploy*`), `namespace` and `name` are globs, `name_regex` a regex over the name.
pub fn selects(
    kind: Option<&str>,
    namespace: Option<&str>,
    name: Option<&str>,
    name_regex: Option<&Regex>,
    object: (&str, &str, &str),
) -> bool {
    let (o_kind, o_namespace, o_name) = object;
    kind.is_none_or(|k| glob(&k.to_ascii_lowercase(), &o_kind.to_ascii_lowercase()))
        && namespace.is_none_or(|n| glob(n, o_namespace))
        && name.is_none_or(|n| glob(n, o_name))
        && name_regex.is_none_or(|re| re.is_match(o_name))
}

/// Check a rule written as `origin`: compile its `name_regex`, and refuse a rule that selects
/// nothing (`keys`: what it could have given).
pub fn compile_selector(
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

/// Why rules could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// The config file could not be read.
    #[error("failed to read config file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid YAML of the expected shape.
    #[error("invalid config file {path}: {message}")]
    Parse { path: String, message: String },
    /// An --ignore/--protect value or a rule field is malformed.
    #[error("invalid rule {rule}: {message}")]
    Invalid { rule: String, message: String },
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

    /// Whether the rule covers this object (all given selectors match: [`selects`]).
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

#[cfg(test)]
mod tests {
    use super::*;

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
