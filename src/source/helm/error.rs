//! Why release storage could not be read, for every driver: one module that the drivers and
//! the store import (the SQL driver's own failures are a variant of the storage error, so they
//! live here too rather than in the driver that the storage error would then have to import).

use super::decode::DecodeError;

/// The Secret type Helm gives release storage Secrets.
pub const RELEASE_SECRET_TYPE: &str = "helm.sh/release.v1";

/// The table Helm's SQL driver keeps releases in.
pub const TABLE: &str = "releases_v1";

/// Why release storage could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// `HELM_DRIVER` names a driver this tool cannot read.
    #[error("HELM_DRIVER={driver} is not supported (supported: secret, configmap, sql)")]
    UnsupportedDriver { driver: String },
    /// Helm's SQL storage could not be read (connection string, connection, query).
    #[error(transparent)]
    Sql(#[from] SqlError),
    /// The list request failed (forbidden, unreachable, ...).
    #[error("failed to list Helm release {kind}s {scope}: {source}")]
    List {
        kind: &'static str,
        scope: String,
        #[source]
        source: kube::Error,
    },
    /// A storage object has the right name but is not release storage.
    #[error("{object}: has type {found:?}, not {RELEASE_SECRET_TYPE:?}; it is not Helm release storage")]
    WrongType { object: String, found: String },
    /// A storage object has no `release` key.
    #[error("{object}: has no 'release' key; it is not Helm release storage")]
    MissingKey { object: String },
    /// The stored release could not be decoded.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A label selector a driver that reads it itself (SQL, memory) cannot answer.
    #[error("the {driver} driver cannot select releases by {selector:?} (supported: name, status, version)")]
    UnsupportedSelector { driver: &'static str, selector: String },
    /// No revision of the release matched.
    #[error("release {name:?} not found in namespace {namespace:?}{detail}")]
    NotFound { name: String, namespace: String, detail: String },
}

/// Why Helm's SQL storage could not be read. No variant carries the password.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// `sql` was chosen but no connection string was given.
    #[error(
        "the sql driver needs a connection string: set HELM_DRIVER_SQL_CONNECTION_STRING (or pass --helm-sql-connection)"
    )]
    MissingConnectionString,
    /// The connection string is unusable, or no connection could be made (`source::postgres`).
    #[error("Helm SQL storage: {0}")]
    Connection(#[from] crate::source::postgres::ConnectError),
    /// Helm's table is not in the database.
    #[error(
        "PostgreSQL {target}: table {TABLE} does not exist: is this the database Helm uses (HELM_DRIVER_SQL_CONNECTION_STRING)?"
    )]
    MissingTable { target: String },
    /// Row-level security (which Helm turns on for its tables) hides every row from this role:
    /// without this check the answer would be "no releases", a false all-clear.
    #[error(
        "PostgreSQL {target}: row-level security on {TABLE} (Helm enables it) hides every row from role {user:?}: \
         give the role BYPASSRLS (ALTER ROLE {user} BYPASSRLS) or a policy (CREATE POLICY drift_read ON {TABLE} \
         FOR SELECT TO {user} USING (true))"
    )]
    RowSecurity { target: String, user: String },
    /// The role may not read the table.
    #[error("PostgreSQL {target}: permission denied to read {TABLE} (grant SELECT on it): {cause}")]
    Permission { target: String, cause: String },
    /// Any other failure of a query.
    #[error("PostgreSQL {target}: failed to {what}: {cause}")]
    Query { target: String, what: String, cause: String },
    /// The server did not answer in time.
    #[error("PostgreSQL {target}: no answer within {seconds}s while trying to {what}")]
    Timeout { target: String, what: String, seconds: u64 },
    /// A row has no body.
    #[error("{object}: has no body; it is not Helm release storage")]
    NoBody { object: String },
    /// A column of a row has an unexpected type.
    #[error("{object}: column {column}: {cause}")]
    Column { object: String, column: &'static str, cause: String },
}
