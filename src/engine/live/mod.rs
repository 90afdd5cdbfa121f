//! Live mode: Helm releases kept checked against a watch-fed cache, shared by `watch --live` and
//! `serve --live`.

pub mod inbox;
pub mod view;

pub use inbox::{BATCH, Batch, Inbox, TICK};
pub use view::{LiveView, PENDING_GRACE, Update, Watched, release_key};
