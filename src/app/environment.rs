//! The process environment, read once into [`Environment`] at start; nothing else in the crate
//! calls `std::env`, so tests build an `Environment` by hand. A file of its own, below the
//! settings (`context.rs`) and the log set-up (`log/`) that both read it.

use std::path::PathBuf;

use crate::source::helm::sql::ConnectionString;

/// The environment variables kubectl-drift reads, captured once at start.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `HELM_PLUGIN_NAME` is set: we run as `helm drift`.
    pub under_helm: bool,
    pub helm_namespace: Option<String>,
    pub helm_kube_context: Option<String>,
    pub helm_driver: Option<String>,
    /// `HELM_DRIVER_SQL_CONNECTION_STRING` (redacted in `Debug`: it may hold a password).
    pub helm_sql_connection: Option<ConnectionString>,
    pub no_color: bool,
    pub term_dumb: bool,
    /// `TERM` is unset or empty (no progress then: nothing says the terminal can redraw a line).
    pub term_unset: bool,
    pub stdout_is_tty: bool,
    /// stderr is a terminal (progress is shown there only then).
    pub stderr_is_tty: bool,
    /// Where per-user caches go: `$XDG_CACHE_HOME`, else `$HOME/.cache`.
    pub cache_home: Option<PathBuf>,
    /// `RUST_LOG`: log filter directives when `--log-level` and `DRIFT_LOG_LEVEL` are not given.
    pub rust_log: Option<String>,
}

impl Environment {
    /// An environment variable named at run time (the credential variables a config names),
    /// read when asked; empty counts as unset.
    pub fn lookup(name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    pub fn from_process() -> Environment {
        use std::io::IsTerminal;
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Environment {
            under_helm: var("HELM_PLUGIN_NAME").is_some() || var("HELM_PLUGIN_DIR").is_some(),
            helm_namespace: var("HELM_NAMESPACE"),
            helm_kube_context: var("HELM_KUBECONTEXT"),
            helm_driver: var("HELM_DRIVER"),
            helm_sql_connection: var("HELM_DRIVER_SQL_CONNECTION_STRING").map(ConnectionString),
            no_color: var("NO_COLOR").is_some(),
            term_dumb: var("TERM").as_deref() == Some("dumb"),
            term_unset: var("TERM").is_none(),
            stdout_is_tty: std::io::stdout().is_terminal(),
            stderr_is_tty: std::io::stderr().is_terminal(),
            cache_home: var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache"))),
            rust_log: var("RUST_LOG"),
        }
    }
}
