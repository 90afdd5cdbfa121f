//! Field paths as users read them: `spec.template.spec.containers[name=web].env[name=LOG].value`.
//!
//! Map keys are joined with dots; keys holding anything but letters, digits, `_` and `-` are
//! quoted (`data["app.yaml"]`, `metadata.annotations["example.com/x"]`); list items are addressed
//! by their merge key where the list has one (`[name=web]`), by index otherwise (`[0]`).

use std::fmt;

use serde_json::Value;

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seg {
    /// A map key.
    Key(String),
    /// A list position, for lists without a merge key.
    Index(usize),
    /// A list item identified by a key field and its value (`[name=web]`).
    Item { field: String, value: String },
}

/// A path from the object root to a field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldPath(pub Vec<Seg>);

impl FieldPath {
    pub fn root() -> FieldPath {
        FieldPath(Vec::new())
    }

    pub fn child(&self, seg: Seg) -> FieldPath {
        let mut v = self.0.clone();
        v.push(seg);
        FieldPath(v)
    }

    pub fn key(&self, k: &str) -> FieldPath {
        self.child(Seg::Key(k.to_string()))
    }

    pub fn segs(&self) -> &[Seg] {
        &self.0
    }

    /// The last map key on the path (the field's own name), if any.
    pub fn last_key(&self) -> Option<&str> {
        self.0.iter().rev().find_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            _ => None,
        })
    }

    pub fn starts_with(&self, prefix: &[&str]) -> bool {
        self.0.len() >= prefix.len() && self.0.iter().zip(prefix).all(|(s, p)| matches!(s, Seg::Key(k) if k == p))
    }

    /// Whether `self` lies under (or is) `other`.
    pub fn is_under(&self, other: &FieldPath) -> bool {
        self.0.len() >= other.0.len() && self.0[..other.0.len()] == other.0[..]
    }

    /// Look the path up in a JSON value.
    pub fn get<'v>(&self, mut v: &'v Value) -> Option<&'v Value> {
        for seg in &self.0 {
            v = match seg {
                Seg::Key(k) => v.as_object()?.get(k)?,
                Seg::Index(i) => v.as_array()?.get(*i)?,
                Seg::Item { field, value } => {
                    v.as_array()?.iter().find(|item| item.get(field).is_some_and(|x| scalar_text(x) == *value))?
                }
            };
        }
        Some(v)
    }

    /// RFC 6901 JSON pointer for this path in `doc`, resolving `[key=value]` items to indexes.
    pub fn json_pointer(&self, doc: &Value) -> Option<String> {
        let mut out = String::new();
        let mut v = doc;
        for seg in &self.0 {
            match seg {
                Seg::Key(k) => {
                    out.push('/');
                    out.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    v = v.as_object()?.get(k)?;
                }
                Seg::Index(i) => {
                    out.push_str(&format!("/{i}"));
                    v = v.as_array()?.get(*i)?;
                }
                Seg::Item { field, value } => {
                    let arr = v.as_array()?;
                    let i = arr.iter().position(|item| item.get(field).is_some_and(|x| scalar_text(x) == *value))?;
                    out.push_str(&format!("/{i}"));
                    v = &arr[i];
                }
            }
        }
        Some(out)
    }
}

/// The text of a scalar as used in `[field=value]` (strings unquoted, numbers as written).
pub fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn is_plain_key(k: &str) -> bool {
    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

fn is_plain_value(v: &str) -> bool {
    !v.is_empty() && !v.contains([']', '[', '=', '"', ' ']) && v.chars().all(|c| !c.is_control())
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if is_plain_key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Seg::Key(k) => write!(f, "[{}]", quote(k))?,
                Seg::Index(n) => write!(f, "[{n}]")?,
                Seg::Item { field, value } if is_plain_value(value) => write!(f, "[{field}={value}]")?,
                Seg::Item { field, value } => write!(f, "[{field}={}]", quote(value))?,
            }
        }
        Ok(())
    }
}

/// Parse a path as rendered by [`FieldPath`]'s Display (what users write in `--ignore` and what
/// older JSON reports hold) back into segments.
fn parse_rendered(s: &str) -> Option<FieldPath> {
    let mut segs = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let read_quoted = |i: &mut usize| -> Option<String> {
        // chars[*i] == '"'
        let start = *i;
        *i += 1;
        while *i < chars.len() {
            match chars[*i] {
                '\\' => *i += 2,
                '"' => break,
                _ => *i += 1,
            }
        }
        let text: String = chars.get(start..=*i)?.iter().collect();
        *i += 1;
        serde_json::from_str(&text).ok()
    };
    while i < chars.len() {
        match chars[i] {
            '.' => i += 1,
            '[' => {
                i += 1;
                if chars.get(i) == Some(&'"') {
                    let key = read_quoted(&mut i)?;
                    if chars.get(i) != Some(&']') {
                        return None;
                    }
                    i += 1;
                    segs.push(Seg::Key(key));
                    continue;
                }
                let start = i;
                while i < chars.len() && chars[i] != '=' && chars[i] != ']' {
                    i += 1;
                }
                let head: String = chars[start..i].iter().collect();
                if chars.get(i) == Some(&']') {
                    segs.push(Seg::Index(head.parse().ok()?));
                    i += 1;
                    continue;
                }
                i += 1; // '='
                let value = if chars.get(i) == Some(&'"') {
                    read_quoted(&mut i)?
                } else {
                    let vs = i;
                    while i < chars.len() && chars[i] != ']' {
                        i += 1;
                    }
                    chars[vs..i].iter().collect()
                };
                if chars.get(i) != Some(&']') {
                    return None;
                }
                i += 1;
                segs.push(Seg::Item { field: head, value });
            }
            _ => {
                let start = i;
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    i += 1;
                }
                segs.push(Seg::Key(chars[start..i].iter().collect()));
            }
        }
    }
    Some(FieldPath(segs))
}

impl std::str::FromStr for FieldPath {
    type Err = String;

    fn from_str(s: &str) -> Result<FieldPath, String> {
        parse_rendered(s).ok_or_else(|| format!("not a field path: {s}"))
    }
}

/// In JSON and YAML a path is its rendered text (`spec.containers[name=web].image`): the report is
/// data, and the text is made only when it is written.
impl serde::Serialize for FieldPath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for FieldPath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<FieldPath, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(segs: Vec<Seg>) -> FieldPath {
        FieldPath(segs)
    }
    fn k(s: &str) -> Seg {
        Seg::Key(s.into())
    }
    fn item(f: &str, v: &str) -> Seg {
        Seg::Item { field: f.into(), value: v.into() }
    }

    #[test]
    fn renders_keys_items_and_indexes() {
        let path = p(vec![
            k("spec"),
            k("template"),
            k("spec"),
            k("containers"),
            item("name", "web"),
            k("env"),
            item("name", "LOG_LEVEL"),
            k("value"),
        ]);
        assert_eq!(path.to_string(), "spec.template.spec.containers[name=web].env[name=LOG_LEVEL].value");
        assert_eq!(p(vec![k("spec"), k("rules"), Seg::Index(0), k("host")]).to_string(), "spec.rules[0].host");
    }

    #[test]
    fn quotes_keys_with_dots_slashes_and_brackets() {
        assert_eq!(p(vec![k("data"), k("app.yaml")]).to_string(), r#"data["app.yaml"]"#);
        assert_eq!(
            p(vec![k("metadata"), k("annotations"), k("example.com/x")]).to_string(),
            r#"metadata.annotations["example.com/x"]"#
        );
        assert_eq!(p(vec![k("data"), k("a[0]")]).to_string(), r#"data["a[0]"]"#);
        assert_eq!(p(vec![k("x"), item("name", "a=b")]).to_string(), r#"x[name="a=b"]"#);
        assert_eq!(p(vec![k("ports"), item("containerPort", "8080")]).to_string(), "ports[containerPort=8080]");
    }

    #[test]
    fn resolves_paths_and_json_pointers() {
        let doc = json!({"spec": {"containers": [{"name": "a"}, {"name": "web", "env": [{"name": "X", "value": "1"}]}],
                          "ports": [{"containerPort": 8080}]},
                         "metadata": {"annotations": {"example.com/x~y": "v"}}});
        let path = p(vec![k("spec"), k("containers"), item("name", "web"), k("env"), item("name", "X"), k("value")]);
        assert_eq!(path.get(&doc), Some(&json!("1")));
        assert_eq!(path.json_pointer(&doc).unwrap(), "/spec/containers/1/env/0/value");
        let ann = p(vec![k("metadata"), k("annotations"), k("example.com/x~y")]);
        assert_eq!(ann.json_pointer(&doc).unwrap(), "/metadata/annotations/example.com~1x~0y");
        let port = p(vec![k("spec"), k("ports"), item("containerPort", "8080")]);
        assert_eq!(port.json_pointer(&doc).unwrap(), "/spec/ports/0");
        assert!(p(vec![k("spec"), k("nope")]).get(&doc).is_none());
    }

    #[test]
    fn serialises_as_its_text_and_reads_back() {
        let path = p(vec![k("data"), k("app.yaml"), k("x"), item("name", "a=b"), Seg::Index(2)]);
        let json = serde_json::to_value(&path).unwrap();
        assert_eq!(json, json!(r#"data["app.yaml"].x[name="a=b"][2]"#));
        assert_eq!(serde_json::from_value::<FieldPath>(json).unwrap(), path);
        assert!(serde_json::from_value::<FieldPath>(json!("x[name=unclosed")).is_err());
    }
}
