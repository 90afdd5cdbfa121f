//! Selecting objects by name: `*` globs and the one selector rule (kind, namespace, name,
//! name_regex) that every kind of rule shares: the release and manifests ignore rules
//! (`compare::rules`), orphans' ignore and protect rules (`orphans::rules`), and versions' rules and
//! probes (`versions::config`, `versions::probes`). Below those engines, importing none of them.

use regex::Regex;

/// The one selector rule, for every kind of rule (release, manifests and orphans ignore rules,
/// protect rules): each selector given must match; `kind` is a glob compared case-insensitively
/// (`deployment`, `Deploy*`), `namespace` and `name` are globs, `name_regex` a regex over the name.
pub(crate) fn selects(
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

    #[test]
    fn globbing() {
        assert!(glob("spec.replicas", "spec.replicas"));
        assert!(!glob("spec.replicas", "spec.replicasX"));
        assert!(glob("metadata.annotations*", r#"metadata.annotations["a/b"]"#));
        assert!(glob("spec.template.spec.containers[*].image", "spec.template.spec.containers[name=web].image"));
        assert!(glob("*", "anything"));
        assert!(!glob("a*c", "abd"));
    }
}
