//! The release-storage watch: Helm's release Secrets or ConfigMaps (label `owner=helm`) watched
//! metadata only, so the release bodies never leave the API server, each change reported as the
//! release (namespace, name) whose storage changed. It judges nothing: the caller (the
//! live view of `watch --live` and `serve --live`) re-reads the releases it names.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc;

use crate::source::helm::driver::StorageObjects;
use crate::source::live_cache::{Ended, StreamStats};
use crate::source::watch_store::{Applied, Forgetful, WatchBook, entries};

/// A change in release storage: `Some((namespace, release))`, or `None` after the storage
/// stream listed again (anything may have changed: the caller resyncs).
pub type StorageChange = (Option<(String, String)>, Instant);

/// Watch release storage (metadata only) in `namespace` (all when `None`) and report each
/// release whose storage changed on `tx`; `ready` is sent once the first list finished.
pub(crate) async fn watch_storage(
    client: kube::Client,
    objects: StorageObjects,
    namespace: Option<String>,
    tx: mpsc::UnboundedSender<StorageChange>,
    ready: tokio::sync::oneshot::Sender<()>,
    stats: Arc<StreamStats>,
    log: fn(&str),
) {
    let config = watcher::Config::default().labels("owner=helm");
    let mut stream = match objects {
        StorageObjects::ConfigMaps => metadata_stream::<ConfigMap>(client, namespace.as_deref(), config),
        StorageObjects::Secrets => metadata_stream::<Secret>(client, namespace.as_deref(), config),
    };
    stats.streams.fetch_add(1, Ordering::Relaxed);
    let id = stats.stream_id();
    let _ended = Ended(stats.clone(), id);
    let mut ready = Some(ready);
    // Nothing is kept: each event names its release (from the storage object's labels).
    let mut book: WatchBook<Forgetful<Option<(String, String)>>> = WatchBook::default();
    let mut store = Forgetful::default();
    while let Some(item) = stream.next().await {
        let at = Instant::now();
        let event = match item {
            Ok(e) => e,
            Err(e) => {
                stats.failed(id);
                log(&format!("live: release storage stream failed, reconnecting: {e}"));
                continue;
            }
        };
        stats.works(id);
        let release_of = |m: ObjectMeta| {
            let name = m.labels.as_ref().and_then(|l| l.get("name")).cloned()?;
            Some((m.namespace.unwrap_or_default(), name))
        };
        match book.apply(&mut store, entries(event, |m| (release_of(m), ()))) {
            Applied::Upserted { key, .. } | Applied::Deleted { key, .. } => {
                if let Some(r) = key {
                    let _ = tx.send((Some(r), at));
                }
            }
            Applied::ListStarted { relist } => {
                if relist {
                    stats.relists.fetch_add(1, Ordering::Relaxed);
                }
            }
            Applied::Buffered => {}
            Applied::Listed { .. } => {
                if let Some(r) = ready.take() {
                    let _ = r.send(());
                } else {
                    let _ = tx.send((None, at));
                }
            }
        }
    }
}

type MetaEvent = Result<Event<ObjectMeta>, watcher::Error>;

/// A metadata-only watch of `K` (the release bodies never leave the API server).
fn metadata_stream<K>(
    client: kube::Client,
    namespace: Option<&str>,
    config: watcher::Config,
) -> futures::stream::BoxStream<'static, MetaEvent>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope> + Clone + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default,
    PartialObjectMeta<K>: serde::de::DeserializeOwned,
{
    let api: Api<PartialObjectMeta<K>> = match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    watcher::watcher(api, config).default_backoff().map(|r| r.map(|e| entries(e, |m| m.metadata))).boxed()
}
