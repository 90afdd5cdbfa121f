//! Manifests drift (`kubectl drift manifests PATH...`): files, folders and kustomizations of
//! manifests checked against the live cluster with the release drift engine
//! ([`Engine::check_objects`]).
//!
//! Steps: the targets are found and read by [`crate::source::manifest_files`] (which files, in
//! which order, each read and parsed or each kustomization rendered); check each target's objects
//! (the LISTs are shared and cached across targets); decide who applied each target from its live
//! objects' managedFields (or `--field-manager`); look for extra objects by the ApplySet labels or
//! `--selector` ([`extra`]); build per-target reports and reconcile commands. Nothing here
//! prints: [`check`] returns a [`ManifestsReport`] that `app` renders.
//!
//! Every problem stays attached to the file it concerns (a path that cannot be read, a document
//! that is not YAML, a kustomization that does not render, a kind the cluster does not serve, a
//! forbidden LIST, an unreachable API, the `--timeout`), so the other files are still checked and
//! nothing unchecked passes as clean.

pub mod extra;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::time::Instant;

use crate::engine::compare::rules::IgnoreRule;
use crate::engine::compare::{CompareContext, ManagedFields, prepare_desired};
use crate::engine::drift::{Engine, ObjectsOutcome};
use crate::engine::reconcile::{Applied, Reconciler};
use crate::report::progress::{Counter, Progress};
use crate::report::{FileOrigin, FileReport, ManifestsReport, ObjectReport, ObjectState, Problem, SourceType, Status};
use crate::source::cluster::Cluster;
use crate::source::manifest::DesiredObject;
use crate::source::manifest_files::{ParsedFile, Renderer, read_targets};

/// How many files are checked at once (their LISTs are shared, so this bounds little but CPU).
const FILES_AT_ONCE: usize = 16;

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
    /// What `-` among the paths reads: standard input, read once by the caller.
    pub stdin: Option<crate::source::manifest_files::Stdin>,
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
            stdin: None,
        }
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
    let renderer = Renderer {
        kubectl: options.kubectl.clone(),
        deadline: deadline.map(Instant::into_std),
        timeout_secs: options.timeout.map(|t| t.as_secs()).unwrap_or(0),
    };
    let (skipped_paths, parsed) =
        read_targets(&options.paths, &options.kustomizations, options.stdin.as_ref(), renderer).await;
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
            // Never read from disk: `kubectl drift kustomization` and `application` build their
            // own reports (engine::gitops).
            SourceType::FluxKustomization | SourceType::ArgoApplication => Applied::File(&parsed.path),
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
        problem: match (errors.is_empty(), object_errors.len()) {
            (false, _) => Some(Problem::Failed(errors)),
            (true, 0) => None,
            (true, n) => Some(Problem::ObjectsUnchecked(n)),
        },
        objects,
        reconcile,
        ..FileReport::new(
            FileOrigin {
                path: parsed.path,
                field_manager: applier.as_ref().map(|a| a.manager.clone()),
                server_side: applier.is_some_and(|a| a.server_side),
                source_type: parsed.source_type,
                skipped: parsed.skipped,
                gitops: None,
            },
            status,
        )
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
