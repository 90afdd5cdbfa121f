//! Helm's SQL storage driver (`HELM_DRIVER=sql`): releases in PostgreSQL, read-only.
//!
//! Helm keeps one row per revision in `releases_v1` (`key, type, body, name, namespace,
//! version, status, owner, createdat, modifiedat`); `body` is the same `base64(gzip(json))` as
//! the Secret driver, and Helm reads only rows with `owner = 'helm'`. This module keeps a small
//! bounded pool of connections, each made as Helm's PostgreSQL client (lib/pq) makes it
//! (`source::postgres`: the connection string, TLS, connecting), and reads with one SELECT per
//! request: all revisions of a scope at once, never one per release. It only ever issues
//! SELECT, so a role that may only SELECT is enough.
//!
//! Nothing here prints the password: errors name the target as `postgres://USER@HOST:PORT/DB`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row};

use futures::future::BoxFuture;

use super::driver::{ReleaseBody, ReleaseDriver, ReleaseLabels, ReleaseSummary, StoredRevision, summarise_labels};
use super::error::{SqlError, StorageError, TABLE};
use crate::source::postgres::{Connector, error_cause};

/// At most this many connections are open at once.
pub const POOL_SIZE: usize = 4;

/// A connection string, kept out of `Debug` output (it may hold a password).
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectionString(pub String);

impl std::fmt::Debug for ConnectionString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectionString(<redacted>)")
    }
}

impl std::str::FromStr for ConnectionString {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(ConnectionString(s.to_string()))
    }
}

/// Reads Helm's SQL storage through a small bounded pool of connections, opened on first use
/// and reused (a `watch` keeps them between rounds).
pub struct SqlStore {
    connector: Connector,
    /// Limit for each query (None: no limit).
    timeout: Option<Duration>,
    idle: Mutex<Vec<Client>>,
    slots: Semaphore,
    /// The table was found readable by this role ([`SqlStore::check_visibility`]).
    visible: AtomicBool,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SqlStore({:?})", self.connector)
    }
}

/// A connection taken from the pool; it goes back only through [`Checkout::give_back`], so a
/// connection that failed or timed out is closed rather than reused.
struct Checkout<'a> {
    store: &'a SqlStore,
    client: Client,
    _slot: SemaphorePermit<'a>,
}

impl Checkout<'_> {
    fn give_back(self) {
        if !self.client.is_closed()
            && let Ok(mut idle) = self.store.idle.lock()
        {
            idle.push(self.client);
        }
    }
}

/// The columns every revision query reads, in this order.
const REVISION_COLUMNS: &str = "key, namespace, name, version, status, body";

impl SqlStore {
    /// Parse the connection string and prepare TLS; nothing is connected yet.
    pub fn new(connection: &str, timeout: Option<Duration>) -> Result<SqlStore, SqlError> {
        if connection.trim().is_empty() {
            return Err(SqlError::MissingConnectionString);
        }
        Ok(SqlStore {
            connector: Connector::new(connection)?,
            timeout,
            idle: Mutex::new(Vec::new()),
            slots: Semaphore::new(POOL_SIZE),
            visible: AtomicBool::new(false),
        })
    }

    /// Where this store reads, without the password.
    pub fn target(&self) -> String {
        self.connector.target()
    }

    async fn bounded<T>(
        &self,
        what: &str,
        limit: Option<Duration>,
        fut: impl std::future::Future<Output = Result<T, SqlError>>,
    ) -> Result<T, SqlError> {
        match limit {
            Some(d) => tokio::time::timeout(d, fut).await.unwrap_or_else(|_| {
                Err(SqlError::Timeout { target: self.target(), what: what.to_string(), seconds: d.as_secs() })
            }),
            None => fut.await,
        }
    }

    async fn checkout(&self) -> Result<Checkout<'_>, SqlError> {
        let slot = self
            .bounded("wait for a free connection", self.timeout, async {
                self.slots.acquire().await.map_err(|e| SqlError::Query {
                    target: self.target(),
                    what: "take a connection".into(),
                    cause: e.to_string(),
                })
            })
            .await?;
        let reused = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.retain(|c| !c.is_closed());
            idle.pop()
        };
        let client = match reused {
            Some(c) => c,
            None => self.connector.connect().await?,
        };
        Ok(Checkout { store: self, client, _slot: slot })
    }

    fn query_error(&self, e: &tokio_postgres::Error, what: &str) -> SqlError {
        use tokio_postgres::error::SqlState;
        let target = self.target();
        match e.as_db_error().map(|d| d.code()) {
            Some(c) if *c == SqlState::UNDEFINED_TABLE => SqlError::MissingTable { target },
            Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => SqlError::Permission { target, cause: error_cause(e) },
            _ => SqlError::Query { target, what: what.to_string(), cause: error_cause(e) },
        }
    }

    /// Run one SELECT in a read-only transaction (so even a role that could write never does),
    /// after checking once per store that the table exists and its rows are visible to us.
    async fn query(&self, what: &str, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, SqlError> {
        let mut conn = self.checkout().await?;
        let rows = self
            .bounded(what, self.timeout, async {
                let err = |e: tokio_postgres::Error| self.query_error(&e, what);
                let tx = conn.client.build_transaction().read_only(true).start().await.map_err(err)?;
                if !self.visible.load(Ordering::Relaxed) {
                    self.check_visibility(&tx).await?;
                    self.visible.store(true, Ordering::Relaxed);
                }
                let rows = tx.query(sql, params).await.map_err(err)?;
                tx.commit().await.map_err(err)?;
                Ok(rows)
            })
            .await?;
        conn.give_back();
        Ok(rows)
    }

    /// The table exists, and row-level security does not hide all of it from this role. Helm
    /// creates its tables with row-level security on and no policy, so only their owner, a
    /// superuser or a BYPASSRLS role sees rows; anyone else would read an empty table.
    async fn check_visibility(&self, tx: &tokio_postgres::Transaction<'_>) -> Result<(), SqlError> {
        let sql = format!(
            "SELECT c.relrowsecurity AND (c.relforcerowsecurity OR NOT pg_has_role(current_user, c.relowner, 'USAGE')) \
                    AND NOT (r.rolsuper OR r.rolbypassrls) \
                    AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_policy p WHERE p.polrelid = c.oid \
                        AND p.polpermissive AND p.polcmd IN ('r', '*') \
                        AND (0 = ANY(p.polroles) OR EXISTS (SELECT 1 FROM unnest(p.polroles) AS u(oid) \
                                                            WHERE pg_has_role(current_user, u.oid, 'USAGE')))), \
                    current_user::text \
             FROM pg_catalog.pg_class c JOIN pg_catalog.pg_roles r ON r.rolname = current_user \
             WHERE c.oid = to_regclass('{TABLE}')"
        );
        let rows = tx.query(&sql, &[]).await.map_err(|e| self.query_error(&e, "check access to the table"))?;
        let Some(row) = rows.first() else {
            return Err(SqlError::MissingTable { target: self.target() });
        };
        let hidden: bool = row.try_get(0).unwrap_or(false);
        if hidden {
            let user: String = row.try_get(1).unwrap_or_default();
            return Err(SqlError::RowSecurity { target: self.target(), user });
        }
        Ok(())
    }

    /// Every stored revision matching `selector` (`name=X`, `status=deployed`, `version=N`,
    /// comma-separated, as the Kubernetes drivers' label selectors), in `namespace` or in all
    /// namespaces: one query. Undecodable rows are returned with their error.
    async fn list_rows(&self, namespace: Option<&str>, selector: &str) -> Result<Vec<StoredRevision>, StorageError> {
        let parsed = ReleaseLabels::parse(selector, "sql")?;
        let version = match parsed.version {
            Some(v) => Some(
                i32::try_from(v)
                    .map_err(|_| StorageError::UnsupportedSelector { driver: "sql", selector: selector.to_string() })?,
            ),
            None => None,
        };
        let mut conditions = vec!["owner = $1".to_string()];
        let mut texts: Vec<String> = vec![parsed.owner.clone().unwrap_or_else(|| "helm".to_string())];
        for (column, value) in
            [("namespace", namespace.map(str::to_string)), ("name", parsed.name), ("status", parsed.status)]
        {
            if let Some(value) = value {
                texts.push(value);
                conditions.push(format!("{column} = ${}", texts.len()));
            }
        }
        let mut params: Vec<&(dyn ToSql + Sync)> = texts.iter().map(|t| t as &(dyn ToSql + Sync)).collect();
        if let Some(v) = &version {
            params.push(v);
            conditions.push(format!("version = ${}", params.len()));
        }
        let sql = format!(
            "SELECT {REVISION_COLUMNS} FROM {TABLE} WHERE {} ORDER BY namespace, name, version",
            conditions.join(" AND ")
        );
        let rows = self.query(&format!("read {TABLE}"), &sql, &params).await?;
        Ok(rows.iter().map(revision_from_row).collect())
    }

    /// Every release's name, latest revision and status, without the bodies: one query.
    async fn summary_rows(&self, namespace: Option<&str>) -> Result<Vec<ReleaseSummary>, StorageError> {
        let sql = format!(
            "SELECT namespace, name, version, status FROM {TABLE} WHERE owner = $1{}",
            if namespace.is_some() { " AND namespace = $2" } else { "" }
        );
        let owner = "helm";
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&owner];
        if let Some(ns) = &namespace {
            params.push(ns);
        }
        let rows = self.query(&format!("list {TABLE}"), &sql, &params).await?;
        let labels = rows.iter().map(|r| {
            let text = |i: usize| r.try_get::<_, Option<String>>(i).ok().flatten().unwrap_or_default();
            let version = r.try_get::<_, Option<i32>>(2).ok().flatten().and_then(|v| u32::try_from(v).ok());
            (text(0), text(1), version.unwrap_or(0), text(3))
        });
        Ok(summarise_labels(labels))
    }
}

impl ReleaseDriver for SqlStore {
    fn name(&self) -> &'static str {
        "sql"
    }

    fn list<'a>(
        &'a self,
        namespace: Option<&'a str>,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredRevision>, StorageError>> {
        Box::pin(self.list_rows(namespace, selector))
    }

    fn summaries<'a>(&'a self, namespace: Option<&'a str>) -> BoxFuture<'a, Result<Vec<ReleaseSummary>, StorageError>> {
        Box::pin(self.summary_rows(namespace))
    }
}

/// One row of `releases_v1` as a stored revision, decoded like a Secret's `release` value.
fn revision_from_row(row: &Row) -> StoredRevision {
    let text = |i: usize| row.try_get::<_, Option<String>>(i).map(Option::unwrap_or_default);
    let key = text(0).unwrap_or_default();
    let namespace = text(1).unwrap_or_default();
    let object = format!("{TABLE} row {namespace}/{key}");
    let column_error = |column: &'static str, e: tokio_postgres::Error| SqlError::Column {
        object: object.clone(),
        column,
        cause: e.to_string(),
    };
    let name = text(2).unwrap_or_default();
    let version = row.try_get::<_, Option<i32>>(3);
    let revision = version.as_ref().ok().copied().flatten().and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
    let status = text(4).unwrap_or_default();
    // The body left encoded (decoded when a check asks for it), as the other drivers do.
    let release = (|| -> Result<_, StorageError> {
        version.map_err(|e| column_error("version", e))?;
        let body = row.try_get::<_, Option<String>>(5).map_err(|e| column_error("body", e))?;
        Ok(body.ok_or_else(|| SqlError::NoBody { object: object.clone() })?)
    })()
    .map_or_else(|e| ReleaseBody::decoded(Err(e)), |body| ReleaseBody::encoded(object.clone(), body.into_bytes()));
    StoredRevision { object, namespace, name, revision, status, release }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_string_is_missing() {
        assert!(matches!(SqlStore::new("  ", None), Err(SqlError::MissingConnectionString)));
    }

    #[test]
    fn the_store_never_shows_the_password() {
        let secret = "Sup3rS3cret";
        assert!(!format!("{:?}", ConnectionString(secret.into())).contains(secret));
        let store = SqlStore::new(&format!("postgres://u:{secret}@h/d?sslmode=disable"), None).unwrap();
        assert!(!format!("{store:?}").contains(secret));
    }
    #[tokio::test]
    async fn unsupported_selector_is_an_error() {
        let store = SqlStore::new("postgres://u@127.0.0.1:1/d?sslmode=disable", None).unwrap();
        let err = store.list(None, "app=x").await.unwrap_err();
        assert!(err.to_string().contains("app=x"), "{err}");
    }
}
