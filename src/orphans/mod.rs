//! `kubectl drift orphans`: objects nothing uses any more, each with the evidence that lets a
//! person decide, and a cleanup script they can review and trust. Read-only.
//!
//! Steps: [`kinds`] says what is examined; [`inventory`] lists it (one LIST per kind per
//! namespace, or cluster-wide with `-A`); [`graph`] builds who-uses-what from live pods and pod
//! templates (and ServiceAccounts, Ingresses, Gateways, Issuers, bindings, HPAs, ...);
//! [`usage`] holds the rule per kind; [`evidence`] finds protected and managed objects and
//! Helm releases; [`custom`] reads the custom resources and [`references`] finds what they,
//! PersistentVolumes, storage classes and ingress annotations name; [`classify`] gives each
//! object one class; [`report`] is the data every output renders; [`table`] and [`script`]
//! render it.

pub mod classify;
pub mod custom;
pub mod duration;
pub mod evidence;
pub mod graph;
pub mod inventory;
pub mod kinds;
pub mod podspec;
pub mod references;
pub mod report;
pub mod rules;
pub mod script;
pub mod selector;
pub mod table;
pub mod usage;

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::app::Outcome;
use crate::cli::{OrphansArgs, OrphansFormat, ScriptKind, ShowMode};
use crate::context::Settings;
use crate::live::{DEFAULT_CONCURRENCY, Kinds, LiveReader};
use crate::render::{self, Theme};

pub use classify::{Policy, classify};
pub use report::{EvidenceClass, OrphanItem, OrphanReport};

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

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// Scan: list, build the graph, class every examined object. Returns the report (and prints
/// nothing).
pub async fn scan(settings: &Settings, args: &OrphansArgs) -> Result<OrphanReport, OrphansError> {
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
    let mut report = OrphanReport::new(items, args.show == ShowMode::All, namespace, &examined, older_than);
    report.summary.skipped_kinds = inv.skipped;
    Ok(report)
}

/// Run `orphans`: scan, then write the table, CSV, JSON, YAML or cleanup script to `out`.
/// 0 when no orphan was found, 1 when some were.
pub async fn run<W: Write>(settings: &Settings, args: &OrphansArgs, out: &mut W) -> Result<Outcome, OrphansError> {
    let report = scan(settings, args).await?;
    if let Some(kind) = args.script {
        let mode = match kind {
            ScriptKind::Export => script::ScriptMode::Export,
            ScriptKind::Delete => script::ScriptMode::Delete,
        };
        let target = script::resolve_target(settings.context.as_deref(), settings.kubeconfig.as_deref());
        let t = now();
        let stamp = duration::compact_utc(t);
        let generated = format!(
            "{}-{}-{}T{}:{}:{}Z",
            &stamp[0..4],
            &stamp[4..6],
            &stamp[6..8],
            &stamp[9..11],
            &stamp[11..13],
            &stamp[13..15]
        );
        out.write_all(script::script(&report, mode, &target, &generated).as_bytes())?;
    } else {
        let theme = Theme::new(settings.color);
        match args.output {
            OrphansFormat::Table => table::table(out, &report, &theme)?,
            OrphansFormat::Csv => table::csv(out, &report)?,
            OrphansFormat::Json => render::json(out, &report)?,
            OrphansFormat::Yaml => render::yaml(out, &report)?,
        }
    }
    out.flush()?;
    // A custom resource kind that was not read makes the scan incomplete: never clean.
    Ok(if !report.summary.skipped_kinds.is_empty() {
        Outcome::Error
    } else if report.summary.orphan > 0 {
        Outcome::Drift
    } else {
        Outcome::Clean
    })
}
