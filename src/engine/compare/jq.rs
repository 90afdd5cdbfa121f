//! jq path expressions (Argo CD's `ignoreDifferences.jqPathExpressions`): which fields of an
//! object an expression names, as RFC 6901 JSON pointers.
//!
//! Argo CD runs `del(EXPR)` with gojq on the object before it compares; the fields that removes
//! are those `path(EXPR)` yields, which is what we evaluate, with jaq (a jq implementation in
//! Rust: the language, its standard library and regular expressions, `select`, `test`, `..`,
//! `//`, ...). An expression that does not parse or names an undefined filter is refused when
//! the rule is made ([`JqPath::compile`]); one that fails on a given object (`.spec | keys` on a
//! string, say) names no field there, as Argo CD skips a failing expression.

use std::fmt;
use std::sync::Arc;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use serde_json::Value;

type Data = data::JustLut<Val>;
type Compiled = jaq_core::compile::Filter<jaq_core::Native<Data>>;

/// How many paths one expression may yield on one object (a guard against a generator that
/// never ends, such as `repeat(.)`; Argo CD stops its own after a second).
const MAX_PATHS: usize = 10_000;

/// A compiled jq path expression.
#[derive(Clone)]
pub struct JqPath {
    /// As written.
    pub expr: String,
    filter: Arc<Compiled>,
}

impl fmt::Debug for JqPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JqPath").field(&self.expr).finish()
    }
}

impl JqPath {
    /// Parse and compile `expr` as the argument of `path(...)`; the error says why not.
    pub fn compile(expr: &str) -> Result<JqPath, String> {
        if expr.trim().is_empty() {
            return Err("the expression is empty".into());
        }
        let code = format!("path({expr})");
        let defs = jaq_core::defs().chain(jaq_std::defs()).chain(jaq_json::defs());
        let funs = jaq_core::funs::<Data>().chain(jaq_std::funs::<Data>()).chain(jaq_json::funs::<Data>());
        let arena = Arena::default();
        let loader = Loader::new(defs);
        let modules = loader.load(&arena, File { code: code.as_str(), path: () }).map_err(|errors| {
            let mut why = Vec::new();
            for (_, e) in errors {
                match e {
                    jaq_core::load::Error::Io(v) => why.extend(v.into_iter().map(|(s, m)| format!("{s}: {m}"))),
                    jaq_core::load::Error::Lex(v) => why.extend(v.into_iter().map(|(expect, found)| {
                        let expected = match expect {
                            jaq_core::load::lex::Expect::Delim(d) => format!("a closing delimiter for {d}"),
                            other => other.as_str().to_string(),
                        };
                        format!("expected {expected} at {}", near(found))
                    })),
                    jaq_core::load::Error::Parse(v) => why.extend(
                        v.into_iter().map(|(expect, found)| format!("expected {} at {}", expect.as_str(), near(found))),
                    ),
                }
            }
            format!("does not parse: {}", why.join("; "))
        })?;
        let filter = jaq_core::Compiler::default().with_funs(funs).compile(modules).map_err(|errors| {
            let why: Vec<String> = errors
                .into_iter()
                .flat_map(|(_, undefined)| undefined.into_iter().map(|(name, u)| format!("{} {name}", u.as_str())))
                .collect();
            format!("undefined {}", why.join(", "))
        })?;
        Ok(JqPath { expr: expr.to_string(), filter: Arc::new(filter) })
    }

    /// The JSON pointers of the fields the expression names in `doc` (none where it fails).
    pub fn pointers(&self, doc: &Value) -> Vec<String> {
        let Ok(input) = serde_json::from_value::<Val>(doc.clone()) else { return Vec::new() };
        let ctx = Ctx::<Data>::new(&self.filter.lut, Vars::new([]));
        let mut out = Vec::new();
        for result in self.filter.id.run((ctx, input)).map(unwrap_valr).take(MAX_PATHS) {
            // A run-time error ends the expression's paths on this object.
            let Ok(path) = result else { break };
            let Ok(Value::Array(segs)) = serde_json::from_str::<Value>(&path.to_string()) else { continue };
            let mut pointer = String::new();
            for s in segs {
                pointer.push('/');
                match s {
                    Value::String(k) => pointer.push_str(&k.replace('~', "~0").replace('/', "~1")),
                    Value::Number(n) => pointer.push_str(&n.to_string()),
                    // Slices and other non-field paths name no single field.
                    _ => {
                        pointer.clear();
                        break;
                    }
                }
            }
            if !pointer.is_empty() && !out.contains(&pointer) {
                out.push(pointer);
            }
        }
        out
    }
}

/// Where in the expression an error is: the text from there (short).
fn near(rest: &str) -> String {
    // The expression is wrapped in `path(...)`: leave the closing parenthesis we added out.
    let rest = rest.strip_suffix(')').unwrap_or(rest);
    if rest.is_empty() {
        "the end".into()
    } else {
        let s: String = rest.chars().take(20).collect();
        format!("{s:?}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment() -> Value {
        json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "sidecar", "image": "envoy:1"},
            {"name": "app", "image": "web:2", "env": [{"name": "A", "value": "1"}]}]}}},
            "metadata": {"labels": {"foo/bar": "x", "a~b": "y"}}})
    }

    #[test]
    fn select_names_the_item_by_its_position() {
        let jq = JqPath::compile(r#".spec.template.spec.containers[] | select(.name == "app") | .image"#).unwrap();
        assert_eq!(jq.pointers(&deployment()), vec!["/spec/template/spec/containers/1/image"]);
        let jq = JqPath::compile(".spec.template.spec.containers[].image").unwrap();
        assert_eq!(jq.pointers(&deployment()).len(), 2);
    }

    #[test]
    fn keys_are_escaped_as_rfc6901_says() {
        let jq = JqPath::compile(r#".metadata.labels["foo/bar"], .metadata.labels["a~b"]"#).unwrap();
        assert_eq!(jq.pointers(&deployment()), vec!["/metadata/labels/foo~1bar", "/metadata/labels/a~0b"]);
    }

    #[test]
    fn standard_library_and_regex_filters_are_there() {
        let jq =
            JqPath::compile(r#".spec.template.spec.containers[] | select(.name | test("^side")) | .image"#).unwrap();
        assert_eq!(jq.pointers(&deployment()), vec!["/spec/template/spec/containers/0/image"]);
        let jq = JqPath::compile(r#".spec.template.spec.containers[]? | select(has("env")) | .env"#).unwrap();
        assert_eq!(jq.pointers(&deployment()), vec!["/spec/template/spec/containers/1/env"]);
    }

    #[test]
    fn bad_expressions_are_refused_with_why_and_failing_ones_name_nothing() {
        let err = JqPath::compile(".spec.template.spec.containers[] | select(.name == ").unwrap_err();
        assert!(err.starts_with("does not parse"), "{err}");
        let err = JqPath::compile(".spec | nosuchfilter").unwrap_err();
        assert!(err.contains("undefined filter nosuchfilter"), "{err}");
        assert!(JqPath::compile("  ").is_err());
        // `keys` of a number fails at run time: no field, no panic.
        let jq = JqPath::compile(".spec.replicas | keys").unwrap();
        assert!(jq.pointers(&deployment()).is_empty());
        // A path that does not exist in the object names a field that is not there: harmless.
        let jq = JqPath::compile(".status.x").unwrap();
        assert_eq!(jq.pointers(&deployment()), vec!["/status/x"]);
    }

    #[test]
    fn compiled_expressions_can_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<JqPath>();
    }
}
