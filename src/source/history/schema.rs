//! The history's schema and statements, written once for SQLite and PostgreSQL: plain `TEXT` and
//! `BIGINT` columns, text keys computed in Rust ([`FindingKey::id`](crate::report::history::FindingKey::id))
//! instead of a dialect's auto-increment, `INSERT ... ON CONFLICT ... DO UPDATE` (both have it)
//! and `$N` parameters, numbered in the order they first appear (SQLite binds `$N` by that order,
//! PostgreSQL by N: written so, both agree).
//!
//! Versions: `schema_version` holds one row per migration applied. A file or database written by
//! this version is read by the next (it applies the migrations it lacks); one written by a newer
//! version is refused with a clear error rather than misread.

/// The schema this build writes.
pub const CURRENT: i64 = 2;

/// Migrations, in order: version N's statements turn version N-1 into N.
pub const MIGRATIONS: &[(i64, &[&str])] = &[
    (
        1,
        &[
            "CREATE TABLE findings (
            id TEXT PRIMARY KEY,
            cluster TEXT NOT NULL,
            target_kind TEXT NOT NULL,
            target_namespace TEXT NOT NULL,
            target_name TEXT NOT NULL,
            object_kind TEXT NOT NULL,
            object_namespace TEXT NOT NULL,
            object_name TEXT NOT NULL,
            path TEXT NOT NULL,
            first_seen BIGINT NOT NULL,
            last_seen BIGINT NOT NULL,
            resolved_at BIGINT,
            episodes BIGINT NOT NULL,
            digest TEXT NOT NULL,
            manager TEXT NOT NULL
        )",
            "CREATE INDEX findings_by_target ON findings (cluster, target_namespace, target_name)",
            "CREATE TABLE changes (
            finding_id TEXT NOT NULL,
            at BIGINT NOT NULL,
            manager TEXT NOT NULL,
            digest TEXT NOT NULL
        )",
            "CREATE INDEX changes_by_finding ON changes (finding_id)",
            "CREATE TABLE episodes (
            finding_id TEXT NOT NULL,
            started BIGINT NOT NULL,
            ended BIGINT
        )",
            "CREATE INDEX episodes_by_finding ON episodes (finding_id)",
        ],
    ),
    (
        2,
        // When the current (or last) episode started: the alerts' "drifted since" and the metrics
        // gauge read it without the episodes table. Rows of version 1 take their last episode's start.
        &[
            "ALTER TABLE findings ADD COLUMN since BIGINT NOT NULL DEFAULT 0",
            "UPDATE findings SET since = COALESCE((SELECT MAX(e.started) FROM episodes e WHERE e.finding_id = findings.id), first_seen)",
        ],
    ),
];

pub const CREATE_VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)";
pub const SELECT_VERSION: &str = "SELECT COALESCE(MAX(version), 0) FROM schema_version";
pub const INSERT_VERSION: &str = "INSERT INTO schema_version (version) VALUES ($1)";

/// The columns of a finding, in [`UPSERT_FINDING`]'s parameter order.
pub const FINDING_COLUMNS: &str = "id, cluster, target_kind, target_namespace, target_name, object_kind, \
     object_namespace, object_name, path, first_seen, last_seen, resolved_at, episodes, digest, manager, since";

pub const UPSERT_FINDING: &str = "INSERT INTO findings (id, cluster, target_kind, target_namespace, target_name, \
     object_kind, object_namespace, object_name, path, first_seen, last_seen, resolved_at, episodes, digest, \
     manager, since) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
     ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen, resolved_at = excluded.resolved_at, \
     since = excluded.since, \
     episodes = excluded.episodes, digest = excluded.digest, manager = excluded.manager";

pub const INSERT_CHANGE: &str = "INSERT INTO changes (finding_id, at, manager, digest) VALUES ($1, $2, $3, $4)";
pub const OPEN_EPISODE: &str = "INSERT INTO episodes (finding_id, started, ended) VALUES ($1, $2, NULL)";
pub const CLOSE_EPISODE: &str = "UPDATE episodes SET ended = $1 WHERE finding_id = $2 AND ended IS NULL";

/// Every finding of one cluster.
pub fn select_findings_of_cluster() -> String {
    format!("SELECT {FINDING_COLUMNS} FROM findings WHERE cluster = $1")
}

/// Every finding.
pub fn select_findings() -> String {
    format!("SELECT {FINDING_COLUMNS} FROM findings")
}

pub const SELECT_CHANGES: &str = "SELECT finding_id, at, manager FROM changes ORDER BY at, manager";
pub const SELECT_EPISODES: &str = "SELECT finding_id, started, ended FROM episodes ORDER BY started";

/// Retention: what was resolved before `$1` goes, with its changes and episodes; episodes that
/// ended before it go too (an open finding keeps its changes: they name who started it).
pub const PRUNE: &[&str] = &[
    "DELETE FROM findings WHERE resolved_at IS NOT NULL AND resolved_at < $1",
    "DELETE FROM episodes WHERE (ended IS NOT NULL AND ended < $1) OR finding_id NOT IN (SELECT id FROM findings)",
    "DELETE FROM changes WHERE finding_id NOT IN (SELECT id FROM findings)",
];
