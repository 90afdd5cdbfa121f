//! The data directory: each scope's last result (`releases.json`, `orphans.json`,
//! `versions.json`) and the dashboard's state (`state.json`: ignored findings and ignore rules).
//! Every file is written atomically: a temporary file in the same directory, fsync, rename, then
//! fsync of the directory, so a crash leaves the old file or the new one, never half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Why the data directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("data directory {path}: {source}")]
    Dir { path: PathBuf, source: std::io::Error },
    #[error("failed to write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("failed to read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    /// The state file exists but is not valid: never replaced by an empty one.
    #[error(
        "state file {path} is corrupt ({message}); the server does not start rather than lose its ignores and rules: repair the file or move it away"
    )]
    Corrupt { path: PathBuf, message: String },
}

/// Write `bytes` to `path` atomically (temp file in the same directory, fsync, rename, fsync
/// of the directory).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    write_atomic_with(path, |f| f.write_all(bytes))
}

/// [`write_atomic`] of what `write` writes, as it writes it (a result is never held whole as
/// bytes: the orphans scan's JSON is 16.6 MB at 2,000 releases).
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> std::io::Result<()>,
) -> Result<(), StoreError> {
    let err = |source| StoreError::Write { path: path.to_path_buf(), source };
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|f| {
        let mut out = std::io::BufWriter::new(&f);
        write(&mut out)?;
        out.flush()?;
        drop(out);
        f.sync_all()
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(err(e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e)
    })?;
    // The rename is durable once the directory is synced (not possible on every platform).
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// One finding ignored from the dashboard, by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Ignore {
    /// The finding's id: `Kind:namespace/name`, or `Kind:name` when cluster-scoped.
    pub id: String,
    pub note: String,
    /// RFC 3339.
    pub created_at: String,
}

/// One ignore rule added from the dashboard; it also covers future findings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredRule {
    /// `r1`, `r2`, ...: never reused.
    pub id: String,
    /// The rule in `orphans --ignore` syntax: `KIND`, `KIND:NAME`, `KIND:NAMESPACE/NAME` (globs),
    /// or `kind=..,namespace=..,name=..,name_regex=..,source=..`.
    pub rule: String,
    pub note: String,
    pub created_at: String,
}

/// `state.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct State {
    pub version: u32,
    #[serde(default)]
    pub ignores: Vec<Ignore>,
    #[serde(default)]
    pub rules: Vec<StoredRule>,
    /// The number of the last rule id given out.
    #[serde(default)]
    pub last_rule: u64,
}

/// The data directory.
#[derive(Debug, Clone)]
pub struct DataDir {
    pub path: PathBuf,
}

impl DataDir {
    /// Create the directory if needed and check that it is writable.
    pub fn open(path: &Path) -> Result<DataDir, StoreError> {
        let dir_err = |source| StoreError::Dir { path: path.to_path_buf(), source };
        std::fs::create_dir_all(path).map_err(dir_err)?;
        let probe = path.join(".write-check");
        write_atomic(&probe, b"ok").map_err(|e| match e {
            StoreError::Write { source, .. } => dir_err(source),
            other => other,
        })?;
        let _ = std::fs::remove_file(probe);
        Ok(DataDir { path: path.to_path_buf() })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The state, or an empty one when the file does not exist yet. A file that exists but
    /// cannot be parsed is an error naming it.
    pub fn load_state(&self) -> Result<State, StoreError> {
        let path = self.file("state.json");
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State { version: 1, ..State::default() }),
            Err(source) => return Err(StoreError::Read { path, source }),
        };
        let state: State = serde_json::from_slice(&text)
            .map_err(|e| StoreError::Corrupt { path: path.clone(), message: e.to_string() })?;
        if state.version != 1 {
            return Err(StoreError::Corrupt { path, message: format!("unknown version {}", state.version) });
        }
        Ok(state)
    }

    pub fn save_state(&self, state: &State) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(state).expect("state serialises");
        write_atomic(&self.file("state.json"), &bytes)
    }

    /// A scope's saved result, if there is a readable one. An unreadable one is reported (with
    /// its path) and skipped: the next scan replaces it.
    pub fn load_result<T: for<'de> Deserialize<'de>>(&self, name: &str) -> (Option<T>, Option<String>) {
        let path = self.file(name);
        match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(v) => (Some(v), None),
                Err(e) => (
                    None,
                    Some(format!("saved result {} is unreadable ({e}); the next scan replaces it", path.display())),
                ),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, None),
            Err(e) => (None, Some(format!("saved result {} could not be read: {e}", path.display()))),
        }
    }

    pub fn save_result<T: Serialize>(&self, name: &str, value: &T) -> Result<(), StoreError> {
        write_atomic_with(&self.file(name), |out| serde_json::to_writer(out, value).map_err(std::io::Error::from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("drift-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        p
    }

    #[test]
    fn state_round_trip_and_atomic_files() {
        let dir = DataDir::open(&tmp("rt")).unwrap();
        assert_eq!(dir.load_state().unwrap(), State { version: 1, ..State::default() });
        let state = State {
            version: 1,
            ignores: vec![Ignore { id: "ConfigMap:a/b".into(), note: "n".into(), created_at: "t".into() }],
            rules: vec![],
            last_rule: 3,
        };
        dir.save_state(&state).unwrap();
        assert_eq!(dir.load_state().unwrap(), state);
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(&dir.path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(names, vec!["state.json".to_string()]);
        let _ = std::fs::remove_dir_all(&dir.path);
    }

    #[test]
    fn corrupt_state_names_the_file_and_is_kept() {
        let dir = DataDir::open(&tmp("corrupt")).unwrap();
        std::fs::write(dir.file("state.json"), "{not json").unwrap();
        let e = dir.load_state().unwrap_err().to_string();
        assert!(e.contains(&dir.file("state.json").display().to_string()), "{e}");
        assert!(e.contains("corrupt"), "{e}");
        assert_eq!(std::fs::read_to_string(dir.file("state.json")).unwrap(), "{not json");
        let _ = std::fs::remove_dir_all(&dir.path);
    }

    #[test]
    fn unreadable_result_is_reported_not_fatal() {
        let dir = DataDir::open(&tmp("result")).unwrap();
        std::fs::write(dir.file("orphans.json"), "[").unwrap();
        let (v, warning) = dir.load_result::<serde_json::Value>("orphans.json");
        assert!(v.is_none());
        assert!(warning.unwrap().contains("orphans.json"));
        dir.save_result("orphans.json", &serde_json::json!({"a": 1})).unwrap();
        assert_eq!(dir.load_result::<serde_json::Value>("orphans.json").0.unwrap()["a"], 1);
        let _ = std::fs::remove_dir_all(&dir.path);
    }
}
