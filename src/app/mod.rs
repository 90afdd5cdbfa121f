//! Running a subcommand: parse the arguments, resolve the settings, start the async runtime once,
//! dispatch to the command (`cmd/`, one file each), and map its [`Outcome`] to the exit code (0
//! clean, 1 drift or findings, 2 error). The app is the only layer that writes to stdout/stderr.

pub mod allocator;
pub mod cli;
pub(crate) mod cmd;
pub mod complete;
pub mod config;
pub mod context;
pub mod environment;
pub mod error;
pub(crate) mod fleet;
pub mod log;
pub mod mcp;
pub mod metrics;
pub(crate) mod outcome;
pub(crate) mod outputs;
pub mod progress;
pub mod recorder;
pub mod serve;
pub mod versions;
pub mod watch;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::app::cli::{Cli, Command, GlobalArgs, completion_words, helm_plugin_args};
use crate::app::context::Settings;
use crate::app::environment::Environment;
use crate::app::error::AppError;
use crate::render;

use crate::app::outcome::Outcome;

pub fn main_with_args(args: Vec<String>) -> ExitCode {
    let env = Environment::from_process();
    if let Some(words) = completion_words(&args) {
        // Completion answers even when nothing could be looked up, and never fails the prompt.
        let completion = crate::app::complete::complete(&words, &env);
        let _ = render::completion(&mut std::io::stdout().lock(), &completion);
        return ExitCode::SUCCESS;
    }
    let args = helm_plugin_args(args, env.under_helm);
    let cli = match parse(args, env.under_helm) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let long_running = matches!(cli.command, Command::Watch(_) | Command::Serve(_));
    if let Err(e) = log::init(&log::LogSettings::resolve(&cli.global, &env, long_running)) {
        let _ = writeln!(std::io::stderr(), "error: {e:#}");
        return Outcome::Error.into();
    }
    match run(cli, env) {
        Ok(outcome) => outcome.into(),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::from(0);
            }
            if long_running {
                // watch and serve write only log lines: the last one says why they stopped.
                tracing::error!("{e:#}");
            } else {
                let _ = writeln!(std::io::stderr(), "error: {e:#}");
            }
            Outcome::Error.into()
        }
    }
}

/// Parse the arguments; under Helm, usage and help say `helm drift`.
fn parse(args: Vec<String>, under_helm: bool) -> Result<Cli, clap::Error> {
    let mut cmd = Cli::command();
    if under_helm {
        cmd = cmd.bin_name("helm drift");
    }
    let mut matches = cmd.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cmd))
}

/// Output into a pipe whose reader has gone (`| head`): a quiet stop, as kubectl's plugins and
/// ripgrep do. Any error in the chain counts (a serialiser's error wraps the write's).
fn is_broken_pipe(e: &AppError) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        if err.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) {
            return true;
        }
        next = err.source();
    }
    false
}

/// Resolve the settings, start the async runtime and run a command on it until it returns: the one
/// place every cluster-facing command is started.
fn on_runtime<F, Fut>(global: &GlobalArgs, env: &Environment, command: F) -> Result<Outcome, AppError>
where
    F: FnOnce(Settings) -> Fut,
    Fut: Future<Output = Result<Outcome, AppError>>,
{
    let settings = Settings::resolve(global, env)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(AppError::Runtime)?;
    runtime.block_on(command(settings))
}

fn run(cli: Cli, env: Environment) -> Result<Outcome, AppError> {
    let (global, env) = (&cli.global, &env);
    match cli.command {
        Command::Completion { shell } => cmd::completion::run(shell),
        Command::Policy(args) => cmd::policy::run(&args, &mut std::io::stdout().lock()),
        Command::Release(args) => on_runtime(global, env, |s| cmd::release::run(s, args)),
        Command::Manifests(args) => on_runtime(global, env, |s| cmd::manifests::run(s, args)),
        Command::Kustomization(args) => on_runtime(global, env, |s| cmd::gitops::kustomization(s, args)),
        Command::Application(args) => on_runtime(global, env, |s| cmd::gitops::application(s, args)),
        Command::Compare(args) => on_runtime(global, env, |s| cmd::compare::run(s, env, args)),
        Command::Adopt(args) => on_runtime(global, env, |s| cmd::adopt::run(s, args)),
        Command::Upgrade(args) => on_runtime(global, env, |s| cmd::upgrade::run(s, args)),
        Command::Orphans(args) => on_runtime(global, env, |s| cmd::orphans::run(s, args)),
        Command::Versions(args) => on_runtime(global, env, |s| cmd::versions::run(s, env, args)),
        Command::History(args) => on_runtime(global, env, |s| cmd::history::run(s, args)),
        Command::Watch(args) => on_runtime(global, env, |s| cmd::watch::run(s, args)),
        Command::Serve(args) => on_runtime(global, env, |s| cmd::serve::run(s, env, args)),
        Command::Mcp(args) => on_runtime(global, env, |s| cmd::mcp::run(s, env, args)),
    }
}
