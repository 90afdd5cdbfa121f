//! Helm release storage, read without the helm binary: which driver `HELM_DRIVER` names
//! ([`Driver`], opened on a cluster's client), and the store over it ([`ReleaseStore`]) that
//! decides which revisions count, the same for every driver: Helm's rule for the deployed
//! revision, and the revisions a drift check compares. The drivers themselves answer the
//! [`ReleaseDriver`] questions: `objects` (Secret, ConfigMap), `sql` (PostgreSQL), `memory`.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;

use super::driver::{ReleaseDriver, ReleaseSummary, StorageObjects, StoredRevision, pick_revision};
use super::error::{SqlError, StorageError};
use super::objects::ObjectDriver;
use super::sql::SqlStore;

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

    /// The store of this driver, reading with `client` (the SQL driver reads its database).
    pub fn open(&self, client: Client) -> ReleaseStore {
        let driver: Arc<dyn ReleaseDriver> = match self {
            Driver::Secret => Arc::new(ObjectDriver::<Secret>::new(client)),
            Driver::ConfigMap => Arc::new(ObjectDriver::<ConfigMap>::new(client)),
            Driver::Sql(sql) => sql.clone(),
        };
        ReleaseStore::new(driver)
    }
}

/// Reads releases from one driver and decides which revisions count.
#[derive(Clone)]
pub struct ReleaseStore {
    driver: Arc<dyn ReleaseDriver>,
}

impl ReleaseStore {
    pub fn new(driver: Arc<dyn ReleaseDriver>) -> Self {
        ReleaseStore { driver }
    }

    /// The name Helm gives the driver (`HELM_DRIVER`; `memory` in tests).
    pub fn driver_name(&self) -> &'static str {
        self.driver.name()
    }

    /// The kind of object releases are kept in, `None` outside the cluster (SQL, memory).
    pub fn objects(&self) -> Option<StorageObjects> {
        self.driver.objects()
    }

    /// All stored revisions matching `selector` (added to `owner=helm`), in `namespace` or in
    /// every namespace when `None`. Undecodable revisions are returned with their error.
    pub async fn list(&self, namespace: Option<&str>, selector: &str) -> Result<Vec<StoredRevision>, StorageError> {
        self.driver.list(namespace, selector).await
    }

    /// Every release's name and latest revision, read from the storage labels only (a metadata
    /// list, or a query without the bodies: no release record is transferred). Used by shell
    /// completion and to choose what a check reads.
    pub async fn summaries(&self, namespace: Option<&str>) -> Result<Vec<ReleaseSummary>, StorageError> {
        self.driver.summaries(namespace).await
    }

    /// The deployed revision of every release (highest deployed revision per release).
    pub async fn deployed(&self, namespace: Option<&str>) -> Result<Vec<StoredRevision>, StorageError> {
        self.driver.deployed(namespace).await
    }

    /// [`deployed`](Self::deployed), each revision handed to `f` in turn: the records stay
    /// encoded until `f` decodes one, so a caller that keeps a little of each release holds one
    /// decoded release at a time, not every one.
    pub async fn deployed_map<T>(
        &self,
        namespace: Option<&str>,
        f: impl FnMut(StoredRevision) -> T,
    ) -> Result<Vec<T>, StorageError> {
        Ok(self.deployed(namespace).await?.into_iter().map(f).collect())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::helm::objects::summarise;
    use crate::source::helm::objects::tests::meta;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

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

    /// A revision of `name` in `namespace`, its manifest naming it.
    pub(crate) fn release(namespace: &str, name: &str, revision: u32, status: &str) -> crate::source::helm::Release {
        serde_json::from_value(serde_json::json!({
            "name": name, "namespace": namespace, "version": revision,
            "info": {"status": status}, "manifest": format!("# {name} revision {revision}"),
        }))
        .unwrap()
    }

    fn memory(revisions: &[(&str, &str, u32, &str)]) -> ReleaseStore {
        let m = crate::source::helm::memory::MemoryDriver::new();
        for (ns, name, rev, status) in revisions {
            m.create(release(ns, name, *rev, status), status);
        }
        ReleaseStore::new(Arc::new(m))
    }

    /// A release chosen: its name, desired revision and newer revision; or the error's text.
    type Chosen = Result<(String, u32, Option<u32>), String>;

    /// What [`ReleaseStore::releases_to_check`] chose, as [`Chosen`] values.
    fn chosen(found: Vec<Result<ReleaseRevisions, (String, StorageError)>>) -> Vec<Chosen> {
        found
            .into_iter()
            .map(|r| match r {
                Ok(r) => {
                    let desired = r.desired.release.decode().unwrap();
                    assert_eq!(desired.revision, r.desired.revision, "the record read is the revision chosen");
                    Ok((r.summary.name, r.desired.revision, r.newer.map(|n| n.revision)))
                }
                Err((name, e)) => Err(format!("{name}: {e}")),
            })
            .collect()
    }

    #[tokio::test]
    async fn every_release_in_scope_with_its_deployed_and_newer_revisions() {
        let store = memory(&[
            ("shop", "web", 1, "superseded"),
            ("shop", "web", 2, "deployed"),
            ("shop", "web", 3, "failed"),
            ("shop", "cart", 1, "deployed"),
            ("shop", "gone", 1, "superseded"),
            ("shop", "gone", 2, "uninstalled"),
            ("shop", "new", 1, "pending-install"),
            ("other", "api", 4, "deployed"),
        ]);
        let found = chosen(store.releases_to_check(Some("shop"), &[], None).await.unwrap());
        assert_eq!(
            found,
            vec![Ok(("cart".into(), 1, None)), Ok(("new".into(), 1, None)), Ok(("web".into(), 2, Some(3)))]
        );
        let everywhere = chosen(store.releases_to_check(None, &[], None).await.unwrap());
        assert_eq!(everywhere.len(), 4, "{everywhere:?}");
        assert_eq!(everywhere[0], Ok(("api".into(), 4, None)));
    }

    #[tokio::test]
    async fn named_releases_missing_or_uninstalled_are_errors_of_their_own() {
        let store = memory(&[("shop", "web", 1, "deployed"), ("shop", "gone", 1, "uninstalled")]);
        let names = ["web", "nope", "gone"].map(String::from);
        let found = chosen(store.releases_to_check(Some("shop"), &names, None).await.unwrap());
        assert_eq!(found[0], Ok(("web".into(), 1, None)));
        assert_eq!(found[1], Err(r#"nope: release "nope" not found in namespace "shop""#.into()));
        let gone = found[2].as_ref().unwrap_err();
        assert!(gone.starts_with("gone: ") && gone.contains("it is uninstalled (revision 1 kept"), "{gone}");
        // A revision asked for is read alone, whatever its status.
        let asked = chosen(store.releases_to_check(Some("shop"), &names[..1], Some(1)).await.unwrap());
        assert_eq!(asked, vec![Ok(("web".into(), 1, None))]);
        let missing = chosen(store.releases_to_check(Some("shop"), &names[..1], Some(7)).await.unwrap());
        assert_eq!(missing, vec![Err(r#"web: release "web" not found in namespace "shop" at revision 7"#.into())]);
    }

    #[tokio::test]
    async fn a_corrupt_record_is_found_and_fails_only_when_decoded() {
        let m = crate::source::helm::memory::MemoryDriver::new();
        m.create_raw("shop", "web", 2, "deployed", b"%%%");
        m.create(release("shop", "cart", 1, "deployed"), "deployed");
        let store = ReleaseStore::new(Arc::new(m));
        let mut found = store.releases_to_check(Some("shop"), &[], None).await.unwrap();
        assert_eq!(found.len(), 2);
        let web = found.pop().unwrap().unwrap();
        let err = web.desired.release.decode().unwrap_err().to_string();
        assert!(err.contains("shop/sh.helm.release.v1.web.v2"), "{err}");
        assert!(found.pop().unwrap().unwrap().desired.release.decode().is_ok());
    }

    #[tokio::test]
    async fn deployed_is_the_highest_deployed_revision_of_each_release() {
        let store = memory(&[
            ("shop", "web", 1, "deployed"),
            ("shop", "web", 2, "deployed"),
            ("shop", "web", 3, "failed"),
            ("shop", "cart", 1, "superseded"),
        ]);
        let got: Vec<(String, u32)> =
            store.deployed(None).await.unwrap().into_iter().map(|r| (r.name, r.revision)).collect();
        assert_eq!(got, vec![("web".to_string(), 2)]);
        let err = store.list(None, "colour=red").await.unwrap_err().to_string();
        assert!(err.contains("memory driver cannot select releases by"), "{err}");
    }
}
