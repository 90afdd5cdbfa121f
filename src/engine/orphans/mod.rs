//! `kubectl drift orphans`: objects nothing uses any more, each with the evidence that lets a
//! person decide, and a cleanup script they can review and trust. Read-only.
//!
//! Steps: [`crate::report::orphan_kinds`] says what is examined; [`inventory`] lists it (one
//! LIST per kind per namespace, or cluster-wide with `-A`); [`graph`] builds who-uses-what from
//! live pods and pod templates (and ServiceAccounts, Ingresses, Gateways, Issuers, bindings, HPAs,
//! ...); [`usage`] holds the rule per kind; [`evidence`] finds protected and managed objects and
//! Helm releases; [`custom`] reads the custom resources and [`references`] finds what they,
//! PersistentVolumes, storage classes and ingress annotations name; [`classify`] gives each
//! object one class; [`crate::report::orphans`] is the data every output renders; [`script`]
//! writes the cleanup script from it (the table and CSV are in `render::orphans`; `app` picks the
//! output).

pub mod classify;
pub mod custom;
pub mod evidence;
pub mod graph;
pub mod inventory;
pub mod podspec;
pub mod references;
pub mod rules;
pub mod trim;
pub mod usage;

use crate::report::orphan_kinds::{ExaminedKind, KindsError, select_kinds};
use crate::report::progress::Progress;
use crate::source::cluster::Cluster;

use crate::report::orphans::{ClassCounts, OrphanReport};
pub use classify::{Policy, classify, classify_each};

/// Why an orphans scan could not run.
#[derive(Debug, thiserror::Error)]
pub enum OrphansError {
    /// Bad `--kinds`.
    #[error(transparent)]
    Kinds(#[from] KindsError),
    /// A bad `--ignore` rule, or rule of the config's `orphans:` section.
    #[error(transparent)]
    Rules(#[from] rules::OrphanRuleError),
    /// Discovery failed.
    #[error(transparent)]
    Live(#[from] crate::source::live::LiveError),
    /// A needed list failed: the scan would be incomplete.
    #[error(transparent)]
    Inventory(#[from] inventory::InventoryError),
    /// Helm's SQL storage could not be read: installed releases would be unknown.
    #[error(transparent)]
    Storage(#[from] crate::source::helm::StorageError),
}

/// What to scan and how to judge it (the `orphans` flags, as plain data).
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// `--kinds` (empty: every kind the scope allows).
    pub kinds: Vec<String>,
    /// `--older-than`.
    pub older_than: crate::report::duration::Span,
    /// The `orphans:` section of `--config` (`None`: no config file).
    pub config: Option<rules::Section>,
    /// `--ignore` rules.
    pub ignore: Vec<String>,
    /// `--show all`: every examined object, not only the orphans.
    pub show_all: bool,
    /// `--max-custom-objects` per custom kind.
    pub max_custom_objects: usize,
}

use crate::report::duration::now;

/// A scan with its options checked (kinds, `--older-than`, rules), ready to run.
#[derive(Debug, Clone)]
pub struct Scan {
    examined: Vec<ExaminedKind>,
    older_than: u64,
    rules: rules::OrphanRules,
    show_all: bool,
    max_custom_objects: usize,
}

impl ScanOptions {
    /// Check the options before anything is read (`all_namespaces`: `-A`, which adds the
    /// cluster-scoped kinds).
    pub fn prepare(&self, all_namespaces: bool) -> Result<Scan, OrphansError> {
        Ok(Scan {
            examined: select_kinds(&self.kinds, all_namespaces)?,
            older_than: self.older_than.as_secs(),
            rules: rules::OrphanRules::new(self.config.clone(), &self.ignore)?,
            show_all: self.show_all,
            max_custom_objects: self.max_custom_objects,
        })
    }
}

/// Scan `namespace` (`None`: every namespace, and the cluster-scoped kinds) on `cluster`: list,
/// build the graph, class every examined object. The cluster's release store is read for the
/// names of installed releases when Helm keeps them in SQL. Returns the report (and prints nothing);
/// `progress` hears of each LIST done and the objects listed.
pub async fn scan(
    cluster: &Cluster,
    namespace: Option<String>,
    scan: &Scan,
    progress: &dyn Progress,
) -> Result<OrphanReport, OrphansError> {
    progress.start("discovering kinds", None);
    let discovered = cluster.kinds().await?;
    let reader = cluster.reader();
    let mut inv = inventory::collect(
        &discovered,
        &reader,
        &scan.examined,
        namespace.as_deref(),
        scan.max_custom_objects,
        progress,
    )
    .await?;
    if cluster.store().objects().is_none() {
        // Storage outside the cluster (SQL): release names only, from every namespace (objects
        // may name a release of another one).
        inv.sql_releases = cluster.store().summaries(None).await?;
    }
    progress.start("classifying", None);
    let policy = Policy { rules: scan.rules.clone(), older_than_seconds: scan.older_than, now: now() };
    let (mut counts, mut shown) = (ClassCounts::default(), Vec::new());
    classify_each(&inv, &scan.examined, &policy, |item| {
        counts.add(&item);
        if OrphanReport::shows(scan.show_all, &item) {
            shown.push(item);
        }
    });
    let mut report = OrphanReport::counted(shown, counts, namespace, &scan.examined, scan.older_than);
    report.summary.skipped_kinds = inv.skipped;
    report.cluster = cluster.name().to_string();
    Ok(report)
}
