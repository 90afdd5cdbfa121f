//! The history in an SQLite file (rusqlite, SQLite compiled in). Its calls block, so each runs
//! on tokio's blocking threads (`spawn_blocking`), never on the async ones.
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
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rusqlite::{Connection, OpenFlags, params};

use super::backend::{Access, ChangeRow, EpisodeRow, HistoryBackend, HistoryError, Tables, check_version, record_of};
use super::schema;
use crate::report::history::{EpisodeEdge, FindingRecord, FindingWrite};

/// The history in one SQLite file, its connection handed to a blocking thread for each call.
pub struct SqliteBackend {
    path: PathBuf,
    /// Shared with the blocking thread of the call under way. Every call has `&mut self`; one
    /// waits on the mutex (on its blocking thread) only behind a call whose caller gave up.
    conn: Arc<Mutex<SqliteFile>>,
}

impl SqliteBackend {
    /// Open (and, to write, lock, create and migrate) the file at `path`, on a blocking thread.
    pub async fn open(path: &Path, access: Access) -> Result<SqliteBackend, HistoryError> {
        let owned = path.to_path_buf();
        let file = blocking(path, move || SqliteFile::open(&owned, access)).await?;
        Ok(SqliteBackend { path: path.to_path_buf(), conn: Arc::new(Mutex::new(file)) })
    }

    /// Run `f` on the file on a blocking thread.
    async fn with<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut SqliteFile) -> Result<T, HistoryError> + Send + 'static,
    ) -> Result<T, HistoryError> {
        let conn = self.conn.clone();
        blocking(&self.path, move || {
            let mut file = conn.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut file)
        })
        .await
    }
}

/// `f` on tokio's blocking threads; a call that panicked there is an error naming the file.
async fn blocking<T: Send + 'static>(
    path: &Path,
    f: impl FnOnce() -> Result<T, HistoryError> + Send + 'static,
) -> Result<T, HistoryError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(HistoryError::Io { path: path.display().to_string(), action: "use", cause: e.to_string() })
    })
}

impl HistoryBackend for SqliteBackend {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn records<'a>(&'a mut self, cluster: &'a str) -> BoxFuture<'a, Result<Vec<FindingRecord>, HistoryError>> {
        let cluster = cluster.to_string();
        Box::pin(self.with(move |f| f.records(Some(&cluster))))
    }

    fn apply<'a>(&'a mut self, writes: &'a [FindingWrite]) -> BoxFuture<'a, Result<(), HistoryError>> {
        let writes = writes.to_vec();
        Box::pin(self.with(move |f| f.apply(&writes)))
    }

    fn prune(&mut self, before: i64) -> BoxFuture<'_, Result<(), HistoryError>> {
        Box::pin(self.with(move |f| f.prune(before)))
    }

    fn tables<'a>(&'a mut self, cluster: Option<&'a str>) -> BoxFuture<'a, Result<Tables, HistoryError>> {
        let cluster = cluster.map(str::to_string);
        Box::pin(self.with(move |f| f.everything(cluster.as_deref())))
    }
}

/// The open file and its lock: the blocking half, used only on a blocking thread.
struct SqliteFile {
    path: PathBuf,
    conn: Connection,
    /// Held while a writer lives (released when the file is closed, also by a crash).
    _lock: Option<File>,
}

impl SqliteFile {
    fn open(path: &Path, access: Access) -> Result<SqliteFile, HistoryError> {
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
        let mut store = SqliteFile { path: path.to_path_buf(), conn, _lock: lock };
        store.prepare(access)?;
        Ok(store)
    }

    fn path(&self) -> String {
        self.path.display().to_string()
    }

    fn conn(&mut self) -> &mut Connection {
        &mut self.conn
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

    fn records(&mut self, cluster: Option<&str>) -> Result<Vec<FindingRecord>, HistoryError> {
        let shown = self.path();
        let err = |e| sql_error(&shown, "read findings", e);
        let sql = match cluster {
            Some(_) => schema::select_findings_of_cluster(),
            None => schema::select_findings(),
        };
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&sql).map_err(err)?;
        let map = |r: &rusqlite::Row<'_>| {
            Ok(record_of(
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

    fn everything(&mut self, cluster: Option<&str>) -> Result<Tables, HistoryError> {
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

    fn apply(&mut self, writes: &[FindingWrite]) -> Result<(), HistoryError> {
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

    fn prune(&mut self, before: i64) -> Result<(), HistoryError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::history::{ChangeRecord, FindingKey};
    use crate::source::history::memory::MemoryBackend;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("drift-history-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn key(path: &str) -> FindingKey {
        FindingKey::example(path)
    }

    /// What a round at `at` writes for the finding at `path`: its record as of `at` (first seen
    /// at 1), a change when `digest` is given, and an episode edge.
    fn write(path: &str, at: i64, digest: Option<&str>, episode: Option<EpisodeEdge>) -> FindingWrite {
        let resolved_at = match episode {
            Some(EpisodeEdge::Closed(at)) => Some(at),
            _ => None,
        };
        FindingWrite {
            record: FindingRecord {
                key: key(path),
                first_seen: 1,
                last_seen: at,
                resolved_at,
                since: 1,
                episodes: 1,
                digest: digest.unwrap_or("d").into(),
                manager: Some("kubectl-edit".into()),
            },
            change: digest.map(|d| ChangeRecord { at, manager: Some("kubectl-edit".into()), digest: d.into() }),
            episode,
        }
    }

    /// Rounds that open, change, resolve and reopen one finding, and leave another open.
    fn rounds() -> Vec<Vec<FindingWrite>> {
        vec![
            vec![
                write("spec.replicas", 100, Some("d1"), Some(EpisodeEdge::Opened(100))),
                write("spec.paused", 100, Some("p1"), Some(EpisodeEdge::Opened(100))),
            ],
            vec![write("spec.replicas", 200, Some("d2"), None), write("spec.paused", 200, None, None)],
            vec![write("spec.replicas", 300, None, Some(EpisodeEdge::Closed(300)))],
            vec![write("spec.replicas", 400, Some("d3"), Some(EpisodeEdge::Opened(400)))],
            vec![write("spec.replicas", 500, None, Some(EpisodeEdge::Closed(500)))],
        ]
    }

    /// Tables with their rows in one order (the statements order changes and episodes by time
    /// only).
    fn sorted((mut records, mut changes, mut episodes): Tables) -> Tables {
        records.sort_by(|a, b| a.key.cmp(&b.key));
        changes.sort();
        episodes.sort();
        (records, changes, episodes)
    }

    #[tokio::test]
    async fn the_file_answers_as_the_memory_backend_does() {
        let dir = temp_dir("same");
        let mut file = SqliteBackend::open(&dir.join("history.db"), Access::Write).await.unwrap();
        let mut memory = MemoryBackend::default();
        for round in rounds() {
            file.apply(&round).await.unwrap();
            memory.apply(&round).await.unwrap();
        }
        let tables = sorted(file.tables(None).await.unwrap());
        assert_eq!(tables, sorted(memory.tables(None).await.unwrap()));
        assert_eq!((tables.0.len(), tables.1.len(), tables.2.len()), (2, 4, 3), "{tables:?}");
        assert_eq!(file.records("prod").await.unwrap().len(), 2);
        assert!(file.records("staging").await.unwrap().is_empty());
        // Retention at 450: the finding resolved at 300 stays (resolved again at 500), its
        // episode that ended at 300 goes; at 600 it goes with its changes.
        for before in [450, 600] {
            file.prune(before).await.unwrap();
            memory.prune(before).await.unwrap();
            let tables = sorted(file.tables(None).await.unwrap());
            assert_eq!(tables, sorted(memory.tables(None).await.unwrap()), "pruned before {before}");
        }
        let (records, changes, episodes) = file.tables(None).await.unwrap();
        assert_eq!((records.len(), changes.len(), episodes.len()), (1, 1, 1), "only spec.paused is left");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn one_writer_at_a_time_and_a_reader_writes_nothing() {
        let dir = temp_dir("writers");
        let path = dir.join("sub/history.db");
        let mut writer = SqliteBackend::open(&path, Access::Write).await.unwrap();
        writer.apply(&rounds()[0]).await.unwrap();
        // A second writer is refused while the first lives, naming the file and its lock.
        let second = SqliteBackend::open(&path, Access::Write).await.err().expect("a second writer is refused");
        assert!(matches!(second, HistoryError::Locked { .. }), "{second}");
        assert!(second.to_string().contains(&path.display().to_string()), "{second}");
        assert!(second.to_string().contains("history.db.lock"), "{second}");
        // A reader is not, and sees the committed round.
        let mut reader = SqliteBackend::open(&path, Access::Read).await.unwrap();
        assert_eq!(reader.records("prod").await.unwrap().len(), 2);
        drop(reader);
        // The writer gone, another may write.
        drop(writer);
        drop(SqliteBackend::open(&path, Access::Write).await.unwrap());
        // Reading changes nothing in the file.
        let before = std::fs::read(&path).unwrap();
        let mut reader = SqliteBackend::open(&path, Access::Read).await.unwrap();
        assert_eq!(reader.tables(Some("prod")).await.unwrap().0.len(), 2);
        drop(reader);
        assert_eq!(std::fs::read(&path).unwrap(), before);
        // A missing file is an error naming it, and is not created.
        let missing = dir.join("none.db");
        let err = SqliteBackend::open(&missing, Access::Read).await.err().unwrap();
        assert!(matches!(err, HistoryError::Missing { .. }), "{err}");
        assert!(err.to_string().contains("none.db"), "{err}");
        assert!(!missing.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Set in the writer process [`a_killed_writer_leaves_the_last_committed_round`] starts: the
    /// file it writes rounds to until it is killed.
    const KILLED_WRITER: &str = "DRIFT_HISTORY_KILLED_WRITER_FILE";

    /// The writer the kill test kills: one round after another to the file, each one more change
    /// and the record's last-seen time moved to it, in one transaction. Stops by itself after a
    /// minute, should nobody kill it.
    async fn write_until_killed(path: &Path) {
        let mut file = SqliteBackend::open(path, Access::Write).await.unwrap();
        let last = file.records("prod").await.unwrap().iter().map(|r| r.last_seen).max().unwrap_or(0);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        for at in last + 1.. {
            if std::time::Instant::now() > deadline {
                break;
            }
            let opened = (at == 1).then_some(EpisodeEdge::Opened(1));
            file.apply(&[write("spec.replicas", at, Some(&format!("d{at}")), opened)]).await.unwrap();
        }
    }

    /// Kills the writer process when the test ends, whichever way.
    struct Writer(std::process::Child);

    impl Drop for Writer {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[tokio::test]
    async fn a_killed_writer_leaves_the_last_committed_round() {
        if let Some(path) = std::env::var_os(KILLED_WRITER) {
            return write_until_killed(Path::new(&path)).await;
        }
        let dir = temp_dir("killed");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("history.db");
        // This test again, in a process of its own, as the writer.
        let module = module_path!().split_once("::").map_or(module_path!(), |(_, m)| m);
        let name = format!("{module}::a_killed_writer_leaves_the_last_committed_round");
        let mut seen = 0;
        for attempt in 0..3 {
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([name.as_str(), "--exact", "--test-threads=1"])
                .env(KILLED_WRITER, &path)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let mut writer = Writer(child);
            // Until it has written 20 more rounds, then SIGKILL in the middle of its writing.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            loop {
                assert!(std::time::Instant::now() < deadline, "attempt {attempt}: the writer wrote nothing");
                let written = match SqliteBackend::open(&path, Access::Read).await {
                    Ok(mut r) => r.records("prod").await.map_or(0, |r| r.first().map_or(0, |r| r.last_seen)),
                    Err(_) => 0,
                };
                if written >= seen + 20 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            writer.0.kill().unwrap();
            assert!(!writer.0.wait().unwrap().success());
            // Its lock went with it; the file is sound and holds whole rounds: one change per
            // round, the record's last round as the last change.
            let mut file = SqliteBackend::open(&path, Access::Write).await.expect("the killed writer's lock is gone");
            let check: String = rusqlite::Connection::open(&path)
                .unwrap()
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(check, "ok", "after kill {attempt}");
            let (records, changes, episodes) = file.tables(None).await.unwrap();
            assert_eq!((records.len(), episodes.len()), (1, 1), "after kill {attempt}");
            let last = records[0].last_seen;
            assert!(last >= seen + 20, "after kill {attempt}: {last} rounds");
            assert_eq!(i64::try_from(changes.len()).unwrap(), last, "after kill {attempt}: one change per round");
            assert_eq!(changes.last().map(|c| c.1), Some(last));
            seen = last;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    #[tokio::test]
    async fn a_file_of_schema_1_is_migrated_and_keeps_its_rows() {
        let dir = temp_dir("migrate");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v1.db");
        {
            // A file as version 1 wrote it: one finding, reopened at 300.
            let c = rusqlite::Connection::open(&path).unwrap();
            c.execute(schema::CREATE_VERSION_TABLE, []).unwrap();
            for s in schema::MIGRATIONS[0].1 {
                c.execute(s, []).unwrap();
            }
            c.execute(schema::INSERT_VERSION, [1]).unwrap();
            let id = key("spec.replicas").id();
            c.execute(
                "INSERT INTO findings VALUES (?1, 'prod', 'release', 'shop', 'shop', 'Deployment', 'shop', 'web', \
                 'spec.replicas', 100, 400, NULL, 2, 'd', 'kubectl-scale')",
                [&id],
            )
            .unwrap();
            c.execute("INSERT INTO episodes VALUES (?1, 100, 200), (?1, 300, NULL)", [&id]).unwrap();
        }
        let mut store = SqliteBackend::open(&path, Access::Write).await.unwrap();
        let records = store.records("prod").await.unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!((records[0].first_seen, records[0].since, records[0].episodes), (100, 300, 2));
        drop(store);
        let c = rusqlite::Connection::open(&path).unwrap();
        let version: i64 = c.query_row(schema::SELECT_VERSION, [], |r| r.get(0)).unwrap();
        assert_eq!(version, schema::CURRENT);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_corrupt_file_is_named_and_left_alone() {
        let dir = temp_dir("corrupt");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("history.db");
        let junk = b"this is not an SQLite database, and it must stay as it is".repeat(100);
        std::fs::write(&path, &junk).unwrap();
        for access in [Access::Write, Access::Read] {
            let err = SqliteBackend::open(&path, access).await.err().expect("refused");
            assert!(matches!(err, HistoryError::Corrupt { .. }), "{err}");
            assert!(err.to_string().contains(&path.display().to_string()), "{err}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), junk, "left untouched");
        // A file from a newer version is refused, not misread.
        let newer = dir.join("newer.db");
        {
            let c = rusqlite::Connection::open(&newer).unwrap();
            c.execute_batch(
                "CREATE TABLE schema_version (version BIGINT NOT NULL); INSERT INTO schema_version VALUES (99);",
            )
            .unwrap();
        }
        let err = SqliteBackend::open(&newer, Access::Write).await.err().unwrap();
        assert!(matches!(err, HistoryError::Newer { found: 99, .. }), "{err}");
        // Nothing to read is an error, not an empty history.
        let err = SqliteBackend::open(&dir.join("none.db"), Access::Read).await.err().unwrap();
        assert!(matches!(err, HistoryError::Missing { .. }), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn an_unwritable_path_is_named() {
        let dir = temp_dir("unwritable");
        std::fs::create_dir_all(&dir).unwrap();
        // A file where a folder should be.
        std::fs::write(dir.join("file"), "x").unwrap();
        let path = dir.join("file/history.db");
        let err = SqliteBackend::open(&path, Access::Write).await.err().unwrap();
        assert!(matches!(err, HistoryError::Io { .. }), "{err}");
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
