//! The error that stops a whole run of any command (per-target errors are reported, not raised),
//! mapped to exit code 2 by the dispatcher (`app::run`).

/// Errors that stop a whole run (per-release errors are reported, not raised).
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Context(#[from] crate::app::context::ContextError),
    #[error(transparent)]
    Storage(#[from] crate::source::helm::StorageError),
    #[error("failed to write output: {0}")]
    Io(#[from] std::io::Error),
    /// An `--output-file` could not be created or written.
    #[error("failed to write --output-file {}: {source}", path.display())]
    OutputFile { path: std::path::PathBuf, source: std::io::Error },
    #[error("failed to start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Config(#[from] crate::app::config::ConfigError),
    #[error(transparent)]
    Live(#[from] crate::source::live::LiveError),
    #[error(transparent)]
    Drift(#[from] crate::engine::drift::DriftError),
    #[error(transparent)]
    Watch(#[from] crate::app::watch::error::WatchError),
    #[error(transparent)]
    State(#[from] crate::app::watch::error::StateError),
    #[error(transparent)]
    Notify(#[from] crate::app::watch::error::NotifyError),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Manifests(#[from] crate::source::manifest_files::ManifestsError),
    #[error(transparent)]
    Orphans(#[from] crate::engine::orphans::OrphansError),
    #[error(transparent)]
    Versions(#[from] crate::engine::versions::VersionsError),
    #[error(transparent)]
    Serve(#[from] crate::app::serve::error::ServeError),
    /// `adopt` could not run (release not found, a render that failed, ...).
    #[error(transparent)]
    Adopt(#[from] crate::engine::adopt::AdoptError),
    /// `upgrade` could not run (release not found, the new chart did not render, ...).
    #[error(transparent)]
    Upgrade(#[from] crate::engine::upgrade::UpgradeError),
    #[error(transparent)]
    History(#[from] crate::source::history::HistoryError),
}
