//! Format-preserving edits of manifest files: one block-style scalar replaced in place.
//!
//! `adopt -f` changes only the value token of the line that holds a drifted field: every other
//! byte of the file is kept (comments, a trailing comment on the changed line, key order, the
//! quoting style of the value, indentation, line endings). The field is found by walking the
//! block structure of its document (maps by key, lists by item: `[name=web]` by the item's
//! `name:` line, `[2]` by position). Each edit is then proven by reading the document again as
//! YAML 1.1, as kubectl reads it: the field must hold the new value and nothing else may differ.
//! What this walk does not know (flow style `{a: 1}`, block scalars `|`, anchors, tags, a key
//! spread over lines) is refused with why, never guessed. docs/adopt.md says why this narrow
//! editor and not a general YAML CST crate.

use serde_json::Value;

use crate::report::path::{FieldPath, Seg, scalar_text};

/// One line of a region, with where its content starts (for the first line of a list item, after
/// the `- `).
#[derive(Debug, Clone, Copy)]
struct Line {
    index: usize,
    indent: usize,
}

fn leading(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// The line ranges of the documents of a stream with content, as `split_documents` numbers
/// them (`file#N`, 1-based).
fn documents(lines: &[&str]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_end();
        if t == "---" || t.starts_with("--- ") {
            out.push((start, i));
            start = i + 1;
        }
    }
    out.push((start, lines.len()));
    out.retain(|&(a, b)| lines[a..b].iter().any(|l| is_content(l)));
    out
}

/// Replace the scalar at `path` of document `doc` (1-based) with `new`; the whole new text.
pub fn set_scalar(text: &str, doc: usize, path: &FieldPath, new: &Value) -> Result<String, String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let &(start, end) = documents(&lines).get(doc.wrapping_sub(1)).ok_or("no such document")?;
    let mut region: Vec<Line> =
        (start..end).filter(|&i| is_content(lines[i])).map(|i| Line { index: i, indent: leading(lines[i]) }).collect();
    let segs = path.segs();
    if segs.is_empty() {
        return Err("not a field".into());
    }
    let mut target: Option<(usize, usize)> = None; // (line, column where the value starts)
    for (n, seg) in segs.iter().enumerate() {
        let last = n + 1 == segs.len();
        let base = region.first().ok_or("the field's parent is empty")?.indent;
        match seg {
            Seg::Key(k) => {
                let (pos, col) = region
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.indent == base)
                    .find_map(|(p, l)| key_value_col(&lines[l.index][l.indent..], k).map(|c| (p, l.indent + c)))
                    .ok_or_else(|| format!("key {k} not found in block style"))?;
                let line = region[pos];
                if last {
                    target = Some((line.index, col));
                    break;
                }
                if !value_text(&lines[line.index][col..]).0.is_empty() {
                    return Err(format!("{k} is not written in block style"));
                }
                region = region[pos + 1..]
                    .iter()
                    .take_while(|l| {
                        l.indent > line.indent
                            || (l.indent == line.indent && lines[l.index][l.indent..].starts_with('-'))
                    })
                    .copied()
                    .collect();
            }
            Seg::Index(_) | Seg::Item { .. } => {
                let items: Vec<Vec<Line>> = {
                    let mut items: Vec<Vec<Line>> = Vec::new();
                    for l in &region {
                        let content = &lines[l.index][l.indent..];
                        if l.indent == base && (content.starts_with("- ") || content.trim_end() == "-") {
                            let after = content[1..].len() - content[1..].trim_start_matches(' ').len();
                            items.push(vec![Line { index: l.index, indent: l.indent + 1 + after }]);
                        } else if let Some(item) = items.last_mut() {
                            item.push(*l);
                        } else {
                            return Err("not a block-style list".into());
                        }
                    }
                    items
                };
                let chosen = match seg {
                    Seg::Index(i) => items.get(*i).cloned(),
                    Seg::Item { field, value } => items.into_iter().find(|item| {
                        let base = item[0].indent;
                        item.iter().filter(|l| l.indent == base).any(|l| {
                            let content = &lines[l.index][l.indent..];
                            key_value_col(content, field).is_some_and(|c| {
                                let (v, _) = value_text(&content[c..]);
                                unquote(v).as_deref() == Some(value.as_str())
                            })
                        })
                    }),
                    Seg::Key(_) => None,
                };
                let item = chosen.ok_or_else(|| format!("list item {seg:?} not found in block style"))?;
                if last {
                    target = Some((item[0].index, item[0].indent));
                    break;
                }
                region = item;
            }
        }
    }
    let (index, col) = target.ok_or("field not found")?;
    let line = lines[index];
    let (old, style) = value_text(&line[col..]);
    let new_text = match style {
        Style::Double => Value::String(scalar_text(new)).to_string(),
        Style::Single => format!("'{}'", scalar_text(new).replace('\'', "''")),
        Style::Plain => plain_or_quoted(new),
        Style::Other(why) => return Err(why.into()),
    };
    if old.is_empty() {
        return Err("the field has no value on its line".into());
    }
    let at = col + line[col..].find(old).unwrap_or(0);
    let edited_line = format!("{}{}{}", &line[..at], new_text, &line[at + old.len()..]);
    let mut out = String::with_capacity(text.len() + new_text.len());
    for (i, l) in lines.iter().enumerate() {
        out.push_str(if i == index { &edited_line } else { l });
    }
    prove(text, &out, doc, path, new)?;
    Ok(out)
}

/// Where the value after `key:` starts in `content` (a line from its indentation), if the line is
/// that key.
fn key_value_col(content: &str, key: &str) -> Option<usize> {
    for written in [key.to_string(), format!("\"{key}\""), format!("'{key}'")] {
        if let Some(rest) = content.strip_prefix(&written)
            && let Some(after) = rest.strip_prefix(':')
            && (after.is_empty() || after.starts_with([' ', '\t', '\r', '\n']))
        {
            let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
            return Some(written.len() + 1 + spaces);
        }
    }
    None
}

#[derive(Debug, PartialEq)]
enum Style {
    Plain,
    Double,
    Single,
    Other(&'static str),
}

/// The value token at the start of `rest` (up to a comment or the line's end), and its style.
fn value_text(rest: &str) -> (&str, Style) {
    let line = rest.trim_end_matches(['\n', '\r']);
    match line.chars().next() {
        Some('"') => {
            let mut escaped = false;
            for (i, c) in line.char_indices().skip(1) {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => return (&line[..=i], Style::Double),
                    _ => escaped = false,
                }
            }
            (line, Style::Other("a double-quoted value over several lines"))
        }
        Some('\'') => {
            let b = line.as_bytes();
            let mut i = 1;
            while i < b.len() {
                if b[i] == b'\'' {
                    if b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    return (&line[..=i], Style::Single);
                }
                i += 1;
            }
            (line, Style::Other("a single-quoted value over several lines"))
        }
        Some('|' | '>') => (line, Style::Other("a block scalar")),
        Some('{' | '[') => (line, Style::Other("a flow-style value")),
        Some('&' | '*' | '!') => (line, Style::Other("an anchor, alias or tag")),
        Some('#') | None => ("", Style::Plain),
        _ => {
            let end = line.find(" #").or_else(|| line.find("\t#")).unwrap_or(line.len());
            (line[..end].trim_end(), Style::Plain)
        }
    }
}

fn unquote(v: &str) -> Option<String> {
    if v.starts_with('"') {
        serde_json::from_str(v).ok()
    } else if let Some(inner) = v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        Some(inner.replace("''", "'"))
    } else {
        Some(v.to_string())
    }
}

/// `new` written plain when YAML 1.1 reads it back as the same value, else double-quoted.
fn plain_or_quoted(new: &Value) -> String {
    let text = match new {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let reads_back = crate::source::yaml11::from_str(&format!("k: {text}\n"))
        .ok()
        .and_then(|v: Value| v.get("k").cloned())
        .is_some_and(|v| v == *new);
    if reads_back && !text.contains(" #") && !text.starts_with(['"', '\'']) {
        text
    } else {
        Value::String(text).to_string()
    }
}

/// The edited document must read as the old one with the field set to `new`, and nothing else.
fn prove(before: &str, after: &str, doc: usize, path: &FieldPath, new: &Value) -> Result<(), String> {
    let read = |text: &str| -> Result<Value, String> {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let &(a, b) = documents(&lines).get(doc - 1).ok_or("no such document")?;
        crate::source::yaml11::from_str(&lines[a..b].concat()).map_err(|e| e.to_string())
    };
    let mut want = read(before)?;
    let pointer = path.json_pointer(&want).ok_or("field not found when read")?;
    *want.pointer_mut(&pointer).ok_or("field not found when read")? = new.clone();
    if read(after)? != want {
        return Err("the edited file does not read back as the old one with this field changed".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FILE: &str = "\
# The web tier.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web   # the name
spec:
  replicas: 2 # scaled by the HPA? no
  template:
    spec:
      containers:
      - name: side
        image: 'busybox:1'
      - name: web
        image: \"registry/web:1.0\"  # pinned
        env:
          - name: LOG
            value: info
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data:
  mode: fast
";

    fn p(s: &str) -> FieldPath {
        s.parse().unwrap()
    }

    #[test]
    fn replaces_only_the_value_token() {
        let out = set_scalar(FILE, 1, &p("spec.replicas"), &json!(3)).unwrap();
        assert_eq!(out, FILE.replace("replicas: 2 # scaled", "replicas: 3 # scaled"));
        let out = set_scalar(FILE, 1, &p("spec.template.spec.containers[name=web].image"), &json!("registry/web:1.1"))
            .unwrap();
        assert_eq!(out, FILE.replace("\"registry/web:1.0\"  # pinned", "\"registry/web:1.1\"  # pinned"));
        let out = set_scalar(FILE, 1, &p("spec.template.spec.containers[name=side].image"), &json!("it's")).unwrap();
        assert_eq!(out, FILE.replace("'busybox:1'", "'it''s'"));
        let out =
            set_scalar(FILE, 1, &p("spec.template.spec.containers[name=web].env[name=LOG].value"), &json!("debug"))
                .unwrap();
        assert_eq!(out, FILE.replace("value: info", "value: debug"));
        let out = set_scalar(FILE, 2, &p("data.mode"), &json!("on")).unwrap();
        assert_eq!(out, FILE.replace("mode: fast", "mode: \"on\""), "YAML 1.1 would read a plain on as true");
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        assert!(set_scalar(FILE, 2, &p("metadata.name"), &json!("x")).unwrap_err().contains("block style"));
        assert!(set_scalar(FILE, 3, &p("spec.replicas"), &json!(1)).is_err());
        assert!(set_scalar(FILE, 1, &p("spec.nope"), &json!(1)).is_err());
        let block = "a:\n  b: |\n    text\n";
        assert!(set_scalar(block, 1, &p("a.b"), &json!("x")).unwrap_err().contains("block scalar"));
    }
}
