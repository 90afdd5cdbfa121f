//! Kustomizations for `manifests`: recognising a kustomization directory, reading which other
//! directories it builds on, and rendering it with kubectl's own kustomize (`kubectl kustomize`,
//! the same code `kubectl apply -k` and `kubectl diff -k` run), so the rendered objects are
//! exactly what was applied.
//!
//! Rendering goes through a throw-away kustomization in the temporary directory that lists the
//! user's directory as its only resource and asks for `buildMetadata: [originAnnotations]`:
//! kustomize then says, per object, which file (or which kustomization's generator) it came
//! from, so an object of a base is reported as `base/deployment.yaml` even when it is checked
//! through an overlay. The annotation is removed before comparing (it was never applied). The
//! user's directory is only read; the one subprocess renders locally and never talks to the
//! cluster.

use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use serde_json::Value;

use crate::source::child::{self, ChildError};
use crate::source::manifest::{ParsedManifests, parse_manifests};

/// The names kustomize accepts for a kustomization file, in its order of preference.
pub const KUSTOMIZATION_FILES: &[&str] = &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// The annotation `buildMetadata: [originAnnotations]` adds.
const ORIGIN_ANNOTATION: &str = "config.kubernetes.io/origin";

/// Why a kustomization could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum KustomizeError {
    /// The kubectl binary that renders kustomizations is not there.
    #[error(
        "{dir}: cannot render the kustomization: kubectl was not found (looked for `{kubectl}`; \
         install kubectl, or name it with --kubectl PATH or DRIFT_KUBECTL=PATH)"
    )]
    KubectlNotFound { dir: String, kubectl: String },
    /// kubectl could not be started for another reason.
    #[error("{dir}: cannot run `{kubectl} kustomize`: {message}")]
    Spawn { dir: String, kubectl: String, message: String },
    /// `kubectl kustomize` failed (a broken kustomization, a missing base).
    #[error("{dir}: `kubectl kustomize` failed: {message}")]
    Failed { dir: String, message: String },
    /// The `--timeout` ran out while rendering.
    #[error("{dir}: timed out after {secs}s (--timeout) while rendering the kustomization")]
    TimedOut { dir: String, secs: u64 },
    /// The scratch kustomization could not be written.
    #[error("{dir}: cannot prepare the rendering in the temporary directory: {message}")]
    Scratch { dir: String, message: String },
    /// kubectl printed something that is not UTF-8.
    #[error("{dir}: `kubectl kustomize` printed output that is not UTF-8 text")]
    NotText { dir: String },
}

/// The kustomization file of `dir`, if it is a kustomization directory.
pub fn kustomization_file(dir: &Path) -> Option<PathBuf> {
    KUSTOMIZATION_FILES.iter().map(|f| dir.join(f)).find(|p| p.is_file())
}

/// What a kustomization file says about its place among others.
#[derive(Debug, Default, PartialEq)]
pub struct KustomizationRefs {
    /// `kind: Component`: only usable from another kustomization, never built alone.
    pub component: bool,
    /// Local directories it builds on (`resources`, `bases`, `components`), canonical.
    pub directories: Vec<PathBuf>,
}

/// Read the local directories a kustomization builds on (URLs and files are left out). A file
/// that cannot be read or parsed gives nothing: rendering it will report the problem.
pub fn references(dir: &Path) -> KustomizationRefs {
    let Some(file) = kustomization_file(dir) else { return KustomizationRefs::default() };
    let Ok(text) = std::fs::read_to_string(&file) else { return KustomizationRefs::default() };
    let Ok(value) = serde_saphyr::from_str_with_options::<Value>(&text, serde_saphyr::options! { with_snippet: false })
    else {
        return KustomizationRefs::default();
    };
    let component = value.get("kind").and_then(Value::as_str) == Some("Component");
    let directories = ["resources", "bases", "components"]
        .iter()
        .filter_map(|k| value.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .filter(|entry| !entry.contains("://") && !entry.starts_with("github.com/"))
        .map(|entry| dir.join(entry))
        .filter(|p| p.is_dir())
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    KustomizationRefs { component, directories }
}

/// Render the kustomization `dir` (shown as `display`) with `kubectl kustomize` and parse it.
/// Each object's `source` is the file it came from, shown relative to `display` when kustomize
/// can say (else `DIR#N`, document N of the rendered output).
pub fn render(
    kubectl: &Path,
    dir: &Path,
    display: &str,
    deadline: Option<Instant>,
    timeout_secs: u64,
) -> Result<ParsedManifests, KustomizeError> {
    let mut scratch = Scratch::new(dir, display)?;
    let output = match &scratch {
        Some(s) => match run_kubectl(kubectl, &s.dir, display, deadline, timeout_secs) {
            // Rendered through the scratch kustomization, kustomize's message names it; render
            // the directory itself for the user's own message (or its output, if that works).
            Err(KustomizeError::Failed { .. }) => {
                scratch = None;
                run_kubectl(kubectl, dir, display, deadline, timeout_secs)?
            }
            other => other?,
        },
        None => run_kubectl(kubectl, dir, display, deadline, timeout_secs)?,
    };
    let text = String::from_utf8(output).map_err(|_| KustomizeError::NotText { dir: display.to_string() })?;
    let mut parsed = parse_manifests(&text, display);
    if let Some(s) = &scratch {
        let root = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        for o in &mut parsed.objects {
            if let Some(origin) = take_origin(&mut o.body) {
                o.source = origin_source(&origin, &s.dir, &root, display).unwrap_or_else(|| o.source.clone());
            }
        }
    }
    Ok(parsed)
}

/// The throw-away kustomization that asks for origin annotations (removed on drop). `None`
/// when `dir` cannot be named relative to the temporary directory (another drive on Windows):
/// then `dir` is rendered as it is, without origins.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(dir: &Path, display: &str) -> Result<Option<Scratch>, KustomizeError> {
        static N: AtomicU32 = AtomicU32::new(0);
        let scratch_error =
            |e: std::io::Error| KustomizeError::Scratch { dir: display.to_string(), message: e.to_string() };
        let Ok(target) = std::fs::canonicalize(dir) else { return Ok(None) };
        let tmp = std::fs::canonicalize(std::env::temp_dir()).map_err(scratch_error)?;
        let scratch =
            tmp.join(format!("kubectl-drift-kustomize-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
        let Some(rel) = relative_path(&scratch, &target) else { return Ok(None) };
        let rel = rel.to_str().map(|s| s.replace('\\', "/"));
        let Some(rel) = rel else { return Ok(None) };
        std::fs::create_dir_all(&scratch).map_err(scratch_error)?;
        let guard = Scratch { dir: scratch };
        let text = format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- {}\nbuildMetadata: [originAnnotations]\n",
            serde_json::to_string(&rel).unwrap_or_default()
        );
        std::fs::write(guard.dir.join("kustomization.yaml"), text).map_err(scratch_error)?;
        Ok(Some(guard))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Run `kubectl kustomize DIR`, reading its output, giving up at `deadline`.
fn run_kubectl(
    kubectl: &Path,
    dir: &Path,
    display: &str,
    deadline: Option<Instant>,
    timeout_secs: u64,
) -> Result<Vec<u8>, KustomizeError> {
    let kubectl_name = kubectl.display().to_string();
    let done = child::run(Command::new(kubectl).arg("kustomize").arg(dir), deadline).map_err(|e| match e {
        ChildError::NotFound => {
            KustomizeError::KubectlNotFound { dir: display.to_string(), kubectl: kubectl_name.clone() }
        }
        ChildError::Spawn(message) => {
            KustomizeError::Spawn { dir: display.to_string(), kubectl: kubectl_name.clone(), message }
        }
        ChildError::TimedOut => KustomizeError::TimedOut { dir: display.to_string(), secs: timeout_secs },
    })?;
    if !done.status.success() {
        return Err(KustomizeError::Failed {
            dir: display.to_string(),
            message: failure_message(&done.stderr, done.status),
        });
    }
    Ok(done.stdout)
}

/// kubectl's error, on one line: klog's prefix and the scratch kustomization's wrapping removed.
fn failure_message(stderr: &[u8], status: std::process::ExitStatus) -> String {
    let line = child::one_line(stderr);
    // klog: `E1130 15:12:26.052835   23489 run.go:72] "command failed" err="..."`
    let message = match line.split_once("err=\"") {
        Some((_, rest)) => rest.trim_end_matches('"').replace("\\\"", "\"").replace("\\'", "'"),
        None => line.strip_prefix("error: ").unwrap_or(&line).to_string(),
    };
    if message.is_empty() { format!("kubectl exited with {status}") } else { message }
}

/// Remove the origin annotation kustomize added (and the annotations map, when that was all).
fn take_origin(body: &mut Value) -> Option<String> {
    let meta = body.get_mut("metadata")?.as_object_mut()?;
    let annotations = meta.get_mut("annotations")?.as_object_mut()?;
    let origin = annotations.remove(ORIGIN_ANNOTATION)?;
    if annotations.is_empty() {
        meta.remove("annotations");
    }
    origin.as_str().map(str::to_string)
}

/// Where an object came from, from its origin annotation (`path:` for a resource file,
/// `configuredIn:` for a generated one), shown under `display`, the directory as the user named
/// it. `None` for remote origins.
fn origin_source(origin: &str, scratch: &Path, root: &Path, display: &str) -> Option<String> {
    let value: Value =
        serde_saphyr::from_str_with_options(origin, serde_saphyr::options! { with_snippet: false }).ok()?;
    if value.get("repo").is_some() {
        return None;
    }
    let path = value.get("path").or_else(|| value.get("configuredIn")).and_then(Value::as_str)?;
    let absolute = normalize(&scratch.join(path));
    let rel = relative_path(root, &absolute)?;
    Some(normalize(&Path::new(display).join(rel)).display().to_string())
}

/// `path` with `.` and `name/..` removed, without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(c),
            },
            other => out.push(other),
        }
    }
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

/// `to` relative to the directory `from` (both absolute and normalised). `None` when they have
/// no common root (different drives).
pub fn relative_path(from: &Path, to: &Path) -> Option<PathBuf> {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    if from.first() != to.first() {
        return None;
    }
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for c in &to[common..] {
        out.push(c.as_os_str());
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_made_relative_and_normalised() {
        assert_eq!(
            relative_path(Path::new("/tmp/s/w"), Path::new("/work/repo/k8s")),
            Some("../../../work/repo/k8s".into())
        );
        assert_eq!(relative_path(Path::new("/a/b"), Path::new("/a/b/c/d.yaml")), Some("c/d.yaml".into()));
        assert_eq!(relative_path(Path::new("/a/b"), Path::new("/a/b")), Some(".".into()));
        assert_eq!(normalize(Path::new("k8s/overlays/prod/../../base/./d.yaml")), PathBuf::from("k8s/base/d.yaml"));
        assert_eq!(normalize(Path::new("../x/../y")), PathBuf::from("../y"));
        assert_eq!(normalize(Path::new("/../a")), PathBuf::from("/a"));
    }

    #[test]
    fn origin_names_the_file_under_the_directory_given() {
        let scratch = Path::new("/tmp/k-1");
        let root = Path::new("/work/repo/k8s/overlays/prod");
        let at = |origin: &str| origin_source(origin, scratch, root, "k8s/overlays/prod");
        assert_eq!(at("path: ../../work/repo/k8s/base/deployment.yaml\n").as_deref(), Some("k8s/base/deployment.yaml"));
        assert_eq!(
            at("path: ../../work/repo/k8s/overlays/prod/extra.yaml\n").as_deref(),
            Some("k8s/overlays/prod/extra.yaml")
        );
        assert_eq!(
            at(
                "configuredIn: ../../work/repo/k8s/base/kustomization.yaml\nconfiguredBy:\n  kind: ConfigMapGenerator\n"
            )
            .as_deref(),
            Some("k8s/base/kustomization.yaml")
        );
        assert_eq!(at("repo: https://github.com/x/y\nref: v1\npath: base/d.yaml\n"), None);
    }

    #[test]
    fn the_origin_annotation_is_removed() {
        let mut body = json!({"metadata": {"name": "a", "annotations": {ORIGIN_ANNOTATION: "path: x.yaml\n"}}});
        assert_eq!(take_origin(&mut body).as_deref(), Some("path: x.yaml\n"));
        assert_eq!(body, json!({"metadata": {"name": "a"}}));
        let mut body = json!({"metadata": {"name": "a", "annotations": {ORIGIN_ANNOTATION: "path: x\n", "k": "v"}}});
        take_origin(&mut body);
        assert_eq!(body, json!({"metadata": {"name": "a", "annotations": {"k": "v"}}}));
        assert_eq!(take_origin(&mut json!({"metadata": {"name": "a"}})), None);
    }

    #[cfg(unix)]
    #[test]
    fn klog_errors_become_one_line() {
        use std::os::unix::process::ExitStatusExt;
        let status = std::process::ExitStatus::from_raw(256);
        let stderr = br#"E1130 15:12:26.052835   23489 run.go:72] "command failed" err="accumulating resources: 'x' must resolve to a file"
"#;
        assert_eq!(failure_message(stderr, status), "accumulating resources: 'x' must resolve to a file");
        assert_eq!(
            failure_message(b"error: unable to find one of 'kustomization.yaml'\n", status),
            "unable to find one of 'kustomization.yaml'"
        );
        assert_eq!(failure_message(b"", status), "kubectl exited with exit status: 1");
    }

    #[test]
    fn references_are_local_directories() {
        let root = std::env::temp_dir().join(format!("drift-kust-refs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in ["base", "overlay", "comp"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(
            root.join("overlay/kustomization.yaml"),
            "resources:\n- ../base\n- extra.yaml\n- https://github.com/x/y//z?ref=v1\ncomponents: [../comp]\n",
        )
        .unwrap();
        std::fs::write(
            root.join("comp/kustomization.yaml"),
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
        )
        .unwrap();
        std::fs::write(root.join("base/Kustomization"), "resources: []\n").unwrap();
        let refs = references(&root.join("overlay"));
        let canon = |d: &str| std::fs::canonicalize(root.join(d)).unwrap();
        assert_eq!(refs, KustomizationRefs { component: false, directories: vec![canon("base"), canon("comp")] });
        assert!(references(&root.join("comp")).component);
        assert_eq!(kustomization_file(&root.join("base")), Some(root.join("base/Kustomization")));
        assert_eq!(kustomization_file(&root), None);
        let _ = std::fs::remove_dir_all(&root);
    }
}
