//! Fetch: read every LIST a [`Plan`] needs from a [`LiveSource`] (the cached LIST requests, or
//! a watch-fed cache), all at once. The result, [`Fetched`], is all the compare step sees of the
//! cluster, so the compare step can run over recorded objects.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::plan::Plan;
use crate::live::{Listing, LiveError, LiveSource, ResolvedKind};

type Key = (String, String, String, Option<String>);

fn key(kind: &ResolvedKind, namespace: Option<&str>) -> Key {
    let ar = &kind.resource;
    (ar.group.clone(), ar.version.clone(), ar.plural.clone(), namespace.map(str::to_string))
}

/// The live objects a check looked up: one listing (or its error) per (kind, namespace).
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    lists: HashMap<Key, Listing>,
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

/// Read every LIST of `plan` from `source`, concurrently (the source bounds the concurrency).
pub async fn fetch(plan: &Plan, source: &dyn LiveSource) -> Fetched {
    let wanted = plan.lists();
    let listings = futures::future::join_all(wanted.iter().map(|(kind, ns)| source.list(kind, ns.as_deref()))).await;
    let mut fetched = Fetched::default();
    for ((kind, ns), listing) in wanted.iter().zip(listings) {
        fetched.insert(kind, ns.as_deref(), listing);
    }
    fetched
}
