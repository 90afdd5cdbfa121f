//! Which value renders which field: the sentinel values, finding them in a render, and the
//! overlay that sets a value to what a field holds live. Pure (no render, no cluster).
//!
//! Every string leaf of the merged values gets a marker (`kdadopt7q`), every number a unique
//! number below one million (Helm reads values as float64, and Go prints a float64 of a million
//! or more in exponent form: `1e+06`); booleans, nulls and the structure stay as they are. A
//! field of the render that holds a marker, whole or inside a string (`repo:kdadopt7q`), is
//! rendered from that value. The probe values add one item to every list and one key to every
//! map of scalars, so that an addition by hand can be traced to the list or map value that
//! renders into the same place (an `extraEnv`-style value).

use regex::Regex;
use serde_json::{Map, Value, json};

use crate::report::path::{FieldPath, Seg, scalar_text};

/// The first number sentinel; there are at most [`NUMBER_COUNT`].
pub const NUMBER_BASE: i64 = 900_000;
const NUMBER_COUNT: usize = 99_999;

pub fn marker(n: usize) -> String {
    format!("kdadopt{n}q")
}

pub fn probe_marker(n: usize) -> String {
    format!("kdprobe{n}q")
}

/// Helm's coalescing of user values over the chart's defaults: maps merge key by key, anything
/// else is replaced, and a null removes the default.
pub fn merged(defaults: &Value, config: &Value) -> Value {
    match (defaults, config) {
        (Value::Object(d), Value::Object(c)) => {
            let mut out = d.clone();
            for (k, v) in c {
                if v.is_null() {
                    out.remove(k);
                    continue;
                }
                let next = match out.get(k) {
                    Some(dv) => merged(dv, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), next);
            }
            Value::Object(out)
        }
        (_, c) => c.clone(),
    }
}

/// Sentinel values and what each one stands for.
#[derive(Debug, Clone, Default)]
pub struct Sentinels {
    /// Marker `n` stands for `strings[n]`.
    pub strings: Vec<FieldPath>,
    /// `NUMBER_BASE + n` stands for `numbers[n]`.
    pub numbers: Vec<FieldPath>,
    /// Probe marker `n` stands for the list or map `probes[n]`.
    pub probes: Vec<FieldPath>,
    /// The values given to the render.
    pub tree: Value,
}

/// Markers for the string leaves (the empty ones too with `empty_strings`: an empty string is
/// false in a template's `if`, so marking it can change what renders; both renders are made) and
/// numbers for the number leaves.
pub fn sentinel_values(values: &Value, empty_strings: bool) -> Sentinels {
    fn walk(v: &Value, path: &mut Vec<Seg>, s: &mut Sentinels, empty: bool) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| {
                        path.push(Seg::Key(k.clone()));
                        let out = walk(x, path, s, empty);
                        path.pop();
                        (k.clone(), out)
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, x)| {
                        path.push(Seg::Index(i));
                        let out = walk(x, path, s, empty);
                        path.pop();
                        out
                    })
                    .collect(),
            ),
            Value::String(x) if empty || !x.is_empty() => {
                s.strings.push(FieldPath(path.clone()));
                Value::String(marker(s.strings.len() - 1))
            }
            Value::Number(_) if s.numbers.len() < NUMBER_COUNT => {
                s.numbers.push(FieldPath(path.clone()));
                json!(NUMBER_BASE + (s.numbers.len() - 1) as i64)
            }
            other => other.clone(),
        }
    }
    let mut s = Sentinels::default();
    s.tree = walk(values, &mut Vec::new(), &mut s, empty_strings);
    s
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Object(_) | Value::Array(_))
}

/// The real values with one probe more in every list (a map item `{name, value}` in a list of
/// maps or an empty one, a string in a list of scalars) and in every map of scalars (a key).
pub fn probe_values(values: &Value) -> Sentinels {
    fn walk(v: &Value, path: &mut Vec<Seg>, s: &mut Sentinels) -> Value {
        match v {
            Value::Object(m) => {
                let mut out: Map<String, Value> = m
                    .iter()
                    .map(|(k, x)| {
                        path.push(Seg::Key(k.clone()));
                        let out = walk(x, path, s);
                        path.pop();
                        (k.clone(), out)
                    })
                    .collect();
                if !path.is_empty() && m.values().all(is_scalar) {
                    s.probes.push(FieldPath(path.clone()));
                    let p = probe_marker(s.probes.len() - 1);
                    out.insert(p.clone(), Value::String(p));
                }
                Value::Object(out)
            }
            Value::Array(a) => {
                let mut out: Vec<Value> = a
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        path.push(Seg::Index(i));
                        let out = walk(x, path, s);
                        path.pop();
                        out
                    })
                    .collect();
                s.probes.push(FieldPath(path.clone()));
                let p = probe_marker(s.probes.len() - 1);
                if a.iter().all(Value::is_object) {
                    out.push(json!({"name": p, "value": p}));
                } else {
                    out.push(Value::String(p));
                }
                Value::Array(out)
            }
            other => other.clone(),
        }
    }
    let mut s = Sentinels::default();
    s.tree = walk(values, &mut Vec::new(), &mut s);
    s
}

/// A sentinel found in rendered text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Str(usize),
    Num(usize),
    Probe(usize),
}

fn token_regex() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| Regex::new(r"kdadopt(\d+)q|kdprobe(\d+)q|\d+").expect("a valid regex"))
}

/// The sentinels in `text` that `s` knows, with where they are.
fn tokens(text: &str, s: &Sentinels) -> Vec<(std::ops::Range<usize>, Token)> {
    let mut out = Vec::new();
    for c in token_regex().captures_iter(text) {
        let whole = c.get(0).expect("group 0");
        let token = if let Some(n) = c.get(1) {
            n.as_str().parse().ok().filter(|n| *n < s.strings.len()).map(Token::Str)
        } else if let Some(n) = c.get(2) {
            n.as_str().parse().ok().filter(|n| *n < s.probes.len()).map(Token::Probe)
        } else {
            whole
                .as_str()
                .parse::<i64>()
                .ok()
                .filter(|n| whole.as_str().len() == 6 && *n >= NUMBER_BASE)
                .map(|n| (n - NUMBER_BASE) as usize)
                .filter(|n| *n < s.numbers.len())
                .map(Token::Num)
        };
        if let Some(t) = token {
            out.push((whole.range(), t));
        }
    }
    out
}

impl Sentinels {
    fn key_of(&self, t: Token) -> &FieldPath {
        match t {
            Token::Str(n) => &self.strings[n],
            Token::Num(n) => &self.numbers[n],
            Token::Probe(n) => &self.probes[n],
        }
    }

    /// The number a sentinel number stands for.
    fn number_key(&self, v: &Value) -> Option<&FieldPath> {
        let n = v.as_f64()?;
        if n.fract() != 0.0 {
            return None;
        }
        let i = n as i64 - NUMBER_BASE;
        (i >= 0 && (i as usize) < self.numbers.len()).then(|| &self.numbers[i as usize])
    }

    /// The value keys whose sentinels are in `v` (markers and numbers; probes left out), each
    /// once, in the order found.
    pub fn keys_in(&self, v: &Value) -> Vec<FieldPath> {
        let mut out = Vec::new();
        collect_keys(v, self, &mut out);
        let mut seen = std::collections::BTreeSet::new();
        out.retain(|k| seen.insert(k.clone()));
        out
    }

    /// Whether any sentinel of these values is in `v` (for telling "hard-coded" from
    /// "transformed").
    pub fn any_in(&self, v: &Value) -> bool {
        match v {
            Value::String(s) => !tokens(s, self).is_empty(),
            Value::Number(_) => self.number_key(v).is_some(),
            Value::Array(a) => a.iter().any(|x| self.any_in(x)),
            Value::Object(m) => m.iter().any(|(k, x)| !tokens(k, self).is_empty() || self.any_in(x)),
            _ => false,
        }
    }
}

/// What adopting one field does to the values.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Set `key` to `value`.
    Set { key: FieldPath, value: Value },
    /// Append `item` to the list `key`.
    Append { key: FieldPath, item: Value },
    /// Add `name: value` to the map `key`.
    Insert { key: FieldPath, name: String, value: Value },
}

impl Op {
    pub fn key(&self) -> &FieldPath {
        match self {
            Op::Set { key, .. } | Op::Append { key, .. } | Op::Insert { key, .. } => key,
        }
    }

    /// The new value this operation writes (the item or key added, for additions).
    pub fn new_value(&self) -> Value {
        match self {
            Op::Set { value, .. } | Op::Append { item: value, .. } => value.clone(),
            Op::Insert { name, value, .. } => json!({ name.clone(): value.clone() }),
        }
    }
}

/// The text of a scalar as a template prints it (`3`, `true`, `x`).
fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::Object(_) | Value::Array(_) | Value::Null => None,
        Value::Number(n) => Some(match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        }),
        other => Some(scalar_text(other)),
    }
}

/// A new value of the type the old one has, from what the field holds live.
fn typed(text: &str, live: &Value, old: &Value) -> Result<Value, String> {
    match old {
        Value::String(_) => Ok(Value::String(text.to_string())),
        Value::Number(_) => {
            if live.is_number() && text_of(live).as_deref() == Some(text) {
                return Ok(live.clone());
            }
            if let Ok(i) = text.parse::<i64>() {
                return Ok(json!(i));
            }
            match text.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
                Some(n) => Ok(Value::Number(n)),
                None => Err("the value is a number and the live field is not".into()),
            }
        }
        _ => Err("the value is neither a string nor a number".into()),
    }
}

/// Which value renders a changed field, and what it must be for the field to hold `live`.
/// `rendered` is the field in the sentinel render, `desired` in the stored manifest.
pub fn solve(rendered: &Value, desired: &Value, live: &Value, s: &Sentinels, merged: &Value) -> Result<Op, String> {
    let old_of = |key: &FieldPath| key.get(merged).cloned().unwrap_or(Value::Null);
    match rendered {
        Value::Number(_) => {
            let Some(key) = s.number_key(rendered) else { return Err(hard_coded()) };
            let old = old_of(key);
            if text_of(&old) != text_of(desired) {
                return Err(format!("value {key} renders here through a function"));
            }
            let Some(text) = text_of(live) else { return Err("the live field is not a scalar".into()) };
            Ok(Op::Set { key: key.clone(), value: typed(&text, live, &old)? })
        }
        Value::String(r) => {
            let found = tokens(r, s);
            if found.iter().any(|(_, t)| matches!(t, Token::Probe(_))) || found.is_empty() {
                return Err(hard_coded());
            }
            let (Some(desired_text), Some(live_text)) = (text_of(desired), text_of(live)) else {
                return Err("the field is not a scalar in both the release and live".into());
            };
            let olds: Vec<Option<String>> = found.iter().map(|(_, t)| text_of(&old_of(s.key_of(*t)))).collect();
            if olds.iter().any(Option::is_none) {
                return Err(format!("value {} is not a scalar", s.key_of(found[0].1)));
            }
            let olds: Vec<String> = olds.into_iter().map(Option::unwrap_or_default).collect();
            // The text around each sentinel, with the other sentinels replaced by their values.
            let mut around: Vec<(String, String)> = Vec::new();
            for i in 0..found.len() {
                let (mut before, mut after) = (String::new(), String::new());
                let mut at = 0;
                for (j, (range, _)) in found.iter().enumerate() {
                    let target = if j <= i { &mut before } else { &mut after };
                    target.push_str(&r[at..range.start]);
                    if j != i {
                        let target = if j < i { &mut before } else { &mut after };
                        target.push_str(&olds[j]);
                    }
                    at = range.end;
                }
                after.push_str(&r[at..]);
                around.push((before, after));
            }
            // The render with every sentinel replaced by its real value must be what the release
            // holds; else a function changed a value on its way into the field. One exception: an
            // empty value the template replaced (`{{ .Values.image.tag | default .Chart.AppVersion }}`)
            // may be the one solved, when the text around it is what the release holds; the proof
            // render then decides.
            let consistent = |i: usize| {
                let (before, after) = &around[i];
                format!("{before}{}{after}", olds[i]) == desired_text
                    || (olds[i].is_empty()
                        && desired_text.len() >= before.len() + after.len()
                        && desired_text.starts_with(before.as_str())
                        && desired_text.ends_with(after.as_str()))
            };
            if !(0..found.len()).any(consistent) {
                let keys: Vec<String> = found.iter().map(|(_, t)| s.key_of(*t).to_string()).collect();
                return Err(format!("{} render here through a function", keys.join(", ")));
            }
            // One value changed: the one whose place the live text fills, the rest around it kept.
            for (i, (_, t)) in found.iter().enumerate() {
                let key = s.key_of(*t);
                if found.iter().enumerate().any(|(j, (_, u))| j != i && s.key_of(*u) == key) {
                    continue;
                }
                let (prefix, suffix) = &around[i];
                if !consistent(i) {
                    continue;
                }
                if live_text.len() >= prefix.len() + suffix.len()
                    && live_text.starts_with(prefix.as_str())
                    && live_text.ends_with(suffix.as_str())
                {
                    let middle = &live_text[prefix.len()..live_text.len() - suffix.len()];
                    if middle == olds[i] && found.len() > 1 {
                        continue;
                    }
                    let old = old_of(key);
                    return Ok(Op::Set { key: key.clone(), value: typed(middle, live, &old)? });
                }
            }
            Err(format!(
                "the live value does not keep the text around {} (only one value may change per field)",
                found.iter().map(|(_, t)| s.key_of(*t).to_string()).collect::<Vec<_>>().join(", ")
            ))
        }
        Value::Object(_) | Value::Array(_) => {
            // A whole list or map rendered from one value (`toYaml .Values.resources`).
            let mut keys: Vec<FieldPath> = Vec::new();
            collect_keys(rendered, s, &mut keys);
            for key in &keys {
                for len in (1..=key.0.len()).rev() {
                    let prefix = FieldPath(key.0[..len].to_vec());
                    if prefix.get(&s.tree) == Some(rendered) {
                        if prefix.get(merged) != Some(desired) {
                            return Err(format!("value {prefix} renders here through a function"));
                        }
                        return Ok(Op::Set { key: prefix, value: live.clone() });
                    }
                }
            }
            if keys.is_empty() { Err(hard_coded()) } else { Err("rendered from several values".into()) }
        }
        Value::Bool(_) => Err("no value traced: booleans keep their value in the sentinel render".into()),
        Value::Null => Err(hard_coded()),
    }
}

fn hard_coded() -> String {
    "no value renders this field: it is hard-coded in the template or computed".into()
}

fn collect_keys(v: &Value, s: &Sentinels, out: &mut Vec<FieldPath>) {
    match v {
        Value::String(text) => {
            for (_, t) in tokens(text, s) {
                if !matches!(t, Token::Probe(_)) {
                    out.push(s.key_of(t).clone());
                }
            }
        }
        Value::Number(_) => out.extend(s.number_key(v).cloned()),
        Value::Array(a) => a.iter().for_each(|x| collect_keys(x, s, out)),
        Value::Object(m) => m.values().for_each(|x| collect_keys(x, s, out)),
        _ => {}
    }
}

/// The probe directly in `v`: an item of a list, or a key of a map.
fn probe_in(v: &Value, s: &Sentinels) -> Option<FieldPath> {
    let first = |text: &str| {
        tokens(text, s).into_iter().find_map(|(_, t)| match t {
            Token::Probe(n) => Some(s.probes[n].clone()),
            _ => None,
        })
    };
    match v {
        Value::Array(items) => items.iter().find_map(|item| match item {
            Value::String(text) => first(text),
            Value::Object(m) => m.values().filter_map(Value::as_str).find_map(first),
            _ => None,
        }),
        Value::Object(m) => m.keys().find_map(|k| first(k)),
        _ => None,
    }
}

/// Which list or map value renders where a field was added by hand: `at` is the added place in
/// the probe render, `parent` the list or map holding it; `last` is the added item's or key's
/// step on the path.
pub fn solve_addition(
    at: Option<&Value>,
    parent: Option<&Value>,
    last: Option<&Seg>,
    added: &Value,
    s: &Sentinels,
    merged: &Value,
) -> Result<Vec<Op>, String> {
    let is_list = |key: &FieldPath| matches!(key.get(merged), Some(Value::Array(_)));
    if let Some(key) = at.and_then(|v| probe_in(v, s)) {
        // The whole list or map was added (the chart renders none without the value).
        return match (added, is_list(&key)) {
            (Value::Array(items), true) => {
                Ok(items.iter().map(|i| Op::Append { key: key.clone(), item: i.clone() }).collect())
            }
            (Value::Object(m), false) => {
                Ok(m.iter().map(|(k, v)| Op::Insert { key: key.clone(), name: k.clone(), value: v.clone() }).collect())
            }
            _ => Err(format!("value {key} renders here, but not in the shape added live")),
        };
    }
    if let Some(key) = parent.and_then(|v| probe_in(v, s)) {
        return match (last, is_list(&key)) {
            (Some(Seg::Item { .. } | Seg::Index(_)), true) => Ok(vec![Op::Append { key, item: added.clone() }]),
            (Some(Seg::Key(name)), false) => Ok(vec![Op::Insert { key, name: name.clone(), value: added.clone() }]),
            _ => Err(format!("value {key} renders here, but not in the shape added live")),
        };
    }
    Err("added by hand, and no list or map value of the chart renders into this place".into())
}

/// Apply `op` to the overlay: a value inside a list sets the whole list (Helm replaces lists),
/// copied from the merged values first; maps merge, so only the keys set are written.
pub fn apply(overlay: &mut Value, merged: &Value, op: &Op) {
    let key = op.key();
    // The outermost list on the way (or the list appended to) is copied whole.
    let list_at = key.0.iter().position(|s| matches!(s, Seg::Index(_))).or(match op {
        Op::Append { .. } => Some(key.0.len()),
        _ => None,
    });
    if let Some(i) = list_at {
        let list_key = &key.0[..i];
        if FieldPath(list_key.to_vec()).get(overlay).is_none() {
            let current = FieldPath(list_key.to_vec()).get(merged).cloned().unwrap_or(Value::Array(Vec::new()));
            *place(overlay, list_key) = if current.is_null() { Value::Array(Vec::new()) } else { current };
        }
    }
    match op {
        Op::Set { key, value } => *place(overlay, &key.0) = value.clone(),
        Op::Append { key, item } => {
            let list = place(overlay, &key.0);
            if !list.is_array() {
                *list = Value::Array(Vec::new());
            }
            if let Value::Array(a) = list {
                a.push(item.clone());
            }
        }
        Op::Insert { key, name, value } => {
            let map = place(overlay, &key.0);
            if !map.is_object() {
                *map = Value::Object(Map::new());
            }
            if let Value::Object(m) = map {
                m.insert(name.clone(), value.clone());
            }
        }
    }
}

/// The place `path` names in `v`, making maps on the way (a list step must exist: lists are
/// copied whole before).
fn place<'v>(v: &'v mut Value, path: &[Seg]) -> &'v mut Value {
    let mut cur = v;
    for seg in path {
        cur = match seg {
            Seg::Key(k) => {
                if !cur.is_object() {
                    *cur = Value::Object(Map::new());
                }
                cur.as_object_mut().expect("made a map").entry(k.clone()).or_insert(Value::Null)
            }
            Seg::Index(i) => {
                if !cur.is_array() {
                    *cur = Value::Array(Vec::new());
                }
                let a = cur.as_array_mut().expect("made a list");
                while a.len() <= *i {
                    a.push(Value::Null);
                }
                &mut a[*i]
            }
            Seg::Item { .. } => return cur,
        };
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> FieldPath {
        s.parse().unwrap()
    }

    fn values() -> Value {
        json!({"replicaCount": 1, "image": {"repository": "nginx", "tag": "1.25", "digest": ""},
               "env": {"logLevel": "info"}, "extraEnv": [], "podAnnotations": {}, "enabled": true,
               "resources": {"limits": {"cpu": "100m"}}})
    }

    #[test]
    fn user_values_coalesce_over_defaults() {
        let d = json!({"a": {"b": 1, "c": 2}, "l": [1, 2], "x": 1});
        let c = json!({"a": {"b": 5}, "l": [3], "x": null});
        assert_eq!(merged(&d, &c), json!({"a": {"b": 5, "c": 2}, "l": [3]}));
    }

    #[test]
    fn sentinels_mark_strings_and_numbers_and_keep_the_rest() {
        let s = sentinel_values(&values(), false);
        assert_eq!(s.tree["replicaCount"], json!(NUMBER_BASE));
        assert_eq!(s.tree["enabled"], json!(true));
        assert_eq!(s.tree["image"]["digest"], json!(""));
        let tag = s.tree["image"]["tag"].as_str().unwrap();
        let n: usize = tag.trim_start_matches("kdadopt").trim_end_matches('q').parse().unwrap();
        assert_eq!(s.strings[n], key("image.tag"));
        let all = sentinel_values(&values(), true);
        assert!(all.tree["image"]["digest"].as_str().unwrap().starts_with("kdadopt"));
    }

    #[test]
    fn exact_numbers_and_embedded_strings_are_solved() {
        let v = values();
        let s = sentinel_values(&v, false);
        let op = solve(&json!(NUMBER_BASE), &json!(1), &json!(3), &s, &v).unwrap();
        assert_eq!(op, Op::Set { key: key("replicaCount"), value: json!(3) });
        let image =
            format!("{}:{}", s.tree["image"]["repository"].as_str().unwrap(), s.tree["image"]["tag"].as_str().unwrap());
        let op = solve(&json!(image), &json!("nginx:1.25"), &json!("nginx:1.26-hotfix"), &s, &v).unwrap();
        assert_eq!(op, Op::Set { key: key("image.tag"), value: json!("1.26-hotfix") });
        // The repository changed too: no single value explains it.
        assert!(solve(&json!(image), &json!("nginx:1.25"), &json!("httpd:2"), &s, &v).is_err());
        // A value printed through a function (upper) does not give back the stored text.
        let upper = s.tree["env"]["logLevel"].as_str().unwrap().to_string();
        assert!(solve(&json!(upper), &json!("INFO"), &json!("DEBUG"), &s, &v).unwrap_err().contains("function"));
        // A number quoted into a string keeps its type in the overlay.
        let quoted = json!(NUMBER_BASE.to_string());
        assert_eq!(
            solve(&quoted, &json!("1"), &json!("4"), &s, &v).unwrap(),
            Op::Set { key: key("replicaCount"), value: json!(4) }
        );
        // An empty tag the template defaults (`default .Chart.AppVersion`): marked in the render
        // of every string, solved from the text around it.
        let all = sentinel_values(&json!({"image": {"repository": "nginx", "tag": ""}}), true);
        let both = format!(
            "{}:{}",
            all.tree["image"]["repository"].as_str().unwrap(),
            all.tree["image"]["tag"].as_str().unwrap()
        );
        let values = json!({"image": {"repository": "nginx", "tag": ""}});
        assert_eq!(
            solve(&json!(both), &json!("nginx:1.16.0"), &json!("nginx:1.99"), &all, &values).unwrap(),
            Op::Set { key: key("image.tag"), value: json!("1.99") }
        );
        // A hard-coded field.
        assert!(solve(&json!("Always"), &json!("Always"), &json!("Never"), &s, &v).unwrap_err().contains("hard-coded"));
    }

    #[test]
    fn a_whole_map_from_to_yaml_is_solved() {
        let v = values();
        let s = sentinel_values(&v, false);
        let rendered = s.tree["resources"]["limits"].clone();
        let op = solve(&rendered, &json!({"cpu": "100m"}), &json!({"cpu": "200m", "memory": "1Gi"}), &s, &v).unwrap();
        assert_eq!(op, Op::Set { key: key("resources.limits"), value: json!({"cpu": "200m", "memory": "1Gi"}) });
    }

    #[test]
    fn additions_go_to_the_list_or_map_that_renders_there() {
        let v = values();
        let p = probe_values(&v);
        let env = json!([{"name": "LOG_LEVEL", "value": "info"}, p.tree["extraEnv"][0].clone()]);
        let ops = solve_addition(
            None,
            Some(&env),
            Some(&Seg::Item { field: "name".into(), value: "X".into() }),
            &json!({"name": "X", "value": "1"}),
            &p,
            &v,
        )
        .unwrap();
        assert_eq!(ops, vec![Op::Append { key: key("extraEnv"), item: json!({"name": "X", "value": "1"}) }]);
        let annotations = p.tree["podAnnotations"].clone();
        let ops = solve_addition(None, Some(&annotations), Some(&Seg::Key("a/b".into())), &json!("v"), &p, &v).unwrap();
        assert_eq!(ops, vec![Op::Insert { key: key("podAnnotations"), name: "a/b".into(), value: json!("v") }]);
        assert!(solve_addition(None, Some(&json!([{"name": "A"}])), None, &json!({}), &p, &v).is_err());
    }

    #[test]
    fn the_overlay_copies_lists_whole_and_merges_maps() {
        let v = json!({"extraEnv": [{"name": "A", "value": "1"}], "list": [{"x": 1}, {"x": 2}], "m": {"a": 1}});
        let mut o = json!({});
        apply(&mut o, &v, &Op::Append { key: key("extraEnv"), item: json!({"name": "B"}) });
        apply(&mut o, &v, &Op::Set { key: key("list[1].x"), value: json!(5) });
        apply(&mut o, &v, &Op::Insert { key: key("m"), name: "b".into(), value: json!(2) });
        apply(&mut o, &v, &Op::Append { key: key("missing"), item: json!("x") });
        assert_eq!(
            o,
            json!({"extraEnv": [{"name": "A", "value": "1"}, {"name": "B"}], "list": [{"x": 1}, {"x": 5}],
                   "m": {"b": 2}, "missing": ["x"]})
        );
    }
}
