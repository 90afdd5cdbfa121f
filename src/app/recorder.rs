//! The drift history as the app wires it (issue 52, docs/history.md): [`location`], the one
//! reading of `--history`; [`Recorder`], what `watch` and `serve` write each round through (and
//! the dashboard reads through); and [`open_to_read`], the history `history` and
//! `release --history` read ([`annotate_releases`]). Every read and write goes through the engine's
//! [`History`](crate::engine::history::History); its errors are the history's own
//! ([`HistoryError`]), never the app's, so `watch` and `serve` take this file without the app's
//! error.
//!
//! A history that cannot be used at all (another writer holds it, the file is corrupt or from a
//! newer version) stops the start with exit 2, naming it. One that cannot be written for now
//! (an unwritable folder, a full disk, PostgreSQL down) is an error of that round, logged with
//! its path; the round's alerts still go out, and the next round tries again.

use std::time::Duration;

use crate::app::cli::HistoryArg;
use crate::engine::history::{History, Recorded};
use crate::report::TargetReport;
use crate::report::history::{FindingRecord, HistoryEntry, HistoryFilter, RoundFindings, TargetRef};
use crate::source::history::{Access, HistoryError, HistoryLocation};

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
        match r.connected().await {
            Ok(_) => {}
            Err(e) if fatal(&e) => return Err(e),
            Err(e) => {
                tracing::error!(error = %e, "the drift history cannot be written now; the next round tries again")
            }
        }
        Ok(r)
    }

    /// The history, opened again first when it is not (a failed start, a lost connection).
    async fn connected(&mut self) -> Result<&mut History, HistoryError> {
        if self.history.is_none() {
            let backend = crate::source::history::open(&self.location, Access::Write).await?;
            let history = History::writer(backend, self.retention);
            tracing::info!(history = %history.location(), "recording the drift history");
            self.history = Some(history);
        }
        Ok(self.history.as_mut().expect("opened above"))
    }

    /// Record one round's results (each with its cluster set); logged when it fails.
    pub async fn record<'a>(
        &mut self,
        reports: impl IntoIterator<Item = &'a TargetReport>,
    ) -> Result<Recorded, HistoryError> {
        let round = RoundFindings::of(reports);
        let result = match self.connected().await {
            Ok(history) => history.record(&round, crate::report::duration::now()).await,
            Err(e) => Err(e),
        };
        if let Err(e) = &result {
            tracing::error!(error = %e, "the drift history could not be written (alerts are not affected)");
            if matches!(e, HistoryError::Connect(_)) || matches!(self.location, HistoryLocation::Postgres(_)) {
                // A lost connection is opened again next round.
                self.history = None;
            }
        }
        result
    }

    /// The entries `filter` accepts (the dashboard's `/api/history`), through the writer's own
    /// connection.
    pub async fn entries(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryEntry>, HistoryError> {
        self.connected().await?.entries(filter).await
    }
}

/// The open findings of one target after a round.
pub fn open_of<'a>(report: &TargetReport, recorded: &'a Recorded) -> Vec<&'a FindingRecord> {
    let Some(target) = TargetRef::of(&report.origin) else { return Vec::new() };
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

/// The history `history` and `release --history` read (`None`: none given), opened only to
/// read: no lock, no file created; a missing file or an unreachable database is an error naming
/// it.
pub async fn open_to_read(history: &HistoryArg) -> Result<Option<History>, HistoryError> {
    match location(history, None) {
        Some(at) => Ok(Some(History::reader(crate::source::history::open(&at, Access::Read).await?))),
        None => Ok(None),
    }
}

/// Give each drifted field of every cluster's releases the lifecycle of its open finding
/// (`release --history`), read once per cluster.
pub async fn annotate_releases(
    history: &mut History,
    fleet: &mut crate::report::fleet::Fleet<crate::report::DriftReport>,
) -> Result<(), HistoryError> {
    for c in &mut fleet.clusters {
        let Some(report) = &mut c.report else { continue };
        history.annotate(&mut report.releases, &c.cluster, crate::report::duration::now()).await?;
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
