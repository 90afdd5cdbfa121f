//! kubectl-drift: find drift between Helm releases (or manifests) and the live cluster.
//!
//! Layers, one direction (docs/layout.md says which file goes where):
//! [`source`] reads (Helm storage, live objects, manifest files) -> [`engine`] computes and returns
//! data (compare, drift, manifests, orphans, reconcile) -> [`report`] is that data (what JSON and YAML
//! serialise) -> [`render`] formats a report -> [`app`] parses arguments, picks the format, writes
//! output and maps a status to an exit code. Only `app` writes output; no engine imports `app`,
//! `cli` or `render` (checked by `tests/layers.rs`).

pub mod app;
pub mod engine;
pub mod render;
pub mod report;
pub mod source;

// Short paths, so that code written before the layers (and branches in flight) still compiles.
// New code names the layer: `crate::engine::compare`, `crate::source::live`, `crate::app::cli`.
pub use app::{cli, complete, context, watch};
pub use engine::{compare, drift, lifecycle, manifests, orphans, reconcile};
pub use source::{helm, live, manifest, retry};
