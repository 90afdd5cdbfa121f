//! `completion SHELL`: the shell's completion script, generated from the clap definition. (The
//! completion answers themselves, `__complete`, are `app::complete`.)

use clap::CommandFactory;

use crate::app::cli::Cli;
use crate::app::error::AppError;
use crate::app::outcome::Outcome;

/// Write the completion script of `shell` to stdout; always 0.
pub(crate) fn run(shell: clap_complete::Shell) -> Result<Outcome, AppError> {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "kubectl-drift", &mut std::io::stdout());
    Ok(Outcome::Clean)
}
