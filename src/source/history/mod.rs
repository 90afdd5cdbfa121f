//! The drift history's storage (issue 52, docs/history.md): one seam, [`HistoryBackend`]
//! ([`backend`]: the trait, its errors and rows), as Helm's storage drivers are one interface
//! with a file per driver: an embedded SQLite file
//! ([`sqlite`], the default), PostgreSQL ([`postgres`], a fleet's shared database), both with the
//! same schema and statements ([`schema`]), and memory (`memory`, for tests, as Helm's memory
//! driver). [`open`] is the one place a backend is chosen, from the `--history` location. As
//! Helm's storage drivers, a backend judges nothing: it loads records and writes what the history
//! engine (`engine::history`, the one way in) decided. Unlike the other sources it also writes,
//! to its own file or database only (never to a cluster).
//!
//! Safety of the file ([`sqlite`]): one writer at a time (an exclusive lock on `PATH.lock`; a
//! second writer gets [`HistoryError::Locked`]), WAL with full sync and one transaction per round
//! (a crash or `kill -9` leaves the last committed round), a file that is not a sound database is
//! named and left alone ([`HistoryError::Corrupt`]), never replaced.

pub mod backend;
#[cfg(test)]
pub(crate) mod memory;
pub mod postgres;
pub mod schema;
pub mod sqlite;

use std::path::PathBuf;

pub use backend::{Access, HistoryBackend, HistoryError, Tables};

use crate::report::history::{FindingRecord, HistoryEntry, HistoryFilter, Interval};

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

/// Open (and, to write, create and migrate) the history at `location`: the one place a backend
/// is chosen.
pub async fn open(location: &HistoryLocation, access: Access) -> Result<Box<dyn HistoryBackend>, HistoryError> {
    Ok(match location {
        HistoryLocation::File(path) => Box::new(sqlite::SqliteBackend::open(path, access).await?),
        HistoryLocation::Postgres(dsn) => Box::new(postgres::PgBackend::open(dsn, access).await?),
    })
}

/// The entries `filter` accepts (with their managers and intervals, unsorted) from the rows of the
/// three tables (one pass each, whatever the backend).
pub fn entries_of(tables: Tables, filter: &HistoryFilter) -> Vec<HistoryEntry> {
    let (records, changes, episodes) = tables;
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

    #[tokio::test]
    async fn a_bad_history_database_string_is_named_as_the_history_not_helm() {
        let err = postgres::PgBackend::open("postgres://drift:hunter2@127.0.0.1:99999/drift", backend::Access::Read)
            .await
            .err()
            .expect("port 99999 does not parse")
            .to_string();
        assert!(err.starts_with("history: invalid PostgreSQL connection string"), "{err}");
        assert!(!err.contains("Helm") && !err.contains("hunter2"), "{err}");
    }
}
