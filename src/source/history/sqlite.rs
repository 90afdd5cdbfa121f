//! The history in an SQLite file (rusqlite, SQLite compiled in).
//!
//! - One writer: [`Access::Write`] takes an exclusive lock on `PATH.lock` (a separate file, so
//!   the lock never meets SQLite's own locks on the database) for as long as the store lives; a
//!   second writer is refused at once ([`HistoryError::Locked`]). Readers take no lock.
//! - Sound after a crash: WAL journal, `synchronous = FULL`, one transaction per round: a killed
//!   process leaves the last committed round (SQLite rolls the rest back on the next open).
//! - A file that is not a sound database is named and left alone ([`HistoryError::Corrupt`]): the
//!   writer runs `quick_check` when it opens, and nothing here ever deletes or recreates a file.

use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, params};

use super::{Access, ChangeRow, EpisodeRow, HistoryError, Tables, schema};
use crate::report::history::{EpisodeEdge, FindingRecord, FindingWrite};

pub struct SqliteStore {
    path: PathBuf,
    /// In a mutex only so the store is `Sync` (the live loop's sinks are shared across await
    /// points); every use has `&mut self`, so it is never contended.
    conn: std::sync::Mutex<Connection>,
    /// Held while a writer lives (released when the file is closed, also by a crash).
    _lock: Option<File>,
}

impl SqliteStore {
    pub fn open(path: &Path, access: Access) -> Result<SqliteStore, HistoryError> {
        let shown = path.display().to_string();
        let io = |action: &'static str| {
            let shown = shown.clone();
            move |e: std::io::Error| HistoryError::Io { path: shown, action, cause: e.to_string() }
        };
        let lock = match access {
            Access::Read => {
                if !path.exists() {
                    return Err(HistoryError::Missing { path: shown });
                }
                None
            }
            Access::Write => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(io("create the folder of"))?;
                }
                let lock_path = lock_path(path);
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(&lock_path)
                    .map_err(io("create the lock file of"))?;
                match file.try_lock() {
                    Ok(()) => {}
                    Err(std::fs::TryLockError::WouldBlock) => {
                        return Err(HistoryError::Locked { path: shown, lock: lock_path.display().to_string() });
                    }
                    Err(std::fs::TryLockError::Error(e)) => return Err(io("lock")(e)),
                }
                Some(file)
            }
        };
        let flags = match access {
            Access::Write => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
            Access::Read => OpenFlags::SQLITE_OPEN_READ_ONLY,
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| sql_error(&shown, "open", e))?;
        let mut store = SqliteStore { path: path.to_path_buf(), conn: std::sync::Mutex::new(conn), _lock: lock };
        store.prepare(access)?;
        Ok(store)
    }

    pub fn path(&self) -> String {
        self.path.display().to_string()
    }

    fn conn(&mut self) -> &mut Connection {
        self.conn.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// Journal, checks, schema.
    fn prepare(&mut self, access: Access) -> Result<(), HistoryError> {
        let shown = self.path();
        let err = |action: &'static str| {
            let shown = shown.clone();
            move |e: rusqlite::Error| sql_error(&shown, action, e)
        };
        self.conn().busy_timeout(std::time::Duration::from_secs(10)).map_err(err("set the busy timeout"))?;
        if access == Access::Read {
            let version = self.version()?;
            return check_version(&shown, version);
        }
        // A file that is not a database fails here, before anything is written to it.
        let check: String =
            self.conn().query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(err("check the file"))?;
        if check != "ok" {
            return Err(HistoryError::Corrupt { path: shown, cause: format!("quick_check: {check}") });
        }
        let mode: String =
            self.conn().query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(err("use a WAL journal"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(HistoryError::Io {
                path: shown,
                action: "use a WAL journal",
                cause: format!("journal mode is {mode}"),
            });
        }
        self.conn().pragma_update(None, "synchronous", "FULL").map_err(err("set synchronous"))?;
        let tx = self.conn().transaction().map_err(err("start a transaction"))?;
        tx.execute(schema::CREATE_VERSION_TABLE, []).map_err(err("create the schema"))?;
        let version: i64 = tx.query_row(schema::SELECT_VERSION, [], |r| r.get(0)).map_err(err("read the schema"))?;
        check_version(&shown, version)?;
        for (v, statements) in schema::MIGRATIONS.iter().filter(|(v, _)| *v > version) {
            for s in *statements {
                tx.execute(s, []).map_err(err("migrate the schema"))?;
            }
            tx.execute(schema::INSERT_VERSION, params![v]).map_err(err("migrate the schema"))?;
        }
        tx.commit().map_err(err("migrate the schema"))
    }

    fn version(&mut self) -> Result<i64, HistoryError> {
        let shown = self.path();
        let exists: i64 = self
            .conn()
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'", [], |r| {
                r.get(0)
            })
            .map_err(|e| sql_error(&shown, "read the schema", e))?;
        if exists == 0 {
            return Err(HistoryError::Corrupt { path: shown, cause: "no schema_version table".into() });
        }
        self.conn()
            .query_row(schema::SELECT_VERSION, [], |r| r.get(0))
            .map_err(|e| sql_error(&shown, "read the schema", e))
    }

    pub fn records(&mut self, cluster: Option<&str>) -> Result<Vec<FindingRecord>, HistoryError> {
        let shown = self.path();
        let err = |e| sql_error(&shown, "read findings", e);
        let sql = match cluster {
            Some(_) => schema::select_findings_of_cluster(),
            None => schema::select_findings(),
        };
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&sql).map_err(err)?;
        let map = |r: &rusqlite::Row<'_>| {
            Ok(super::record_of(
                r.get(1)?,
                [r.get(2)?, r.get(3)?, r.get(4)?],
                [r.get(5)?, r.get(6)?, r.get(7)?],
                r.get(8)?,
                (r.get(9)?, r.get(10)?, r.get(11)?, r.get(15)?),
                r.get(12)?,
                r.get(13)?,
                r.get(14)?,
            ))
        };
        let rows = match cluster {
            Some(c) => stmt.query_map(params![c], map).map_err(err)?.collect::<Result<Vec<_>, _>>(),
            None => stmt.query_map([], map).map_err(err)?.collect::<Result<Vec<_>, _>>(),
        };
        rows.map_err(err)
    }

    pub fn everything(&mut self, cluster: Option<&str>) -> Result<Tables, HistoryError> {
        let shown = self.path();
        // One read transaction: the three tables as of one round.
        self.conn().execute_batch("BEGIN").map_err(|e| sql_error(&shown, "read", e))?;
        let result = (|| {
            let records = self.records(cluster)?;
            let err = |e| sql_error(&shown, "read changes", e);
            let conn = self.conn();
            let mut stmt = conn.prepare_cached(schema::SELECT_CHANGES).map_err(err)?;
            let changes = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(err)?
                .collect::<Result<Vec<ChangeRow>, _>>()
                .map_err(err)?;
            let mut stmt = conn.prepare_cached(schema::SELECT_EPISODES).map_err(err)?;
            let episodes = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(err)?
                .collect::<Result<Vec<EpisodeRow>, _>>()
                .map_err(err)?;
            Ok((records, changes, episodes))
        })();
        let _ = self.conn().execute_batch("COMMIT");
        result
    }

    pub fn apply(&mut self, writes: &[FindingWrite]) -> Result<(), HistoryError> {
        if writes.is_empty() {
            return Ok(());
        }
        let shown = self.path();
        let err = |e| sql_error(&shown, "write the round", e);
        let tx = self.conn().transaction().map_err(err)?;
        {
            let mut upsert = tx.prepare_cached(schema::UPSERT_FINDING).map_err(err)?;
            let mut change = tx.prepare_cached(schema::INSERT_CHANGE).map_err(err)?;
            let mut open = tx.prepare_cached(schema::OPEN_EPISODE).map_err(err)?;
            let mut close = tx.prepare_cached(schema::CLOSE_EPISODE).map_err(err)?;
            for w in writes {
                let r = &w.record;
                let k = &r.key;
                let id = k.id();
                upsert
                    .execute(params![
                        id,
                        k.cluster,
                        k.target.kind,
                        k.target.namespace.as_deref().unwrap_or(""),
                        k.target.name,
                        k.object.kind,
                        k.object.namespace.as_deref().unwrap_or(""),
                        k.object.name,
                        k.path,
                        r.first_seen,
                        r.last_seen,
                        r.resolved_at,
                        i64::from(r.episodes),
                        r.digest,
                        r.manager.as_deref().unwrap_or(""),
                        r.since,
                    ])
                    .map_err(err)?;
                if let Some(c) = &w.change {
                    change.execute(params![id, c.at, c.manager.as_deref().unwrap_or(""), c.digest]).map_err(err)?;
                }
                match w.episode {
                    Some(EpisodeEdge::Opened(at)) => {
                        open.execute(params![id, at]).map_err(err)?;
                    }
                    Some(EpisodeEdge::Closed(at)) => {
                        close.execute(params![at, id]).map_err(err)?;
                    }
                    None => {}
                }
            }
        }
        tx.commit().map_err(err)
    }

    pub fn prune(&mut self, before: i64) -> Result<(), HistoryError> {
        let shown = self.path();
        let err = |e| sql_error(&shown, "apply the retention", e);
        let tx = self.conn().transaction().map_err(err)?;
        for s in schema::PRUNE {
            if s.contains("$1") {
                tx.execute(s, params![before]).map_err(err)?;
            } else {
                tx.execute(s, []).map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }
}

/// The lock file beside a history file: `PATH.lock`.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn check_version(path: &str, version: i64) -> Result<(), HistoryError> {
    if version > schema::CURRENT {
        return Err(HistoryError::Newer { path: path.to_string(), found: version, supported: schema::CURRENT });
    }
    Ok(())
}

/// An SQLite error, named by what was being done; a file that is not a database (or is damaged)
/// is [`HistoryError::Corrupt`].
fn sql_error(path: &str, action: &'static str, e: rusqlite::Error) -> HistoryError {
    use rusqlite::ErrorCode;
    let code = e.sqlite_error_code();
    match code {
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => {
            HistoryError::Corrupt { path: path.to_string(), cause: e.to_string() }
        }
        _ => HistoryError::Io { path: path.to_string(), action, cause: e.to_string() },
    }
}
