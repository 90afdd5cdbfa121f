//! Why `watch` stops, and the errors of its state and alerts: a leaf, importing nothing of the
//! app, so that `app::error::AppError` can name them while `watch` runs on the app's parts.

/// Why the watcher stopped.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The state of what was alerted (`--state`) could not be read or written.
    #[error(transparent)]
    State(#[from] StateError),
    /// `--listen` could not be bound.
    #[error("failed to listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// `--state configmap:...` lives in the first cluster, which could not be reached.
    #[error("the watch state ConfigMap lives in cluster {cluster}, which cannot be used: {message}")]
    StateCluster { cluster: String, message: String },
    /// `--history` cannot be used at all (another writer, a corrupt file, a newer schema).
    #[error(transparent)]
    History(#[from] crate::source::history::HistoryError),
}

/// Why state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// `--state` is malformed.
    #[error("invalid --state {0:?}: expected a file path or configmap:NAMESPACE/NAME")]
    Spec(String),
    /// The state file could not be read or written.
    #[error("failed to {action} state file {path}: {source}")]
    File {
        action: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The stored state is not valid JSON of the expected shape.
    #[error("state in {location} is corrupt: {message}")]
    Corrupt { location: String, message: String },
    /// The state ConfigMap could not be read or written.
    #[error("failed to {action} state ConfigMap {namespace}/{name}: {message}")]
    ConfigMap { action: &'static str, namespace: String, name: String, message: String },
}

/// Why an alert could not be delivered.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The webhook URL is not a valid http(s) URL (the URL itself is not repeated).
    #[error("the {which} webhook URL is not a valid http(s) URL")]
    BadUrl { which: &'static str },
    /// The POST failed or was refused after retries.
    #[error("posting to the {which} webhook failed after {attempts} attempt(s): {reason}")]
    Failed { which: &'static str, attempts: u32, reason: String },
    /// TLS roots could not be loaded.
    #[error("failed to load TLS root certificates for webhooks: {0}")]
    Tls(String),
}
