//! Running a command on every selected cluster (`--context a,b`, `--all-contexts`): each cluster
//! is built by the one builder ([`Settings::clusters`]) with its own client and cache, read at
//! most `--parallel` at once, each with its own progress line; one cluster's error (unreachable,
//! credentials refused, forbidden) is that cluster's entry and never stops the others. With one
//! cluster the shape is the same: its error is its entry's, named on stderr (exit 2).

use std::future::Future;
use std::io::Write;

use futures::StreamExt;

use crate::app::context::Settings;
use crate::app::error::AppError;
use crate::app::progress::Display;
use crate::render::Theme;
use crate::report::fleet::{ClusterResult, Fleet};
use crate::report::progress::Progress;
use crate::source::cluster::Cluster;

/// Run `check` on every selected cluster and gather the results in the order the clusters were
/// named. `progress`: progress lines may be drawn (a person reads the output). One cluster or
/// several, the result has the same shape: a cluster that cannot be read is its entry's error.
pub(crate) async fn across<T, F, Fut>(settings: &Settings, progress: bool, check: F) -> Result<Fleet<T>, AppError>
where
    F: Fn(Cluster, Display) -> Fut,
    Fut: Future<Output = Result<T, AppError>>,
{
    let clusters = settings.clusters().await?;
    Ok(across_built(clusters, settings.parallel, progress, check).await)
}

/// [`across`] over clusters built already (`kubectl drift mcp` builds its clusters once, at
/// start, and runs every tool call on them), at most `parallel` at once.
pub(crate) async fn across_built<T, F, Fut, E>(
    clusters: Vec<(String, Result<Cluster, E>)>,
    parallel: usize,
    progress: bool,
    check: F,
) -> Fleet<T>
where
    F: Fn(Cluster, Display) -> Fut,
    Fut: Future<Output = Result<T, AppError>>,
    E: std::fmt::Display,
{
    // With several clusters, one progress line each, drawn together.
    let group = (clusters.len() > 1)
        .then(|| indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::stderr()));
    let check = &check;
    let group = &group;
    let results = futures::stream::iter(clusters.into_iter().map(|(name, cluster)| async move {
        let cluster = match cluster {
            Ok(c) => c,
            Err(e) => return ClusterResult::error(name, e.to_string()),
        };
        let display = match group {
            Some(g) => Display::in_group(progress, g, &name),
            None => Display::new(progress),
        };
        display.start("connecting", None);
        let result = check(cluster, display).await;
        match result {
            Ok(report) => ClusterResult::report(name, report),
            Err(e) => ClusterResult::error(name, e.to_string()),
        }
    }))
    .buffered(parallel.max(1))
    .collect::<Vec<_>>()
    .await;
    if let Some(g) = group {
        let _ = g.clear();
    }
    Fleet::new(results)
}

/// The text (or table) of every cluster: as one cluster's when there is one; else each under a
/// header naming its cluster, a cluster that could not be read with its error.
pub(crate) fn text<W: Write, T>(
    out: &mut W,
    fleet: &Fleet<T>,
    theme: &Theme,
    mut one: impl FnMut(&mut W, &T) -> std::io::Result<()>,
) -> std::io::Result<()> {
    for (i, c) in fleet.clusters.iter().enumerate() {
        if fleet.many() {
            if i > 0 {
                writeln!(out)?;
            }
            writeln!(out, "{}", theme.heading(&format!("cluster {}", c.cluster)))?;
        }
        match (&c.report, &c.error) {
            (Some(report), _) => one(out, report)?,
            // With one cluster, its error is on stderr only ([`errors`]), as every error is.
            (None, error) if fleet.many() => {
                writeln!(out, "{}", theme.error(&format!("error: {}", error.as_deref().unwrap_or("no report"))))?
            }
            (None, _) => {}
        }
    }
    Ok(())
}

/// Every cluster's report, or its error, as the tables take them: one table for all, with a
/// CLUSTER column when there are several (a single cluster is named `""`: no column). A single
/// cluster that could not be read gives none (no table: its error is on stderr, as every error is).
fn tables<T>(fleet: &Fleet<T>) -> Vec<Named<'_, T>> {
    if !fleet.many() {
        return fleet.clusters.iter().filter_map(|c| c.report.as_ref()).map(|r| ("", Ok(r))).collect();
    }
    fleet
        .clusters
        .iter()
        .map(|c| {
            let result = match &c.report {
                Some(r) => Ok(r),
                None => Err(c.error.as_deref().unwrap_or("no report")),
            };
            (c.cluster.as_str(), result)
        })
        .collect()
}

/// Each cluster's report, or why it could not be read, as a table takes them (`""` for one cluster).
pub(crate) type Named<'a, T> = (&'a str, Result<&'a T, &'a str>);

/// How a command with tabular output (orphans, versions) writes its table and CSV.
pub(crate) struct Tabular<W, T> {
    pub table: fn(&mut W, &[Named<'_, T>], &Theme) -> std::io::Result<()>,
    pub csv_header: fn(&mut W, bool) -> std::io::Result<()>,
    pub csv: fn(&mut W, &T, Option<&str>, bool) -> std::io::Result<()>,
    pub junit: fn(&mut W, &Fleet<T>) -> std::io::Result<()>,
}

impl<W: Write, T: serde::Serialize> Tabular<W, T> {
    /// Every cluster's result in `format`: one table (a CLUSTER column with several; none for a
    /// single cluster that could not be read, whose error is on stderr), CSV under one header
    /// (written even when no cluster could be read) with a `cluster` column with several, or the
    /// clusters' JSON or YAML, or JUnit.
    pub(crate) fn write(
        &self,
        out: &mut W,
        fleet: &Fleet<T>,
        format: crate::app::cli::OrphansFormat,
        theme: &Theme,
    ) -> std::io::Result<()> {
        use crate::app::cli::OrphansFormat;
        match format {
            OrphansFormat::Table => {
                let tables = tables(fleet);
                if !tables.is_empty() {
                    (self.table)(out, &tables, theme)?;
                }
            }
            OrphansFormat::Csv => {
                (self.csv_header)(out, fleet.many())?;
                for c in &fleet.clusters {
                    if let Some(report) = &c.report {
                        (self.csv)(out, report, fleet.many().then_some(c.cluster.as_str()), false)?;
                    }
                }
            }
            OrphansFormat::Json => crate::render::json(out, fleet)?,
            OrphansFormat::Yaml => crate::render::yaml(out, fleet)?,
            OrphansFormat::Junit => (self.junit)(out, fleet)?,
        }
        Ok(())
    }
}

/// The clusters that could not be read, on stderr (a cron job that keeps only stderr sees them).
pub(crate) fn errors<W: Write, T>(err: &mut W, fleet: &Fleet<T>) -> std::io::Result<()> {
    for c in &fleet.clusters {
        if let Some(e) = &c.error {
            writeln!(err, "error: cluster {}: {e}", c.cluster)?;
        }
    }
    Ok(())
}
