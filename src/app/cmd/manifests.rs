//! `manifests`: the drift of manifest files, folders and kustomizations, in every selected
//! cluster; and [`write`], how every manifests-shaped result (`manifests`, `kustomization`,
//! `application`) is written.

use std::io::Write;

use crate::app::cli::{ManifestsArgs, OutputFormat, ReportArgs};
use crate::app::config::Config;
use crate::app::context::Settings;
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::app::{fleet, outputs};
use crate::render::{self, Theme};
use crate::report::ManifestsReport;
use crate::report::fleet::Fleet;

/// `manifests PATH...`: check, then write the `-o` format (SARIF and GitHub annotations point
/// at each object's file and line) and each `--output-file`; 0 clean, 1 drift, 2 a file or
/// object that could not be checked.
pub(crate) async fn run(settings: Settings, args: ManifestsArgs) -> Result<Outcome, AppError> {
    let fleet = check(&settings, &args).await?;
    let places =
        if outputs::needs_places(args.report.formats()) { outputs::places(&fleet) } else { Default::default() };
    write(&settings, &fleet, &args.report, &places)
}

/// `manifests`: resolve the PATHs, rules and connection, then check (every problem after that is
/// reported against its file).
async fn check(settings: &Settings, args: &ManifestsArgs) -> Result<Fleet<ManifestsReport>, AppError> {
    let kustomizations = args.kustomize.clone();
    let paths =
        crate::source::manifest_files::paths_or_default(args.all_paths(), &kustomizations, std::path::Path::new("."))?;
    let timeout = args.timeout.limit();
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let rules = Config::read(args.check.config.as_deref())?.ignore_rules(&args.check.ignore)?;
    // `-`: standard input, read once for every cluster of the run.
    let stdin = if paths.iter().any(|p| p.as_os_str() == crate::source::manifest_files::STDIN_PATH) {
        Some(crate::source::manifest_files::Stdin::read(&args.stdin_name)?)
    } else {
        None
    };
    let (paths, kustomizations, rules, stdin) = (&paths, &kustomizations, &rules, &stdin);
    fleet::across(
        settings,
        settings.progress && args.report.output == OutputFormat::Text,
        |cluster, display| async move {
            let options = crate::engine::manifests::ManifestsOptions {
                paths: paths.clone(),
                kustomizations: kustomizations.clone(),
                default_namespace: cluster.namespace().to_string(),
                field_manager: args.field_manager.clone(),
                timeout,
                kubectl: args.kubectl.clone(),
                selector: args.selector.clone(),
                stdin: stdin.clone(),
            };
            let rules = rules.clone();
            Ok(crate::engine::manifests::check(&cluster, rules, args.check.show_secrets, &options, deadline, &display)
                .await)
        },
    )
    .await
}

/// A manifests-shaped result (`manifests`, `kustomization`, `application`): the `-o` format on
/// stdout, each `--output-file`, the errors on stderr; the exit status.
pub(super) fn write(
    settings: &Settings,
    fleet: &Fleet<ManifestsReport>,
    report: &ReportArgs,
    places: &crate::render::ci::Places,
) -> Result<Outcome, AppError> {
    let mut out = std::io::stdout().lock();
    outputs::manifests(&mut out, fleet, report.output, &Theme::new(settings.color), report.quiet, places)?;
    out.flush()?;
    outputs::to_files(&report.output_files, |file, format| {
        outputs::manifests(file, fleet, format, &Theme::new(false), report.quiet, places)
    })?;
    let mut err = std::io::stderr().lock();
    for checked in fleet.clusters.iter().filter_map(|c| c.report.as_ref()) {
        render::text::manifests_errors(&mut err, checked)?;
    }
    fleet::errors(&mut err, fleet)?;
    Ok(fleet.status(|r| r.status()).into())
}
