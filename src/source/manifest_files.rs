//! Manifest files on disk, for `manifests PATH...` (and `versions --manifests`): which files and
//! kustomizations the PATHs name, in which order, and reading them. Folders are walked
//! recursively for `.yaml`/`.yml`/`.json` files, sorted, hidden names skipped; a folder holding a
//! kustomization file is one kustomization (rendered by [`kustomize`]), a folder holding a
//! `Chart.yaml` is skipped. Each file is read and parsed ([`parse_manifests`]) into what the
//! manifests engine checks; a problem stays attached to its path. Judges nothing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::report::{SkippedPath, SourceType};
use crate::source::kustomize;
use crate::source::manifest::{DesiredObject, ParsedManifests, SkippedObject, parse_manifests};

/// How many targets are read (kustomizations rendered) at once.
const RENDERS_AT_ONCE: usize = 4;

/// The folder checked when no PATH is given (the layout of the cron script this replaces).
pub(crate) const DEFAULT_PATH: &str = "deploy";

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
    /// `-` (standard input) could not be read, or is a terminal.
    #[error("{name}: standard input {message}")]
    Stdin { name: String, message: String },
    /// No PATH was given and the default folder is not there.
    #[error(
        "no PATH given and ./{DEFAULT_PATH} does not exist: name the manifests to check \
         (kubectl drift manifests PATH, -f FILE, -k DIR)"
    )]
    NoDefaultPath,
}

/// The PATHs to check: those `given`, else `./deploy` when it exists (the cron default), else a
/// usage error naming it. With kustomizations (`-k`) and no PATH, no PATH is checked.
pub(crate) fn paths_or_default(
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

/// The PATH that means standard input, as kubectl spells it (`-f -`).
pub const STDIN_PATH: &str = "-";

/// At most this much is read from standard input (a manifest stream is text: far less).
pub const STDIN_LIMIT: u64 = 64 * 1024 * 1024;

/// Manifests read from standard input once per run (every cluster of a run checks the same text),
/// reported under `name` (`-`, or `--stdin-name`).
#[derive(Debug, Clone)]
pub struct Stdin {
    pub name: String,
    pub text: std::sync::Arc<str>,
}

impl Stdin {
    /// Read standard input to its end. A terminal is refused rather than waited on (nothing was
    /// piped: a run from cron or CI would hang), and so is more than [`STDIN_LIMIT`] or text that
    /// is not UTF-8.
    pub fn read(name: &str) -> Result<Stdin, ManifestsError> {
        use std::io::{IsTerminal, Read};
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(ManifestsError::Stdin {
                name: name.to_string(),
                message: "is a terminal: pipe the manifests in (e.g. helm template ... | kubectl drift manifests -f -)"
                    .into(),
            });
        }
        Stdin::from_reader(name, stdin.lock().take(STDIN_LIMIT + 1))
    }

    /// Read `reader` to its end as the standard input named `name`.
    pub fn from_reader(name: &str, mut reader: impl std::io::Read) -> Result<Stdin, ManifestsError> {
        let failed = |message: String| ManifestsError::Stdin { name: name.to_string(), message };
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).map_err(|e| failed(format!("cannot be read: {e}")))?;
        if bytes.len() as u64 > STDIN_LIMIT {
            return Err(failed(format!("is over {} MiB", STDIN_LIMIT / 1024 / 1024)));
        }
        let text = String::from_utf8(bytes).map_err(|_| failed("is not UTF-8 text".into()))?;
        if text.trim().is_empty() {
            // As `kubectl apply -f -` with nothing piped: an empty check is never clean.
            return Err(failed("is empty: no manifests were piped in".into()));
        }
        Ok(Stdin { name: name.to_string(), text: text.into() })
    }
}

/// Why a Helm chart met in a walk is skipped.
const CHART_SKIPPED: &str =
    "a Helm chart (Chart.yaml): its templates are not manifests; check its release with `kubectl drift release`";
/// Why a Kustomize component met in a walk is skipped.
const COMPONENT_SKIPPED: &str = "a Kustomize component: checked as part of the kustomizations that use it";

/// One entry found from the PATHs.
#[derive(Debug)]
pub(crate) enum Found {
    /// A manifest file.
    File(PathBuf),
    /// The manifests read from standard input (`-`).
    Stdin(Stdin),
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
pub(crate) fn find_targets(paths: &[PathBuf], kustomizations: &[PathBuf], stdin: Option<&Stdin>) -> Vec<Found> {
    let mut out = Vec::new();
    let mut seen_files = HashSet::new();
    let mut seen_dirs = HashSet::new();
    let mut stdin_taken = false;
    for path in paths {
        let display = path.display().to_string();
        if path.as_os_str() == STDIN_PATH {
            // Read once by the caller; named twice, checked once.
            if !std::mem::replace(&mut stdin_taken, true) {
                out.push(match stdin {
                    Some(s) => Found::Stdin(s.clone()),
                    None => Found::Problem {
                        path: display.clone(),
                        error: ManifestsError::Stdin { name: display, message: "was not read".into() },
                    },
                });
            }
            continue;
        }
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
pub(crate) struct ParsedFile {
    pub(crate) path: String,
    pub(crate) source_type: SourceType,
    pub(crate) desired: Vec<DesiredObject>,
    pub(crate) skipped: Vec<SkippedObject>,
    /// Problems reading or parsing it (the objects that did parse are still checked).
    pub(crate) errors: Vec<String>,
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
pub(crate) struct Renderer {
    pub(crate) kubectl: PathBuf,
    pub(crate) deadline: Option<std::time::Instant>,
    pub(crate) timeout_secs: u64,
}

/// The line where each document of the manifest file at `path` starts
/// ([`crate::source::manifest::document_lines`]), read again for the formats that point at a
/// line (SARIF, GitHub annotations); `None` when it cannot be read as text now.
pub fn document_lines(path: &Path) -> Option<Vec<usize>> {
    let text = String::from_utf8(std::fs::read(path).ok()?).ok()?;
    Some(crate::source::manifest::document_lines(&text))
}

/// Where each object of the manifest file at `path` starts: (kind, name, line), for the objects
/// a kustomization renders from it (their `source` is the file, not a document of it). `None`
/// when it cannot be read as text now.
pub fn object_lines(path: &Path) -> Option<Vec<(String, String, usize)>> {
    let text = String::from_utf8(std::fs::read(path).ok()?).ok()?;
    let origin = path.display().to_string();
    let lines = crate::source::manifest::document_lines(&text);
    let parsed = parse_manifests(&text, &origin);
    let line_of = |source: &str| {
        let n: usize = source.strip_prefix(&origin)?.strip_prefix('#')?.parse().ok()?;
        lines.get(n.checked_sub(1)?).copied()
    };
    Some(parsed.objects.iter().filter_map(|o| Some((o.kind.clone(), o.name.clone(), line_of(&o.source)?))).collect())
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
        Found::Stdin(s) => ParsedFile::parsed(s.name.clone(), SourceType::File, parse_manifests(&s.text, &s.name)),
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

/// Find and read every target: the folders skipped, and the files and kustomizations parsed, in
/// the order [`find_targets`] gives. Reading files and running `kubectl kustomize` block, so they
/// run off the async workers.
pub(crate) async fn read_targets(
    paths: &[PathBuf],
    kustomizations: &[PathBuf],
    stdin: Option<&Stdin>,
    renderer: Renderer,
) -> (Vec<SkippedPath>, Vec<ParsedFile>) {
    let found = find_targets(paths, kustomizations, stdin);
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

#[cfg(test)]
mod tests {
    use super::*;

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
                Found::Stdin(s) => format!("stdin:{}", s.name),
            })
            .collect()
    }

    fn find_targets_of(paths: &[PathBuf]) -> Vec<Found> {
        find_targets(paths, &[], None)
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
        let found = find_targets(std::slice::from_ref(&t.0), &[t.0.join("apps/shop/base")], None);
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
        let found = find_targets(&[t.0.join("apps/shop/base"), t.0.join("charts/shop")], &[t.0.join("plain")], None);
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
        assert!(msg.contains("--kubectl") && msg.contains("DRIFT_KUBECTL"), "{msg}");
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
    fn stdin_is_one_target_however_often_it_is_named() {
        let t = TempDir::new("stdin");
        t.write("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n");
        let stdin =
            Stdin::from_reader("helm-template", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n".as_bytes())
                .unwrap();
        let paths = [PathBuf::from("-"), t.0.join("a.yaml"), PathBuf::from("-")];
        let found = find_targets(&paths, &[], Some(&stdin));
        assert_eq!(names(&found, &t.0), vec!["stdin:helm-template", "a.yaml"]);
        let renderer = no_kubectl();
        let parsed: Vec<ParsedFile> = found.into_iter().map(|f| read_and_parse(f, &renderer)).collect();
        assert_eq!(parsed[0].path, "helm-template");
        assert_eq!(parsed[0].desired.len(), 1);
        assert_eq!(parsed[0].desired[0].name, "b");
        // `-` without what the caller read is a problem, never an empty clean target.
        let found = find_targets(&[PathBuf::from("-")], &[], None);
        assert!(matches!(&found[..], [Found::Problem { path, .. }] if path == "-"), "{found:?}");
    }

    #[test]
    fn stdin_must_be_utf8_and_bounded() {
        let e = Stdin::from_reader("-", &[0xff, 0xfe][..]).unwrap_err();
        assert_eq!(e.to_string(), "-: standard input is not UTF-8 text");
        let big = std::io::Read::take(std::io::repeat(b'a'), STDIN_LIMIT + 1);
        let e = Stdin::from_reader("-", big).unwrap_err();
        assert_eq!(e.to_string(), "-: standard input is over 64 MiB");
        let e = Stdin::from_reader("-", &b"\n  \n"[..]).unwrap_err();
        assert_eq!(e.to_string(), "-: standard input is empty: no manifests were piped in");
    }
}
