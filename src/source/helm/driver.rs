//! The read half of a release storage driver, as Helm's `driver.Queryor` is: every driver
//! (Secret and ConfigMap objects, Helm's SQL table, memory) answers the same three questions, and
//! the store above them ([`super::storage::ReleaseStore`]) decides which revisions a check reads,
//! the same for all. Also the shapes the drivers answer with: a stored revision (its record left
//! encoded until asked for) and a release's summary from its labels.

use std::collections::BTreeMap;

use futures::future::BoxFuture;

use super::decode::decode_release;
use super::error::StorageError;
use super::release::Release;

/// Where a driver keeps releases in the cluster, when it does: the kind a storage watch follows
/// and whose objects the orphans scan knows as Helm's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageObjects {
    Secrets,
    ConfigMaps,
}

/// The read half of one release storage driver (Helm's `driver.Queryor`). A selector is Helm's
/// label selector over its storage labels (`name=X`, `status=deployed`, `version=N`,
/// comma-separated; `owner=helm` is always added).
pub trait ReleaseDriver: Send + Sync {
    /// The name Helm gives the driver (`HELM_DRIVER`).
    fn name(&self) -> &'static str;

    /// The kind of object this driver stores releases in, `None` outside the cluster (SQL, memory).
    fn objects(&self) -> Option<StorageObjects> {
        None
    }

    /// All stored revisions matching `selector`, in `namespace` or in every namespace when
    /// `None`. A revision that cannot be decoded is returned with its error.
    fn list<'a>(
        &'a self,
        namespace: Option<&'a str>,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredRevision>, StorageError>>;

    /// Every release's name and latest revision, from the storage labels only (no record is
    /// transferred where the driver can avoid it).
    fn summaries<'a>(&'a self, namespace: Option<&'a str>) -> BoxFuture<'a, Result<Vec<ReleaseSummary>, StorageError>>;

    /// The deployed revision of every release (its highest revision with status `deployed`).
    fn deployed<'a>(&'a self, namespace: Option<&'a str>) -> BoxFuture<'a, Result<Vec<StoredRevision>, StorageError>> {
        Box::pin(async move { Ok(latest_per_release(self.list(namespace, "status=deployed").await?)) })
    }
}

/// Helm's storage label selector read by a driver that cannot hand it to the API server (SQL,
/// memory): `name=X`, `status=S`, `version=N`, `owner=O`, comma-separated; any other key is an
/// error naming the driver.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReleaseLabels {
    pub name: Option<String>,
    pub status: Option<String>,
    pub version: Option<u32>,
    /// Helm reads only `owner=helm`; a driver asks for it whatever this says otherwise.
    pub owner: Option<String>,
}

impl ReleaseLabels {
    pub fn parse(selector: &str, driver: &'static str) -> Result<ReleaseLabels, StorageError> {
        let mut out = ReleaseLabels::default();
        for part in selector.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let unsupported = || StorageError::UnsupportedSelector { driver, selector: selector.to_string() };
            let (k, v) = part.split_once('=').ok_or_else(unsupported)?;
            let v = v.trim().to_string();
            match k.trim() {
                "name" => out.name = Some(v),
                "status" => out.status = Some(v),
                "owner" => out.owner = Some(v),
                "version" => out.version = Some(v.parse().map_err(|_| unsupported())?),
                _ => return Err(unsupported()),
            }
        }
        Ok(out)
    }

    /// Whether a revision with these labels matches.
    pub fn matches(&self, name: &str, status: &str, revision: u32, owner: &str) -> bool {
        self.name.as_deref().is_none_or(|n| n == name)
            && self.status.as_deref().is_none_or(|s| s == status)
            && self.version.is_none_or(|v| v == revision)
            && self.owner.as_deref().is_none_or(|o| o == owner)
    }
}

/// One stored revision: the storage object it came from and its decoded record (or why not).
#[derive(Debug)]
pub struct StoredRevision {
    /// `Secret ns/sh.helm.release.v1.name.vN`.
    pub object: String,
    pub namespace: String,
    /// Release name and revision from the storage labels (known even when decoding fails).
    pub name: String,
    pub revision: u32,
    pub status: String,
    pub release: ReleaseBody,
}

/// A revision's release record: decoded, or still as stored (base64 of gzip of JSON), decoded
/// when [`decode`](Self::decode) is called. A drift run over every release decodes each one in
/// its own check (on every core, while other checks wait for their LISTs), not all of them in
/// turn on one core before the first check can start; and it holds the compressed form, a
/// fraction of the decoded record's size, until then.
#[derive(Debug)]
pub struct ReleaseBody(Body);

#[derive(Debug)]
enum Body {
    Decoded(Box<Result<Release, StorageError>>),
    /// The `release` value as stored, and the storage object it came from (for errors).
    Encoded {
        object: String,
        data: Vec<u8>,
    },
}

impl ReleaseBody {
    /// A body already decoded (or known to be unreadable).
    pub fn decoded(release: Result<Release, StorageError>) -> ReleaseBody {
        ReleaseBody(Body::Decoded(Box::new(release)))
    }

    pub(crate) fn encoded(object: String, data: Vec<u8>) -> ReleaseBody {
        ReleaseBody(Body::Encoded { object, data })
    }

    /// The stored bytes and their storage object, or the body as it is when it was kept decoded.
    pub(crate) fn into_encoded(self) -> Result<(String, Vec<u8>), ReleaseBody> {
        match self.0 {
            Body::Encoded { object, data } => Ok((object, data)),
            decoded => Err(ReleaseBody(decoded)),
        }
    }

    /// The release record, decoded now if it was not yet; a corrupt record is an error naming
    /// its storage object.
    pub fn decode(self) -> Result<Release, StorageError> {
        match self.0 {
            Body::Decoded(r) => *r,
            Body::Encoded { object, data } => Ok(decode_release(&object, &data)?),
        }
    }
}

/// A release as its storage labels describe it: enough to name it and to choose which revisions
/// to read, not to check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseSummary {
    pub namespace: String,
    pub name: String,
    /// The highest stored revision and its status (Helm's "current" release: `helm status`).
    pub revision: u32,
    pub status: String,
    /// The highest revision with status `deployed`, if any.
    pub deployed: Option<u32>,
}

/// One summary per (namespace, release) from (namespace, name, revision, status) of each stored
/// revision, whatever the driver; revisions without a name are skipped.
pub fn summarise_labels(revisions: impl IntoIterator<Item = (String, String, u32, String)>) -> Vec<ReleaseSummary> {
    let mut best: BTreeMap<(String, String), ReleaseSummary> = BTreeMap::new();
    for (namespace, name, revision, status) in revisions {
        if name.is_empty() {
            continue;
        }
        let deployed = (status == "deployed").then_some(revision);
        let entry = best.entry((namespace.clone(), name.clone())).or_insert_with(|| ReleaseSummary {
            namespace,
            name,
            revision,
            status: status.clone(),
            deployed: None,
        });
        if entry.revision < revision {
            entry.revision = revision;
            entry.status = status;
        }
        entry.deployed = entry.deployed.max(deployed);
    }
    best.into_values().collect()
}

/// Pick one revision: exactly `wanted`, or the highest deployed, or the highest of any status.
pub fn pick_revision(revisions: Vec<StoredRevision>, wanted: Option<u32>) -> Option<StoredRevision> {
    if let Some(r) = wanted {
        return revisions.into_iter().find(|s| s.revision == r);
    }
    let best_deployed = revisions.iter().filter(|s| s.status == "deployed").map(|s| s.revision).max();
    let target = best_deployed.or_else(|| revisions.iter().map(|s| s.revision).max())?;
    revisions.into_iter().find(|s| s.revision == target)
}

/// Keep the highest revision per (namespace, release name).
pub fn latest_per_release(revisions: Vec<StoredRevision>) -> Vec<StoredRevision> {
    let mut best: BTreeMap<(String, String), StoredRevision> = BTreeMap::new();
    for rev in revisions {
        let key = (rev.namespace.clone(), rev.name.clone());
        match best.get(&key) {
            Some(existing) if existing.revision >= rev.revision => {}
            _ => {
                best.insert(key, rev);
            }
        }
    }
    best.into_values().collect()
}
