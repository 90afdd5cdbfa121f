//! The history in PostgreSQL (tokio-postgres, connected by `source::postgres` as Helm's SQL
//! storage is: the same connection strings, TLS modes and errors), so the watchers and dashboards
//! of a fleet share one history. The same schema and statements as the SQLite file ([`schema`]);
//! migrations run under a transaction-scoped advisory lock, so two processes starting at once
//! migrate once. Each cluster should have one writer (its rows are its own); any number may read.

use futures::future::BoxFuture;
use tokio_postgres::Client;

use super::backend::{Access, HistoryBackend, HistoryError, Tables, check_version, record_of};
use super::schema;
use crate::report::history::{EpisodeEdge, FindingRecord, FindingWrite};
use crate::source::postgres::{Connector, error_cause};

/// The advisory lock key of migrations (any constant shared by every kubectl-drift).
const MIGRATION_LOCK: i64 = 0x6b_6472_6966_7431;

/// The history in one PostgreSQL database, over one connection.
pub struct PgBackend {
    client: Client,
    target: String,
}

impl PgBackend {
    /// Connect, and check (to read) or create and migrate (to write) the schema.
    pub async fn open(dsn: &str, access: Access) -> Result<PgBackend, HistoryError> {
        let connector = Connector::new(dsn)?;
        let client = connector.connect().await?;
        let mut store = PgBackend { client, target: connector.target() };
        store.prepare(access).await?;
        Ok(store)
    }

    fn err(&self, action: &'static str) -> impl Fn(tokio_postgres::Error) -> HistoryError + '_ {
        move |e| HistoryError::Io { path: self.target.clone(), action, cause: error_cause(&e) }
    }

    async fn prepare(&mut self, access: Access) -> Result<(), HistoryError> {
        let target = self.target.clone();
        let err = |action: &'static str| {
            let target = target.clone();
            move |e: tokio_postgres::Error| HistoryError::Io { path: target, action, cause: error_cause(&e) }
        };
        if access == Access::Read {
            let row = self
                .client
                .query_one("SELECT to_regclass('schema_version') IS NOT NULL", &[])
                .await
                .map_err(err("read the schema"))?;
            if !row.get::<_, bool>(0) {
                return Err(HistoryError::Missing { path: target });
            }
            let version: i64 =
                self.client.query_one(schema::SELECT_VERSION, &[]).await.map_err(err("read the schema"))?.get(0);
            return check_version(&target, version);
        }
        let tx = self.client.transaction().await.map_err(err("start a transaction"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(err("lock the schema"))?;
        tx.execute(schema::CREATE_VERSION_TABLE, &[]).await.map_err(err("create the schema"))?;
        let version: i64 = tx.query_one(schema::SELECT_VERSION, &[]).await.map_err(err("read the schema"))?.get(0);
        check_version(&target, version)?;
        for (v, statements) in schema::MIGRATIONS.iter().filter(|(v, _)| *v > version) {
            for s in *statements {
                tx.execute(*s, &[]).await.map_err(err("migrate the schema"))?;
            }
            tx.execute(schema::INSERT_VERSION, &[v]).await.map_err(err("migrate the schema"))?;
        }
        tx.commit().await.map_err(err("migrate the schema"))
    }

    async fn read_records(&mut self, cluster: Option<&str>) -> Result<Vec<FindingRecord>, HistoryError> {
        let rows = match cluster {
            Some(c) => self.client.query(&schema::select_findings_of_cluster(), &[&c]).await,
            None => self.client.query(&schema::select_findings(), &[]).await,
        }
        .map_err(self.err("read findings"))?;
        Ok(rows
            .iter()
            .map(|r| {
                record_of(
                    r.get(1),
                    [r.get(2), r.get(3), r.get(4)],
                    [r.get(5), r.get(6), r.get(7)],
                    r.get(8),
                    (r.get(9), r.get(10), r.get(11), r.get(15)),
                    r.get(12),
                    r.get(13),
                    r.get(14),
                )
            })
            .collect())
    }

    async fn everything(&mut self, cluster: Option<&str>) -> Result<Tables, HistoryError> {
        // One snapshot of the three tables.
        self.client.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").await.map_err(self.err("read"))?;
        let result = async {
            let records = self.read_records(cluster).await?;
            let changes = self.client.query(schema::SELECT_CHANGES, &[]).await.map_err(self.err("read changes"))?;
            let changes = changes.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
            let episodes = self.client.query(schema::SELECT_EPISODES, &[]).await.map_err(self.err("read episodes"))?;
            let episodes = episodes.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
            Ok((records, changes, episodes))
        }
        .await;
        let _ = self.client.batch_execute("COMMIT").await;
        result
    }

    async fn write(&mut self, writes: &[FindingWrite]) -> Result<(), HistoryError> {
        if writes.is_empty() {
            return Ok(());
        }
        let target = self.target.clone();
        let err = move |e: tokio_postgres::Error| HistoryError::Io {
            path: target.clone(),
            action: "write the round",
            cause: error_cause(&e),
        };
        let tx = self.client.transaction().await.map_err(&err)?;
        let upsert = tx.prepare(schema::UPSERT_FINDING).await.map_err(&err)?;
        let change = tx.prepare(schema::INSERT_CHANGE).await.map_err(&err)?;
        let open = tx.prepare(schema::OPEN_EPISODE).await.map_err(&err)?;
        let close = tx.prepare(schema::CLOSE_EPISODE).await.map_err(&err)?;
        for w in writes {
            let r = &w.record;
            let k = &r.key;
            let id = k.id();
            let episodes = i64::from(r.episodes);
            tx.execute(
                &upsert,
                &[
                    &id,
                    &k.cluster,
                    &k.target.kind,
                    &k.target.namespace.as_deref().unwrap_or(""),
                    &k.target.name,
                    &k.object.kind,
                    &k.object.namespace.as_deref().unwrap_or(""),
                    &k.object.name,
                    &k.path,
                    &r.first_seen,
                    &r.last_seen,
                    &r.resolved_at,
                    &episodes,
                    &r.digest,
                    &r.manager.as_deref().unwrap_or(""),
                    &r.since,
                ],
            )
            .await
            .map_err(&err)?;
            if let Some(c) = &w.change {
                tx.execute(&change, &[&id, &c.at, &c.manager.as_deref().unwrap_or(""), &c.digest])
                    .await
                    .map_err(&err)?;
            }
            match w.episode {
                Some(EpisodeEdge::Opened(at)) => {
                    tx.execute(&open, &[&id, &at]).await.map_err(&err)?;
                }
                Some(EpisodeEdge::Closed(at)) => {
                    tx.execute(&close, &[&at, &id]).await.map_err(&err)?;
                }
                None => {}
            }
        }
        tx.commit().await.map_err(&err)
    }

    async fn delete_resolved(&mut self, before: i64) -> Result<(), HistoryError> {
        let target = self.target.clone();
        let err = move |e: tokio_postgres::Error| HistoryError::Io {
            path: target.clone(),
            action: "apply the retention",
            cause: error_cause(&e),
        };
        let tx = self.client.transaction().await.map_err(&err)?;
        for s in schema::PRUNE {
            if s.contains("$1") {
                tx.execute(*s, &[&before]).await.map_err(&err)?;
            } else {
                tx.execute(*s, &[]).await.map_err(&err)?;
            }
        }
        tx.commit().await.map_err(&err)
    }
}

impl HistoryBackend for PgBackend {
    fn location(&self) -> String {
        self.target.clone()
    }

    fn records<'a>(&'a mut self, cluster: &'a str) -> BoxFuture<'a, Result<Vec<FindingRecord>, HistoryError>> {
        Box::pin(self.read_records(Some(cluster)))
    }

    fn apply<'a>(&'a mut self, writes: &'a [FindingWrite]) -> BoxFuture<'a, Result<(), HistoryError>> {
        Box::pin(self.write(writes))
    }

    fn prune(&mut self, before: i64) -> BoxFuture<'_, Result<(), HistoryError>> {
        Box::pin(self.delete_resolved(before))
    }

    fn tables<'a>(&'a mut self, cluster: Option<&'a str>) -> BoxFuture<'a, Result<Tables, HistoryError>> {
        Box::pin(self.everything(cluster))
    }
}
