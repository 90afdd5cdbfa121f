//! Manifests drift (`kubectl drift manifests PATH...`): files, folders and kustomizations of
//! manifests checked against the live cluster with the release drift engine
//! ([`Engine::check_objects`]).
//!
//! Steps: walk the PATHs (folders recursively, `.yaml`/`.yml`/`.json`, sorted, hidden names
//! skipped; a folder holding a kustomization file is one kustomization, a folder holding a
//! `Chart.yaml` is skipped); read each file, or render each kustomization with `kubectl
//! kustomize` ([`kustomize`]); check each target's objects (the LISTs are shared and cached
//! across targets); decide who applied each target from its live objects' managedFields (or
//! `--field-manager`); look for extra objects by the ApplySet labels or `--selector`
//! ([`extra`]); build per-target reports and reconcile commands. Nothing here prints: [`check`]
//! returns a [`ManifestsReport`] that `app` renders.
//!
//! Every problem stays attached to the file it concerns (a path that cannot be read, a document
//! that is not YAML, a kustomization that does not render, a kind the cluster does not serve, a
//! forbidden LIST, an unreachable API, the `--timeout`), so the other files are still checked and
//! nothing unchecked passes as clean.

pub mod extra;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::time::Instant;

use crate::engine::compare::rules::IgnoreRule;
use crate::engine::compare::{CompareContext, ManagedFields, prepare_desired};
use crate::engine::drift::{Engine, ObjectsOutcome};
use crate::engine::reconcile::{Applied, Reconciler};
use crate::report::progress::{Counter, Progress};
use crate::report::{
    FileProblem, FileReport, ManifestsReport, ObjectReport, ObjectState, SkippedPath, SourceType, Status,
};
use crate::source::cluster::Cluster;
use crate::source::kustomize;
use crate::source::manifest::{DesiredObject, ParsedManifests, SkippedObject, parse_manifests};

/// How many files are checked at once (their LISTs are shared, so this bounds little but CPU).
const FILES_AT_ONCE: usize = 16;

/// How many targets are read (kustomizations rendered) at once.
const RENDERS_AT_ONCE: usize = 4;

/// The folder checked when no PATH is given (the layout of the cron script this replaces).
pub const DEFAULT_PATH: &str = "deploy";

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
    /// `-k DIR` names a folder without a kustomization file.
    #[error("{path}: not a kustomization (no kustomization.yaml, kustomization.yml or Kustomization in it)")]
    NotKustomization { path: String },
    /// A PATH given on the command line is a Helm chart, which only renders with its values.
    #[error(
        "{path}: a Helm chart (Chart.yaml), not manifests: check its installed release with `kubectl drift release NAME`"
    )]
    Chart { path: String },
    /// A kustomization could not be rendered.
    #[error(transparent)]
    Kustomize(#[from] kustomize::KustomizeError),
    /// No PATH was given and the default folder is not there.
    #[error(
        "no PATH given and ./{DEFAULT_PATH} does not exist: name the manifests to check \
         (kubectl drift manifests PATH, -f FILE, -k DIR)"
    )]
    NoDefaultPath,
}

/// Why a Helm chart met in a walk is skipped.
const CHART_SKIPPED: &str =
    "a Helm chart (Chart.yaml): its templates are not manifests; check its release with `kubectl drift release`";
/// Why a Kustomize component met in a walk is skipped.
const COMPONENT_SKIPPED: &str = "a Kustomize component: checked as part of the kustomizations that use it";

/// One entry found from the PATHs.
#[derive(Debug)]
pub enum Found {
    /// A manifest file.
    File(PathBuf),
    /// A kustomization directory; `walked` when met in a folder rather than named.
    Kustomization { dir: PathBuf, walked: bool },
    /// A folder met in a walk and not checked, with why.
    Skipped { path: String, reason: String },
    /// A PATH that yielded nothing.
    Problem { path: String, error: ManifestsError },
}

/// Walk the PATHs in order, then the `-k` directories. A file given by name is taken whatever
/// its extension; a folder holding a kustomization file is one kustomization; other folders are
/// walked recursively for `.yaml`, `.yml` and `.json` files, entries sorted by name, names
/// starting with `.` skipped (`.git`, `.github`), kustomizations met taken whole and Helm charts
/// skipped. A kustomization met in a walk that another kustomization of the run builds on (a
/// base) is skipped: its objects are checked through that one. Anything reached twice is listed
/// once.
pub fn find_targets(paths: &[PathBuf], kustomizations: &[PathBuf]) -> Vec<Found> {
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
            Ok(m) if m.is_dir() && kustomize::kustomization_file(path).is_some() => {
                if seen_dirs.insert(canonical(path)) {
                    out.push(Found::Kustomization { dir: path.clone(), walked: false });
                }
            }
            Ok(m) if m.is_dir() && is_chart(path) => {
                out.push(Found::Problem { path: display.clone(), error: ManifestsError::Chart { path: display } })
            }
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
    for dir in kustomizations {
        let display = dir.display().to_string();
        match std::fs::metadata(dir) {
            Err(e) => out.push(Found::Problem {
                path: display.clone(),
                error: ManifestsError::Unreadable { path: display, message: e.to_string() },
            }),
            Ok(m) if !m.is_dir() || kustomize::kustomization_file(dir).is_none() => out.push(Found::Problem {
                path: display.clone(),
                error: ManifestsError::NotKustomization { path: display },
            }),
            Ok(_) => {
                if seen_dirs.insert(canonical(dir)) {
                    out.push(Found::Kustomization { dir: dir.clone(), walked: false });
                }
            }
        }
    }
    skip_bases_and_components(out)
}

/// Kustomizations met in a walk that are components, or bases of another kustomization of the
/// run, become skipped entries.
fn skip_bases_and_components(found: Vec<Found>) -> Vec<Found> {
    let kustomizations: Vec<(PathBuf, String, kustomize::KustomizationRefs)> = found
        .iter()
        .filter_map(|f| match f {
            Found::Kustomization { dir, .. } => {
                Some((canonical(dir), dir.display().to_string(), kustomize::references(dir)))
            }
            _ => None,
        })
        .collect();
    found
        .into_iter()
        .map(|f| match f {
            Found::Kustomization { dir, walked: true } => {
                let me = canonical(&dir);
                let path = dir.display().to_string();
                let refs = kustomizations.iter().find(|(c, _, _)| *c == me).map(|(_, _, r)| r);
                if refs.is_some_and(|r| r.component) {
                    return Found::Skipped { path, reason: COMPONENT_SKIPPED.to_string() };
                }
                match kustomizations.iter().find(|(c, _, r)| *c != me && r.directories.contains(&me)) {
                    Some((_, user, _)) => Found::Skipped {
                        path,
                        reason: format!("a Kustomize base of {user}: its objects are checked through it"),
                    },
                    None => Found::Kustomization { dir, walked: true },
                }
            }
            other => other,
        })
        .collect()
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn is_manifest_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".yaml") || lower.ends_with(".yml") || lower.ends_with(".json")
}

fn is_chart(dir: &Path) -> bool {
    dir.join("Chart.yaml").is_file()
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
            Ok(m) if m.is_dir() && kustomize::kustomization_file(&path).is_some() => {
                *files_found += 1;
                if seen_dirs.insert(canonical(&path)) {
                    out.push(Found::Kustomization { dir: path, walked: true });
                }
            }
            Ok(m) if m.is_dir() && is_chart(&path) => {
                out.push(Found::Skipped { path: path.display().to_string(), reason: CHART_SKIPPED.to_string() })
            }
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

/// A file read and parsed (or a kustomization rendered), before it is checked against the cluster.
struct ParsedFile {
    path: String,
    source_type: SourceType,
    desired: Vec<DesiredObject>,
    skipped: Vec<SkippedObject>,
    /// Problems reading or parsing it (the objects that did parse are still checked).
    errors: Vec<String>,
}

impl ParsedFile {
    fn failed(path: String, source_type: SourceType, error: String) -> ParsedFile {
        ParsedFile { path, source_type, desired: Vec::new(), skipped: Vec::new(), errors: vec![error] }
    }

    fn parsed(path: String, source_type: SourceType, p: ParsedManifests) -> ParsedFile {
        let errors = p.errors.iter().map(ToString::to_string).collect();
        ParsedFile { path, source_type, desired: p.objects, skipped: p.skipped, errors }
    }
}

/// How kustomizations are rendered: the kubectl binary, and when to give up.
#[derive(Debug, Clone)]
pub struct Renderer {
    pub kubectl: PathBuf,
    pub deadline: Option<std::time::Instant>,
    pub timeout_secs: u64,
}

fn read_and_parse(found: Found, renderer: &Renderer) -> ParsedFile {
    match found {
        Found::Problem { path, error } => ParsedFile::failed(path, SourceType::File, error.to_string()),
        // Never reached: skipped folders are set apart before reading (see `read_targets`).
        Found::Skipped { path, reason } => ParsedFile::failed(path, SourceType::File, reason),
        Found::Kustomization { dir, .. } => {
            let path = dir.display().to_string();
            match kustomize::render(&renderer.kubectl, &dir, &path, renderer.deadline, renderer.timeout_secs) {
                Ok(p) => ParsedFile::parsed(path, SourceType::Kustomization, p),
                Err(e) => ParsedFile::failed(path, SourceType::Kustomization, e.to_string()),
            }
        }
        Found::File(p) => {
            let path = p.display().to_string();
            let text = match std::fs::read(&p) {
                Ok(bytes) => String::from_utf8(bytes).map_err(|_| ManifestsError::NotText { path: path.clone() }),
                Err(e) => Err(ManifestsError::Unreadable { path: path.clone(), message: e.to_string() }),
            };
            match text {
                Ok(text) => ParsedFile::parsed(path.clone(), SourceType::File, parse_manifests(&text, &path)),
                Err(e) => ParsedFile::failed(path, SourceType::File, e.to_string()),
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
    /// Files and folders (`PATH`, `-f`).
    pub paths: Vec<PathBuf>,
    /// Kustomization directories (`-k`).
    pub kustomizations: Vec<PathBuf>,
    pub default_namespace: String,
    pub field_manager: Option<String>,
    pub timeout: Option<Duration>,
    /// The kubectl that renders kustomizations.
    pub kubectl: PathBuf,
    /// `--selector`: live objects with these labels in no file are extra.
    pub selector: Option<String>,
}

impl ManifestsOptions {
    /// The options for `paths` with every default (as `watch --manifests` checks them).
    pub fn for_paths(paths: Vec<PathBuf>, default_namespace: String, kubectl: PathBuf) -> ManifestsOptions {
        ManifestsOptions {
            paths,
            kustomizations: Vec::new(),
            default_namespace,
            field_manager: None,
            timeout: None,
            kubectl,
            selector: None,
        }
    }
}

/// The PATHs to check: those `given`, else `./deploy` when it exists (the cron default), else a
/// usage error naming it. With kustomizations (`-k`) and no PATH, no PATH is checked.
pub fn paths_or_default(
    given: Vec<PathBuf>,
    kustomizations: &[PathBuf],
    cwd: &Path,
) -> Result<Vec<PathBuf>, ManifestsError> {
    if !given.is_empty() || !kustomizations.is_empty() {
        return Ok(given);
    }
    if cwd.join(DEFAULT_PATH).exists() {
        Ok(vec![PathBuf::from(DEFAULT_PATH)])
    } else {
        Err(ManifestsError::NoDefaultPath)
    }
}

/// Check `options` on `cluster` (`deadline`: `--timeout`, counted from the start of the run):
/// discovery, then every target. Every problem is reported against its file, never raised.
pub async fn check(
    cluster: &Cluster,
    rules: Vec<IgnoreRule>,
    show_secrets: bool,
    options: &ManifestsOptions,
    deadline: Option<Instant>,
    progress: &dyn Progress,
) -> ManifestsReport {
    progress.start("discovering kinds", None);
    let engine = match with_deadline(deadline, Engine::connect(cluster, rules, show_secrets)).await {
        Some(Ok(engine)) => Ok(engine),
        Some(Err(e)) => Err(e.to_string()),
        None => Err(timeout_message(options.timeout, "while discovering the cluster's API resources")),
    };
    let mut report = check_paths(engine, options, deadline, &Reconciler::from(cluster.target()), progress).await;
    report.cluster = cluster.name().to_string();
    report
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

/// Find and read every target of the run: the folders skipped, and the files and kustomizations
/// parsed. Reading files and running `kubectl kustomize` block, so they run off the async workers.
async fn read_targets(options: &ManifestsOptions, deadline: Option<Instant>) -> (Vec<SkippedPath>, Vec<ParsedFile>) {
    let found = find_targets(&options.paths, &options.kustomizations);
    let renderer = Renderer {
        kubectl: options.kubectl.clone(),
        deadline: deadline.map(Instant::into_std),
        timeout_secs: options.timeout.map(|t| t.as_secs()).unwrap_or(0),
    };
    let read = tokio::task::spawn_blocking(move || {
        let mut skipped = Vec::new();
        let mut targets = Vec::new();
        for f in found {
            match f {
                Found::Skipped { path, reason } => skipped.push(SkippedPath { path, reason }),
                other => targets.push(other),
            }
        }
        (skipped, read_all(targets, &renderer))
    });
    match read.await {
        Ok(read) => read,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Read every target, in order; up to [`RENDERS_AT_ONCE`] at a time, since each kustomization
/// waits on its own `kubectl kustomize`.
fn read_all(targets: Vec<Found>, renderer: &Renderer) -> Vec<ParsedFile> {
    let workers = RENDERS_AT_ONCE.min(targets.len()).max(1);
    let mut slots: Vec<(usize, Found)> = targets.into_iter().enumerate().collect();
    let mut shares: Vec<Vec<(usize, Found)>> = (0..workers).map(|_| Vec::new()).collect();
    for (n, slot) in slots.drain(..).enumerate() {
        shares[n % workers].push(slot);
    }
    let mut read: Vec<(usize, ParsedFile)> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .into_iter()
            .map(|share| {
                scope
                    .spawn(move || share.into_iter().map(|(i, f)| (i, read_and_parse(f, renderer))).collect::<Vec<_>>())
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    read.sort_by_key(|(i, _)| *i);
    read.into_iter().map(|(_, p)| p).collect()
}

/// Check every target found from `options`. `engine` is `Err` when the cluster could not be
/// reached (then every file is reported with that error). `progress` hears of each file checked.
pub async fn check_paths(
    engine: Result<Engine, String>,
    options: &ManifestsOptions,
    deadline: Option<Instant>,
    reconciler: &Reconciler,
    progress: &dyn Progress,
) -> ManifestsReport {
    progress.start("reading files", None);
    let (skipped_paths, parsed) = read_targets(options, deadline).await;
    progress.start("files", Some(parsed.len() as u64));
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
            .inspect(|c| {
                progress.add(Counter::Objects, c.parsed.desired.len() as u64);
                progress.step(&c.parsed.path);
            })
            .collect()
            .await
        }
    };

    progress.start("extra objects", None);
    let extra = extra_objects(&engine, &checked, options, deadline, reconciler).await;
    // A file whose objects tell nothing about their applier (all deleted, or every field taken
    // over by hand) is taken to be applied like the rest of the run.
    let run_applier = most_common(checked.iter().filter_map(|c| c.applier.clone()));
    let files = checked.into_iter().map(|c| file_report(c, run_applier.as_ref(), options, reconciler)).collect();
    ManifestsReport::with_extra(files, skipped_paths, extra, objects_checked)
}

/// The search for extra objects over the whole run (see [`extra`]).
async fn extra_objects(
    engine: &Result<Engine, String>,
    checked: &[CheckedFile],
    options: &ManifestsOptions,
    deadline: Option<Instant>,
    reconciler: &Reconciler,
) -> Option<crate::report::ExtraReport> {
    let selectors: Vec<String> = options.selector.iter().cloned().collect();
    let engine = match engine {
        Ok(engine) => engine,
        // Nothing could be read: only a search the user asked for is reported (as failed).
        Err(e) => return (!selectors.is_empty()).then(|| extra::failed(selectors, e.clone())),
    };
    let view = extra::Checked {
        desired: checked.iter().flat_map(|c| &c.parsed.desired).collect(),
        skipped: checked.iter().flat_map(|c| &c.parsed.skipped).collect(),
        live: checked.iter().filter_map(|c| c.outcome.as_ref().ok()).flat_map(|o| o.live.values()).collect(),
        default_namespace: &options.default_namespace,
    };
    let search = extra::find(engine, &view, options.selector.as_deref(), reconciler);
    match with_deadline(deadline, search).await {
        Some(found) => found,
        None => Some(extra::failed(selectors, timeout_message(options.timeout, "while looking for extra objects"))),
    }
}

/// The namespace an object lives in: as written, else the default, and none (`""`) for a
/// cluster-scoped kind.
fn live_namespace(rk: &crate::source::live::ResolvedKind, written: Option<&str>, default_namespace: &str) -> String {
    if rk.namespaced { written.unwrap_or(default_namespace).to_string() } else { String::new() }
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
        let ns = live_namespace(&rk, d.namespace.as_deref(), default_namespace);
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
    let status = Status::judge(!errors.is_empty() || !object_errors.is_empty(), drifted, false);
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
        let source = match parsed.source_type {
            SourceType::File => Applied::File(&parsed.path),
            SourceType::Kustomization => Applied::Kustomization(&parsed.path),
        };
        let mut commands = reconciler.for_manifest_file(
            source,
            &options.default_namespace,
            how.map(|a| a.manager.as_str()),
            how.is_some_and(|a| a.server_side),
            &objects,
            &live,
        );
        // kubectl adds an ApplySet's part-of label when it applies with --applyset (which
        // requires --prune): a plain re-apply removes it, taking the objects out of the set.
        let sets = extra::applyset_ids(live.values());
        if let Some(at) = commands.iter().position(|c| c.starts_with("kubectl apply ")).filter(|_| !sets.is_empty()) {
            let ids = sets.into_iter().collect::<Vec<_>>().join(", ");
            commands.insert(
                at,
                format!(
                    "# its objects belong to ApplySet {ids}: the next command removes their {} label (taking \
                     them out of the set); re-running the folder's `kubectl apply --prune --applyset=...` keeps it",
                    extra::PART_OF_LABEL
                ),
            );
        }
        commands
    } else {
        Vec::new()
    };
    FileReport {
        path: parsed.path,
        status,
        error: match (errors.is_empty(), object_errors.len()) {
            (false, _) => Some(FileProblem::Failed(errors)),
            (true, 0) => None,
            (true, n) => Some(FileProblem::ObjectsUnchecked(n)),
        },
        field_manager: applier.as_ref().map(|a| a.manager.clone()),
        server_side: applier.is_some_and(|a| a.server_side),
        source_type: parsed.source_type,
        objects,
        skipped: parsed.skipped,
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
                Found::Kustomization { dir, walked } => {
                    format!(
                        "kustomization:{}{}",
                        dir.strip_prefix(root).unwrap().display(),
                        if *walked { "" } else { "!" }
                    )
                }
                Found::Skipped { path, .. } => {
                    format!("skipped:{}", Path::new(path).strip_prefix(root).unwrap().display())
                }
                Found::Problem { path, .. } => format!("problem:{path}"),
            })
            .collect()
    }

    fn find_targets_of(paths: &[PathBuf]) -> Vec<Found> {
        find_targets(paths, &[])
    }

    fn no_kubectl() -> Renderer {
        Renderer { kubectl: PathBuf::from("/nonexistent/kubectl"), deadline: None, timeout_secs: 0 }
    }

    #[test]
    fn kustomizations_are_taken_whole_and_charts_skipped() {
        let t = TempDir::new("kust");
        for f in [
            "apps/shop/base/kustomization.yaml",
            "apps/shop/base/deployment.yaml",
            "apps/shop/overlays/prod/kustomization.yaml",
            "apps/shop/overlays/prod/patch.yaml",
            "apps/comp/kustomization.yaml",
            "apps/lone/Kustomization",
            "charts/shop/Chart.yaml",
            "charts/shop/templates/x.yaml",
            "plain/cm.yaml",
        ] {
            t.write(f, "");
        }
        t.write("apps/shop/overlays/prod/kustomization.yaml", "resources: [../../base]\ncomponents: [../../../comp]\n");
        t.write("apps/comp/kustomization.yaml", "kind: Component\n");
        let found = find_targets(std::slice::from_ref(&t.0), &[t.0.join("apps/shop/base")]);
        assert_eq!(
            names(&found, &t.0),
            vec![
                "skipped:apps/comp",
                "kustomization:apps/lone",
                "skipped:apps/shop/base",
                "kustomization:apps/shop/overlays/prod",
                "skipped:charts/shop",
                "plain/cm.yaml",
            ]
        );
        let reason = |i: usize| match &found[i] {
            Found::Skipped { reason, .. } => reason.clone(),
            other => panic!("{other:?}"),
        };
        assert!(reason(0).contains("component"), "{}", reason(0));
        assert!(
            reason(2).contains("a Kustomize base of") && reason(2).ends_with("checked through it"),
            "{}",
            reason(2)
        );
        assert!(reason(4).contains("Helm chart"), "{}", reason(4));

        // Named, a kustomization is checked even when it is a base; a named chart is an error.
        let found = find_targets(&[t.0.join("apps/shop/base"), t.0.join("charts/shop")], &[t.0.join("plain")]);
        assert_eq!(names(&found, &t.0)[0], "kustomization:apps/shop/base!");
        let errors: Vec<String> = found
            .iter()
            .filter_map(|f| match f {
                Found::Problem { error, .. } => Some(error.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("a Helm chart (Chart.yaml)"), "{errors:?}");
        assert!(errors[1].contains("plain: not a kustomization"), "{errors:?}");
    }

    #[test]
    fn targets_are_read_in_order() {
        let t = TempDir::new("order");
        let names: Vec<String> = (0..9).map(|i| format!("f{i}.yaml")).collect();
        for n in &names {
            t.write(
                n,
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {}}}\n", n.trim_end_matches(".yaml")),
            );
        }
        t.write("k/kustomization.yaml", "resources: []\n");
        let mut found = find_targets_of(std::slice::from_ref(&t.0));
        found.rotate_left(3);
        let expected: Vec<String> = found
            .iter()
            .map(|f| match f {
                Found::File(p) => p.display().to_string(),
                Found::Kustomization { dir, .. } => dir.display().to_string(),
                other => panic!("{other:?}"),
            })
            .collect();
        let read = read_all(found, &no_kubectl());
        assert_eq!(read.iter().map(|p| p.path.clone()).collect::<Vec<_>>(), expected);
        assert!(read.iter().filter(|p| p.source_type == SourceType::File).all(|p| p.desired.len() == 1));
        assert_eq!(read.iter().filter(|p| p.source_type == SourceType::Kustomization).count(), 1);
    }

    #[test]
    fn a_missing_kubectl_is_named() {
        let t = TempDir::new("nokubectl");
        t.write("k/kustomization.yaml", "resources: []\n");
        let parsed = read_and_parse(Found::Kustomization { dir: t.0.join("k"), walked: false }, &no_kubectl());
        assert_eq!(parsed.source_type, SourceType::Kustomization);
        let msg = parsed.errors.join("\n");
        assert!(msg.contains("kubectl was not found") && msg.contains("/nonexistent/kubectl"), "{msg}");
        assert!(msg.contains("--kubectl") && msg.contains("KUBECTL"), "{msg}");
    }

    #[test]
    fn no_path_means_deploy_when_it_exists() {
        let t = TempDir::new("default");
        let err = paths_or_default(vec![], &[], &t.0).unwrap_err().to_string();
        assert!(err.contains("./deploy does not exist"), "{err}");
        t.write("deploy/app.yaml", "");
        assert_eq!(paths_or_default(vec![], &[], &t.0).unwrap(), vec![PathBuf::from("deploy")]);
        assert_eq!(paths_or_default(vec!["x".into()], &[], &t.0).unwrap(), vec![PathBuf::from("x")]);
        assert!(paths_or_default(vec![], &["o".into()], &t.0).unwrap().is_empty());
    }

    #[test]
    fn walks_folders_in_a_stable_order() {
        let t = TempDir::new("walk");
        for f in
            ["b.yaml", "a.yml", "c.json", "notes.txt", "sub/z.yaml", "sub/deeper/a.YAML", ".github/ci.yml", "a/x.yaml"]
        {
            t.write(f, "");
        }
        let found = find_targets_of(std::slice::from_ref(&t.0));
        assert_eq!(
            names(&found, &t.0),
            vec!["a/x.yaml", "a.yml", "b.yaml", "c.json", "sub/deeper/a.YAML", "sub/z.yaml"]
        );
        // A file named directly is taken whatever its name; a file reached twice is listed once.
        let found = find_targets_of(&[t.0.join("notes.txt"), t.0.join("b.yaml"), t.0.clone()]);
        assert_eq!(names(&found, &t.0)[..3], ["notes.txt", "b.yaml", "a/x.yaml"]);
        assert_eq!(found.len(), 7);
    }

    #[test]
    fn empty_folders_and_missing_paths_are_problems() {
        let t = TempDir::new("empty");
        t.write("only/readme.md", "");
        let found = find_targets_of(&[t.0.join("only"), t.0.join("nope")]);
        assert_eq!(found.len(), 2);
        let msgs: Vec<String> = found
            .iter()
            .map(|f| match f {
                Found::Problem { error, .. } => error.to_string(),
                other => panic!("unexpected {other:?}"),
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
        let parsed: Vec<ParsedFile> =
            find_targets_of(std::slice::from_ref(&t.0)).into_iter().map(|f| read_and_parse(f, &no_kubectl())).collect();
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
            source: Some(source.into()),
            ..ObjectReport::new("v1", "ConfigMap", None, name, crate::report::ObjectState::Changed)
        };
        let mut objs = vec![obj("c", "d/x.yaml#10"), obj("a", "d/x.yaml#2"), obj("b", "d/x.yaml#2")];
        sort_in_document_order(&mut objs);
        assert_eq!(objs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), vec!["a", "b", "c"]);
    }
}
