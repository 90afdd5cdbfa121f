//! Why `serve` could not start: its own error, in a file of its own that imports nothing of the
//! app that imports it back, so the app's error (`AppError`) can wrap it without a cycle.

use super::store::StoreError;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A flag or the config's `serve:` section asks for something the server cannot do.
    #[error("{0}")]
    Usage(String),
    /// The data directory cannot be used.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The config file cannot be read.
    #[error(transparent)]
    Config(#[from] crate::app::config::ConfigError),
    /// An address to listen on cannot be bound.
    #[error("failed to listen on {addr}: {source}")]
    Listen { addr: String, source: std::io::Error },
    /// The kube context cannot be used.
    #[error(transparent)]
    Context(#[from] crate::app::context::ContextError),
    /// The drift history cannot be used (another writer, a corrupt file, a newer schema).
    #[error(transparent)]
    History(#[from] crate::source::history::HistoryError),
}
