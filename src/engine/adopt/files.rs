//! `adopt -f PATH...`: the manifest files changed so that they hold the live values of the fields
//! that drifted (docs/adopt.md, Files). The drift is `manifests`' own (the same file walk, the
//! same compare); each changed scalar is written in place by [`super::yaml_edit`], which keeps
//! every other byte. The result is each file's text before and after: the app prints a unified
//! diff or, with `--write`, writes the files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::engine::compare::rules::IgnoreRule;
use crate::engine::manifests::{ManifestsOptions, check};
use crate::report::adopt::{FileAdoption, FilesAdopt, NotAdoptable, ObjectRef};
use crate::report::field::Change;
use crate::report::path::FieldPath;
use crate::report::path::scalar_text;
use crate::report::secret::is_secret_field;
use crate::report::target::SourceType;
use crate::report::{ObjectReport, ObjectState};
use crate::source::cluster::Cluster;

/// Check the files as `manifests` does and write each drifted scalar's live value into them.
pub async fn adopt_files(
    cluster: &Cluster,
    paths: Vec<PathBuf>,
    namespace: String,
    kubectl: PathBuf,
    rules: Vec<IgnoreRule>,
    show_secrets: bool,
) -> FilesAdopt {
    let options = ManifestsOptions::for_paths(paths, namespace, kubectl.clone());
    // Live values unredacted: they are what is written; Secret ones only with --show-secrets.
    let report = check(cluster, rules, true, &options, None, &crate::report::progress::NoProgress).await;
    let mut out = FilesAdopt::default();
    let mut texts: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut kustomized: Vec<(String, ObjectReport)> = Vec::new();
    for file in &report.files {
        if let Some(p) = &file.problem {
            out.errors.push(format!("{}: {p}", file.origin.path));
            continue;
        }
        for o in file.objects.iter().filter(|o| o.state != ObjectState::Ignored) {
            let object = ObjectRef {
                api_version: o.api_version.clone(),
                kind: o.kind.clone(),
                namespace: o.namespace.clone(),
                name: o.name.clone(),
            };
            let not = |path: FieldPath, change: Change, reason: &str| NotAdoptable {
                object: object.clone(),
                path,
                change,
                reason: reason.to_string(),
                patch: None,
                also_renders: Vec::new(),
            };
            match o.state {
                ObjectState::Missing => {
                    out.not_adoptable.push(not(
                        FieldPath::root(),
                        Change::Removed,
                        "deleted live: remove it from the file yourself",
                    ));
                    continue;
                }
                ObjectState::Extra => {
                    out.not_adoptable.push(not(
                        FieldPath::root(),
                        Change::Added,
                        "in no file: export it with kubectl get -o yaml",
                    ));
                    continue;
                }
                ObjectState::Error => {
                    out.errors.push(format!("{object}: {}", o.error.clone().unwrap_or_default()));
                    continue;
                }
                _ => {}
            }
            if file.origin.source_type == SourceType::Kustomization {
                kustomized.push((file.origin.path.clone(), o.clone()));
                continue;
            }
            if file.origin.source_type != SourceType::File {
                for f in o.fields.iter().filter(|f| f.reason.is_none()) {
                    out.not_adoptable.push(not(f.path.clone(), f.change, "not from a file"));
                }
                continue;
            }
            let document =
                o.source.as_deref().and_then(|s| s.rsplit_once('#')).and_then(|(_, n)| n.parse::<usize>().ok());
            for f in o.fields.iter().filter(|f| f.reason.is_none()) {
                let reason = match (f.change, &f.live, document) {
                    (Change::Changed, Some(live), Some(doc)) if !live.is_object() && !live.is_array() => {
                        if is_secret_field(&o.kind, &f.path) && !show_secrets {
                            Some("a Secret's value: written only with --show-secrets".to_string())
                        } else {
                            let entry = texts.entry(file.origin.path.clone()).or_insert_with(|| {
                                let text = std::fs::read_to_string(&file.origin.path).unwrap_or_default();
                                (text.clone(), text)
                            });
                            match super::yaml_edit::set_scalar(&entry.1, doc, &f.path, live) {
                                Ok(text) => {
                                    entry.1 = text;
                                    out.adopted.push(FileAdoption {
                                        file: file.origin.path.clone(),
                                        object: object.clone(),
                                        path: f.path.clone(),
                                        new: live.clone(),
                                    });
                                    None
                                }
                                Err(e) => Some(format!("not written: {e}")),
                            }
                        }
                    }
                    (Change::Changed, _, None) => Some("its document in the file is not known".into()),
                    (Change::Changed, _, _) => Some("a list or map changed: not edited yet".into()),
                    (Change::Added, _, _) => Some("added by hand: additions are not written into files yet".into()),
                    (Change::Removed, _, _) => Some("removed by hand: removals are not written into files yet".into()),
                };
                if let Some(r) = reason {
                    out.not_adoptable.push(not(f.path.clone(), f.change, &r));
                }
            }
        }
    }
    kustomizations(&kustomized, &kubectl, show_secrets, &mut texts, &mut out);
    if let Some(extra) = &report.extra
        && let Some(p) = &extra.problem
    {
        out.errors.push(p.to_string());
    }
    out.edits = texts
        .into_iter()
        .filter(|(_, (before, after))| before != after)
        .map(|(path, (before, after))| (PathBuf::from(path), before, after))
        .collect();
    out
}

/// The documents of a file (1-based numbers as `file#N`), parsed.
fn documents_of(text: &str) -> Vec<(usize, Value)> {
    crate::source::manifest::split_documents(text)
        .into_iter()
        .enumerate()
        .filter_map(|(i, (doc, _))| crate::source::yaml11::from_str(&doc).ok().map(|v| (i + 1, v)))
        .collect()
}

/// The patch files a kustomization lists (`patches: [{path}]`, `patchesStrategicMerge`).
fn patch_files(dir: &Path) -> Vec<PathBuf> {
    let Some(file) = crate::source::kustomize::kustomization_file(dir) else { return Vec::new() };
    let Ok(text) = std::fs::read_to_string(&file) else { return Vec::new() };
    let Ok(k) = crate::source::yaml11::from_str(&text) else { return Vec::new() };
    let mut out = Vec::new();
    for p in k.get("patches").and_then(Value::as_array).into_iter().flatten() {
        if let Some(path) = p.get("path").and_then(Value::as_str) {
            out.push(dir.join(path));
        }
    }
    for p in k.get("patchesStrategicMerge").and_then(Value::as_array).into_iter().flatten() {
        if let Some(path) = p.as_str() {
            out.push(dir.join(path));
        }
    }
    out
}

/// Whether a document is the object `o` (its kind, and its name or the name a kustomization's
/// prefix or suffix was added to).
fn names(doc: &Value, o: &ObjectReport) -> bool {
    let name = doc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    doc.get("kind").and_then(Value::as_str) == Some(o.kind.as_str()) && !name.is_empty() && o.name.contains(name)
}

/// Objects of kustomizations: a drifted scalar is written where it comes from, a patch of the
/// kustomization that sets it, else the resource file kustomize names as its origin (the base).
/// The kustomization is then rendered again from a copy holding the edits, and a field that does
/// not come out as live (an `images:` or `replicas:` transformer sets it) is not adopted.
fn kustomizations(
    objects: &[(String, ObjectReport)],
    kubectl: &Path,
    show_secrets: bool,
    texts: &mut BTreeMap<String, (String, String)>,
    out: &mut FilesAdopt,
) {
    let mut pending: Vec<(String, FileAdoption, ObjectReport)> = Vec::new();
    let before_edits = texts.clone();
    for (dir, o) in objects {
        let object = ObjectRef {
            api_version: o.api_version.clone(),
            kind: o.kind.clone(),
            namespace: o.namespace.clone(),
            name: o.name.clone(),
        };
        let patches = patch_files(Path::new(dir));
        for f in o.fields.iter().filter(|f| f.reason.is_none()) {
            let not = |reason: String| NotAdoptable {
                object: object.clone(),
                path: f.path.clone(),
                change: f.change,
                reason,
                patch: None,
                also_renders: Vec::new(),
            };
            let live = match (&f.change, &f.live) {
                (Change::Changed, Some(live)) if !live.is_object() && !live.is_array() => live,
                _ => {
                    out.not_adoptable
                        .push(not("only changed scalars are written into a kustomization's files yet".into()));
                    continue;
                }
            };
            if is_secret_field(&o.kind, &f.path) && !show_secrets {
                out.not_adoptable.push(not("a Secret's value: written only with --show-secrets".into()));
                continue;
            }
            // Where the field comes from: a patch that sets it, else the resource's own file.
            let mut places: Vec<PathBuf> = patches.clone();
            places.extend(o.source.as_deref().map(PathBuf::from));
            let mut done = None;
            for place in places {
                let key = place.display().to_string();
                let current = match texts.get(&key) {
                    Some((_, after)) => after.clone(),
                    None => match std::fs::read_to_string(&place) {
                        Ok(t) => t,
                        Err(_) => continue,
                    },
                };
                let Some((n, _)) =
                    documents_of(&current).into_iter().find(|(_, d)| names(d, o) && f.path.get(d).is_some())
                else {
                    continue;
                };
                match super::yaml_edit::set_scalar(&current, n, &f.path, live) {
                    Ok(text) => {
                        texts.entry(key.clone()).or_insert_with(|| (current.clone(), current.clone())).1 = text;
                        done = Some(Ok(key));
                    }
                    Err(e) => done = Some(Err(format!("not written into {key}: {e}"))),
                }
                break;
            }
            match done {
                Some(Ok(file)) => pending.push((
                    dir.clone(),
                    FileAdoption { file, object: object.clone(), path: f.path.clone(), new: live.clone() },
                    o.clone(),
                )),
                Some(Err(e)) => out.not_adoptable.push(not(e)),
                None => {
                    out.not_adoptable.push(not("no patch or resource file of the kustomization sets this field".into()))
                }
            }
        }
    }
    if pending.is_empty() {
        return;
    }
    let proven = prove_kustomizations(&pending, kubectl, texts);
    if proven.iter().any(Result::is_err) {
        // An edit that does not come out as live is taken back, with every kustomization edit
        // (they are made again from the proven ones only when all pass: no half-proven file).
        for (key, _) in texts.clone() {
            match before_edits.get(&key) {
                Some(v) => {
                    texts.insert(key, v.clone());
                }
                None => {
                    texts.remove(&key);
                }
            }
        }
        for (i, (_, adoption, _)) in pending.into_iter().enumerate() {
            let reason = match &proven[i] {
                Ok(()) => "proven, but not written: another edit of its kustomization was not".to_string(),
                Err(e) => e.clone(),
            };
            out.not_adoptable.push(NotAdoptable {
                object: adoption.object,
                path: adoption.path,
                change: Change::Changed,
                reason,
                patch: None,
                also_renders: Vec::new(),
            });
        }
        return;
    }
    out.adopted.extend(pending.into_iter().map(|(_, a, _)| a));
}

/// For each pending edit: Ok when the kustomization, rendered from a copy holding every edit,
/// gives the field its live value.
fn prove_kustomizations(
    pending: &[(String, FileAdoption, ObjectReport)],
    kubectl: &Path,
    texts: &BTreeMap<String, (String, String)>,
) -> Vec<Result<(), String>> {
    let fail = |e: String| pending.iter().map(|_| Err(e.clone())).collect::<Vec<_>>();
    // The folder holding every kustomization and edited file, copied whole.
    let mut paths: Vec<PathBuf> = pending.iter().map(|(d, _, _)| PathBuf::from(d)).collect();
    paths.extend(texts.keys().map(PathBuf::from));
    let abs: Vec<PathBuf> = paths.iter().filter_map(|p| std::fs::canonicalize(p).ok()).collect();
    if abs.len() != paths.len() || abs.is_empty() {
        return fail("a kustomization's files could not be found again".into());
    }
    let mut root = abs[0].clone();
    if root.is_file() {
        root.pop();
    }
    while !abs.iter().all(|p| p.starts_with(&root)) {
        if !root.pop() {
            return fail("no folder holds the kustomization and its files".into());
        }
    }
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let copy = std::env::temp_dir().join(format!(
        "kubectl-drift-adopt-k-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    struct Gone(PathBuf);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _gone = Gone(copy.clone());
    if let Err(e) = copy_dir(&root, &copy) {
        return fail(format!("copying {} to prove the edits: {e}", root.display()));
    }
    for (path, (_, after)) in texts {
        let Ok(abs) = std::fs::canonicalize(path) else { continue };
        let Ok(rel) = abs.strip_prefix(&root) else { continue };
        if std::fs::write(copy.join(rel), after).is_err() {
            return fail("writing the copy to prove the edits failed".into());
        }
    }
    let mut rendered: BTreeMap<String, Result<Vec<crate::source::manifest::DesiredObject>, String>> = BTreeMap::new();
    pending
        .iter()
        .map(|(dir, adoption, o)| {
            let objects = rendered.entry(dir.clone()).or_insert_with(|| {
                let abs = std::fs::canonicalize(dir).map_err(|e| e.to_string())?;
                let rel = abs.strip_prefix(&root).map_err(|e| e.to_string())?;
                crate::source::kustomize::render(kubectl, &copy.join(rel), dir, None, 0)
                    .map(|p| p.objects)
                    .map_err(|e| e.to_string())
            });
            let objects =
                objects.as_ref().map_err(|e| format!("the kustomization does not render with the edit: {e}"))?;
            let d = objects
                .iter()
                .find(|d| d.kind == o.kind && d.name == o.name)
                .ok_or("the kustomization no longer renders the object")?;
            let body = crate::engine::compare::prepare_desired(&d.kind, &d.body);
            match adoption.path.get(&body) {
                Some(v) if scalar_text(v) == scalar_text(&adoption.new) => Ok(()),
                _ => Err(format!(
                    "written into {}, but the kustomization still renders another value (an images:, replicas: or other transformer sets it)",
                    adoption.file
                )),
            }
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let ty = entry.file_type()?;
        if ty.is_dir() {
            copy_dir(&entry.path(), &to.join(&name))?;
        } else if ty.is_file() {
            std::fs::copy(entry.path(), to.join(&name))?;
        }
    }
    Ok(())
}
