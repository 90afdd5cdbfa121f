//! How far a long run is, as the engines tell it: a phase with its total, each item done, and
//! running counters. Engines call a [`Progress`] they are given and never draw anything; the app
//! passes a display on stderr (only when it is a terminal), the dashboard and `watch` pass
//! [`NoProgress`]. Every method has a no-op default, so a caller implements only what it shows.
//!
//! Granularity is coarse on purpose: a step per release, file or LIST, a counter added per LIST
//! or per release, never per object, so reporting costs nothing next to the work.

/// A running count shown next to the phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// Objects read or checked so far.
    Objects,
    /// Upstream answers served from the disk cache (`versions`).
    CacheHits,
}

/// Where an engine reports its progress. Shared by the concurrent parts of one run, hence `Sync`.
pub trait Progress: Send + Sync {
    /// A new phase named `what` ("releases", "listing"), of `total` items when known.
    fn start(&self, _what: &str, _total: Option<u64>) {}
    /// One item of the current phase done; `item` says which (a namespace, a file, a kind).
    fn step(&self, _item: &str) {}
    /// Add `n` to a counter.
    fn add(&self, _counter: Counter, _n: u64) {}
    /// Set a counter to `n` (a count the engine reads from elsewhere, such as cache hits).
    fn set(&self, _counter: Counter, _n: u64) {}
}

/// Reports nothing: library callers, the dashboard, `watch`, tests.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}
