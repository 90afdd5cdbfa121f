//! Live mode: targets kept checked against a watch-fed cache instead of re-listed every round,
//! shared by `watch --live` and `serve --live` (docs/live.md).
//!
//! - [`view`]: the selected Helm releases, each one's last check and the lists it read
//!   ([`LiveView`]).
//! - [`inbox`]: the cache's and release storage's changes, and the tick, gathered into batches.
//! - [`run`]: the one loop (storage watch, generations, outages, resyncs) and the [`LiveSink`]
//!   its callers implement.

pub mod inbox;
pub mod run;
pub mod view;

pub use inbox::{BATCH, Batch, Inbox, TICK};
pub use run::{Generation, LiveLoop, LiveSink, OUTAGE_GRACE, Outage, OutageClock, Stop, StorageWatch, TickOrder, run};
pub use view::{LiveView, PENDING_GRACE, Update, Watched, release_key};
