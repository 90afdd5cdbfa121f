//! What `adopt` found for a release: each drifted field adopted into a values overlay (with the
//! value key that renders it, the old and new value and whether a render proved it), each field
//! no value controls (with why, and a kustomize patch where one helps), and the overlay itself.
//!
//! The overlay's YAML text ([`values_yaml`]) is made here, not in a renderer, because the engine
//! proves the very text the user is given: every string is double-quoted, so no YAML 1.1 reading
//! of Helm's (`on`, `0777`, `1.10`) can turn a value into something else.

use serde::Serialize;
use serde_json::Value;

use super::path::{FieldPath, Seg};

/// The object a field belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) if !ns.is_empty() => write!(f, "{} {}/{}", self.kind, ns, self.name),
            _ => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// One drifted field put into the overlay.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Adoption {
    pub object: ObjectRef,
    pub path: FieldPath,
    /// The value that renders the field (`image.tag`, `extraEnv`).
    pub value_key: FieldPath,
    /// The value's current value (merged chart defaults and user values); `None` for a list or
    /// map an addition was appended to that had none.
    pub old: Option<Value>,
    /// What the overlay sets it to.
    pub new: Value,
    /// A render with the overlay made the field equal to live (always true in a report: an
    /// unproven one is not adoptable).
    pub proven: bool,
    /// A Secret's value: left out of the overlay unless `--show-secrets` (old and new redacted).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
}

/// One drifted field that no value adopts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotAdoptable {
    pub object: ObjectRef,
    pub path: FieldPath,
    pub change: super::field::Change,
    pub reason: String,
    /// A kustomize `patches:` entry (for a post-renderer) that sets the live value, where the
    /// field exists live and is not a Secret's (unless `--show-secrets`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// Why a traced field was not proven: what else the overlay's values render that was not
    /// edited live (paths and names only, never a value).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_renders: Vec<AlsoRenders>,
}

/// A field (or a whole object, `path` empty) a value of the overlay also renders, which a render
/// with the overlay makes differ from live: it was not edited live as the adopted field was.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AlsoRenders {
    /// The value key (`logLevel`).
    pub value: FieldPath,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub path: FieldPath,
}

impl std::fmt::Display for AlsoRenders {
    /// `logLevel also renders ConfigMap shop/shop-config data.level, which was not edited`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let object = match self.namespace.as_deref().filter(|n| !n.is_empty()) {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        };
        if self.path.segs().is_empty() {
            write!(f, "{} also renders {object}, which is not live", self.value)
        } else {
            write!(f, "{} also renders {object} {}, which was not edited", self.value, self.path)
        }
    }
}

/// `adopt RELEASE`'s result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdoptReport {
    pub release: String,
    pub namespace: String,
    pub revision: u32,
    pub chart: String,
    pub chart_version: String,
    pub adopted: Vec<Adoption>,
    pub not_adoptable: Vec<NotAdoptable>,
    /// Value keys whose new value is a Secret's and was left out of the overlay.
    pub left_out: Vec<FieldPath>,
    /// The values overlay for `helm upgrade RELEASE CHART --reuse-values -f overlay.yaml`.
    pub overlay: Value,
    /// Helm 4 applied the release server-side: an upgrade conflicts on a field left here, which a
    /// person's tool now owns.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub server_side: bool,
    /// Fields a mutating webhook or policy changed during Helm's own write: not hand edits, never
    /// adopted (the platform sets them again on every write), named so that nobody adopts them by
    /// hand. Neither adopted nor left: they do not make the report incomplete.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub set_at_admission: Vec<SetAtAdmission>,
}

/// A field changed at admission, as `adopt` names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetAtAdmission {
    pub object: ObjectRef,
    pub path: FieldPath,
    /// The likely cause, as the release check names it (a MutatingAdmissionPolicy, a webhook).
    pub cause: String,
}

impl AdoptReport {
    /// Everything drifted was adopted, and the overlay holds it all.
    pub fn complete(&self) -> bool {
        self.not_adoptable.is_empty() && self.left_out.is_empty()
    }
}

/// One field written into a file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileAdoption {
    pub file: String,
    pub object: ObjectRef,
    pub path: FieldPath,
    pub new: Value,
}

/// The files' new texts, what was adopted and what was not.
#[derive(Debug, Clone, Default)]
pub struct FilesAdopt {
    /// (path, text before, text after) of each file that changes.
    pub edits: Vec<(std::path::PathBuf, String, String)>,
    pub adopted: Vec<FileAdoption>,
    pub not_adoptable: Vec<NotAdoptable>,
    /// Files or objects that could not be checked (the run is then an error).
    pub errors: Vec<String>,
}

/// A values tree as YAML for Helm: block maps and lists, every string double-quoted (JSON string
/// syntax, which YAML's double-quoted scalars read the same), numbers, booleans and null as JSON
/// writes them. An empty tree is `{}`.
pub fn values_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => write_map(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => write_list(&mut out, a, 0),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        other => other.to_string(),
    }
}

fn is_nested(v: &Value) -> bool {
    matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty())
}

fn key_text(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
        && k.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && !matches!(
            k.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        );
    if plain { k.to_string() } else { Value::String(k.to_string()).to_string() }
}

fn write_map(out: &mut String, m: &serde_json::Map<String, Value>, indent: usize) {
    for (k, v) in m {
        out.push_str(&" ".repeat(indent));
        out.push_str(&key_text(k));
        out.push(':');
        if is_nested(v) {
            out.push('\n');
            match v {
                Value::Object(inner) => write_map(out, inner, indent + 2),
                Value::Array(items) => write_list(out, items, indent + 2),
                _ => {}
            }
        } else {
            out.push(' ');
            out.push_str(&scalar(v));
            out.push('\n');
        }
    }
}

fn write_list(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push('-');
        match item {
            Value::Object(m) if !m.is_empty() => {
                // The first key on the dash's line, the others under it.
                let mut first = String::new();
                write_map(&mut first, m, indent + 2);
                out.push(' ');
                out.push_str(first.trim_start());
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                write_list(out, a, indent + 2);
            }
            other => {
                out.push(' ');
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

/// A value key as `--set` writes it: keys joined with dots (a dot inside a key escaped as `\.`),
/// list items as `[N]`.
pub fn set_key(key: &FieldPath) -> String {
    let mut s = String::new();
    for (i, seg) in key.segs().iter().enumerate() {
        match seg {
            Seg::Key(k) => {
                if i > 0 {
                    s.push('.');
                }
                s.push_str(&k.replace('\\', "\\\\").replace('.', "\\.").replace(',', "\\,"));
            }
            Seg::Index(n) => s.push_str(&format!("[{n}]")),
            Seg::Item { field, value } => s.push_str(&format!("[{field}={value}]")),
        }
    }
    s
}

/// The overlay as Helm flags, one per top-level value set: `--set-string` for strings (so that
/// `1.10` stays a string), `--set` for numbers and booleans, `--set-json` for lists and maps.
pub fn set_flags(overlay: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    fn walk(v: &Value, key: &mut Vec<Seg>, out: &mut Vec<(String, String)>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    key.push(Seg::Key(k.clone()));
                    walk(x, key, out);
                    key.pop();
                }
            }
            other => {
                let k = set_key(&FieldPath(key.clone()));
                let (flag, text) = match other {
                    Value::String(s) if !s.contains(',') => ("--set-string", s.clone()),
                    Value::Number(_) | Value::Bool(_) => ("--set", other.to_string()),
                    _ => ("--set-json", other.to_string()),
                };
                out.push((flag.to_string(), format!("{k}={text}")));
            }
        }
    }
    walk(overlay, &mut Vec::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_quotes_every_string_and_reads_back() {
        let v = json!({"replicaCount": 3, "image": {"tag": "1.10", "pullPolicy": "on"},
                       "extraEnv": [{"name": "A", "value": "0777"}, {"name": "B"}], "empty": {}, "none": [],
                       "on": true, "a.b/c": "x\"y\n", "n": null, "list": [["x"], 1]});
        let text = values_yaml(&v);
        assert!(text.contains("replicaCount: 3\n"), "{text}");
        assert!(text.contains("  tag: \"1.10\"\n"), "{text}");
        assert!(text.contains("\"on\": true\n"), "{text}");
        assert!(text.contains("  - name: \"A\"\n    value: \"0777\"\n"), "{text}");
        let back: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, v, "{text}");
        assert_eq!(values_yaml(&json!({})), "{}\n");
    }

    #[test]
    fn set_flags_keep_types_and_escape_dots() {
        let v = json!({"replicaCount": 3, "image": {"tag": "1.10"}, "podAnnotations": {"a.b/c": "x"},
                       "extraEnv": [{"name": "A"}], "on": false});
        let mut flags = set_flags(&v);
        flags.sort();
        let mut want = vec![
            ("--set".to_string(), "replicaCount=3".to_string()),
            ("--set-string".to_string(), "image.tag=1.10".to_string()),
            ("--set-string".to_string(), "podAnnotations.a\\.b/c=x".to_string()),
            ("--set-json".to_string(), "extraEnv=[{\"name\":\"A\"}]".to_string()),
            ("--set".to_string(), "on=false".to_string()),
        ];
        want.sort();
        assert_eq!(flags, want);
    }
}
