//! The live loop's inputs gathered into batches: the watch-fed cache's changes, release storage's
//! changes, and a tick.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::source::helm::watch::StorageChange;
use crate::source::live_cache::{Change, ListKey, touches};

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
    /// Whether the batch changed what a check read as `read` (see [`touches`]).
    pub fn touches(&self, read: &ListKey) -> bool {
        touches(&self.changed, read)
    }

    fn add_storage(&mut self, r: Option<(String, String)>) {
        match r {
            Some(r) => {
                self.releases.insert(r);
            }
            None => self.all_storage = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(plural: &str) -> ListKey {
        (String::new(), "v1".into(), plural.into(), Some("shop".into()))
    }

    fn release(name: &str) -> Option<(String, String)> {
        Some(("shop".into(), name.into()))
    }

    /// An inbox, its senders, and its first tick (which comes at once) taken.
    async fn inbox() -> (Inbox, mpsc::UnboundedSender<Change>, mpsc::UnboundedSender<StorageChange>) {
        let (changes, changes_rx) = mpsc::unbounded_channel();
        let (storage, storage_rx) = mpsc::unbounded_channel();
        let mut inbox = Inbox::new(changes_rx, storage_rx);
        let first = inbox.next(std::future::pending::<()>()).await.expect("a batch");
        assert!(first.tick && first.first.is_none(), "the first tick comes at once");
        (inbox, changes, storage)
    }

    #[tokio::test]
    async fn events_within_the_batching_pause_are_one_batch_timed_from_the_first() {
        let (mut inbox, changes, storage) = inbox().await;
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(5);
        changes.send(Change { key: key("configmaps"), at: t1 }).unwrap();
        changes.send(Change { key: key("configmaps"), at: t1 }).unwrap();
        storage.send((release("web"), t0)).unwrap();
        // Sent during the pause: still this batch.
        let late = changes.clone();
        tokio::spawn(async move {
            tokio::time::sleep(BATCH / 4).await;
            late.send(Change { key: key("secrets"), at: Instant::now() }).unwrap();
        });
        let b = inbox.next(std::future::pending::<()>()).await.expect("a batch");
        assert_eq!(b.changed, BTreeSet::from([key("configmaps"), key("secrets")]));
        assert_eq!(b.releases, BTreeSet::from([("shop".to_string(), "web".to_string())]));
        assert_eq!(b.first, Some(t0), "timed from the earliest event");
        assert!(!b.tick && !b.all_storage);
        // Nothing left over for the next batch: only the stop ends the wait.
        assert_eq!(inbox.next(async { "stop" }).await.err(), Some("stop"));
    }

    #[tokio::test]
    async fn storage_listed_again_is_noted_with_the_releases_of_the_batch() {
        let (mut inbox, _changes, storage) = inbox().await;
        let at = Instant::now();
        storage.send((release("web"), at)).unwrap();
        storage.send((None, at)).unwrap();
        let b = inbox.next(std::future::pending::<()>()).await.expect("a batch");
        assert!(b.all_storage && b.releases.len() == 1 && b.changed.is_empty());
    }

    #[tokio::test]
    async fn a_stop_is_returned_as_the_error_and_loses_no_event() {
        let (mut inbox, changes, _storage) = inbox().await;
        assert_eq!(inbox.next(async { 7 }).await.err(), Some(7));
        changes.send(Change { key: key("pods"), at: Instant::now() }).unwrap();
        let b = inbox.next(std::future::pending::<()>()).await.expect("a batch");
        assert_eq!(b.changed, BTreeSet::from([key("pods")]));
    }
}
