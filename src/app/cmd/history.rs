//! `kubectl drift history` (issue 52, docs/history.md): the drift history read through the
//! engine's history (opened by [`crate::app::recorder::open_to_read`]), filtered by cluster,
//! namespace, release and age, and written as text, JSON or CSV.

use std::io::Write;

use crate::app::cli::{HistoryArgs, HistoryFormat};
use crate::app::context::Settings;
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::app::recorder::open_to_read;
use crate::report::duration::now;
use crate::report::history::{HistoryFilter, HistoryReport};

/// `kubectl drift history`.
pub(crate) async fn run(settings: Settings, args: HistoryArgs) -> Result<Outcome, AppError> {
    let (settings, args, out) = (&settings, &args, &mut std::io::stdout().lock());
    let mut history = open_to_read(&args.history)
        .await?
        .ok_or_else(|| AppError::Usage("history: give --history PATH|DSN (or DRIFT_HISTORY)".into()))?;
    let filter = HistoryFilter {
        cluster: args.cluster.clone(),
        namespace: (!settings.all_namespaces).then(|| settings.explicit_namespace.clone()).flatten(),
        target: args.release.clone(),
        since: args.since.map(|s| now().saturating_sub(i64::try_from(s.as_secs()).unwrap_or(i64::MAX))),
    };
    let report = HistoryReport::new(history.entries(&filter).await?);
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
