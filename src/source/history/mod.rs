//! The drift history's storage (issue 52, docs/history.md): one seam, [`HistoryStore`], over an
//! embedded SQLite file (the default) and PostgreSQL (a fleet's shared database), with the same
//! schema and statements ([`schema`]). As Helm's storage drivers, it judges nothing: it loads
//! records and writes what the history engine (`engine::history`) decided. Unlike the other
//! sources it also writes, to its own file or database only (never to a cluster).
//!
//! Safety of the file ([`sqlite`]): one writer at a time (an exclusive lock on `PATH.lock`; a
//! second writer gets [`HistoryError::Locked`]), WAL with full sync and one transaction per round
//! (a crash or `kill -9` leaves the last committed round), a file that is not a sound database is
//! named and left alone ([`HistoryError::Corrupt`]), never replaced.

pub mod postgres;
pub mod schema;
pub mod sqlite;

use std::path::PathBuf;

use crate::report::history::{FindingRecord, FindingWrite, HistoryEntry, HistoryFilter, Interval};

/// Where the history is: a file, or a PostgreSQL connection string (never shown: it may hold a
/// password).
#[derive(Clone, PartialEq, Eq)]
pub enum HistoryLocation {
    File(PathBuf),
    Postgres(String),
}

impl std::fmt::Debug for HistoryLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HistoryLocation::File(p) => write!(f, "File({})", p.display()),
            HistoryLocation::Postgres(_) => f.write_str("Postgres(<redacted>)"),
        }
    }
}

impl HistoryLocation {
    /// `postgres://...`, `postgresql://...` or `key=value` pairs with `host=` or `dbname=`:
    /// PostgreSQL; anything else is a file path.
    pub fn parse(text: &str) -> HistoryLocation {
        let t = text.trim();
        let pairs = t.contains('=') && (t.starts_with("host=") || t.contains(" dbname=") || t.starts_with("dbname="));
        if t.starts_with("postgres://") || t.starts_with("postgresql://") || pairs {
            HistoryLocation::Postgres(t.to_string())
        } else {
            HistoryLocation::File(PathBuf::from(text))
        }
    }
}

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
    #[error(transparent)]
    Sql(#[from] crate::source::helm::error::SqlError),
}

/// The history store: SQLite or PostgreSQL, the same schema and the same answers.
pub enum HistoryStore {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PgStore),
}

impl HistoryStore {
    /// Open (and, to write, create and migrate) the history at `location`.
    pub async fn open(location: &HistoryLocation, access: Access) -> Result<HistoryStore, HistoryError> {
        match location {
            HistoryLocation::File(path) => Ok(HistoryStore::Sqlite(sqlite::SqliteStore::open(path, access)?)),
            HistoryLocation::Postgres(dsn) => Ok(HistoryStore::Postgres(postgres::PgStore::open(dsn, access).await?)),
        }
    }

    /// The file, or the database without its password, as errors and logs name it.
    pub fn location(&self) -> String {
        match self {
            HistoryStore::Sqlite(s) => s.path(),
            HistoryStore::Postgres(p) => p.target(),
        }
    }

    /// Every record of `cluster`.
    pub async fn records(&mut self, cluster: &str) -> Result<Vec<FindingRecord>, HistoryError> {
        match self {
            HistoryStore::Sqlite(s) => s.records(Some(cluster)),
            HistoryStore::Postgres(p) => p.records(Some(cluster)).await,
        }
    }

    /// Write one round's decisions, all or nothing.
    pub async fn apply(&mut self, writes: &[FindingWrite]) -> Result<(), HistoryError> {
        match self {
            HistoryStore::Sqlite(s) => s.apply(writes),
            HistoryStore::Postgres(p) => p.apply(writes).await,
        }
    }

    /// Forget what was resolved before `before` (Unix seconds).
    pub async fn prune(&mut self, before: i64) -> Result<(), HistoryError> {
        match self {
            HistoryStore::Sqlite(s) => s.prune(before),
            HistoryStore::Postgres(p) => p.prune(before).await,
        }
    }

    /// The entries `filter` accepts, with their managers and intervals (unsorted).
    pub async fn entries(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryEntry>, HistoryError> {
        let (records, changes, episodes) = match self {
            HistoryStore::Sqlite(s) => s.everything(filter.cluster.as_deref())?,
            HistoryStore::Postgres(p) => p.everything(filter.cluster.as_deref()).await?,
        };
        Ok(assemble(records, changes, episodes, filter))
    }
}

/// A change row as read: finding id, time, manager.
pub type ChangeRow = (String, i64, String);
/// An episode row as read: finding id, start, end.
pub type EpisodeRow = (String, i64, Option<i64>);
/// The three tables as one read saw them.
pub type Tables = (Vec<FindingRecord>, Vec<ChangeRow>, Vec<EpisodeRow>);

/// Entries from the rows of the three tables (one pass each, whatever the store).
fn assemble(
    records: Vec<FindingRecord>,
    changes: Vec<ChangeRow>,
    episodes: Vec<EpisodeRow>,
    filter: &HistoryFilter,
) -> Vec<HistoryEntry> {
    use std::collections::HashMap;
    let kept: Vec<(String, FindingRecord)> =
        records.into_iter().filter(|r| filter.accepts(r)).map(|r| (r.key.id(), r)).collect();
    let mut managers: HashMap<&str, Vec<String>> = HashMap::new();
    let mut intervals: HashMap<&str, Vec<Interval>> = HashMap::new();
    let ids: std::collections::HashSet<&str> = kept.iter().map(|(id, _)| id.as_str()).collect();
    for (id, _, manager) in &changes {
        if let Some(id) = ids.get(id.as_str())
            && !manager.is_empty()
        {
            let list = managers.entry(id).or_default();
            if !list.contains(manager) {
                list.push(manager.clone());
            }
        }
    }
    for (id, started, ended) in &episodes {
        if let Some(id) = ids.get(id.as_str()) {
            intervals.entry(id).or_default().push(Interval { started: *started, ended: *ended });
        }
    }
    kept.iter()
        .map(|(id, r)| {
            HistoryEntry::new(
                r,
                managers.remove(id.as_str()).unwrap_or_default(),
                intervals.remove(id.as_str()).unwrap_or_default(),
            )
        })
        .collect()
}

/// A record from its columns in [`schema::FINDING_COLUMNS`] order (empty text: none).
#[allow(clippy::too_many_arguments)]
fn record_of(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_a_database_or_a_file() {
        assert!(matches!(HistoryLocation::parse("postgres://u:p@h/db"), HistoryLocation::Postgres(_)));
        assert!(matches!(HistoryLocation::parse("postgresql://h/db"), HistoryLocation::Postgres(_)));
        assert!(matches!(HistoryLocation::parse("host=h dbname=drift"), HistoryLocation::Postgres(_)));
        assert_eq!(HistoryLocation::parse("data/history.db"), HistoryLocation::File("data/history.db".into()));
        assert_eq!(HistoryLocation::parse("a=b.db"), HistoryLocation::File("a=b.db".into()));
        assert!(!format!("{:?}", HistoryLocation::parse("postgres://u:secret@h/db")).contains("secret"));
    }
}
