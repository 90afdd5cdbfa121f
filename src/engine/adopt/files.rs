//! `adopt -f PATH...`: the manifest files changed so that they hold the live values of the fields
//! that drifted (docs/adopt.md, Files). The drift is `manifests`' own (the same file walk, the
//! same compare); each changed scalar is written in place by [`super::yaml_edit`], which keeps
//! every other byte. The result is each file's text before and after: the app prints a unified
//! diff or, with `--write`, writes the files.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::engine::compare::rules::IgnoreRule;
use crate::engine::manifests::{ManifestsOptions, check};
use crate::report::ObjectState;
use crate::report::adopt::{FileAdoption, FilesAdopt, NotAdoptable, ObjectRef};
use crate::report::field::Change;
use crate::report::path::FieldPath;
use crate::report::secret::is_secret_field;
use crate::report::target::SourceType;
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
    let options = ManifestsOptions::for_paths(paths, namespace, kubectl);
    // Live values unredacted: they are what is written; Secret ones only with --show-secrets.
    let report = check(cluster, rules, true, &options, None, &crate::report::progress::NoProgress).await;
    let mut out = FilesAdopt::default();
    let mut texts: BTreeMap<String, (String, String)> = BTreeMap::new();
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
            if file.origin.source_type != SourceType::File {
                for f in o.fields.iter().filter(|f| f.reason.is_none()) {
                    out.not_adoptable.push(not(
                        f.path.clone(),
                        f.change,
                        "from a kustomization: kustomize overlays are not edited yet (edit the patch or the base by hand)",
                    ));
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
