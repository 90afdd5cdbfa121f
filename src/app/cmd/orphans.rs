//! `orphans`: objects nothing uses any more, each with its evidence, in every selected cluster;
//! or one cluster's cleanup script.

use std::io::Write;

use crate::app::cli::{OrphansArgs, OrphansFormat, ScriptKind, ShowMode};
use crate::app::config::Config;
use crate::app::context::{Settings, script_target};
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::app::{fleet, outputs};
use crate::render::Theme;
use crate::render::orphans_script as script;
use crate::report::duration;

/// `orphans`: scan, then write the table, CSV, JSON, YAML or cleanup script to stdout.
/// 0 when no orphan was found, 1 when some were, 2 when a custom kind could not be read.
pub(crate) async fn run(settings: Settings, args: OrphansArgs) -> Result<Outcome, AppError> {
    let options = crate::engine::orphans::ScanOptions {
        kinds: args.kinds.clone(),
        older_than: args.older_than,
        config: Config::read(args.config.as_deref())?.orphans()?,
        ignore: args.ignore.clone(),
        show_all: args.show == ShowMode::All,
        max_custom_objects: args.max_custom_objects,
    };
    let scan = options.prepare(settings.all_namespaces)?;
    if args.script.is_some() && !args.output_files.is_empty() {
        return Err(AppError::Usage("--script writes a cleanup script, not a report: leave out --output-file".into()));
    }
    if args.script.is_some() && settings.many_clusters() {
        return Err(AppError::Usage(
            "--script writes one cluster's cleanup script: give one --context (one script per cluster)".into(),
        ));
    }
    // A person reads the table or the script; CSV, JSON and YAML go to programs.
    let human = args.script.is_some() || args.output == OrphansFormat::Table;
    let (settings, scan) = (&settings, &scan);
    let fleet = fleet::across(settings, settings.progress && human, |cluster, display| async move {
        let namespace = (!settings.all_namespaces).then(|| cluster.namespace().to_string());
        let report = crate::engine::orphans::scan(&cluster, namespace, scan, &display).await?;
        Ok((report, script_target(cluster.target())))
    })
    .await?;
    let out = &mut std::io::stdout().lock();
    if args.script.is_some() && fleet.clusters.iter().any(|c| c.error.is_some()) {
        // No script for a cluster that could not be read.
        fleet::errors(&mut std::io::stderr().lock(), &fleet)?;
        return Ok(crate::report::Status::Error.into());
    }
    if let (Some(kind), Some((report, target))) = (args.script, fleet.clusters.first().and_then(|c| c.report.as_ref()))
    {
        let mode = match kind {
            ScriptKind::Export => script::ScriptMode::Export,
            ScriptKind::Delete => script::ScriptMode::Delete,
        };
        let generated = duration::rfc3339_utc(duration::now());
        out.write_all(script::script(report, mode, target, &generated).as_bytes())?;
        out.flush()?;
        return Ok(report.status().into());
    }
    let fleet = crate::report::fleet::Fleet::new(
        fleet
            .clusters
            .into_iter()
            .map(|c| crate::report::fleet::ClusterResult {
                cluster: c.cluster,
                report: c.report.map(|r| r.0),
                error: c.error,
            })
            .collect(),
    );
    let theme = Theme::new(settings.color);
    outputs::orphans_tabular().write(out, &fleet, args.output, &theme)?;
    out.flush()?;
    outputs::tabular_files(&args.output_files, &fleet, outputs::orphans_tabular())?;
    fleet::errors(&mut std::io::stderr().lock(), &fleet)?;
    Ok(fleet.status(|r| r.status()).into())
}
