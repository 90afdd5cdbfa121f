//! kubectl-drift: find drift between Helm releases (or manifests) and the live cluster.
//!
//! Layout: [`cli`] parses, [`context`] resolves settings and the client, [`helm`] reads release
//! storage, [`manifest`] parses manifest streams, [`manifests`] checks files and folders of them,
//! [`live`] reads live objects ([`retry`]: bounded retries of every API request), [`compare`] compares one object pair, [`drift`] runs a whole check,
//! [`complete`] answers shell completion, [`report`] holds the results, [`reconcile`] writes the
//! commands that undo drift, [`orphans`] finds objects nothing uses, [`watch`] alerts on new drift,
//! [`render`] formats, and [`app`] ties a subcommand together. Compute modules return data; only
//! `app` writes output.

pub mod app;
pub mod cli;
pub mod compare;
pub mod complete;
pub mod context;
pub mod drift;
pub mod helm;
pub mod live;
pub mod manifest;
pub mod manifests;
pub mod orphans;
pub mod reconcile;
pub mod render;
pub mod report;
pub mod retry;
pub mod watch;
