//! `adopt`: keep the hand edits of a Helm release (a values overlay) or of manifest files (the
//! files edited in place), docs/adopt.md.

use std::io::Write;

use crate::app::cli::{AdoptArgs, AdoptFormat, RenderArgs};
use crate::app::config::Config;
use crate::app::context::Settings;
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::render;

/// `adopt RELEASE`: the values overlay that keeps the release's live drift (docs/adopt.md); 0 when
/// every drifted field was adopted, 1 when something is left, 2 on an error.
pub(crate) async fn run(settings: Settings, args: AdoptArgs) -> Result<Outcome, AppError> {
    if settings.many_clusters() {
        return Err(AppError::Usage("adopt reads one release in one cluster: give one --context".into()));
    }
    if settings.all_namespaces {
        return Err(AppError::Usage("adopt reads one release: give its namespace with -n, not -A".into()));
    }
    if !args.filename.is_empty() {
        return adopt_files(&settings, &args).await;
    }
    let (helm, render_timeout) = renderer(&args.render, "adopt renders the release's chart")?;
    let config = Config::read(args.check.config.as_deref())?;
    let rules = config.ignore_rules(&args.check.ignore)?;
    let cluster = settings.cluster().await?;
    let options = crate::engine::adopt::AdoptOptions {
        release: args.release.clone().unwrap_or_default(),
        namespace: cluster.namespace().to_string(),
        helm,
        show_secrets: args.check.show_secrets,
        rules,
        render_timeout,
        admission_changes: config.admission_changes(None),
    };
    let report = crate::engine::adopt::adopt_release(&cluster, &options).await?;
    let mut out = std::io::stdout().lock();
    match args.output {
        AdoptFormat::Values => render::adopt::values(&mut out, &report)?,
        AdoptFormat::Json => render::adopt::json(&mut out, &report)?,
        AdoptFormat::Set => render::adopt::set(&mut out, &mut std::io::stderr().lock(), &report)?,
    }
    out.flush()?;
    Ok(if report.complete() { Outcome::Clean } else { Outcome::Drift })
}

/// `adopt -f PATH...`: a unified diff of the files holding the live values, or the files written
/// (`--write`); 0 all adopted, 1 something left, 2 a file or object that could not be checked.
async fn adopt_files(settings: &Settings, args: &AdoptArgs) -> Result<Outcome, AppError> {
    if args.output == AdoptFormat::Set {
        return Err(AppError::Usage(
            "-o set is for a Helm release's overlay; with -f use -o values (a diff) or json".into(),
        ));
    }
    let rules = Config::read(args.check.config.as_deref())?.ignore_rules(&args.check.ignore)?;
    let cluster = settings.cluster().await?;
    let result = crate::engine::adopt::files::adopt_files(
        &cluster,
        args.filename.clone(),
        cluster.namespace().to_string(),
        args.kubectl.clone(),
        rules,
        args.check.show_secrets,
    )
    .await;
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    if args.write {
        for (path, _, after) in &result.edits {
            std::fs::write(path, after).map_err(|source| AppError::OutputFile { path: path.clone(), source })?;
            writeln!(err, "wrote {}", path.display())?;
        }
    }
    match args.output {
        AdoptFormat::Json => render::adopt::files_json(&mut out, &result)?,
        _ if !args.write => render::adopt::files_diff(&mut out, &result.edits)?,
        _ => {}
    }
    out.flush()?;
    render::adopt::files_left(&mut err, &result)?;
    Ok(if !result.errors.is_empty() {
        Outcome::Error
    } else if result.not_adoptable.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Drift
    })
}

/// The helm that renders (`what` says for what, in the error when it is not found) and how long
/// one render may take.
pub(crate) fn renderer(args: &RenderArgs, what: &str) -> Result<(std::path::PathBuf, std::time::Duration), AppError> {
    let helm = find_program(&args.helm).ok_or_else(|| {
        AppError::Usage(format!(
            "{what} with helm, and {} was not found: install helm, or set HELM_BIN or --helm",
            args.helm.display()
        ))
    })?;
    Ok((helm, args.render_timeout.limit().unwrap_or(std::time::Duration::from_secs(3600))))
}

/// A program as a command names it: a path with a slash as it is, a bare name looked up on PATH.
pub(crate) fn find_program(program: &std::path::Path) -> Option<std::path::PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(program)).find(|p| p.is_file())
}
