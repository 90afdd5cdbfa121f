//! What every history backend is (issue 66): the [`HistoryBackend`] trait, the access it is
//! opened for, its errors, and the rows it answers with; and the pieces the SQL backends share
//! (the schema version check, a record from its columns). The backends import this module, and
//! `mod.rs` above them chooses one ([`super::open`]), as Helm's `driver.rs` sits under its
//! drivers and `storage.rs` over them.

use futures::future::BoxFuture;

use super::schema;
use crate::report::history::{FindingRecord, FindingWrite};

/// Open to write (`watch`, `serve`) or only to read (`history`, `release --history`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Write,
    Read,
}

/// Why the history could not be used. Each names the file or the database (never a password).
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Another process writes this file.
    #[error(
        "history {path}: another kubectl-drift (watch or serve) is writing it (lock {lock} is held); one writer per file, or use PostgreSQL for many"
    )]
    Locked { path: String, lock: String },
    /// The file exists and is not a sound SQLite database: left as it is.
    #[error(
        "history {path} is corrupt or not a kubectl-drift history ({cause}); it was left untouched: move it away to start a new one"
    )]
    Corrupt { path: String, cause: String },
    /// A newer kubectl-drift wrote it.
    #[error(
        "history {path} has schema version {found}, newer than this kubectl-drift reads ({supported}): upgrade kubectl-drift"
    )]
    Newer { path: String, found: i64, supported: i64 },
    /// Nothing to read there.
    #[error("history {path} does not exist (watch --history or serve writes it)")]
    Missing { path: String },
    /// Reading or writing failed (unwritable path, full disk, lost connection).
    #[error("history {path}: failed to {action}: {cause}")]
    Io { path: String, action: &'static str, cause: String },
    /// PostgreSQL could not be reached or refused us.
    #[error("history: {0}")]
    Connect(#[from] crate::source::postgres::ConnectError),
}

/// One history backend: the same schema and the same answers whatever keeps it. Each call is
/// one transaction; a backend with blocking I/O (SQLite) does it off the async threads.
pub trait HistoryBackend: Send + Sync {
    /// The file, or the database without its password, as errors and logs name it.
    fn location(&self) -> String;

    /// Every record of `cluster`.
    fn records<'a>(&'a mut self, cluster: &'a str) -> BoxFuture<'a, Result<Vec<FindingRecord>, HistoryError>>;

    /// Write one round's decisions, all or nothing.
    fn apply<'a>(&'a mut self, writes: &'a [FindingWrite]) -> BoxFuture<'a, Result<(), HistoryError>>;

    /// Forget what was resolved before `before` (Unix seconds): see [`schema::PRUNE`].
    fn prune(&mut self, before: i64) -> BoxFuture<'_, Result<(), HistoryError>>;

    /// The three tables as one read sees them: the records of `cluster` (all when `None`), every
    /// change ordered by time and manager, every episode ordered by its start.
    fn tables<'a>(&'a mut self, cluster: Option<&'a str>) -> BoxFuture<'a, Result<Tables, HistoryError>>;
}

/// A change row as read: finding id, time, manager.
pub type ChangeRow = (String, i64, String);
/// An episode row as read: finding id, start, end.
pub type EpisodeRow = (String, i64, Option<i64>);
/// The three tables as one read saw them.
pub type Tables = (Vec<FindingRecord>, Vec<ChangeRow>, Vec<EpisodeRow>);

/// The version a file or database says it has, refused when newer than this build writes.
pub(super) fn check_version(location: &str, version: i64) -> Result<(), HistoryError> {
    if version > schema::CURRENT {
        return Err(HistoryError::Newer { path: location.to_string(), found: version, supported: schema::CURRENT });
    }
    Ok(())
}

/// A record from its columns in [`schema::FINDING_COLUMNS`] order (empty text: none).
#[allow(clippy::too_many_arguments)]
pub(super) fn record_of(
    cluster: String,
    target: [String; 3],
    object: [String; 3],
    path: String,
    times: (i64, i64, Option<i64>, i64),
    episodes: i64,
    digest: String,
    manager: String,
) -> FindingRecord {
    use crate::report::history::{FindingKey, ObjectRef, TargetRef};
    let none_if_empty = |s: String| (!s.is_empty()).then_some(s);
    let [tk, tns, tn] = target;
    let [ok, ons, on] = object;
    FindingRecord {
        key: FindingKey {
            cluster,
            target: TargetRef { kind: tk, namespace: none_if_empty(tns), name: tn },
            object: ObjectRef { kind: ok, namespace: none_if_empty(ons), name: on },
            path,
        },
        first_seen: times.0,
        last_seen: times.1,
        resolved_at: times.2,
        since: times.3,
        episodes: u32::try_from(episodes).unwrap_or(u32::MAX),
        digest,
        manager: none_if_empty(manager),
    }
}
