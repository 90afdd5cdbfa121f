//! Running a subcommand: parse, resolve settings, compute, render, and map the outcome to an
//! exit code (0 clean, 1 drift or findings, 2 error). The only place that writes to stdout/stderr.

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use std::sync::Arc;

use futures::StreamExt;

use crate::cli::{helm_plugin_args, Cli, Command, OutputFormat, ReleaseArgs};
use crate::compare::rules::load_rules;
use crate::context::{Environment, Settings};
use crate::drift::{check_release, Engine};
use crate::helm::{ReleaseStore, StorageError};
use crate::live::{Kinds, LiveReader, DEFAULT_CONCURRENCY};
use crate::reconcile::Reconciler;
use crate::render::{self, Theme};
use crate::report::{DriftReport, ReleaseReport, Status};

/// What a run found, as an exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Clean = 0,
    Drift = 1,
    Error = 2,
}

impl From<Outcome> for ExitCode {
    fn from(o: Outcome) -> ExitCode {
        ExitCode::from(o as u8)
    }
}

pub fn main_with_args(args: Vec<String>) -> ExitCode {
    let env = Environment::from_process();
    let args = helm_plugin_args(args, env.under_helm);
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(cli, env) {
        Ok(outcome) => outcome.into(),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::from(0);
            }
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            Outcome::Error.into()
        }
    }
}

fn is_broken_pipe(e: &AppError) -> bool {
    matches!(e, AppError::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe)
        || matches!(e, AppError::Orphans(crate::orphans::OrphansError::Write(io)) if io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Errors that stop a whole run (per-release errors are reported, not raised).
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Context(#[from] crate::context::ContextError),
    #[error(transparent)]
    Storage(#[from] crate::helm::StorageError),
    #[error("failed to write output: {0}")]
    Io(#[from] std::io::Error),
    #[error("failed to start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Rules(#[from] crate::compare::rules::RuleError),
    #[error(transparent)]
    Live(#[from] crate::live::LiveError),
    #[error(transparent)]
    Orphans(#[from] crate::orphans::OrphansError),
}

fn run(cli: Cli, env: Environment) -> Result<Outcome, AppError> {
    match cli.command {
        Command::Completion { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "kubectl-drift", &mut std::io::stdout());
            Ok(Outcome::Clean)
        }
        Command::Release(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(AppError::Runtime)?;
            rt.block_on(release(settings, args))
        }
        Command::Orphans(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(AppError::Runtime)?;
            Ok(rt.block_on(crate::orphans::run(&settings, &args, &mut std::io::stdout().lock()))?)
        }
    }
}

async fn release(settings: Settings, args: ReleaseArgs) -> Result<Outcome, AppError> {
    let rules = load_rules(args.config.as_deref(), &args.ignore)?;
    let conn = settings.connect().await?;
    let store = ReleaseStore::new(conn.client.clone(), settings.driver);

    // Which revisions to check. A release that cannot be found is an error, reported like the
    // others; the rest are still checked.
    let mut revisions = Vec::new();
    let mut lookup_errors = Vec::new();
    if args.all {
        let ns = if settings.all_namespaces { None } else { Some(conn.namespace.as_str()) };
        revisions = store.deployed(ns).await?;
    } else {
        for name in &args.releases {
            match store.get(&conn.namespace, name, args.revision).await {
                Ok(r) => revisions.push(r),
                Err(e @ StorageError::List { .. }) => return Err(e.into()),
                Err(e) => lookup_errors.push((name.clone(), e)),
            }
        }
    }

    let kinds = Arc::new(Kinds::discover(&conn.client).await?);
    let engine = Arc::new(Engine {
        kinds,
        reader: Arc::new(LiveReader::new(conn.client.clone(), DEFAULT_CONCURRENCY)),
        rules,
        show_secrets: args.show_secrets,
    });
    let reconciler = Arc::new(Reconciler { context: settings.context.clone(), kubeconfig: settings.kubeconfig.clone() });

    let results: Vec<(ReleaseReport, usize)> = futures::stream::iter(revisions.into_iter().map(|rev| {
        let engine = engine.clone();
        let reconciler = reconciler.clone();
        async move { check_release(&engine, rev, &reconciler).await }
    }))
    .buffered(8)
    .collect()
    .await;
    let checked = results.iter().map(|(_, n)| n).sum();
    let mut releases: Vec<ReleaseReport> = results.into_iter().map(|(r, _)| r).collect();
    for (name, e) in lookup_errors {
        releases.push(ReleaseReport {
            name,
            namespace: conn.namespace.clone(),
            revision: args.revision.unwrap_or(0),
            chart: String::new(),
            chart_version: String::new(),
            app_version: String::new(),
            status: Status::Error,
            error: Some(e.to_string()),
            objects: Vec::new(),
            reconcile: Vec::new(),
        });
    }
    let report = DriftReport::new(releases, checked);

    let mut out = std::io::stdout().lock();
    let theme = Theme::new(settings.color);
    match args.output {
        OutputFormat::Text => render::text::report(&mut out, &report, &theme, args.quiet)?,
        OutputFormat::Json => render::json(&mut out, &report)?,
        OutputFormat::Yaml => render::yaml(&mut out, &report)?,
    }
    out.flush()?;
    Ok(outcome_of(&report))
}

/// 2 if anything could not be checked, else 1 if anything drifted, else 0.
pub fn outcome_of(report: &DriftReport) -> Outcome {
    if report.summary.errors > 0 {
        Outcome::Error
    } else if report.summary.drifted > 0 {
        Outcome::Drift
    } else {
        Outcome::Clean
    }
}
