//! Manifest YAML read as Helm, kubectl and Flux read it, so that what we expect is what the API
//! server was sent (docs/drift.md, "Manifest YAML is YAML 1.1").
//!
//! All three turn a manifest into JSON with `sigs.k8s.io/yaml`, whose reader is go-yaml v2: YAML
//! 1.1 scalars, not the YAML 1.2 core schema. A plain `0777` is the octal 511 there; `yes`, `on`,
//! `y` are `true`; `0o17`, `0x1F`, `0b101` and `1_000` are numbers; a sexagesimal `1:30` stays a
//! string. The JSON conversion then writes keys as strings (`yes:` becomes `"true"`, `010:`
//! becomes `"8"`, a float key is formatted as a 32-bit float), and the API server reads an
//! integral float as an integer. A YAML 1.2 reader disagrees on each of these and reports drift on
//! a fresh install (`defaultMode: 777.0 → 511`).
//!
//! The parser is serde-saphyr's (`granit_parser`); only the resolution of scalars, keys, merges
//! and aliases is ours. Every rule below was checked against Helm 3 and Helm 4 installing the
//! fixture chart `tests/fixtures/charts/yaml11` on the local control plane.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Map, Number, Value};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, Tag};

/// The most nodes one document may produce, aliases expanded: an alias bomb is an error, not an
/// hour of CPU or gigabytes of memory.
const MAX_NODES: usize = 1_000_000;
/// The deepest nesting accepted (go-yaml v2 stops at 10,000; a manifest never gets near either).
const MAX_DEPTH: usize = 1_000;

/// Read one YAML document into the JSON the API server would have been sent. An empty document
/// is `Null`. Errors are one line, name the line of the document, and never quote a value.
pub fn from_str(text: &str) -> Result<Value, String> {
    let mut b = Builder::default();
    let mut documents = 0usize;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| e.to_string())?;
        let line = span.start.line();
        match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 && b.root.is_some() {
                    return Err(format!("a second YAML document starts at line {line}"));
                }
            }
            Event::Scalar(value, style, anchor, tag) => {
                let scalar = resolve(&value, style, tag.as_deref()).map_err(|e| format!("{e} (line {line})"))?;
                let merge = is_merge_key(&value, style, tag.as_deref());
                b.scalar(scalar, merge, anchor, line)?;
            }
            Event::Alias(id) => {
                let size = b.anchors.get(&id).map(|a| a.size).ok_or_else(|| format!("unknown alias (line {line})"))?;
                // Counted before it is copied: a bomb stops before its copies are made.
                b.count(size, line)?;
                let node = b.anchors[&id].node.clone();
                b.place(node, 0, 1, line)?;
            }
            Event::SequenceStart(_, anchor, _) => b.open(Frame::Seq(Vec::new()), anchor, line)?,
            Event::MappingStart(_, anchor, _) => b.open(Frame::Map(Map::new(), None), anchor, line)?,
            Event::SequenceEnd | Event::MappingEnd => b.close(line)?,
            _ => {}
        }
    }
    Ok(b.root.unwrap_or(Value::Null))
}

/// A scalar as go-yaml v2 resolves it (before the JSON conversion).
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    /// Past `i64`: go-yaml keeps it as `uint64`.
    Uint(u64),
    Float(f64),
    Str(String),
}

/// A finished node: a scalar (kept as such so that it can still become a key) or a collection.
#[derive(Debug, Clone)]
enum Node {
    /// The scalar and whether it is the merge key `<<`.
    Scalar(Scalar, bool),
    Value(Value),
}

#[derive(Debug, Clone)]
struct Anchored {
    node: Node,
    /// Nodes it holds, to count an alias's expansion against [`MAX_NODES`].
    size: usize,
}

enum Frame {
    Seq(Vec<Value>),
    /// The map and its pending key (`Merge` for `<<`).
    Map(Map<String, Value>, Option<Key>),
}

enum Key {
    Name(String),
    Merge,
}

struct Open {
    frame: Frame,
    anchor: usize,
    /// Node count when it opened (for the anchor's size).
    start: usize,
}

#[derive(Default)]
struct Builder {
    stack: Vec<Open>,
    anchors: HashMap<usize, Anchored>,
    root: Option<Value>,
    nodes: usize,
}

impl Builder {
    fn count(&mut self, n: usize, line: usize) -> Result<(), String> {
        self.nodes += n;
        if self.nodes > MAX_NODES {
            return Err(format!("more than {MAX_NODES} nodes with aliases expanded (line {line})"));
        }
        Ok(())
    }

    fn open(&mut self, frame: Frame, anchor: usize, line: usize) -> Result<(), String> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH} levels (line {line})"));
        }
        self.count(1, line)?;
        self.stack.push(Open { frame, anchor, start: self.nodes });
        Ok(())
    }

    fn close(&mut self, line: usize) -> Result<(), String> {
        let Some(open) = self.stack.pop() else { return Ok(()) };
        let value = match open.frame {
            Frame::Seq(items) => Value::Array(items),
            Frame::Map(map, _) => Value::Object(map),
        };
        let size = self.nodes - open.start + 1;
        self.place(Node::Value(value), open.anchor, size, line)
    }

    /// A scalar in the current collection.
    fn scalar(&mut self, scalar: Scalar, merge: bool, anchor: usize, line: usize) -> Result<(), String> {
        self.count(1, line)?;
        self.place(Node::Scalar(scalar, merge), anchor, 1, line)
    }

    fn place(&mut self, node: Node, anchor: usize, size: usize, line: usize) -> Result<(), String> {
        if anchor != 0 {
            self.anchors.insert(anchor, Anchored { node: node.clone(), size });
        }
        let Some(top) = self.stack.last_mut() else {
            self.root = Some(to_value(node, line)?);
            return Ok(());
        };
        match &mut top.frame {
            Frame::Seq(items) => items.push(to_value(node, line)?),
            Frame::Map(map, pending) => match pending.take() {
                None => *pending = Some(to_key(node, line)?),
                Some(Key::Name(k)) => {
                    // go-yaml v2: a repeated key takes the later value.
                    map.insert(k, to_value(node, line)?);
                }
                Some(Key::Merge) => merge(map, to_value(node, line)?, line)?,
            },
        }
        Ok(())
    }
}

/// `<<`: a map, or a list of maps of which the first wins. As in go-yaml v2 the merged keys are
/// set when the `<<` is read, so they replace keys written before it and are replaced by keys
/// written after it (checked on Helm: `{a: 9, <<: *b}` is `a` from `b`).
fn merge(map: &mut Map<String, Value>, value: Value, line: usize) -> Result<(), String> {
    let bad = || format!("a merge (<<) takes a map or a list of maps (line {line})");
    match value {
        Value::Object(m) => map.extend(m),
        Value::Array(items) => {
            for item in items.into_iter().rev() {
                let Value::Object(m) = item else { return Err(bad()) };
                map.extend(m);
            }
        }
        _ => return Err(bad()),
    }
    Ok(())
}

/// go-yaml v2: a plain `<<`, or one tagged `!!merge`.
fn is_merge_key(value: &str, style: ScalarStyle, tag: Option<&Tag>) -> bool {
    value == "<<"
        && match tag {
            None => style == ScalarStyle::Plain,
            Some(t) => core_name(t).as_deref() == Some("merge"),
        }
}

/// `str` for `!!str`; `None` for a tag outside YAML's own namespace (`!foo`, `!`).
fn core_name(tag: &Tag) -> Option<String> {
    tag.suffix_in_namespace("tag:yaml.org,2002:").map(|s| s.into_owned())
}

/// Resolve a scalar as go-yaml v2 does: only plain scalars are resolved implicitly; a quoted one
/// is a string; a core tag asks for its type; any other tag leaves the text a string.
fn resolve(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<Scalar, String> {
    let Some(tag) = tag else {
        return Ok(if style == ScalarStyle::Plain { resolve_plain(text) } else { Scalar::Str(text.to_string()) });
    };
    let Some(name) = core_name(tag) else { return Ok(Scalar::Str(text.to_string())) };
    let resolved = resolve_plain(text);
    let wrong = || Err(format!("a value tagged !!{name} is not a {name}"));
    match name.as_str() {
        "str" | "timestamp" => Ok(Scalar::Str(text.to_string())),
        "binary" => {
            use base64::Engine;
            let clean: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(clean)
                .map_err(|_| "a value tagged !!binary is not base64".to_string())?;
            Ok(Scalar::Str(String::from_utf8_lossy(&bytes).into_owned()))
        }
        "int" => match resolved {
            Scalar::Int(_) | Scalar::Uint(_) => Ok(resolved),
            _ => wrong(),
        },
        "float" => match resolved {
            Scalar::Float(_) => Ok(resolved),
            Scalar::Int(i) => Ok(Scalar::Float(i as f64)),
            Scalar::Uint(u) => Ok(Scalar::Float(u as f64)),
            _ => wrong(),
        },
        "bool" => match resolved {
            Scalar::Bool(_) => Ok(resolved),
            _ => wrong(),
        },
        "null" => match resolved {
            Scalar::Null => Ok(resolved),
            _ => wrong(),
        },
        _ => Ok(Scalar::Str(text.to_string())),
    }
}

/// go-yaml v2's implicit resolution of a plain scalar (its `resolve` with no tag).
fn resolve_plain(text: &str) -> Scalar {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => return Scalar::Bool(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False" | "FALSE" => {
            return Scalar::Bool(false);
        }
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Scalar::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match text.as_bytes()[0] {
        b'.' => {
            if text.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
                && let Ok(f) = text.parse::<f64>()
            {
                return Scalar::Float(f);
            }
        }
        b'0'..=b'9' | b'+' | b'-' => {
            // Underscores are dropped before the number is read (`1_000`, `0x_1F`).
            let plain = text.replace('_', "");
            if let Some((negative, magnitude)) = go_parse_int(&plain) {
                if negative {
                    if magnitude <= 1u128 << 63 {
                        return Scalar::Int((magnitude as i128).wrapping_neg() as i64);
                    }
                } else if magnitude <= i64::MAX as u128 {
                    return Scalar::Int(magnitude as i64);
                } else if magnitude <= u64::MAX as u128 && !plain.starts_with('+') {
                    return Scalar::Uint(magnitude as u64);
                }
            }
            if YAML_FLOAT.is_match(&plain)
                && let Ok(f) = plain.parse::<f64>()
            {
                return Scalar::Float(f);
            }
        }
        _ => {}
    }
    Scalar::Str(text.to_string())
}

/// go-yaml v2's pattern for a float (applied after underscores are dropped).
static YAML_FLOAT: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$").expect("pattern"));

/// Go's `strconv.ParseInt(s, 0, 64)` without the range check: sign, then `0x`/`0X` hex, `0o`/`0O`
/// octal, `0b`/`0B` binary, a leading `0` octal, or decimal. `None` if it is not such a number.
fn go_parse_int(s: &str) -> Option<(bool, u128)> {
    let (negative, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits) = match lower.as_deref() {
        Some("0x") => (16, &body[2..]),
        Some("0o") => (8, &body[2..]),
        Some("0b") => (2, &body[2..]),
        _ if body.len() > 1 && body.starts_with('0') => (8, &body[1..]),
        _ => (10, body),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    // More digits than any u64 has: out of range either way.
    u128::from_str_radix(digits, radix).ok().map(|m| (negative, m))
}

/// The JSON the API server stores for a resolved value: Go's JSON writer and the API server's
/// reader turn an integral float below 1e21 into an integer (`1e3` is stored as `1000`), and a
/// `uint64` past `i64` into a float. NaN and infinities have no JSON: Helm and kubectl refuse them.
fn to_value(node: Node, line: usize) -> Result<Value, String> {
    let scalar = match node {
        Node::Value(v) => return Ok(v),
        Node::Scalar(s, _) => s,
    };
    Ok(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::Number(i.into()),
        Scalar::Uint(u) => float(u as f64, line)?,
        Scalar::Float(f) => float(f, line)?,
        Scalar::Str(s) => Value::String(s),
    })
}

fn float(f: f64, line: usize) -> Result<Value, String> {
    if !f.is_finite() {
        return Err(format!("a NaN or infinite number has no JSON form; Helm and kubectl refuse it too (line {line})"));
    }
    if f.fract() == 0.0 && f.abs() < 9.223_372_036_854_775e18 {
        return Ok(Value::Number((f as i64).into()));
    }
    Number::from_f64(f).map(Value::Number).ok_or_else(|| format!("not a JSON number (line {line})"))
}

/// A map key as `sigs.k8s.io/yaml` writes it into JSON: text as it is, `true`/`false`, an integer
/// in decimal, a float as Go formats a 32-bit float (`1e+06`, `0.1`). A null, a `uint64` or a
/// collection is not a key it takes (Helm fails the install on it).
fn to_key(node: Node, line: usize) -> Result<Key, String> {
    let unsupported = |what: &str| Err(format!("a map key that is {what} has no JSON form (line {line})"));
    match node {
        Node::Scalar(_, true) => Ok(Key::Merge),
        Node::Scalar(Scalar::Str(s), _) => Ok(Key::Name(s)),
        Node::Scalar(Scalar::Bool(b), _) => Ok(Key::Name(b.to_string())),
        Node::Scalar(Scalar::Int(i), _) => Ok(Key::Name(i.to_string())),
        Node::Scalar(Scalar::Float(f), _) => Ok(Key::Name(go_float32_key(f))),
        Node::Scalar(Scalar::Null, _) => unsupported("null"),
        Node::Scalar(Scalar::Uint(_), _) => unsupported("an integer past 2^63"),
        Node::Value(_) => unsupported("a map or a list"),
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, with go-yaml's names for NaN and the infinities.
fn go_float32_key(f: f64) -> String {
    let x = f as f32;
    if x.is_nan() {
        return ".nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { ".inf".into() } else { "-.inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Shortest digits and the exponent, from Rust's `{:e}` (`1.25e-7`).
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} writes an exponent");
    let exp: i32 = exp.parse().expect("{:e} writes an integer exponent");
    if (-4..6).contains(&exp) {
        return format!("{x}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(yaml: &str) -> Value {
        from_str(yaml).unwrap()
    }

    /// Each value here is what the API server returned after Helm 3.22 and Helm 4.3 installed the
    /// same text (a custom resource keeping unknown fields; `tests/fixtures/charts/yaml11`).
    #[test]
    fn plain_scalars_resolve_as_helm_sends_them() {
        let cases: &[(&str, Value)] = &[
            ("0777", json!(511)),
            ("0644", json!(420)),
            ("-0755", json!(-493)),
            ("0o17", json!(15)),
            ("+0o17", json!(15)),
            ("0x1F", json!(31)),
            ("0X1f", json!(31)),
            ("-0x10", json!(-16)),
            ("0x_1F", json!(31)),
            ("0b101", json!(5)),
            ("-0b11", json!(-3)),
            ("1_000", json!(1000)),
            ("1__0", json!(10)),
            ("1_000.5", json!(1000.5)),
            ("+12", json!(12)),
            ("089", json!(89)),
            ("08", json!(8)),
            ("007", json!(7)),
            ("00", json!(0)),
            ("-0", json!(0)),
            ("1e3", json!(1000)),
            ("1.5E2", json!(150)),
            (".5", json!(0.5)),
            ("-.5", json!(-0.5)),
            ("+.5", json!(0.5)),
            ("5.", json!(5)),
            ("3.0", json!(3)),
            ("1e-3", json!(0.001)),
            ("1e21", json!(1e21)),
            ("0.0000001", json!(1e-7)),
            ("9223372036854775807", json!(9223372036854775807i64)),
            ("9223372036854775808", json!(9223372036854775808f64)),
            ("18446744073709551616", json!(18446744073709551616f64)),
            ("123456789012345678901", json!(123456789012345678901f64)),
            ("190:20:30", json!("190:20:30")),
            ("1:30.5", json!("1:30.5")),
            ("y", json!(true)),
            ("Y", json!(true)),
            ("yes", json!(true)),
            ("YES", json!(true)),
            ("on", json!(true)),
            ("On", json!(true)),
            ("True", json!(true)),
            ("n", json!(false)),
            ("no", json!(false)),
            ("NO", json!(false)),
            ("off", json!(false)),
            ("OFF", json!(false)),
            ("FALSE", json!(false)),
            ("~", Value::Null),
            ("null", Value::Null),
            ("Null", Value::Null),
            ("NULL", Value::Null),
            ("2001-12-14t21:59:43.10-05:00", json!("2001-12-14t21:59:43.10-05:00")),
            ("2002-12-14", json!("2002-12-14")),
            (".NaN_", json!(".NaN_")),
            ("1 2", json!("1 2")),
            ("a:b", json!("a:b")),
            ("\"yes\"", json!("yes")),
            ("'0777'", json!("0777")),
            ("!!str 0777", json!("0777")),
            ("!!int \"0777\"", json!(511)),
            ("!foo 0777", json!("0777")),
            ("!!binary aGVsbG8=", json!("hello")),
        ];
        for (text, want) in cases {
            let got = spec(&format!("v: {text}"))["v"].clone();
            assert_eq!(&got, want, "`{text}`");
        }
        assert_eq!(spec("v:"), json!({"v": null}));
    }

    #[test]
    fn keys_are_written_as_sigs_yaml_writes_them() {
        assert_eq!(
            spec(
                "{0b11: a, 0x10: b, 010: c, yes: d, 1.5: f, 1000000.0: g, 0.1: h, 1e21: i, 3.0: j, 1.25e-7: k, '0x10': l}"
            ),
            json!({"3": "a", "16": "b", "8": "c", "true": "d", "1.5": "f", "1e+06": "g", "0.1": "h",
                   "1e+21": "i", "3": "j", "1.25e-07": "k", "0x10": "l"})
        );
        // Several spellings of true: the last one's value wins.
        assert_eq!(spec("{y: 1, n: 2, on: 3, off: 4, Yes: 5, NO: 6}"), json!({"true": 5, "false": 6}));
        assert!(from_str("{~: e}").unwrap_err().contains("null"));
        assert!(from_str("{[a]: e}").unwrap_err().contains("map or a list"));
    }

    #[test]
    fn merges_and_repeated_keys_follow_go_yaml_v2() {
        let doc = spec(
            "base: &b {a: 1, b: 2}\nbase2: &c {b: 20, c: 30}\nafter: {a: 9, <<: *b}\nbefore: {<<: *b, a: 9}\n\
             seq: {<<: [*b, *c]}\nseqr: {<<: [*c, *b]}\ndup: {x: 1, x: 2}\nquoted: {'<<': *b}\n",
        );
        assert_eq!(doc["after"], json!({"a": 1, "b": 2}));
        assert_eq!(doc["before"], json!({"a": 9, "b": 2}));
        assert_eq!(doc["seq"], json!({"a": 1, "b": 2, "c": 30}));
        assert_eq!(doc["seqr"], json!({"a": 1, "b": 20, "c": 30}));
        assert_eq!(doc["dup"], json!({"x": 2}));
        assert_eq!(doc["quoted"], json!({"<<": {"a": 1, "b": 2}}));
        assert!(from_str("m: {<<: 3}").unwrap_err().contains("merge"));
    }

    #[test]
    fn what_has_no_json_is_an_error_naming_the_line() {
        let e = from_str("a: 1\nb: .inf\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        assert!(from_str("a: !!int abc").unwrap_err().contains("!!int"));
        assert!(from_str("a: *nowhere").is_err());
        assert!(from_str("a: [").is_err());
    }

    #[test]
    fn alias_bombs_and_deep_nesting_are_bounded() {
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        assert!(from_str(&bomb).unwrap_err().contains("nodes"));
        let deep = "[".repeat(5000) + &"]".repeat(5000);
        let e = from_str(&deep).unwrap_err();
        assert!(e.contains("recursion limit") || e.contains("deeper"), "{e}");
    }

    #[test]
    fn empty_document_is_null_and_a_second_document_is_refused() {
        assert_eq!(spec(""), Value::Null);
        assert_eq!(spec("# only a comment\n"), Value::Null);
        assert!(from_str("a: 1\n---\nb: 2\n").unwrap_err().contains("second"));
    }
}
