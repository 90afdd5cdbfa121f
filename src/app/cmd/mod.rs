//! One file per subcommand, as Helm has `pkg/cmd/<name>.go` over `pkg/action`: each takes its
//! parsed arguments, calls its engine, writes its format to stdout (errors to stderr) and returns
//! the [`Outcome`](crate::app::outcome::Outcome) that becomes the exit code.
//!
//! One shape: `pub(crate) async fn run(settings: Settings, [env: &Environment,] args) ->
//! Result<Outcome, AppError>`, run by the dispatcher (`app::run`) on the one async runtime with
//! the settings it resolved; the environment only where the command reads it (the terminal, the
//! cache home). `policy` and `completion` need no cluster: they are plain functions of their
//! arguments.

pub(crate) mod adopt;
pub(crate) mod compare;
pub(crate) mod completion;
pub(crate) mod gitops;
pub(crate) mod history;
pub(crate) mod manifests;
pub(crate) mod mcp;
pub(crate) mod orphans;
pub(crate) mod policy;
pub(crate) mod release;
pub(crate) mod serve;
pub(crate) mod upgrade;
pub(crate) mod versions;
pub(crate) mod watch;
