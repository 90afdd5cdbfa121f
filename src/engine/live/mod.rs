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

/// A cluster for unit tests without one: discovery served by a scripted API server (no resource
/// at all), releases in memory.
#[cfg(test)]
pub(crate) mod test_cluster {
    use std::sync::Arc;

    use crate::source::cluster::{Cluster, ClusterParts, Target};
    use crate::source::helm::memory::MemoryDriver;
    use crate::source::helm::{Release, ReleaseStore};
    use crate::source::test_server::TestServer;

    /// Cluster `test`, namespace `shop`, Helm's releases in `memory` (keep the server running).
    pub async fn test_cluster(memory: Arc<MemoryDriver>) -> (Cluster, TestServer) {
        let server = crate::source::test_server::serve(|target| match target {
            "/api" => (200, vec![], r#"{"kind":"APIVersions","versions":[],"serverAddressByClientCIDRs":[]}"#.into()),
            "/apis" => (200, vec![], r#"{"kind":"APIGroupList","apiVersion":"v1","groups":[]}"#.into()),
            _ => (404, vec![], "{}".into()),
        })
        .await;
        let client = kube::Client::try_from(kube::Config::new(server.url.parse().unwrap())).unwrap();
        let cluster = Cluster::new(ClusterParts {
            name: "test".into(),
            client: client.clone(),
            streams: client,
            namespace: "shop".into(),
            store: ReleaseStore::new(memory),
            target: Target::default(),
        });
        (cluster, server)
    }

    /// A revision of release `name` in `shop` whose manifest has no object (its check reads no
    /// list).
    pub fn release(name: &str, revision: u32, status: &str) -> Release {
        serde_json::from_value(serde_json::json!({
            "name": name, "namespace": "shop", "version": revision,
            "info": {"status": status}, "manifest": "# no object",
        }))
        .unwrap()
    }
}
