//! Sources: read what is desired and what is live (Helm release storage, manifest files and
//! kustomizations, live objects through discovery and cached LISTs), judging nothing.

pub mod admission;
pub mod chart_index;
pub mod chart_repo;
pub mod child;
pub mod cluster;
pub mod gitops;
pub mod helm;
pub mod history;
pub mod kustomize;
pub mod live;
pub mod live_cache;
pub mod manifest;
pub mod manifest_files;
pub mod postgres;
#[cfg(test)]
pub(crate) mod recorded;
pub mod registry;
pub mod retry;
#[cfg(test)]
pub(crate) mod test_server;
pub mod upstream;
pub(crate) mod watch_store;
pub mod yaml11;
