//! The drift history as the app wires it (issue 52, docs/history.md): [`Recorder`], what `watch`
//! and `serve` write each round through, and [`run`], the `history` command.
//!
//! A history that cannot be used at all (another writer holds it, the file is corrupt or from a
//! newer version) stops the start with exit 2, naming it. One that cannot be written for now
//! (an unwritable folder, a full disk, PostgreSQL down) is an error of that round, logged with
//! its path; the round's alerts still go out, and the next round tries again.

use std::io::Write;
use std::time::Duration;

use crate::app::cli::{HistoryArg, HistoryArgs, HistoryFormat};
use crate::app::error::AppError;
use crate::app::{Outcome, context::Settings};
use crate::engine::history::{History, Recorded};
use crate::report::TargetReport;
use crate::report::history::{HistoryFilter, HistoryReport, RoundFindings};
use crate::source::history::{Access, HistoryError, HistoryLocation, HistoryStore};

/// Where `--history` points, the one reading of it for every command: absent, `default` (serve's
/// `history.db` in its data directory; none elsewhere); "off" or empty, none (to override
/// `DRIFT_HISTORY`); else a file or a PostgreSQL connection string.
pub fn location(arg: &HistoryArg, default: Option<HistoryLocation>) -> Option<HistoryLocation> {
    match arg.location.as_deref().map(str::trim) {
        None => default,
        Some("" | "off") => None,
        Some(_) => arg.location.as_deref().map(HistoryLocation::parse),
    }
}

/// The one clock, `report::duration::now`, under the name `watch` still calls (issue 66).
pub use crate::report::duration::now;

/// The history `watch` and `serve` write.
pub struct Recorder {
    location: HistoryLocation,
    retention: Duration,
    history: Option<History>,
}

impl Recorder {
    /// Open the history to write. Errors that no retry mends are returned; the others are
    /// logged and the first round tries again.
    pub async fn open(location: HistoryLocation, retention: Duration) -> Result<Recorder, HistoryError> {
        let mut r = Recorder { location, retention, history: None };
        match r.connect().await {
            Ok(()) => {}
            Err(e) if fatal(&e) => return Err(e),
            Err(e) => {
                tracing::error!(error = %e, "the drift history cannot be written now; the next round tries again")
            }
        }
        Ok(r)
    }

    async fn connect(&mut self) -> Result<(), HistoryError> {
        let store = HistoryStore::open(&self.location, Access::Write).await?;
        tracing::info!(history = %store.location(), "recording the drift history");
        self.history = Some(History::new(store, self.retention));
        Ok(())
    }

    /// Record one round's results (each with its cluster set); logged when it fails.
    pub async fn record<'a>(
        &mut self,
        reports: impl IntoIterator<Item = &'a TargetReport>,
    ) -> Result<Recorded, HistoryError> {
        let round = RoundFindings::of(reports);
        let result = async {
            if self.history.is_none() {
                self.connect().await?;
            }
            let history = self.history.as_mut().expect("connected");
            history.record(&round, now()).await
        }
        .await;
        if let Err(e) = &result {
            tracing::error!(error = %e, "the drift history could not be written (alerts are not affected)");
            if matches!(e, HistoryError::Sql(_)) || matches!(self.location, HistoryLocation::Postgres(_)) {
                // A lost connection is opened again next round.
                self.history = None;
            }
        }
        result
    }
}

impl Recorder {
    /// The entries `filter` accepts (the dashboard's `/api/history`), through the writer's own
    /// connection.
    pub async fn entries(
        &mut self,
        filter: &crate::report::history::HistoryFilter,
    ) -> Result<Vec<crate::report::history::HistoryEntry>, HistoryError> {
        if self.history.is_none() {
            self.connect().await?;
        }
        self.history.as_mut().expect("connected").entries(filter).await
    }
}

/// The open findings of one target after a round.
pub fn open_of<'a>(report: &TargetReport, recorded: &'a Recorded) -> Vec<&'a crate::report::history::FindingRecord> {
    let Some(target) = crate::report::history::TargetRef::of(&report.origin) else { return Vec::new() };
    recorded.open.iter().filter(|f| f.key.cluster == report.cluster && f.key.target == target).collect()
}

/// When the oldest open finding of one target started its episode.
pub fn oldest_open(report: &TargetReport, recorded: &Recorded) -> Option<i64> {
    open_of(report, recorded).iter().map(|f| f.since).min()
}

/// Errors a retry does not mend.
fn fatal(e: &HistoryError) -> bool {
    matches!(e, HistoryError::Locked { .. } | HistoryError::Corrupt { .. } | HistoryError::Newer { .. })
}

/// `kubectl drift history`.
pub async fn run(settings: &Settings, args: &HistoryArgs, out: &mut impl Write) -> Result<Outcome, AppError> {
    let location = location(&args.history, None)
        .ok_or_else(|| AppError::Usage("history: give --history PATH|DSN (or DRIFT_HISTORY)".into()))?;
    let mut store = HistoryStore::open(&location, Access::Read).await?;
    let filter = HistoryFilter {
        cluster: args.cluster.clone(),
        namespace: (!settings.all_namespaces).then(|| settings.explicit_namespace.clone()).flatten(),
        target: args.release.clone(),
        since: args.since.map(|s| now().saturating_sub(i64::try_from(s.as_secs()).unwrap_or(i64::MAX))),
    };
    let report = HistoryReport::new(store.entries(&filter).await?);
    match args.output {
        HistoryFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &report).map_err(std::io::Error::other)?;
            writeln!(out)?;
        }
        HistoryFormat::Csv => crate::render::history::csv(&report, out)?,
        HistoryFormat::Text => crate::render::history::text(&report, now(), out)?,
    }
    Ok(report.status().into())
}

/// The history `release --history` reads (`None`: none given), opened only to read: no lock, no
/// file created; a missing file or an unreachable database is an error naming it.
pub async fn open_to_read(history: &HistoryArg) -> Result<Option<HistoryStore>, HistoryError> {
    match location(history, None) {
        Some(at) => Ok(Some(HistoryStore::open(&at, Access::Read).await?)),
        None => Ok(None),
    }
}

/// Give each drifted field of every cluster's releases the lifecycle of its open finding
/// (`release --history`), read once per cluster.
pub async fn annotate_releases(
    store: &mut HistoryStore,
    fleet: &mut crate::report::fleet::Fleet<crate::report::DriftReport>,
) -> Result<(), HistoryError> {
    for c in &mut fleet.clusters {
        let Some(report) = &mut c.report else { continue };
        let filter = HistoryFilter { cluster: Some(c.cluster.clone()), ..Default::default() };
        let entries = store.entries(&filter).await?;
        crate::engine::history::annotate(&mut report.releases, &c.cluster, &entries, now());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_off_or_empty_is_none_and_absent_is_the_default() {
        let arg = |v: Option<&str>| HistoryArg { location: v.map(str::to_string) };
        let file = |p: &str| HistoryLocation::File(p.into());
        assert_eq!(location(&arg(None), None), None);
        assert_eq!(location(&arg(None), Some(file("data/history.db"))), Some(file("data/history.db")));
        assert_eq!(location(&arg(Some("off")), Some(file("data/history.db"))), None);
        assert_eq!(location(&arg(Some(" ")), Some(file("data/history.db"))), None);
        assert_eq!(location(&arg(Some("h.db")), None), Some(file("h.db")));
        assert!(matches!(location(&arg(Some("postgres://u@h/db")), None), Some(HistoryLocation::Postgres(_))));
    }
}
