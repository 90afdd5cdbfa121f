//! How one watch stream's events change what it keeps, written once for the two streams that
//! follow the cluster (the live-object cache of `live_cache.rs`, the release-storage watch of
//! `helm/watch.rs`), as kube-runtime's reflector `Writer::apply_watcher_event`.
//!
//! A kube-rs watcher sends an object added or modified (`Apply`) or deleted (`Delete`), and a
//! list from its start (`Init`, each object as `InitApply`, `InitDone`): the first list, and
//! again after 410 Gone or a resume that failed. A list's objects are gathered apart and replace
//! the store whole at its end, so an object that is no longer listed is dropped. Bookmarks and
//! resourceVersions stay inside the watcher (it resumes from the last one it saw); events are
//! applied in the order they arrive, the last one winning.
//!
//! [`WatchBook::apply`] does no I/O: it changes the store it is given and says what happened
//! ([`Applied`]), and the caller decides whom to tell.

use std::collections::BTreeMap;

use kube::runtime::watcher::Event;

/// What a watch stream keeps: objects by key, or nothing at all ([`Forgetful`]).
pub(crate) trait Store: Default {
    /// What names an object in the store.
    type Key;
    /// What the store keeps of an object.
    type Value;
    /// Add or replace the object at `key`; whether the store changed.
    fn upsert(&mut self, key: Self::Key, value: Self::Value) -> bool;
    /// Remove the object at `key`; whether the store held it.
    fn remove(&mut self, key: &Self::Key) -> bool;
    /// Replace everything by `fresh` (a finished list); whether the store changed.
    fn replace(&mut self, fresh: Self) -> bool;
}

impl<K: Ord, V: PartialEq> Store for BTreeMap<K, V> {
    type Key = K;
    type Value = V;

    fn upsert(&mut self, key: K, value: V) -> bool {
        let same = self.get(&key) == Some(&value);
        self.insert(key, value);
        !same
    }

    fn remove(&mut self, key: &K) -> bool {
        BTreeMap::remove(self, key).is_some()
    }

    fn replace(&mut self, fresh: Self) -> bool {
        let changed = *self != fresh;
        *self = fresh;
        changed
    }
}

/// A store that keeps nothing (the release-storage watch only reports what changed): every
/// event counts as a change, since nothing tells it otherwise.
pub(crate) struct Forgetful<K>(std::marker::PhantomData<K>);

impl<K> Default for Forgetful<K> {
    fn default() -> Self {
        Forgetful(std::marker::PhantomData)
    }
}

impl<K> Store for Forgetful<K> {
    type Key = K;
    type Value = ();

    fn upsert(&mut self, _: K, _: ()) -> bool {
        true
    }

    fn remove(&mut self, _: &K) -> bool {
        true
    }

    fn replace(&mut self, _: Self) -> bool {
        true
    }
}

/// What one event did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Applied<K> {
    /// A list began; `relist` when one had finished before (410 Gone, or a resume that failed).
    ListStarted {
        /// A list had finished before this one.
        relist: bool,
    },
    /// An object of the list in progress was set apart (or dropped, outside a list).
    Buffered,
    /// A list finished and replaced the store.
    Listed {
        /// The stream's first list.
        first: bool,
        /// The store differs from what it held before.
        changed: bool,
    },
    /// An object was added or modified.
    Upserted {
        /// The object's key.
        key: K,
        /// False when the store already held it equal (a status update of a slimmed object).
        changed: bool,
    },
    /// An object was deleted.
    Deleted {
        /// The object's key.
        key: K,
        /// Whether the store held it.
        present: bool,
    },
}

/// One stream's bookkeeping beside its store: the list in progress and whether one finished.
pub(crate) struct WatchBook<S> {
    /// The objects of the list in progress, `None` outside a list.
    buffer: Option<S>,
    /// A list finished.
    listed: bool,
}

impl<S: Store> Default for WatchBook<S> {
    fn default() -> Self {
        WatchBook { buffer: None, listed: false }
    }
}

impl<S: Store> WatchBook<S>
where
    S::Key: Clone,
{
    /// Whether a list finished (the stream's store is ready).
    pub(crate) fn listed(&self) -> bool {
        self.listed
    }

    /// Apply `event` (its objects already made into store entries, see [`entries`]) to `store`.
    pub(crate) fn apply(&mut self, store: &mut S, event: Event<(S::Key, S::Value)>) -> Applied<S::Key> {
        match event {
            Event::Init => {
                self.buffer = Some(S::default());
                Applied::ListStarted { relist: self.listed }
            }
            Event::InitApply((key, value)) => {
                if let Some(buffer) = self.buffer.as_mut() {
                    buffer.upsert(key, value);
                }
                Applied::Buffered
            }
            Event::InitDone => {
                let changed = store.replace(self.buffer.take().unwrap_or_default());
                let first = !self.listed;
                self.listed = true;
                Applied::Listed { first, changed }
            }
            Event::Apply((key, value)) => {
                let changed = store.upsert(key.clone(), value);
                Applied::Upserted { key, changed }
            }
            Event::Delete((key, _)) => {
                let present = store.remove(&key);
                Applied::Deleted { key, present }
            }
        }
    }
}

/// `event` with its object (if any) made into a store entry by `entry`.
pub(crate) fn entries<T, E>(event: Event<T>, entry: impl FnOnce(T) -> E) -> Event<E> {
    match event {
        Event::Apply(o) => Event::Apply(entry(o)),
        Event::Delete(o) => Event::Delete(entry(o)),
        Event::Init => Event::Init,
        Event::InitApply(o) => Event::InitApply(entry(o)),
        Event::InitDone => Event::InitDone,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Map = BTreeMap<&'static str, u32>;

    fn list(book: &mut WatchBook<Map>, store: &mut Map, objects: &[(&'static str, u32)]) -> Vec<Applied<&'static str>> {
        let mut out = vec![book.apply(store, Event::Init)];
        for &o in objects {
            out.push(book.apply(store, Event::InitApply(o)));
        }
        out.push(book.apply(store, Event::InitDone));
        out
    }

    #[test]
    fn an_added_object_is_stored_and_reported_changed() {
        let (mut book, mut store) = (WatchBook::<Map>::default(), Map::new());
        assert_eq!(book.apply(&mut store, Event::Apply(("a", 1))), Applied::Upserted { key: "a", changed: true });
        assert_eq!(store, Map::from([("a", 1)]));
    }

    #[test]
    fn a_modified_object_replaces_the_stored_one_and_an_equal_one_is_no_change() {
        let (mut book, mut store) = (WatchBook::<Map>::default(), Map::from([("a", 1)]));
        assert_eq!(book.apply(&mut store, Event::Apply(("a", 1))), Applied::Upserted { key: "a", changed: false });
        assert_eq!(book.apply(&mut store, Event::Apply(("a", 2))), Applied::Upserted { key: "a", changed: true });
        assert_eq!(store, Map::from([("a", 2)]));
    }

    #[test]
    fn a_deleted_object_leaves_the_store_and_an_unknown_one_changes_nothing() {
        let (mut book, mut store) = (WatchBook::<Map>::default(), Map::from([("a", 1), ("b", 2)]));
        assert_eq!(book.apply(&mut store, Event::Delete(("a", 1))), Applied::Deleted { key: "a", present: true });
        assert_eq!(book.apply(&mut store, Event::Delete(("a", 1))), Applied::Deleted { key: "a", present: false });
        assert_eq!(store, Map::from([("b", 2)]));
    }

    #[test]
    fn a_relist_replaces_the_store_whole_dropping_what_is_no_longer_listed() {
        let (mut book, mut store) = (WatchBook::<Map>::default(), Map::new());
        let first = list(&mut book, &mut store, &[("a", 1), ("b", 2)]);
        assert_eq!(first[0], Applied::ListStarted { relist: false });
        assert_eq!(first[1..3], [Applied::Buffered, Applied::Buffered]);
        assert_eq!(first[3], Applied::Listed { first: true, changed: true });
        assert_eq!(store, Map::from([("a", 1), ("b", 2)]));

        // While the second list runs, the store still holds the first one's objects.
        assert_eq!(book.apply(&mut store, Event::Init), Applied::ListStarted { relist: true });
        assert_eq!(book.apply(&mut store, Event::InitApply(("a", 3))), Applied::Buffered);
        assert_eq!(store, Map::from([("a", 1), ("b", 2)]));
        assert_eq!(book.apply(&mut store, Event::InitDone), Applied::Listed { first: false, changed: true });
        assert_eq!(store, Map::from([("a", 3)]));

        let same = list(&mut book, &mut store, &[("a", 3)]);
        assert_eq!(same.last(), Some(&Applied::Listed { first: false, changed: false }));
        assert_eq!(store, Map::from([("a", 3)]));
    }

    #[test]
    fn a_first_list_of_nothing_is_still_the_first_and_an_empty_store_unchanged() {
        let (mut book, mut store) = (WatchBook::<Map>::default(), Map::new());
        assert_eq!(list(&mut book, &mut store, &[]).last(), Some(&Applied::Listed { first: true, changed: false }));
    }

    #[test]
    fn events_apply_in_the_order_they_arrive_the_last_one_winning() {
        let (mut book, mut store) = (WatchBook::<Map>::default(), Map::new());
        list(&mut book, &mut store, &[("a", 1)]);
        book.apply(&mut store, Event::Apply(("a", 2)));
        book.apply(&mut store, Event::Delete(("a", 2)));
        assert_eq!(book.apply(&mut store, Event::Apply(("a", 4))), Applied::Upserted { key: "a", changed: true });
        assert_eq!(store, Map::from([("a", 4)]));
    }

    #[test]
    fn an_object_outside_a_list_is_dropped() {
        let (mut book, mut store) = (WatchBook::<Map>::default(), Map::from([("a", 1)]));
        assert_eq!(book.apply(&mut store, Event::InitApply(("b", 2))), Applied::Buffered);
        assert_eq!(store, Map::from([("a", 1)]));
    }

    #[test]
    fn a_forgetful_store_reports_every_event_as_a_change() {
        let (mut book, mut store) = (WatchBook::<Forgetful<&str>>::default(), Forgetful::default());
        assert_eq!(book.apply(&mut store, Event::Init), Applied::ListStarted { relist: false });
        assert_eq!(book.apply(&mut store, Event::InitApply(("a", ()))), Applied::Buffered);
        assert_eq!(book.apply(&mut store, Event::InitDone), Applied::Listed { first: true, changed: true });
        assert_eq!(book.apply(&mut store, Event::Apply(("a", ()))), Applied::Upserted { key: "a", changed: true });
        assert_eq!(book.apply(&mut store, Event::Delete(("a", ()))), Applied::Deleted { key: "a", present: true });
        assert_eq!(book.apply(&mut store, Event::Init), Applied::ListStarted { relist: true });
    }

    #[test]
    fn entries_keeps_the_event_kind_and_maps_its_object() {
        assert!(matches!(entries(Event::Apply(2), |n: u32| n * 10), Event::Apply(20)));
        assert!(matches!(entries(Event::Delete(2), |n: u32| n * 10), Event::Delete(20)));
        assert!(matches!(entries(Event::InitApply(2), |n: u32| n * 10), Event::InitApply(20)));
        assert!(matches!(entries(Event::<u32>::Init, |n| n * 10), Event::Init));
        assert!(matches!(entries(Event::<u32>::InitDone, |n| n * 10), Event::InitDone));
    }
}
