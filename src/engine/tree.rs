//! Reading the objects an inventory keeps: compact JSON trees ([`IValue`], see
//! `source::live::CompactListing`), with the few reads of `serde_json::Value` the evidence uses
//! (`pointer`, `as_str`, `as_array`) under the same names and meaning. Orphans reads its whole
//! inventory this way, and label selectors (`select`) read labels this way for orphans and
//! versions.

use std::borrow::Cow;

pub use ijson::{DestructuredRef, IArray, IObject, IValue};

/// The value at a JSON pointer (`/metadata/labels/app.kubernetes.io~1name`), as
/// `serde_json::Value::pointer` reads one (RFC 6901: `~1` is `/`, `~0` is `~`).
pub fn pointer<'v>(v: &'v IValue, pointer: &str) -> Option<&'v IValue> {
    if pointer.is_empty() {
        return Some(v);
    }
    let mut cur = v;
    for token in pointer.strip_prefix('/')?.split('/') {
        let token: Cow<str> =
            if token.contains('~') { Cow::Owned(token.replace("~1", "/").replace("~0", "~")) } else { token.into() };
        cur = match cur.destructure_ref() {
            DestructuredRef::Object(o) => o.get(token.as_ref())?,
            DestructuredRef::Array(a) => a.get(index(&token)?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// An array index in a pointer: digits, no leading zero (as serde_json reads it).
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// The string a value is.
pub fn as_str(v: &IValue) -> Option<&str> {
    v.as_string().map(|s| s.as_str())
}

/// The items of an array value.
pub fn as_array(v: &IValue) -> Option<&[IValue]> {
    v.as_array().map(|a| a.as_slice())
}

/// A compact object from a `serde_json::Value` (tests, fixtures).
pub fn compact(v: serde_json::Value) -> IValue {
    IValue::from(v)
}

/// A JSON tree an evidence function reads: the inventory's compact objects as they are, or a
/// `serde_json::Value` (a test's `json!`, a caller outside the inventory) made compact first.
pub trait Tree {
    /// This tree as an [`IValue`].
    fn tree(&self) -> Cow<'_, IValue>;
}

impl Tree for IValue {
    fn tree(&self) -> Cow<'_, IValue> {
        Cow::Borrowed(self)
    }
}

impl Tree for serde_json::Value {
    fn tree(&self) -> Cow<'_, IValue> {
        Cow::Owned(IValue::from(self.clone()))
    }
}

/// A JSON object an evidence function reads (labels, parameters): as [`Tree`], for objects.
pub trait TreeMap {
    /// This object as an [`IObject`].
    fn tree_map(&self) -> Cow<'_, IObject>;
}

impl TreeMap for IObject {
    fn tree_map(&self) -> Cow<'_, IObject> {
        Cow::Borrowed(self)
    }
}

impl TreeMap for serde_json::Map<String, serde_json::Value> {
    fn tree_map(&self) -> Cow<'_, IObject> {
        Cow::Owned(IObject::from(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pointers_read_as_serde_json_reads_them() {
        let v = json!({"metadata": {"labels": {"app.kubernetes.io/name": "web", "a~b": "t"}},
            "spec": {"items": [{"name": "x"}, {"name": "y"}]}, "n": 0});
        let c = compact(v.clone());
        for p in [
            "",
            "/metadata/labels/app.kubernetes.io~1name",
            "/metadata/labels/a~0b",
            "/spec/items/1/name",
            "/spec/items/01/name",
            "/spec/items/+1",
            "/spec/items/2",
            "/n",
            "/n/x",
            "metadata",
            "/nope",
        ] {
            assert_eq!(pointer(&c, p).cloned(), v.pointer(p).cloned().map(IValue::from), "{p}");
        }
        assert_eq!(pointer(&c, "/spec/items/0/name").and_then(as_str), Some("x"));
        assert_eq!(pointer(&c, "/spec/items").and_then(as_array).map(<[IValue]>::len), Some(2));
    }
}
