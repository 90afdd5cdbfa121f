//! Fetch: read every LIST a [`Plan`] needs from a [`LiveSource`] (the cached LIST requests, or
//! a watch-fed cache), all at once. The result, [`Fetched`], is all the compare step sees of the
//! cluster, so the compare step can run over recorded objects.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;

use super::plan::Plan;
use crate::source::live::{Listing, LiveError, LiveSource, ResolvedKind, Wanted, release_names};

type Key = (String, String, String, Option<String>);

fn key(kind: &ResolvedKind, namespace: Option<&str>) -> Key {
    let ar = &kind.resource;
    (ar.group.clone(), ar.version.clone(), ar.plural.clone(), namespace.map(str::to_string))
}

/// The live objects a check looked up: one listing (or its error) per (kind, namespace), and an
/// index of each large one.
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    lists: HashMap<Key, Listing>,
    indexes: HashMap<Key, Arc<ListIndex>>,
}

/// Lookups into one listing: by name, and by the release an object may belong to. Built once per
/// listing and shared by every check that reads it ([`Indexes`]): `release --all -A` checks each
/// of 2,000 releases against the same cluster-wide list of 2,000 ClusterRoles, and searching it
/// object by object made the run grow with the square of the releases.
#[derive(Debug, Default)]
pub struct ListIndex {
    /// Name -> position of the first object of that name.
    by_name: HashMap<String, usize>,
    /// Release name -> positions (ascending) of the objects whose `meta.helm.sh/release-name`
    /// annotation or `app.kubernetes.io/instance` label is that name: the only objects
    /// [`super::belongs_to`] can accept.
    by_release: HashMap<String, Vec<usize>>,
}

impl ListIndex {
    fn build(items: &[Value]) -> ListIndex {
        let mut ix = ListIndex::default();
        for (i, o) in items.iter().enumerate() {
            if let Some(name) = o.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str) {
                ix.by_name.entry(name.to_string()).or_insert(i);
            }
            for release in release_names(o) {
                ix.by_release.entry(release.to_string()).or_default().push(i);
            }
        }
        ix
    }

    /// The position of the object named `name`.
    pub fn named(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The positions of the objects that may belong to release `name`, ascending.
    pub fn of_release(&self, name: &str) -> &[usize] {
        self.by_release.get(name).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// A listing (held weakly) and its index.
type Indexed = (Weak<Vec<Value>>, Arc<ListIndex>);

/// Listings shorter than this are searched object by object.
const INDEX_FROM: usize = 64;

/// The indexes of the listings an engine's checks read, shared by them. An entry lives as long
/// as its listing: a listing dropped from the LIST cache (or replaced by a watch event) is
/// indexed again when a new one is read.
#[derive(Debug, Default)]
pub struct Indexes {
    /// Listing address -> (the listing, its index). A std mutex, never held across an await.
    map: Mutex<HashMap<usize, Indexed>>,
}

impl Indexes {
    fn of(&self, list: &Arc<Vec<Value>>) -> Option<Arc<ListIndex>> {
        if list.len() < INDEX_FROM {
            return None;
        }
        let key = Arc::as_ptr(list) as usize;
        let mut map = self.map.lock().expect("list index lock");
        if let Some((held, ix)) = map.get(&key)
            && held.upgrade().is_some_and(|l| Arc::ptr_eq(&l, list))
        {
            return Some(ix.clone());
        }
        map.retain(|_, (held, _)| held.strong_count() > 0);
        let ix = Arc::new(ListIndex::build(list));
        map.insert(key, (Arc::downgrade(list), ix.clone()));
        Some(ix)
    }
}

impl Fetched {
    /// Record the listing of `kind` in `namespace` (what [`fetch`] does; tests record fixtures).
    pub fn insert(&mut self, kind: &ResolvedKind, namespace: Option<&str>, listing: Listing) {
        self.lists.insert(key(kind, namespace), listing);
    }

    /// Record a successful listing.
    pub fn insert_objects(&mut self, kind: &ResolvedKind, namespace: Option<&str>, objects: Vec<Value>) {
        self.insert(kind, namespace, Ok(Arc::new(objects)));
    }

    /// Index every large listing, with the indexes `indexes` already holds where it has them.
    pub fn indexed(mut self, indexes: &Indexes) -> Fetched {
        for (key, listing) in &self.lists {
            if let Ok(list) = listing
                && let Some(ix) = indexes.of(list)
            {
                self.indexes.insert(key.clone(), ix);
            }
        }
        self
    }

    /// The index of the listing of `kind` in `namespace`, when it is large enough to have one.
    pub fn index(&self, kind: &ResolvedKind, namespace: Option<&str>) -> Option<&ListIndex> {
        self.indexes.get(&key(kind, namespace)).map(|ix| &**ix)
    }

    /// The listing of `kind` in `namespace`; one the plan did not ask for is an error, never an
    /// empty list (an empty list would report every desired object as missing).
    pub fn get(&self, kind: &ResolvedKind, namespace: Option<&str>) -> Listing {
        self.lists.get(&key(kind, namespace)).cloned().unwrap_or_else(|| {
            Err(LiveError::List {
                resource: kind.resource.plural.clone(),
                scope: namespace.map(|ns| format!("in namespace {ns}")).unwrap_or_default(),
                message: "not read".to_string(),
            })
        })
    }
}

/// Read every LIST of `plan` from `source`, concurrently (the source bounds the concurrency),
/// each as [`Plan::wanted`] says (a source may hand out only the objects the compare step looks
/// at), and index the large ones (reusing `indexes`).
pub async fn fetch(plan: &Plan, source: &dyn LiveSource, indexes: &Indexes) -> Fetched {
    let lists = plan.lists();
    let wanted: Vec<Option<Wanted>> = lists.iter().map(|(kind, ns)| plan.wanted(kind, ns.as_deref())).collect();
    let listings = futures::future::join_all(lists.iter().zip(&wanted).map(|((kind, ns), wanted)| match wanted {
        Some(wanted) => source.list_wanted(kind, ns.as_deref(), wanted),
        None => source.list(kind, ns.as_deref()),
    }))
    .await;
    let mut fetched = Fetched::default();
    for ((kind, ns), listing) in lists.iter().zip(listings) {
        fetched.insert(kind, ns.as_deref(), listing);
    }
    fetched.indexed(indexes)
}
