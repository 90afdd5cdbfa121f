//! Manifests drift (`kubectl drift manifests PATH...`): files and folders of manifests checked
//! against the live cluster with the release drift engine ([`Engine::check_objects`]).
//!
//! Steps: walk the PATHs (folders recursively, `.yaml`/`.yml`/`.json`, sorted, hidden names
//! skipped); parse each file into desired objects; check each file's objects (the LISTs are
//! shared and cached across files); decide who applied each file from its live objects'
//! managedFields (or `--field-manager`); build per-file reports and reconcile commands. Nothing
//! here prints: [`check`] returns a [`ManifestsReport`] that `app` renders.
//!
//! Every problem stays attached to the file it concerns (a path that cannot be read, a document
//! that is not YAML, a kind the cluster does not serve, a forbidden LIST, an unreachable API, the
//! `--timeout`), so the other files are still checked and nothing unchecked passes as clean.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::time::Instant;

use crate::cli::ManifestsArgs;
use crate::compare::rules::{RuleError, load_rules};
use crate::compare::{CompareContext, ManagedFields, prepare_desired};
use crate::context::{ContextError, Settings};
use crate::drift::{Engine, ObjectsOutcome};
use crate::live::{DEFAULT_CONCURRENCY, Kinds, LiveReader};
use crate::manifest::{DesiredObject, parse_stream};
use crate::reconcile::Reconciler;
use crate::report::{FileReport, ManifestsReport, ObjectReport, ObjectState, Status};

/// How many files are checked at once (their LISTs are shared, so this bounds little but CPU).
const FILES_AT_ONCE: usize = 16;

/// Why a manifests run, or one of its PATHs, could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum ManifestsError {
    /// A PATH given on the command line does not exist or cannot be inspected.
    #[error("{path}: cannot read: {message}")]
    Unreadable { path: String, message: String },
    /// A folder holds no `.yaml`, `.yml` or `.json` file.
    #[error("{path}: no .yaml, .yml or .json files found in this folder")]
    NoManifests { path: String },
    /// A manifest file is not UTF-8 text.
    #[error("{path}: not UTF-8 text")]
    NotText { path: String },
    /// Ignore rules could not be loaded.
    #[error(transparent)]
    Rules(#[from] RuleError),
    /// The kubeconfig or client could not be set up.
    #[error(transparent)]
    Context(#[from] ContextError),
}

/// One entry found from the PATHs: a manifest file, or a PATH that yielded none.
#[derive(Debug)]
pub enum Found {
    File(PathBuf),
    Problem { path: String, error: ManifestsError },
}

/// Walk the PATHs in order. A file given by name is taken whatever its extension; folders are
/// walked recursively for `.yaml`, `.yml` and `.json` files, entries sorted by name, names
/// starting with `.` skipped (`.git`, `.github`). A file reached twice is listed once.
pub fn find_files(paths: &[PathBuf]) -> Vec<Found> {
    let mut out = Vec::new();
    let mut seen_files = HashSet::new();
    let mut seen_dirs = HashSet::new();
    for path in paths {
        let display = path.display().to_string();
        match std::fs::metadata(path) {
            Err(e) => out.push(Found::Problem {
                path: display.clone(),
                error: ManifestsError::Unreadable { path: display, message: e.to_string() },
            }),
            Ok(m) if m.is_dir() => {
                let before = out.len();
                let mut files_found = 0;
                walk_dir(path, &mut out, &mut files_found, &mut seen_files, &mut seen_dirs);
                if files_found == 0 && out.len() == before {
                    out.push(Found::Problem {
                        path: display.clone(),
                        error: ManifestsError::NoManifests { path: display },
                    });
                }
            }
            Ok(_) => {
                if seen_files.insert(canonical(path)) {
                    out.push(Found::File(path.clone()));
                }
            }
        }
    }
    out
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn is_manifest_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".yaml") || lower.ends_with(".yml") || lower.ends_with(".json")
}

fn walk_dir(
    dir: &Path,
    out: &mut Vec<Found>,
    files_found: &mut usize,
    seen_files: &mut HashSet<PathBuf>,
    seen_dirs: &mut HashSet<PathBuf>,
) {
    if !seen_dirs.insert(canonical(dir)) {
        return; // a symlink loop, or a folder given twice
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd.collect::<Result<Vec<_>, _>>(),
        Err(e) => Err(e),
    };
    let mut entries = match entries {
        Ok(v) => v,
        Err(e) => {
            let path = dir.display().to_string();
            out.push(Found::Problem {
                path: path.clone(),
                error: ManifestsError::Unreadable { path, message: e.to_string() },
            });
            return;
        }
    };
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => walk_dir(&path, out, files_found, seen_files, seen_dirs),
            Ok(_) if is_manifest_name(&name) => {
                *files_found += 1;
                if seen_files.insert(canonical(&path)) {
                    out.push(Found::File(path));
                }
            }
            Ok(_) => {}
            Err(e) if is_manifest_name(&name) => {
                let p = path.display().to_string();
                out.push(Found::Problem {
                    path: p.clone(),
                    error: ManifestsError::Unreadable { path: p, message: e.to_string() },
                });
            }
            Err(_) => {} // a dangling link that is not a manifest
        }
    }
}

/// A file read and parsed, before it is checked against the cluster.
struct ParsedFile {
    path: String,
    desired: Vec<DesiredObject>,
    /// Problems reading or parsing it (the objects that did parse are still checked).
    errors: Vec<String>,
}

fn read_and_parse(found: Found) -> ParsedFile {
    match found {
        Found::Problem { path, error } => ParsedFile { path, desired: Vec::new(), errors: vec![error.to_string()] },
        Found::File(p) => {
            let path = p.display().to_string();
            let text = match std::fs::read(&p) {
                Ok(bytes) => String::from_utf8(bytes).map_err(|_| ManifestsError::NotText { path: path.clone() }),
                Err(e) => Err(ManifestsError::Unreadable { path: path.clone(), message: e.to_string() }),
            };
            match text {
                Ok(text) => {
                    let (desired, errors) = parse_stream(&text, &path);
                    ParsedFile { path, desired, errors: errors.iter().map(ToString::to_string).collect() }
                }
                Err(e) => ParsedFile { path, desired: Vec::new(), errors: vec![e.to_string()] },
            }
        }
    }
}

/// Who applied an object, as read from its managedFields.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Applier {
    pub manager: String,
    pub server_side: bool,
}

/// The applier of one live object (see [`ManagedFields::likely_deployer`]).
pub fn applier_of(desired: &DesiredObject, live: &Value) -> Option<Applier> {
    let prepared = prepare_desired(&desired.kind, &desired.body);
    let managed = ManagedFields::from_object(live);
    managed
        .likely_deployer(&[&desired.body, &prepared], live)
        .map(|e| Applier { manager: e.manager.clone(), server_side: e.operation == "Apply" })
}

/// With `--field-manager NAME`: whether NAME applied `live` server-side.
fn named_applier_is_server_side(name: &str, live: &Value) -> bool {
    ManagedFields::from_object(live).entries.iter().any(|e| e.manager == name && e.operation == "Apply")
}

/// The most common applier (ties: the first seen).
fn most_common(appliers: impl IntoIterator<Item = Applier>) -> Option<Applier> {
    let mut counts: Vec<(Applier, usize)> = Vec::new();
    for a in appliers {
        match counts.iter_mut().find(|(x, _)| *x == a) {
            Some((_, n)) => *n += 1,
            None => counts.push((a, 1)),
        }
    }
    let max = counts.iter().map(|(_, n)| *n).max()?;
    counts.into_iter().find(|(_, n)| *n == max).map(|(a, _)| a)
}

/// A file after its objects were compared.
struct CheckedFile {
    parsed: ParsedFile,
    outcome: Result<ObjectsOutcome, String>,
    applier: Option<Applier>,
}

/// Options of one manifests run, resolved from the flags.
pub struct ManifestsOptions {
    pub paths: Vec<PathBuf>,
    pub default_namespace: String,
    pub field_manager: Option<String>,
    pub timeout: Option<Duration>,
}

/// Run `kubectl drift manifests`: returns the report (fatal only when the ignore rules or the
/// kubeconfig cannot be loaded; every other problem is reported against its file).
pub async fn check(settings: &Settings, args: &ManifestsArgs) -> Result<ManifestsReport, ManifestsError> {
    let deadline = (args.timeout > 0).then(|| Instant::now() + Duration::from_secs(args.timeout));
    let rules = load_rules(args.config.as_deref(), &args.ignore)?;
    let conn = settings.connect().await?;
    let reconciler = Reconciler { context: settings.context.clone(), kubeconfig: settings.kubeconfig.clone() };
    let options = ManifestsOptions {
        paths: args.all_paths(),
        default_namespace: conn.namespace.clone(),
        field_manager: args.field_manager.clone(),
        timeout: (args.timeout > 0).then(|| Duration::from_secs(args.timeout)),
    };
    let discovered = match with_deadline(deadline, Kinds::discover(&conn.client)).await {
        Some(Ok(kinds)) => Ok(kinds),
        Some(Err(e)) => Err(e.to_string()),
        None => Err(timeout_message(options.timeout, "while discovering the cluster's API resources")),
    };
    let engine = discovered.map(|kinds| Engine {
        kinds: Arc::new(kinds),
        reader: Arc::new(LiveReader::new(conn.client.clone(), DEFAULT_CONCURRENCY)),
        rules,
        show_secrets: args.show_secrets,
    });
    Ok(check_paths(engine, &options, deadline, &reconciler).await)
}

async fn with_deadline<F: std::future::Future>(deadline: Option<Instant>, fut: F) -> Option<F::Output> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d, fut).await.ok(),
        None => Some(fut.await),
    }
}

fn timeout_message(timeout: Option<Duration>, what: &str) -> String {
    format!("timed out after {}s (--timeout) {what}", timeout.map(|t| t.as_secs()).unwrap_or(0))
}

/// Check every file found from `options.paths`. `engine` is `Err` when the cluster could not be
/// reached (then every file is reported with that error).
pub async fn check_paths(
    engine: Result<Engine, String>,
    options: &ManifestsOptions,
    deadline: Option<Instant>,
    reconciler: &Reconciler,
) -> ManifestsReport {
    let parsed: Vec<ParsedFile> = find_files(&options.paths).into_iter().map(read_and_parse).collect();
    let objects_checked = parsed.iter().map(|f| f.desired.len()).sum();
    let ctx = match &options.field_manager {
        Some(name) => CompareContext { deployers: vec![name.clone()], ..Default::default() },
        None => CompareContext { infer_deployer: true, ..Default::default() },
    };

    let checked: Vec<CheckedFile> = match &engine {
        Err(e) => parsed
            .into_iter()
            .map(|p| {
                let outcome = if p.desired.is_empty() { Ok(ObjectsOutcome::default()) } else { Err(e.clone()) };
                CheckedFile { parsed: p, outcome, applier: None }
            })
            .collect(),
        Ok(engine) => {
            futures::stream::iter(parsed.into_iter().map(|p| {
                let ctx = &ctx;
                async move {
                    if p.desired.is_empty() {
                        return CheckedFile { parsed: p, outcome: Ok(ObjectsOutcome::default()), applier: None };
                    }
                    let run = engine.check_objects(&p.desired, &options.default_namespace, ctx, None);
                    match with_deadline(deadline, run).await {
                        Some(outcome) => {
                            let applier = file_applier(
                                engine,
                                &p.desired,
                                &options.default_namespace,
                                &outcome,
                                options.field_manager.as_deref(),
                            );
                            CheckedFile { parsed: p, outcome: Ok(outcome), applier }
                        }
                        None => CheckedFile {
                            parsed: p,
                            outcome: Err(timeout_message(options.timeout, "before this file was checked")),
                            applier: None,
                        },
                    }
                }
            }))
            .buffered(FILES_AT_ONCE)
            .collect()
            .await
        }
    };

    // A file whose objects tell nothing about their applier (all deleted, or every field taken
    // over by hand) is taken to be applied like the rest of the run.
    let run_applier = most_common(checked.iter().filter_map(|c| c.applier.clone()));
    let files = checked.into_iter().map(|c| file_report(c, run_applier.as_ref(), options, reconciler)).collect();
    ManifestsReport::new(files, objects_checked)
}

/// Who applied a file: `--field-manager`, else the most common applier of its live objects.
fn file_applier(
    engine: &Engine,
    desired: &[DesiredObject],
    default_namespace: &str,
    outcome: &ObjectsOutcome,
    named: Option<&str>,
) -> Option<Applier> {
    let lives = desired.iter().filter_map(|d| {
        let rk = engine.kinds.resolve(&d.api_version, &d.kind).ok()?;
        let ns = if rk.namespaced {
            d.namespace.clone().unwrap_or_else(|| default_namespace.to_string())
        } else {
            String::new()
        };
        outcome.live.get(&(d.kind.clone(), ns, d.name.clone())).map(|live| (d, live))
    });
    match named {
        Some(name) => {
            let lives: Vec<_> = lives.collect();
            (!lives.is_empty()).then(|| Applier {
                manager: name.to_string(),
                server_side: lives.iter().any(|(_, live)| named_applier_is_server_side(name, live)),
            })
        }
        None => most_common(lives.filter_map(|(d, live)| applier_of(d, live))),
    }
}

fn file_report(
    c: CheckedFile,
    run_applier: Option<&Applier>,
    options: &ManifestsOptions,
    reconciler: &Reconciler,
) -> FileReport {
    let CheckedFile { parsed, outcome, applier } = c;
    let mut errors = parsed.errors;
    let (mut objects, live) = match outcome {
        Ok(o) => {
            errors.extend(o.errors);
            (o.objects, o.live)
        }
        Err(e) => {
            errors.push(e);
            (Vec::new(), HashMap::new())
        }
    };
    sort_in_document_order(&mut objects);
    // An object that could not be checked carries its own message; keep the file's list for the
    // rest (parse errors, failed reads not tied to one object).
    let object_errors: HashSet<String> = objects
        .iter()
        .filter(|o| o.state == ObjectState::Error)
        .map(|o| format!("{} {}: {}", o.kind, o.name, o.error.as_deref().unwrap_or("")))
        .collect();
    errors.retain(|e| !object_errors.contains(e));
    let drifted = objects.iter().any(ObjectReport::is_drift);
    let status = if !errors.is_empty() || !object_errors.is_empty() {
        Status::Error
    } else if drifted {
        Status::Drifted
    } else {
        Status::Clean
    };
    // With --field-manager the name is known even when no object of the file is live.
    let applier = applier.or_else(|| {
        options
            .field_manager
            .as_ref()
            .map(|name| Applier { manager: name.clone(), server_side: run_applier.is_some_and(|a| a.server_side) })
    });
    let reconcile = if drifted {
        // A file with nothing live to tell (every object deleted) is re-applied like the rest.
        let how = applier.as_ref().or(run_applier);
        reconciler.for_manifest_file(
            &parsed.path,
            &options.default_namespace,
            how.map(|a| a.manager.as_str()),
            how.is_some_and(|a| a.server_side),
            &objects,
            &live,
        )
    } else {
        Vec::new()
    };
    FileReport {
        path: parsed.path,
        status,
        error: match (errors.is_empty(), object_errors.len()) {
            (false, _) => Some(errors.join("; ")),
            (true, 0) => None,
            (true, 1) => Some("1 object could not be checked".to_string()),
            (true, n) => Some(format!("{n} objects could not be checked")),
        },
        field_manager: applier.as_ref().map(|a| a.manager.clone()),
        server_side: applier.is_some_and(|a| a.server_side),
        objects,
        reconcile,
    }
}

/// The document number of `file#N`.
fn document_number(source: Option<&str>) -> usize {
    source.and_then(|s| s.rsplit_once('#')).and_then(|(_, n)| n.parse().ok()).unwrap_or(usize::MAX)
}

/// Objects in the order their documents appear in the file (stable within a List).
fn sort_in_document_order(objects: &mut [ObjectReport]) {
    objects.sort_by_key(|o| document_number(o.source.as_deref()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct TempDir(PathBuf);
    impl TempDir {
        fn new(name: &str) -> TempDir {
            let p = std::env::temp_dir().join(format!("drift-manifests-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
        fn write(&self, rel: &str, text: &str) {
            let p = self.0.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn names(found: &[Found], root: &Path) -> Vec<String> {
        found
            .iter()
            .map(|f| match f {
                Found::File(p) => p.strip_prefix(root).unwrap().display().to_string(),
                Found::Problem { path, .. } => format!("problem:{path}"),
            })
            .collect()
    }

    #[test]
    fn walks_folders_in_a_stable_order() {
        let t = TempDir::new("walk");
        for f in
            ["b.yaml", "a.yml", "c.json", "notes.txt", "sub/z.yaml", "sub/deeper/a.YAML", ".github/ci.yml", "a/x.yaml"]
        {
            t.write(f, "");
        }
        let found = find_files(std::slice::from_ref(&t.0));
        assert_eq!(
            names(&found, &t.0),
            vec!["a/x.yaml", "a.yml", "b.yaml", "c.json", "sub/deeper/a.YAML", "sub/z.yaml"]
        );
        // A file named directly is taken whatever its name; a file reached twice is listed once.
        let found = find_files(&[t.0.join("notes.txt"), t.0.join("b.yaml"), t.0.clone()]);
        assert_eq!(names(&found, &t.0)[..3], ["notes.txt", "b.yaml", "a/x.yaml"]);
        assert_eq!(found.len(), 7);
    }

    #[test]
    fn empty_folders_and_missing_paths_are_problems() {
        let t = TempDir::new("empty");
        t.write("only/readme.md", "");
        let found = find_files(&[t.0.join("only"), t.0.join("nope")]);
        assert_eq!(found.len(), 2);
        let msgs: Vec<String> = found
            .iter()
            .map(|f| match f {
                Found::Problem { error, .. } => error.to_string(),
                Found::File(p) => panic!("unexpected file {p:?}"),
            })
            .collect();
        assert!(msgs[0].contains("no .yaml, .yml or .json files"), "{msgs:?}");
        assert!(msgs[1].contains("nope") && msgs[1].contains("cannot read"), "{msgs:?}");
    }

    #[test]
    fn parse_problems_name_the_file() {
        let t = TempDir::new("parse");
        t.write("bad.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {p: [hunter2\n");
        std::fs::write(t.0.join("bin.yaml"), [0xffu8, 0xfe, 0x00]).unwrap();
        let parsed: Vec<ParsedFile> = find_files(std::slice::from_ref(&t.0)).into_iter().map(read_and_parse).collect();
        assert_eq!(parsed.len(), 2);
        let all = parsed.iter().flat_map(|p| p.errors.clone()).collect::<Vec<_>>().join("\n");
        assert!(all.contains("bad.yaml: document 1") && all.contains("bin.yaml: not UTF-8"), "{all}");
        assert!(!all.contains("hunter2"), "{all}");
    }

    #[test]
    fn applier_is_read_from_managed_fields() {
        let d = DesiredObject {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "c".into(),
            namespace: None,
            body: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}),
            source: "f.yaml#1".into(),
        };
        let live = json!({"metadata": {"name": "c", "managedFields": [
            {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}},
            {"manager": "kubectl-patch", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]},
            "data": {"a": "9", "b": "2"}});
        assert_eq!(applier_of(&d, &live), Some(Applier { manager: "kubectl".into(), server_side: true }));
        assert!(named_applier_is_server_side("kubectl", &live));
        assert!(!named_applier_is_server_side("kubectl-patch", &live));
    }

    #[test]
    fn most_common_applier_prefers_the_majority_then_the_first() {
        let a = |m: &str| Applier { manager: m.into(), server_side: false };
        assert_eq!(most_common(vec![a("x"), a("y"), a("y")]), Some(a("y")));
        assert_eq!(most_common(vec![a("x"), a("y")]), Some(a("x")));
        assert_eq!(most_common(Vec::new()), None);
    }

    #[test]
    fn objects_keep_document_order() {
        let obj = |name: &str, source: &str| ObjectReport {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: None,
            name: name.into(),
            state: crate::report::ObjectState::Changed,
            fields: Vec::new(),
            error: None,
            source: Some(source.into()),
            from_revision: None,
        };
        let mut objs = vec![obj("c", "d/x.yaml#10"), obj("a", "d/x.yaml#2"), obj("b", "d/x.yaml#2")];
        sort_in_document_order(&mut objs);
        assert_eq!(objs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), vec!["a", "b", "c"]);
    }
}
