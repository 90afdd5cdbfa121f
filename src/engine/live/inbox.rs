//! The live loop's inputs gathered into batches: the watch-fed cache's changes, release storage's
//! changes, and a tick.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::source::helm::watch::StorageChange;
use crate::source::live_cache::{Change, ListKey};

/// How long to gather events before re-checking (one edit often sends several events).
pub const BATCH: Duration = Duration::from_millis(100);
/// How often failed storage reads, pending releases (and, in `watch`, undelivered alerts and
/// outages) are looked at again.
pub const TICK: Duration = Duration::from_secs(5);

/// What arrived since the last [`Inbox::next`].
#[derive(Default)]
pub struct Batch {
    /// Lists of live objects that changed.
    pub changed: BTreeSet<ListKey>,
    /// Releases whose storage changed.
    pub releases: BTreeSet<(String, String)>,
    /// Release storage was listed again: anything may have changed.
    pub all_storage: bool,
    /// When the first event of the batch was received.
    pub first: Option<Instant>,
    /// The [`TICK`] came.
    pub tick: bool,
}

/// The live view's inputs: the cache's changes, release storage's changes, and the tick.
pub struct Inbox {
    pub changes: mpsc::UnboundedReceiver<Change>,
    pub storage: mpsc::UnboundedReceiver<StorageChange>,
    tick: tokio::time::Interval,
}

impl Inbox {
    pub fn new(changes: mpsc::UnboundedReceiver<Change>, storage: mpsc::UnboundedReceiver<StorageChange>) -> Inbox {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Inbox { changes, storage, tick }
    }

    /// Wait for an event (then gather what else arrives within [`BATCH`]) or the tick; or for
    /// `stop`, whose output is returned as the error.
    pub async fn next<T>(&mut self, stop: impl std::future::Future<Output = T>) -> Result<Batch, T> {
        let mut b = Batch::default();
        tokio::select! {
            Some(c) = self.changes.recv() => { b.first = Some(c.at); b.changed.insert(c.key); }
            Some((r, at)) = self.storage.recv() => { b.first = Some(at); b.add_storage(r); }
            _ = self.tick.tick() => b.tick = true,
            t = stop => return Err(t),
        }
        if b.first.is_some() {
            tokio::time::sleep(BATCH).await;
            while let Ok(c) = self.changes.try_recv() {
                b.first = b.first.min(Some(c.at));
                b.changed.insert(c.key);
            }
            while let Ok((r, at)) = self.storage.try_recv() {
                b.first = b.first.min(Some(at));
                b.add_storage(r);
            }
        }
        Ok(b)
    }
}

impl Batch {
    fn add_storage(&mut self, r: Option<(String, String)>) {
        match r {
            Some(r) => {
                self.releases.insert(r);
            }
            None => self.all_storage = true,
        }
    }
}
