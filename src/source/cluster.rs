//! One handle per kube context: what every command, engine and scan of that cluster shares, built
//! once by the app (`Settings::clusters`) the way Helm's `action.Configuration` is: its name, the
//! client and the watch-stream client, the effective namespace, the Helm release store, the
//! target that reconcile commands and cleanup scripts name, discovery (run once, on first need)
//! and one LIST cache. Two clusters never share a client or a cache.

use std::path::PathBuf;
use std::sync::Arc;

use kube::Client;
use tokio::sync::OnceCell;

use super::helm::ReleaseStore;
use super::live::{DEFAULT_CONCURRENCY, Kinds, LiveError, LiveReader, LiveSource};

/// Where commands printed for a user act: the kube context and kubeconfig they name (`None`: the
/// user's own default, so no flag is printed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    pub context: Option<String>,
    pub kubeconfig: Option<PathBuf>,
}

/// What the app resolved for one kube context, from which a [`Cluster`] is built.
pub struct ClusterParts {
    /// The name results carry: the kube context (or the name a server was given).
    pub name: String,
    /// Client of one-off requests.
    pub client: Client,
    /// Client of watch streams (a read timeout above the server's watch timeout).
    pub streams: Client,
    /// `-n`, else the context's namespace, else `default`.
    pub namespace: String,
    /// Helm's release storage (`HELM_DRIVER`'s driver opened on `client`, or a test's memory).
    pub store: ReleaseStore,
    pub target: Target,
}

/// One kube context's connection and what a scan of it shares (see the module documentation).
#[derive(Clone)]
pub struct Cluster {
    name: Arc<str>,
    client: Client,
    streams: Client,
    namespace: String,
    store: ReleaseStore,
    target: Target,
    kinds: Arc<OnceCell<Result<Arc<Kinds>, LiveError>>>,
    reader: Arc<LiveReader>,
    lists: Arc<dyn LiveSource>,
    /// How many releases a check of this cluster has in flight at once (`--releases-in-flight`;
    /// `None`: the release check's default). Each holds its namespace's LISTs, so this bounds the
    /// memory of a release check on a big cluster.
    releases_in_flight: Option<usize>,
}

impl Cluster {
    /// A cluster from its resolved parts; nothing is requested yet.
    pub fn new(parts: ClusterParts) -> Cluster {
        let reader = Arc::new(LiveReader::new(parts.client.clone(), DEFAULT_CONCURRENCY));
        Cluster {
            name: parts.name.into(),
            store: parts.store,
            client: parts.client,
            streams: parts.streams,
            namespace: parts.namespace,
            target: parts.target,
            kinds: Arc::new(OnceCell::new()),
            lists: reader.clone(),
            reader,
            releases_in_flight: None,
        }
    }

    /// The same connection for a new scan: discovery again, an empty LIST cache (a server or a
    /// watch keeps its clusters for its lifetime and asks for this at each scan or round).
    pub fn fresh(&self) -> Cluster {
        let reader = Arc::new(LiveReader::new(self.client.clone(), DEFAULT_CONCURRENCY));
        Cluster { kinds: Arc::new(OnceCell::new()), lists: reader.clone(), reader, ..self.clone() }
    }

    /// The same connection with whole LISTs answered by `lists` (a watch-fed cache) instead of
    /// LIST requests.
    pub fn with_lists(self, lists: Arc<dyn LiveSource>) -> Cluster {
        Cluster { lists, ..self }
    }

    /// The same cluster with at most `n` releases in flight in a release check (`None`: the
    /// check's default); kept by [`Cluster::fresh`], so a server's every scan takes it.
    pub fn with_releases_in_flight(self, n: Option<usize>) -> Cluster {
        Cluster { releases_in_flight: n.map(|n| n.max(1)), ..self }
    }

    /// `--releases-in-flight`, if it was given (see [`Cluster::with_releases_in_flight`]).
    pub fn releases_in_flight(&self) -> Option<usize> {
        self.releases_in_flight
    }

    /// The same cluster under another name (a server's `--cluster-name`).
    pub fn with_name(self, name: &str) -> Cluster {
        Cluster { name: name.into(), ..self }
    }

    /// The same cluster with printed commands naming `target` (a server shows them to its users,
    /// whose kubeconfig is not the server's).
    pub fn with_target(self, target: Target) -> Cluster {
        Cluster { target, ..self }
    }

    /// The name every result of this cluster carries.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The client for watch streams.
    pub fn streams(&self) -> &Client {
        &self.streams
    }

    /// The namespace used when none is named: `-n`, else the context's, else `default`.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Helm's release storage in this cluster (or its SQL database).
    pub fn store(&self) -> &ReleaseStore {
        &self.store
    }

    /// What printed commands name to act on this cluster.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Discovery, run once per scan (an error is kept too: every caller reports it).
    pub async fn kinds(&self) -> Result<Arc<Kinds>, LiveError> {
        self.kinds.get_or_init(|| async { Kinds::discover(&self.client).await.map(Arc::new) }).await.clone()
    }

    /// Discovery run again now, for this handle from here on (a kind installed since its first
    /// discovery: live mode, whose generation keeps one handle for hours). Other handles on the
    /// same connection keep theirs; an error leaves this one's as it was.
    pub async fn rediscover(&mut self) -> Result<Arc<Kinds>, LiveError> {
        let kinds = Arc::new(Kinds::discover(&self.client).await?);
        self.kinds = Arc::new(OnceCell::new_with(Some(Ok(kinds.clone()))));
        Ok(kinds)
    }

    /// The cached LIST requests (metadata-only and capped LISTs too).
    pub fn reader(&self) -> Arc<LiveReader> {
        self.reader.clone()
    }

    /// Where whole LISTs come from.
    pub fn lists(&self) -> Arc<dyn LiveSource> {
        self.lists.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rediscover_runs_discovery_again_for_this_handle_only() {
        let server = crate::source::test_server::serve(|target| match target {
            "/api" => (200, vec![], r#"{"kind":"APIVersions","versions":[],"serverAddressByClientCIDRs":[]}"#.into()),
            "/apis" => (200, vec![], r#"{"kind":"APIGroupList","apiVersion":"v1","groups":[]}"#.into()),
            _ => (404, vec![], "{}".into()),
        })
        .await;
        let client = Client::try_from(kube::Config::new(server.url.parse().unwrap())).unwrap();
        let memory = crate::source::helm::memory::MemoryDriver::new();
        let cluster = Cluster::new(ClusterParts {
            name: "test".into(),
            client: client.clone(),
            streams: client,
            namespace: "default".into(),
            store: ReleaseStore::new(Arc::new(memory)),
            target: Target::default(),
        });
        let asked = || server.count("/apis");
        let first = cluster.kinds().await.expect("discovered");
        cluster.kinds().await.expect("discovered");
        let once = asked();
        assert!(once >= 1, "{:?}", server.seen());
        let mut again = cluster.clone();
        let fresh = again.rediscover().await.expect("discovered again");
        assert_eq!(asked(), once * 2, "discovery ran again: {:?}", server.seen());
        assert!(!Arc::ptr_eq(&first, &fresh));
        // From here on, this handle answers with the new discovery; the other keeps its own.
        assert!(Arc::ptr_eq(&again.kinds().await.unwrap(), &fresh));
        assert!(Arc::ptr_eq(&cluster.kinds().await.unwrap(), &first));
        assert_eq!(asked(), once * 2);
    }
}
