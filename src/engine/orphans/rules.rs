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
//! `key=value,...` with the keys above. Each rule is an `ObjectRule` (`engine::select`, shared
//! with the versions engine's ignore rules).

use crate::engine::tree::{Tree, as_array, as_str, pointer};
use serde::Deserialize;

use crate::engine::select::ObjectRule;

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
    fn sources_of_an_object() {
        let o = json!({"metadata": {"annotations": {"meta.helm.sh/release-name": "shop"}, "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "managedFields": [{"manager": "helm"}, {"manager": "helm"}, {"manager": "kubectl-edit"}]}});
        assert_eq!(object_sources(&o), vec!["helm:shop", "managed-by:Helm", "manager:helm", "manager:kubectl-edit"]);
    }
}
