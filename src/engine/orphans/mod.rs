//! `kubectl drift orphans`: objects nothing uses any more, each with the evidence that lets a
//! person decide, and a cleanup script they can review and trust. Read-only.
//!
//! Steps: [`kinds`] says what is examined; [`inventory`] lists it (one LIST per kind per
//! namespace, or cluster-wide with `-A`); [`graph`] builds who-uses-what from live pods and pod
//! templates (and ServiceAccounts, Ingresses, Gateways, Issuers, bindings, HPAs, ...);
//! [`usage`] holds the rule per kind; [`evidence`] finds protected and managed objects and
//! Helm releases; [`custom`] reads the custom resources and [`references`] finds what they,
//! PersistentVolumes, storage classes and ingress annotations name; [`classify`] gives each
//! object one class; [`report`] is the data every output renders; [`script`] writes the cleanup
//! script from it (the table and CSV are in `render::orphans`; `app` picks the output).

pub mod classify;
pub mod custom;
pub mod duration;
pub mod evidence;
pub mod graph;
pub mod inventory;
pub mod kinds;
pub mod podspec;
pub mod references;
pub mod rules;
pub mod selector;
pub mod usage;

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::context::Settings;
use crate::live::{DEFAULT_CONCURRENCY, Kinds, LiveReader};

pub use classify::{Policy, classify};
pub use crate::report::orphans as report;
pub use crate::report::orphans::{EvidenceClass, OrphanItem, OrphanReport};

/// Why an orphans scan could not run.
#[derive(Debug, thiserror::Error)]
pub enum OrphansError {
    /// Bad `--kinds`.
    #[error(transparent)]
    Kinds(#[from] kinds::KindsError),
    /// Bad `--older-than`.
    #[error("--older-than: {0}")]
    Duration(#[from] duration::DurationError),
    /// Bad `--ignore` or `--config`.
    #[error(transparent)]
    Rules(#[from] rules::OrphanRuleError),
    /// No client could be made.
    #[error(transparent)]
    Context(#[from] crate::context::ContextError),
    /// Discovery failed.
    #[error(transparent)]
    Live(#[from] crate::live::LiveError),
    /// A needed list failed: the scan would be incomplete.
    #[error(transparent)]
    Inventory(#[from] inventory::InventoryError),
    /// Helm's SQL storage could not be read: installed releases would be unknown.
    #[error(transparent)]
    Storage(#[from] crate::helm::StorageError),
    /// Writing the output failed.
    #[error("failed to write output: {0}")]
    Write(#[from] std::io::Error),
}

/// What to scan and how to judge it (the `orphans` flags, as plain data).
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// `--kinds` (empty: every kind the scope allows).
    pub kinds: Vec<String>,
    /// `--older-than`, as typed.
    pub older_than: String,
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--ignore` rules.
    pub ignore: Vec<String>,
    /// `--show all`: every examined object, not only the orphans.
    pub show_all: bool,
    /// `--max-custom-objects` per custom kind.
    pub max_custom_objects: usize,
}

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// Scan: list, build the graph, class every examined object. Returns the report (and prints
/// nothing).
pub async fn scan(settings: &Settings, args: &ScanOptions) -> Result<OrphanReport, OrphansError> {
    let examined = kinds::select_kinds(&args.kinds, settings.all_namespaces)?;
    let older_than = duration::parse_duration(&args.older_than)?;
    let rules = rules::load_orphan_rules(args.config.as_deref(), &args.ignore)?;
    let conn = settings.connect().await?;
    let namespace = (!settings.all_namespaces).then(|| conn.namespace.clone());
    let discovered = Kinds::discover(&conn.client).await?;
    let reader = LiveReader::new(conn.client.clone(), DEFAULT_CONCURRENCY);
    let mut inv =
        inventory::collect(&discovered, &reader, &examined, namespace.as_deref(), args.max_custom_objects).await?;
    if let crate::helm::Driver::Sql(_) = &settings.driver {
        // Release names only, from every namespace: objects may name a release of another one.
        let store = crate::helm::ReleaseStore::new(conn.client.clone(), settings.driver.clone());
        inv.sql_releases = store.summaries(None).await?;
    }
    let policy = Policy { rules, older_than_seconds: older_than, now: now() };
    let items = classify(&inv, &examined, &policy);
    let mut report = OrphanReport::new(items, args.show_all, namespace, &examined, older_than);
    report.summary.skipped_kinds = inv.skipped;
    Ok(report)
}
