//! Manifest streams (a Helm release's rendered manifest, or files on disk) parsed into desired
//! objects keyed by apiVersion, kind, namespace and name.
//!
//! Documents are split on `---` lines so each keeps its `# Source:` comment (Helm) or its index
//! in the file; `List` documents are expanded into their items. Parse errors name the origin and
//! the document, and never quote the document's text (it may hold a Secret).

use serde_json::Value;

pub use crate::report::SkippedObject;

/// One object the manifest says should exist.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredObject {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// As written in the manifest (`None` when the manifest leaves it to the default).
    pub namespace: Option<String>,
    /// The object as a JSON value.
    pub body: Value,
    /// Where it came from: `shop/templates/deployment.yaml` or `dir/app.yaml#2`.
    pub source: String,
}

impl DesiredObject {
    /// API group of `apiVersion` (`""` for the core group).
    pub fn group(&self) -> &str {
        crate::report::group_version(&self.api_version).0
    }
    pub fn version(&self) -> &str {
        crate::report::group_version(&self.api_version).1
    }
}

/// A manifest stream read for `manifests`: the objects to check, the documents skipped (with
/// the reason) and the documents that could not be read.
#[derive(Debug, Default)]
pub struct ParsedManifests {
    pub objects: Vec<DesiredObject>,
    pub skipped: Vec<SkippedObject>,
    pub errors: Vec<ManifestError>,
}

/// Why a manifest stream could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// A document is not valid YAML.
    #[error("{origin}: document {doc}{source_hint} is not valid YAML: {message}")]
    Yaml { origin: String, doc: usize, source_hint: String, message: String },
    /// A document is YAML but not a Kubernetes object.
    #[error("{origin}: document {doc}{source_hint} is not a Kubernetes object: {message}")]
    NotAnObject { origin: String, doc: usize, source_hint: String, message: String },
}

/// Split a YAML stream into documents: (text, `# Source:` path if any).
pub fn split_documents(text: &str) -> Vec<(String, Option<String>)> {
    split_with_lines(text).into_iter().map(|d| (d.text, d.source)).collect()
}

/// The line (1-based) where each document of a stream starts: its first line that is neither
/// blank nor a comment, in the numbering of the `file#N` sources ([`split_documents`]'s order;
/// the items of a `List` document share its line). SARIF and GitHub annotations point there.
pub fn document_lines(text: &str) -> Vec<usize> {
    split_with_lines(text).into_iter().map(|d| d.line).collect()
}

/// One document of a stream, with where it starts.
struct Document {
    text: String,
    source: Option<String>,
    /// Its first line with content (1-based).
    line: usize,
}

fn is_content(line: &str) -> bool {
    !line.trim().is_empty() && !line.trim_start().starts_with('#')
}

fn split_with_lines(text: &str) -> Vec<Document> {
    let mut docs = Vec::new();
    let mut current = String::new();
    let mut source = None;
    let mut first: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_end();
        if t == "---" || t.starts_with("--- ") {
            docs.push(Document { text: std::mem::take(&mut current), source: source.take(), line: first.unwrap_or(0) });
            first = None;
            // `--- # comment` or `--- key: value`: keep what follows the marker.
            let rest = t[3..].trim_start();
            if !rest.is_empty() && !rest.starts_with('#') {
                current.push_str(rest);
                current.push('\n');
                first = Some(i + 1);
            }
            continue;
        }
        if let Some(s) = line.strip_prefix("# Source: ") {
            source = Some(s.trim().to_string());
        }
        if first.is_none() && is_content(line) {
            first = Some(i + 1);
        }
        current.push_str(line);
        current.push('\n');
    }
    docs.push(Document { text: current, source, line: first.unwrap_or(0) });
    docs.retain(|d| d.text.lines().any(is_content));
    docs
}

/// Parse a manifest stream. `origin` names it in errors (`release shop/shop revision 3`, a file).
/// Returns the objects found and the errors of documents that could not be parsed (the others
/// are still returned).
pub fn parse_stream(text: &str, origin: &str) -> (Vec<DesiredObject>, Vec<ManifestError>) {
    let parsed = parse_documents(text, origin, false);
    (parsed.objects, parsed.errors)
}

/// Parse manifest files (`manifests`): as [`parse_stream`], but an object with
/// `metadata.generateName` and no name is skipped with the reason instead of being an error.
pub fn parse_manifests(text: &str, origin: &str) -> ParsedManifests {
    parse_documents(text, origin, true)
}

fn parse_documents(text: &str, origin: &str, skip_generated_names: bool) -> ParsedManifests {
    let mut objects = Vec::new();
    let mut skipped = Vec::new();
    let mut errors = Vec::new();
    for (i, (doc, source)) in split_documents(text).into_iter().enumerate() {
        let n = i + 1;
        let source_hint = source.as_ref().map(|s| format!(" ({s})")).unwrap_or_default();
        let value: Value = match crate::source::yaml11::from_str(&doc) {
            Ok(v) => v,
            Err(e) => {
                errors.push(ManifestError::Yaml {
                    origin: origin.to_string(),
                    doc: n,
                    source_hint,
                    message: first_line(&e.to_string()),
                });
                continue;
            }
        };
        if value.is_null() {
            continue;
        }
        let src = source.clone().unwrap_or_else(|| format!("{origin}#{n}"));
        match objects_of(value, &src) {
            Ok(objs) => {
                for o in objs {
                    match o {
                        Parsed::Object(d) => objects.push(d),
                        Parsed::Generated(s) if skip_generated_names => skipped.push(s),
                        Parsed::Generated(s) => errors.push(ManifestError::NotAnObject {
                            origin: origin.to_string(),
                            doc: n,
                            source_hint: source_hint.clone(),
                            message: format!("{} has no metadata.name (only metadata.generateName)", s.kind),
                        }),
                    }
                }
            }
            Err(message) => {
                errors.push(ManifestError::NotAnObject { origin: origin.to_string(), doc: n, source_hint, message })
            }
        }
    }
    ParsedManifests { objects, skipped, errors }
}

/// One object of a document.
enum Parsed {
    Object(DesiredObject),
    /// Named by `metadata.generateName` only.
    Generated(SkippedObject),
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// One document's objects: itself, or the items of a `List`.
fn objects_of(value: Value, source: &str) -> Result<Vec<Parsed>, String> {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind == "List" || (kind.ends_with("List") && value.get("items").is_some_and(Value::is_array)) {
        let items = value.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut out = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            out.push(object_of(item, source).map_err(|e| format!("item {i} of the List: {e}"))?);
        }
        return Ok(out);
    }
    Ok(vec![object_of(value, source)?])
}

fn object_of(value: Value, source: &str) -> Result<Parsed, String> {
    if !value.is_object() {
        return Err("expected a mapping with apiVersion, kind and metadata.name".into());
    }
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let api_version = text(value.get("apiVersion")).filter(|s| !s.is_empty()).ok_or("apiVersion is missing")?;
    let kind = text(value.get("kind")).filter(|s| !s.is_empty()).ok_or("kind is missing")?;
    let namespace = text(value.pointer("/metadata/namespace")).filter(|s| !s.is_empty());
    let name = text(value.pointer("/metadata/name")).filter(|s| !s.is_empty());
    let generate_name = text(value.pointer("/metadata/generateName")).filter(|s| !s.is_empty());
    match (name, generate_name) {
        (Some(name), _) => Ok(Parsed::Object(DesiredObject {
            api_version,
            kind,
            name,
            namespace,
            body: value,
            source: source.to_string(),
        })),
        (None, Some(generate_name)) => Ok(Parsed::Generated(SkippedObject {
            api_version,
            kind,
            generate_name,
            namespace,
            source: source.to_string(),
            reason: "metadata.generateName without metadata.name: every create makes a new object, so none can be \
                     matched to it"
                .to_string(),
        })),
        (None, None) => Err(format!("{kind} has no metadata.name")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELM: &str = "---\n# Source: shop/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  f.yaml: |\n    x: 1\n    y: 2\n---\n# Source: shop/templates/deploy.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: other\nspec:\n  replicas: 2\n";

    /// Each document's first line with content, in the `file#N` numbering: empty and
    /// comment-only documents are not numbered, `--- key: value` starts on the marker's line.
    #[test]
    fn document_lines_follow_the_document_numbering() {
        let text = "# a comment\n\napiVersion: v1\nkind: ConfigMap\n---\n# only a comment\n---\n\n  \n# c\nkind: Secret\n--- apiVersion: v1\nkind: Service\n";
        assert_eq!(document_lines(text), vec![3, 11, 12]);
        assert_eq!(split_documents(text).len(), 3);
        // Numbered as `parse_manifests` numbers sources.
        let parsed = parse_manifests(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\n\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
            "f.yaml",
        );
        assert_eq!(parsed.objects[1].source, "f.yaml#2");
        assert_eq!(
            document_lines("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\n\napiVersion: v1\n"),
            vec![2, 8]
        );
    }

    #[test]
    fn parses_a_helm_manifest_with_sources() {
        let (objs, errs) = parse_stream(HELM, "release shop");
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[0].kind, "ConfigMap");
        assert_eq!(objs[0].source, "shop/templates/cm.yaml");
        assert_eq!(objs[0].body["data"]["f.yaml"], "x: 1\ny: 2\n");
        assert_eq!(objs[1].namespace.as_deref(), Some("other"));
        assert_eq!(objs[1].group(), "apps");
        assert_eq!(objs[1].version(), "v1");
        assert_eq!(objs[1].body["spec"]["replicas"], 2);
    }

    #[test]
    fn expands_lists_and_skips_empty_documents() {
        let text = "---\n# only a comment\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: b}\n";
        let (objs, errs) = parse_stream(text, "f.yaml");
        assert!(errs.is_empty());
        assert_eq!(objs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(objs[1].source, "f.yaml#1");
    }

    #[test]
    fn errors_name_the_document_and_do_not_quote_it() {
        let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: hunter2: [\n---\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n";
        let (objs, errs) = parse_stream(text, "dir/bad.yaml");
        assert_eq!(objs.len(), 1);
        assert_eq!(errs.len(), 2);
        let all = errs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n");
        assert!(all.contains("dir/bad.yaml: document 1"), "{all}");
        assert!(all.contains("document 2") && all.contains("apiVersion is missing"), "{all}");
        assert!(!all.contains("hunter2"), "{all}");
    }

    #[test]
    fn generated_names_are_skipped_for_files_and_errors_for_releases() {
        let text = "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: migrate-}\nspec: {}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: Pod, metadata: {generateName: p-, namespace: x}}\n---\nkind: Job\napiVersion: batch/v1\nmetadata: {labels: {a: b}}\n";
        let p = parse_manifests(text, "jobs.yaml");
        assert_eq!(p.objects.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), vec!["a"]);
        let skipped: Vec<_> =
            p.skipped.iter().map(|s| (s.kind.as_str(), s.generate_name.as_str(), s.source.as_str())).collect();
        assert_eq!(skipped, vec![("Job", "migrate-", "jobs.yaml#1"), ("Pod", "p-", "jobs.yaml#2")]);
        assert_eq!(p.skipped[1].namespace.as_deref(), Some("x"));
        assert!(p.skipped[0].reason.contains("generateName"), "{:?}", p.skipped[0]);
        // Neither a name nor generateName: still an error.
        assert_eq!(p.errors.len(), 1);
        assert!(
            p.errors[0].to_string().contains("document 3")
                && p.errors[0].to_string().contains("Job has no metadata.name")
        );
        // Release manifests keep them as errors.
        let (objs, errs) = parse_stream(text, "release r");
        assert_eq!(objs.len(), 1);
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs[0].to_string().contains("only metadata.generateName"), "{errs:?}");
    }
}
