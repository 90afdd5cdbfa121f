//! Reading Helm release storage through the Kubernetes API, without the helm binary.
//!
//! Drivers: `secret` (Helm's default), `configmap` and `sql` (PostgreSQL, see [`super::sql`]),
//! chosen like Helm does from `HELM_DRIVER`. Reads are label-selected lists (`owner=helm,...`),
//! one per namespace or cluster-wide (for `sql`, one SELECT), so finding every deployed release
//! costs one request. Which revision counts is decided here, the same for every driver.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::{Api, ListParams};

use super::decode::{DecodeError, decode_release};
use super::release::Release;
use super::sql::{SqlError, SqlStore};

/// The Secret type Helm gives release storage Secrets.
pub const RELEASE_SECRET_TYPE: &str = "helm.sh/release.v1";

/// Where releases are stored (`HELM_DRIVER`). Cloning a `Sql` driver shares its connections.
#[derive(Debug, Clone)]
pub enum Driver {
    Secret,
    ConfigMap,
    /// PostgreSQL (`HELM_DRIVER=sql`), with its connection pool.
    Sql(Arc<SqlStore>),
}

impl PartialEq for Driver {
    fn eq(&self, other: &Driver) -> bool {
        match (self, other) {
            (Driver::Secret, Driver::Secret) | (Driver::ConfigMap, Driver::ConfigMap) => true,
            (Driver::Sql(a), Driver::Sql(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Driver {
    /// Parse `HELM_DRIVER` as Helm does: empty or `secret(s)` is the default. `sql` needs a
    /// connection string: use [`Driver::select`].
    pub fn from_env_value(value: Option<&str>) -> Result<Driver, StorageError> {
        Driver::select(value, None, None)
    }

    /// The driver named `value` (`HELM_DRIVER` or `--helm-driver`); for `sql`, connected with
    /// `sql_connection` (`HELM_DRIVER_SQL_CONNECTION_STRING` or `--helm-sql-connection`), each
    /// query limited to `timeout`. Nothing is connected yet.
    pub fn select(
        value: Option<&str>,
        sql_connection: Option<&str>,
        timeout: Option<std::time::Duration>,
    ) -> Result<Driver, StorageError> {
        match value.unwrap_or("").trim().to_ascii_lowercase().as_str() {
            "" | "secret" | "secrets" => Ok(Driver::Secret),
            "configmap" | "configmaps" => Ok(Driver::ConfigMap),
            "sql" => {
                let connection = sql_connection.ok_or(SqlError::MissingConnectionString)?;
                Ok(Driver::Sql(Arc::new(SqlStore::new(connection, timeout)?)))
            }
            other => Err(StorageError::UnsupportedDriver { driver: other.to_string() }),
        }
    }

    /// The name Helm gives the driver (`HELM_DRIVER`).
    pub fn name(&self) -> &'static str {
        match self {
            Driver::Secret => "secret",
            Driver::ConfigMap => "configmap",
            Driver::Sql(_) => "sql",
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Driver::Secret => "Secret",
            Driver::ConfigMap => "ConfigMap",
            Driver::Sql(_) => "releases_v1 row",
        }
    }
}

/// Why release storage could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// `HELM_DRIVER` names a driver this tool cannot read.
    #[error("HELM_DRIVER={driver} is not supported (supported: secret, configmap, sql)")]
    UnsupportedDriver { driver: String },
    /// Helm's SQL storage could not be read (connection string, connection, query).
    #[error(transparent)]
    Sql(#[from] SqlError),
    /// The list request failed (forbidden, unreachable, ...).
    #[error("failed to list Helm release {kind}s {scope}: {source}")]
    List {
        kind: &'static str,
        scope: String,
        #[source]
        source: kube::Error,
    },
    /// A storage object has the right name but is not release storage.
    #[error("{object}: has type {found:?}, not {RELEASE_SECRET_TYPE:?}; it is not Helm release storage")]
    WrongType { object: String, found: String },
    /// A storage object has no `release` key.
    #[error("{object}: has no 'release' key; it is not Helm release storage")]
    MissingKey { object: String },
    /// The stored release could not be decoded.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// No revision of the release matched.
    #[error("release {name:?} not found in namespace {namespace:?}{detail}")]
    NotFound { name: String, namespace: String, detail: String },
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
    pub release: Result<Release, StorageError>,
}

/// Reads releases from one driver.
#[derive(Clone)]
pub struct ReleaseStore {
    client: Client,
    driver: Driver,
}

impl ReleaseStore {
    pub fn new(client: Client, driver: Driver) -> Self {
        ReleaseStore { client, driver }
    }

    pub fn driver(&self) -> &Driver {
        &self.driver
    }

    /// All stored revisions matching `selector` (added to `owner=helm`), in `namespace` or in
    /// every namespace when `None`. Undecodable revisions are returned with their error.
    pub async fn list(&self, namespace: Option<&str>, selector: &str) -> Result<Vec<StoredRevision>, StorageError> {
        if let Driver::Sql(sql) = &self.driver {
            return sql.list(namespace, selector).await;
        }
        Ok(match self.list_stored(namespace, selector).await? {
            Stored::Secrets(items) => items.iter().map(revision_from_secret).collect(),
            Stored::ConfigMaps(items) => items.iter().map(revision_from_configmap).collect(),
        })
    }

    /// The storage objects matching `selector` (added to `owner=helm`), undecoded (Secret and
    /// ConfigMap drivers).
    async fn list_stored(&self, namespace: Option<&str>, selector: &str) -> Result<Stored, StorageError> {
        let labels = if selector.is_empty() { "owner=helm".to_string() } else { format!("owner=helm,{selector}") };
        let lp = ListParams::default().labels(&labels);
        let scope = match namespace {
            Some(ns) => format!("in namespace {ns:?} ({labels})"),
            None => format!("in all namespaces ({labels})"),
        };
        let kind = self.driver.kind();
        let list_err = |source| StorageError::List { kind, scope: scope.clone(), source };
        Ok(match self.driver {
            Driver::Secret => {
                let api: Api<Secret> = match namespace {
                    Some(ns) => Api::namespaced(self.client.clone(), ns),
                    None => Api::all(self.client.clone()),
                };
                Stored::Secrets(api.list(&lp).await.map_err(list_err)?.items)
            }
            Driver::ConfigMap => {
                let api: Api<ConfigMap> = match namespace {
                    Some(ns) => Api::namespaced(self.client.clone(), ns),
                    None => Api::all(self.client.clone()),
                };
                Stored::ConfigMaps(api.list(&lp).await.map_err(list_err)?.items)
            }
            Driver::Sql(_) => unreachable!("the SQL driver lists through its own store"),
        })
    }

    /// Every release's name and latest revision, read from the storage objects' labels only
    /// (a metadata list: no release bodies are transferred). Used by shell completion.
    pub async fn summaries(&self, namespace: Option<&str>) -> Result<Vec<ReleaseSummary>, StorageError> {
        if let Driver::Sql(sql) = &self.driver {
            return sql.summaries(namespace).await;
        }
        let lp = ListParams::default().labels("owner=helm");
        let scope = match namespace {
            Some(ns) => format!("in namespace {ns:?} (owner=helm)"),
            None => "in all namespaces (owner=helm)".to_string(),
        };
        let kind = self.driver.kind();
        let list_err = |source| StorageError::List { kind, scope: scope.clone(), source };
        let metas: Vec<_> = match self.driver {
            Driver::Secret => {
                let api: Api<Secret> = match namespace {
                    Some(ns) => Api::namespaced(self.client.clone(), ns),
                    None => Api::all(self.client.clone()),
                };
                api.list_metadata(&lp).await.map_err(list_err)?.items.into_iter().map(|o| o.metadata).collect()
            }
            Driver::ConfigMap => {
                let api: Api<ConfigMap> = match namespace {
                    Some(ns) => Api::namespaced(self.client.clone(), ns),
                    None => Api::all(self.client.clone()),
                };
                api.list_metadata(&lp).await.map_err(list_err)?.items.into_iter().map(|o| o.metadata).collect()
            }
            Driver::Sql(_) => unreachable!("handled above"),
        };
        Ok(summarise(&metas))
    }

    /// The deployed revision of every release (highest deployed revision per release).
    pub async fn deployed(&self, namespace: Option<&str>) -> Result<Vec<StoredRevision>, StorageError> {
        self.deployed_map(namespace, |r| r).await
    }

    /// [`deployed`](Self::deployed), each revision handed to `f` as soon as it is decoded (the
    /// revision is chosen from the storage labels first), so a caller that keeps a little of each
    /// release holds one decoded release at a time, not every one.
    pub async fn deployed_map<T>(
        &self,
        namespace: Option<&str>,
        mut f: impl FnMut(StoredRevision) -> T,
    ) -> Result<Vec<T>, StorageError> {
        if let Driver::Sql(sql) = &self.driver {
            return Ok(latest_per_release(sql.list(namespace, "status=deployed").await?).into_iter().map(f).collect());
        }
        Ok(match self.list_stored(namespace, "status=deployed").await? {
            Stored::Secrets(items) => {
                latest_stored(items, |s| &s.metadata).iter().map(|s| f(revision_from_secret(s))).collect()
            }
            Stored::ConfigMaps(items) => {
                latest_stored(items, |c| &c.metadata).iter().map(|c| f(revision_from_configmap(c))).collect()
            }
        })
    }

    /// One release: the given revision, or the deployed one (Helm's rule: the highest revision
    /// with status deployed; if none is deployed, the highest revision). A given revision is
    /// selected by its `version` label, so only that revision is decoded.
    pub async fn get(
        &self,
        namespace: &str,
        name: &str,
        revision: Option<u32>,
    ) -> Result<StoredRevision, StorageError> {
        let selector = match revision {
            Some(r) => format!("name={name},version={r}"),
            None => format!("name={name}"),
        };
        let revisions = self.list(Some(namespace), &selector).await?;
        pick_revision(revisions, revision).ok_or_else(|| StorageError::NotFound {
            name: name.to_string(),
            namespace: namespace.to_string(),
            detail: match revision {
                Some(r) => format!(" at revision {r}"),
                None => String::new(),
            },
        })
    }

    /// The releases a drift check reads, each with the revisions it compares: chosen from the
    /// storage labels ([`summaries`](Self::summaries): metadata only, one read per scope), then
    /// only those revisions are decoded (the deployed one through one
    /// `status=deployed` list, a newer or undeployed one by its `version` label). Old revisions
    /// are never decoded. `names` empty: every release in scope, except uninstalled ones (as
    /// `helm list`); named releases that are missing or uninstalled are errors of their own.
    /// Only calls the driver-level methods, so every driver gets the same selection.
    pub async fn releases_to_check(
        &self,
        namespace: Option<&str>,
        names: &[String],
        revision: Option<u32>,
    ) -> Result<Vec<Result<ReleaseRevisions, (String, StorageError)>>, StorageError> {
        let mut wanted: Vec<Result<(ReleaseSummary, RevisionPlan), (String, StorageError)>> = Vec::new();
        // With --all, the deployed revisions in one list (decoding the deployed revision of every
        // release is needed anyway), read at the same time as the labels (a cluster's releases
        // are almost all deployed; the list is only used when one is wanted). Named releases read
        // their revisions one by one.
        let mut deployed_list = None;
        if names.is_empty() {
            let (summaries, deployed) = futures::join!(self.summaries(namespace), self.deployed(namespace));
            deployed_list = Some(deployed);
            for s in summaries? {
                if let Some(plan) = plan_revisions(&s, None) {
                    wanted.push(Ok((s, plan)));
                }
            }
        } else {
            let ns = namespace.unwrap_or("default");
            let summaries = self.summaries(Some(ns)).await?;
            for name in names {
                let not_found =
                    |detail: String| StorageError::NotFound { name: name.clone(), namespace: ns.to_string(), detail };
                match summaries.iter().find(|s| &s.name == name).cloned() {
                    None => wanted.push(Err((name.clone(), not_found(String::new())))),
                    Some(s) => match plan_revisions(&s, revision) {
                        Some(plan) => wanted.push(Ok((s, plan))),
                        None => wanted.push(Err((
                            name.clone(),
                            not_found(format!(
                                ": it is uninstalled (revision {} kept by helm uninstall --keep-history), so nothing is deployed to compare",
                                s.revision
                            )),
                        ))),
                    },
                }
            }
        }
        let mut deployed: BTreeMap<(String, String, u32), StoredRevision> = BTreeMap::new();
        if let Some(list) = deployed_list
            && wanted.iter().flatten().any(|(s, p)| s.deployed == Some(p.desired))
        {
            for rev in list? {
                deployed.insert((rev.namespace.clone(), rev.name.clone(), rev.revision), rev);
            }
        }
        let mut out = Vec::new();
        for w in wanted {
            let (summary, plan) = match w {
                Ok(x) => x,
                Err(e) => {
                    out.push(Err(e));
                    continue;
                }
            };
            let mut revisions = Vec::new();
            for r in std::iter::once(plan.desired).chain(plan.newer) {
                let key = (summary.namespace.clone(), summary.name.clone(), r);
                let got = match deployed.remove(&key) {
                    Some(rev) => Ok(rev),
                    None => self.get(&summary.namespace, &summary.name, Some(r)).await,
                };
                match got {
                    Ok(rev) => revisions.push(rev),
                    // Storage that cannot be read at all stops the run; a missing revision does not.
                    Err(e @ (StorageError::List { .. } | StorageError::Sql(_))) => return Err(e),
                    // With --all, a release deleted between the two reads is simply gone.
                    Err(StorageError::NotFound { .. }) if names.is_empty() => break,
                    Err(e) => {
                        out.push(Err((summary.name.clone(), e)));
                        break;
                    }
                }
            }
            if revisions.len() < 1 + usize::from(plan.newer.is_some()) {
                continue;
            }
            let newer = if plan.newer.is_some() { revisions.pop() } else { None };
            let desired = revisions.pop().expect("the desired revision was read");
            out.push(Ok(ReleaseRevisions { summary, desired, newer }));
        }
        Ok(out)
    }
}

/// A release to check: its labels summary and the decoded revisions compared.
#[derive(Debug)]
pub struct ReleaseRevisions {
    pub summary: ReleaseSummary,
    /// The revision whose manifest is the desired state.
    pub desired: StoredRevision,
    /// A newer revision that did not complete (a failed or interrupted upgrade or rollback):
    /// live fields matching it are reported as coming from it, not as drift by hand.
    pub newer: Option<StoredRevision>,
}

/// Which revisions of a release a check compares, chosen from its labels alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RevisionPlan {
    /// The desired state: the highest deployed revision, else the highest (Helm's rule), or
    /// the revision asked for.
    pub desired: u32,
    /// The highest revision, when it is newer than `desired` (never with a revision asked for).
    pub newer: Option<u32>,
}

/// Helm statuses of a release whose last operation completed: anything else is a failed or
/// unfinished install, upgrade, rollback or uninstall.
pub fn is_settled(status: &str) -> bool {
    status == "deployed"
}

/// Choose the revisions to compare. `None` for a release whose newest revision is
/// `uninstalled` (its history was kept by `helm uninstall --keep-history`; nothing is
/// deployed), unless a revision is asked for.
pub fn plan_revisions(summary: &ReleaseSummary, wanted: Option<u32>) -> Option<RevisionPlan> {
    if let Some(r) = wanted {
        return Some(RevisionPlan { desired: r, newer: None });
    }
    if summary.status == "uninstalled" {
        return None;
    }
    let desired = summary.deployed.unwrap_or(summary.revision);
    Some(RevisionPlan { desired, newer: (summary.revision > desired).then_some(summary.revision) })
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

/// One summary per (namespace, release), from the labels of its storage objects; objects
/// without a `name` label are skipped.
pub fn summarise(metas: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta]) -> Vec<ReleaseSummary> {
    summarise_labels(metas.iter().map(|meta| {
        let (name, revision, status) = labels_of(meta);
        (meta.namespace.clone().unwrap_or_default(), name, revision, status)
    }))
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

/// Storage objects as listed, undecoded.
enum Stored {
    Secrets(Vec<Secret>),
    ConfigMaps(Vec<ConfigMap>),
}

/// [`latest_per_release`] over undecoded storage objects, by their labels: the highest revision
/// per (namespace, release name), in the same order, the first one listed kept on a tie.
fn latest_stored<O>(
    objects: Vec<O>,
    meta: fn(&O) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Vec<O> {
    let mut best: BTreeMap<(String, String), (u32, O)> = BTreeMap::new();
    for o in objects {
        let m = meta(&o);
        let (name, revision, _) = labels_of(m);
        let key = (m.namespace.clone().unwrap_or_default(), name);
        match best.get(&key) {
            Some((existing, _)) if *existing >= revision => {}
            _ => {
                best.insert(key, (revision, o));
            }
        }
    }
    best.into_values().map(|(_, o)| o).collect()
}

fn labels_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, u32, String) {
    let labels = meta.labels.clone().unwrap_or_default();
    let name = labels.get("name").cloned().unwrap_or_default();
    let revision = labels.get("version").and_then(|v| v.parse().ok()).unwrap_or(0);
    let status = labels.get("status").cloned().unwrap_or_default();
    (name, revision, status)
}

/// Decode a release storage Secret.
pub fn revision_from_secret(secret: &Secret) -> StoredRevision {
    let namespace = secret.metadata.namespace.clone().unwrap_or_default();
    let object = format!("Secret {}/{}", namespace, secret.metadata.name.clone().unwrap_or_default());
    let (name, revision, status) = labels_of(&secret.metadata);
    let release = (|| {
        let ty = secret.type_.clone().unwrap_or_default();
        if ty != RELEASE_SECRET_TYPE {
            return Err(StorageError::WrongType { object: object.clone(), found: ty });
        }
        let data = secret
            .data
            .as_ref()
            .and_then(|d| d.get("release"))
            .ok_or_else(|| StorageError::MissingKey { object: object.clone() })?;
        Ok(decode_release(&object, &data.0)?)
    })();
    StoredRevision { object, namespace, name, revision, status, release }
}

/// Decode a release storage ConfigMap.
pub fn revision_from_configmap(cm: &ConfigMap) -> StoredRevision {
    let namespace = cm.metadata.namespace.clone().unwrap_or_default();
    let object = format!("ConfigMap {}/{}", namespace, cm.metadata.name.clone().unwrap_or_default());
    let (name, revision, status) = labels_of(&cm.metadata);
    let release = (|| {
        let data = cm
            .data
            .as_ref()
            .and_then(|d| d.get("release"))
            .ok_or_else(|| StorageError::MissingKey { object: object.clone() })?;
        Ok(decode_release(&object, data.as_bytes())?)
    })();
    StoredRevision { object, namespace, name, revision, status, release }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::helm::decode::encode_release;
    use k8s_openapi::ByteString;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn meta(name: &str, rev: u32, status: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(format!("sh.helm.release.v1.{name}.v{rev}")),
            namespace: Some("shop".into()),
            labels: Some(
                [("owner", "helm"), ("name", name), ("status", status), ("version", &rev.to_string())]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    fn release_json(rev: u32) -> String {
        format!(r#"{{"name":"shop","namespace":"shop","version":{rev},"info":{{"status":"deployed"}},"manifest":"x"}}"#)
    }

    fn secret(rev: u32, status: &str, ty: &str, data: Option<Vec<u8>>) -> Secret {
        Secret {
            metadata: meta("shop", rev, status),
            type_: Some(ty.into()),
            data: data.map(|d| [("release".to_string(), ByteString(d))].into_iter().collect()),
            ..Default::default()
        }
    }

    #[test]
    fn latest_stored_picks_as_latest_per_release() {
        // Undecoded objects, chosen by their labels: the same revisions, in the same order, as
        // latest_per_release picks from decoded ones.
        let mut metas = vec![meta("shop", 2, "deployed"), meta("shop", 3, "deployed"), meta("shop", 1, "deployed")];
        let mut other = meta("cart", 1, "deployed");
        other.namespace = Some("a".into());
        metas.push(other);
        let picked: Vec<String> =
            latest_stored(metas.clone(), |m| m).into_iter().map(|m| m.name.unwrap_or_default()).collect();
        assert_eq!(picked, vec!["sh.helm.release.v1.cart.v1", "sh.helm.release.v1.shop.v3"]);
        let revisions: Vec<StoredRevision> =
            metas.into_iter().map(|m| revision_from_secret(&Secret { metadata: m, ..Default::default() })).collect();
        let by_decoded: Vec<String> = latest_per_release(revisions).into_iter().map(|r| r.object).collect();
        assert_eq!(by_decoded, vec!["Secret a/sh.helm.release.v1.cart.v1", "Secret shop/sh.helm.release.v1.shop.v3"]);
    }

    #[test]
    fn secret_decodes() {
        let s =
            secret(3, "deployed", RELEASE_SECRET_TYPE, Some(encode_release(release_json(3).as_bytes()).into_bytes()));
        let rev = revision_from_secret(&s);
        assert_eq!(rev.object, "Secret shop/sh.helm.release.v1.shop.v3");
        assert_eq!(rev.revision, 3);
        assert_eq!(rev.release.unwrap().revision, 3);
    }

    #[test]
    fn secret_of_wrong_type_is_refused_by_name() {
        let s = secret(1, "deployed", "Opaque", Some(encode_release(release_json(1).as_bytes()).into_bytes()));
        let err = revision_from_secret(&s).release.unwrap_err();
        assert!(matches!(err, StorageError::WrongType { .. }));
        let msg = err.to_string();
        assert!(msg.contains("Secret shop/sh.helm.release.v1.shop.v1") && msg.contains("Opaque"), "{msg}");
    }

    #[test]
    fn secret_without_release_key_is_an_error() {
        let s = secret(1, "deployed", RELEASE_SECRET_TYPE, None);
        assert!(matches!(revision_from_secret(&s).release, Err(StorageError::MissingKey { .. })));
    }

    #[test]
    fn corrupt_secret_names_the_object() {
        let s = secret(2, "deployed", RELEASE_SECRET_TYPE, Some(b"%%%".to_vec()));
        let msg = revision_from_secret(&s).release.unwrap_err().to_string();
        assert!(msg.contains("sh.helm.release.v1.shop.v2"), "{msg}");
    }

    #[test]
    fn configmap_decodes() {
        let cm = ConfigMap {
            metadata: meta("shop", 2, "deployed"),
            data: Some([("release".to_string(), encode_release(release_json(2).as_bytes()))].into_iter().collect()),
            ..Default::default()
        };
        let rev = revision_from_configmap(&cm);
        assert_eq!(rev.object, "ConfigMap shop/sh.helm.release.v1.shop.v2");
        assert_eq!(rev.release.unwrap().revision, 2);
    }

    fn stored(rev: u32, status: &str) -> StoredRevision {
        revision_from_secret(&secret(
            rev,
            status,
            RELEASE_SECRET_TYPE,
            Some(encode_release(release_json(rev).as_bytes()).into_bytes()),
        ))
    }

    #[test]
    fn picks_highest_deployed_then_highest() {
        let revs = vec![stored(1, "superseded"), stored(2, "deployed"), stored(3, "failed")];
        assert_eq!(pick_revision(revs, None).unwrap().revision, 2);
        let revs = vec![stored(1, "superseded"), stored(2, "failed")];
        assert_eq!(pick_revision(revs, None).unwrap().revision, 2);
        let revs = vec![stored(1, "superseded"), stored(2, "deployed")];
        assert_eq!(pick_revision(revs, Some(1)).unwrap().revision, 1);
        assert!(pick_revision(vec![stored(1, "deployed")], Some(9)).is_none());
    }

    #[test]
    fn summaries_keep_the_latest_revision_per_release() {
        let mut other = meta("cart", 1, "failed");
        other.namespace = Some("other".into());
        let mut unlabelled = meta("x", 1, "deployed");
        unlabelled.labels.as_mut().unwrap().remove("name");
        let metas = vec![
            meta("shop", 1, "superseded"),
            meta("shop", 3, "deployed"),
            meta("shop", 2, "superseded"),
            other,
            unlabelled,
        ];
        let got = summarise(&metas);
        assert_eq!(
            got,
            vec![
                ReleaseSummary {
                    namespace: "other".into(),
                    name: "cart".into(),
                    revision: 1,
                    status: "failed".into(),
                    deployed: None
                },
                ReleaseSummary {
                    namespace: "shop".into(),
                    name: "shop".into(),
                    revision: 3,
                    status: "deployed".into(),
                    deployed: Some(3)
                },
            ]
        );
    }

    fn summary(revisions: &[(u32, &str)]) -> ReleaseSummary {
        let metas: Vec<ObjectMeta> = revisions.iter().map(|(r, s)| meta("shop", *r, s)).collect();
        summarise(&metas).pop().unwrap()
    }

    #[test]
    fn plans_read_the_deployed_revision_and_a_newer_incomplete_one() {
        let plan = |revs: &[(u32, &str)], wanted| plan_revisions(&summary(revs), wanted);
        let only = |desired| Some(RevisionPlan { desired, newer: None });
        // Deployed: only the deployed revision.
        assert_eq!(plan(&[(1, "superseded"), (2, "deployed")], None), only(2));
        // A failed or interrupted upgrade: the deployed revision and the newer one.
        for status in ["failed", "pending-upgrade", "pending-rollback"] {
            assert_eq!(
                plan(&[(1, "superseded"), (2, "deployed"), (3, status)], None),
                Some(RevisionPlan { desired: 2, newer: Some(3) }),
                "{status}"
            );
        }
        // After a rollback the newest revision is deployed again; old failures are history.
        assert_eq!(plan(&[(1, "superseded"), (2, "failed"), (3, "deployed")], None), only(3));
        // Never deployed (a failed or interrupted install): the newest revision.
        assert_eq!(plan(&[(1, "failed")], None), only(1));
        assert_eq!(plan(&[(1, "pending-install")], None), only(1));
        assert_eq!(plan(&[(1, "superseded"), (2, "superseded")], None), only(2));
        // Being uninstalled: the revision being removed.
        assert_eq!(plan(&[(1, "superseded"), (2, "uninstalling")], None), only(2));
        // Uninstalled with --keep-history: nothing to compare, unless a revision is asked for.
        assert_eq!(plan(&[(1, "superseded"), (2, "uninstalled")], None), None);
        assert_eq!(plan(&[(1, "superseded"), (2, "uninstalled")], Some(1)), only(1));
        // A revision asked for is compared alone.
        assert_eq!(plan(&[(1, "deployed"), (2, "failed")], Some(2)), only(2));
        let s = summary(&[(3, "failed"), (1, "superseded"), (2, "deployed")]);
        assert_eq!((s.revision, s.status.as_str(), s.deployed), (3, "failed", Some(2)));
    }

    #[test]
    fn driver_from_env() {
        assert_eq!(Driver::from_env_value(None).unwrap(), Driver::Secret);
        assert_eq!(Driver::from_env_value(Some("secrets")).unwrap(), Driver::Secret);
        assert_eq!(Driver::from_env_value(Some("ConfigMap")).unwrap(), Driver::ConfigMap);
        assert!(Driver::from_env_value(Some("memory")).is_err());
    }
}
