//! `upgrade RELEASE CHART`: what `helm upgrade` will change, which hand edits it will overwrite
//! or keep, what will make it fail (docs/upgrade.md). Nothing is written to the cluster.

use std::io::Write;

use crate::app::cli::{FailOn, OutputFormat, UpgradeArgs};
use crate::app::config::Config;
use crate::app::context::Settings;
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::engine::upgrade::{UpgradeOptions, ValuesMode, predict};
use crate::render::{self, Theme};
use crate::report::upgrade::{UpgradeClass, UpgradeReport};

/// Predict one upgrade; 0 nothing changes, 1 changes (those `--fail-on` names), 2 an error.
pub(crate) async fn run(settings: Settings, args: UpgradeArgs) -> Result<Outcome, AppError> {
    if settings.many_clusters() {
        return Err(AppError::Usage("upgrade predicts one release in one cluster: give one --context".into()));
    }
    if settings.all_namespaces {
        return Err(AppError::Usage("upgrade reads one release: give its namespace with -n, not -A".into()));
    }
    let (helm, render_timeout) = crate::app::cmd::adopt::renderer(&args.render, "upgrade renders the new chart")?;
    for f in &args.values {
        if !f.is_file() {
            return Err(AppError::Usage(format!("values file {} not found", f.display())));
        }
    }
    let rules = Config::read(args.check.config.as_deref())?.ignore_rules(&args.check.ignore)?;
    let cluster = settings.cluster().await?;
    let sets = [
        ("--set-json", &args.set_json),
        ("--set", &args.set),
        ("--set-string", &args.set_string),
        ("--set-file", &args.set_file),
    ]
    .into_iter()
    .flat_map(|(flag, values)| values.iter().map(move |v| (flag.to_string(), v.clone())))
    .collect();
    let values_mode = if args.reuse_values {
        ValuesMode::Reuse
    } else if args.reset_then_reuse_values {
        ValuesMode::ResetThenReuse
    } else if args.reset_values {
        ValuesMode::Reset
    } else {
        ValuesMode::Default
    };
    let options = UpgradeOptions {
        release: args.release.clone(),
        namespace: cluster.namespace().to_string(),
        chart: args.chart.clone(),
        version: args.version.clone(),
        devel: args.devel,
        values_files: args.values.clone(),
        sets,
        values_mode,
        helm,
        show_secrets: args.check.show_secrets,
        rules,
        force_conflicts: args.force_conflicts,
        render_timeout,
    };
    let report = predict(&cluster, &options).await?;
    let failing = failing(args.fail_on);
    let mut out = std::io::stdout().lock();
    match args.output {
        OutputFormat::Text => render::upgrade::text(&mut out, &report, &Theme::new(settings.color))?,
        OutputFormat::Json => render::json(&mut out, &report)?,
        OutputFormat::Yaml => render::yaml(&mut out, &report)?,
        OutputFormat::Junit => render::junit::upgrade(&mut out, &report, &failing)?,
        OutputFormat::Sarif => render::sarif::upgrade(&mut out, &report, &failing)?,
        OutputFormat::Github => render::github::upgrade(&mut out, &report, &failing)?,
    }
    out.flush()?;
    Ok(outcome(&report, &failing))
}

/// The classes `--fail-on` counts.
fn failing(fail_on: FailOn) -> Vec<UpgradeClass> {
    UpgradeClass::ALL
        .into_iter()
        .filter(|c| match fail_on {
            FailOn::Blocking => *c == UpgradeClass::Blocking,
            FailOn::Overwrite => matches!(c, UpgradeClass::Blocking | UpgradeClass::Overwritten),
            FailOn::Any => *c != UpgradeClass::Kept,
        })
        .collect()
}

/// The exit status: 1 when a change of a class `--fail-on` counts is predicted.
fn outcome(report: &UpgradeReport, failing: &[UpgradeClass]) -> Outcome {
    if report.changes.iter().any(|c| failing.contains(&c.class)) { Outcome::Drift } else { Outcome::Clean }
}
