//! The Secret and ConfigMap drivers (`HELM_DRIVER=secret`, Helm's default, and `configmap`): one
//! implementation for both kinds, release storage objects read through the Kubernetes API with
//! Helm's labels (`owner=helm,name=...,status=...,version=...`), one label-selected LIST per
//! namespace or cluster-wide, so finding every deployed release costs one LIST. The LIST is read
//! in pages, each page's objects made revisions before the next is asked for: the response text
//! and its decoded objects are held for one page at a time, not for every release at once.

use std::fmt::Debug;
use std::marker::PhantomData;

use futures::future::BoxFuture;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams};
use kube::core::ObjectList;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use super::driver::{ReleaseBody, ReleaseDriver, ReleaseSummary, StorageObjects, StoredRevision, summarise_labels};
use super::error::{RELEASE_SECRET_TYPE, StorageError};
use crate::source::live::{expired_continue, full_list};

/// Release records per page of a LIST. A record is a few KiB to some tens of KiB (the chart's
/// templates and values, gzipped, base64 twice in a Secret) and at most about 1 MiB (an object's
/// limit), so a page's text stays near a MiB for common charts and under 100 MiB at worst.
const RECORDS_PER_PAGE: u32 = 100;
/// Objects per page of a metadata-only LIST (labels and names only).
const METADATA_PER_PAGE: u32 = 500;

/// A kind of object Helm keeps releases in: what the one driver needs to know of it.
pub trait StorageObject:
    Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
    /// The kind, as storage errors name it.
    const KIND: &'static str;
    /// The driver's name (`HELM_DRIVER`).
    const DRIVER: &'static str;
    const OBJECTS: StorageObjects;

    /// The object as a revision: its labels read, the record left encoded (see [`ReleaseBody`]).
    fn into_revision(self) -> StoredRevision;
}

impl StorageObject for Secret {
    const KIND: &'static str = "Secret";
    const DRIVER: &'static str = "secret";
    const OBJECTS: StorageObjects = StorageObjects::Secrets;

    fn into_revision(self) -> StoredRevision {
        revision_from_secret(self)
    }
}

impl StorageObject for ConfigMap {
    const KIND: &'static str = "ConfigMap";
    const DRIVER: &'static str = "configmap";
    const OBJECTS: StorageObjects = StorageObjects::ConfigMaps;

    fn into_revision(self) -> StoredRevision {
        revision_from_configmap(self)
    }
}

/// Release storage in objects of kind `K`, read with `client`.
pub struct ObjectDriver<K> {
    client: Client,
    kind: PhantomData<fn() -> K>,
}

impl<K: StorageObject> ObjectDriver<K> {
    pub fn new(client: Client) -> ObjectDriver<K> {
        ObjectDriver { client, kind: PhantomData }
    }

    fn api(&self, namespace: Option<&str>) -> Api<K> {
        match namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }

    /// `owner=helm` and `selector`, the list parameters, and the error of a failed list.
    fn params(namespace: Option<&str>, selector: &str) -> (ListParams, impl Fn(kube::Error) -> StorageError) {
        let labels = if selector.is_empty() { "owner=helm".to_string() } else { format!("owner=helm,{selector}") };
        let scope = match namespace {
            Some(ns) => format!("in namespace {ns:?} ({labels})"),
            None => format!("in all namespaces ({labels})"),
        };
        (ListParams::default().labels(&labels), move |source| StorageError::List {
            kind: K::KIND,
            scope: scope.clone(),
            source,
        })
    }
}

impl<K: StorageObject> ReleaseDriver for ObjectDriver<K> {
    fn name(&self) -> &'static str {
        K::DRIVER
    }

    fn objects(&self) -> Option<StorageObjects> {
        Some(K::OBJECTS)
    }

    fn list<'a>(
        &'a self,
        namespace: Option<&'a str>,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredRevision>, StorageError>> {
        Box::pin(async move {
            let (lp, list_err) = Self::params(namespace, selector);
            let api = &self.api(namespace);
            let lp = lp.limit(RECORDS_PER_PAGE);
            all_pages(lp, move |lp| Box::pin(async move { api.list(&lp).await }), K::into_revision)
                .await
                .map_err(list_err)
        })
    }

    /// A metadata-only list: no release record leaves the API server.
    fn summaries<'a>(&'a self, namespace: Option<&'a str>) -> BoxFuture<'a, Result<Vec<ReleaseSummary>, StorageError>> {
        Box::pin(async move {
            let (lp, list_err) = Self::params(namespace, "");
            let api = &self.api(namespace);
            let lp = lp.limit(METADATA_PER_PAGE);
            let metas =
                all_pages(lp, move |lp| Box::pin(async move { api.list_metadata(&lp).await }), |o| o.metadata).await;
            Ok(summarise(metas.map_err(list_err)?.iter()))
        })
    }
}

/// Every item of a LIST read in pages (`lp` carries the page size), each page's items handed to
/// `keep` before the next page is asked for. A continue token that expired (410 Gone) reads the
/// LIST again from the start, whole, once, as the live reader's pager does.
async fn all_pages<'a, X: Clone, T>(
    mut lp: ListParams,
    page: impl Fn(ListParams) -> BoxFuture<'a, kube::Result<ObjectList<X>>>,
    mut keep: impl FnMut(X) -> T,
) -> kube::Result<Vec<T>> {
    let (mut out, mut relisted) = (Vec::new(), false);
    loop {
        let list = match page(lp.clone()).await {
            Err(e) if expired_continue(&e, &lp, &mut relisted) => {
                (out, lp) = (Vec::new(), full_list(&lp));
                continue;
            }
            list => list?,
        };
        let next = list.metadata.continue_.filter(|c| !c.is_empty());
        out.extend(list.items.into_iter().map(&mut keep));
        match next {
            Some(token) => lp = lp.continue_token(&token),
            None => return Ok(out),
        }
    }
}

/// One summary per (namespace, release), from the labels of its storage objects; objects
/// without a `name` label are skipped.
pub fn summarise<'a>(metas: impl IntoIterator<Item = &'a ObjectMeta>) -> Vec<ReleaseSummary> {
    summarise_labels(metas.into_iter().map(|meta| {
        let (name, revision, status) = labels_of(meta);
        (meta.namespace.clone().unwrap_or_default(), name, revision, status)
    }))
}

fn labels_of(meta: &ObjectMeta) -> (String, u32, String) {
    let labels = meta.labels.clone().unwrap_or_default();
    let name = labels.get("name").cloned().unwrap_or_default();
    let revision = labels.get("version").and_then(|v| v.parse().ok()).unwrap_or(0);
    let status = labels.get("status").cloned().unwrap_or_default();
    (name, revision, status)
}

/// A release storage Secret as a revision: its labels read, its type and `release` key checked,
/// the record itself left encoded (see [`ReleaseBody`]).
pub fn revision_from_secret(secret: Secret) -> StoredRevision {
    let Secret { metadata, data, type_, .. } = secret;
    let namespace = metadata.namespace.clone().unwrap_or_default();
    let object = format!("Secret {}/{}", namespace, metadata.name.as_deref().unwrap_or_default());
    let (name, revision, status) = labels_of(&metadata);
    let ty = type_.unwrap_or_default();
    let release = if ty != RELEASE_SECRET_TYPE {
        ReleaseBody::decoded(Err(StorageError::WrongType { object: object.clone(), found: ty }))
    } else {
        match data.and_then(|mut d| d.remove("release")) {
            Some(data) => ReleaseBody::encoded(object.clone(), data.0),
            None => ReleaseBody::decoded(Err(StorageError::MissingKey { object: object.clone() })),
        }
    };
    StoredRevision { object, namespace, name, revision, status, release }
}

/// A release storage ConfigMap as a revision, the record left encoded (as for a Secret).
pub fn revision_from_configmap(cm: ConfigMap) -> StoredRevision {
    let ConfigMap { metadata, data, .. } = cm;
    let namespace = metadata.namespace.clone().unwrap_or_default();
    let object = format!("ConfigMap {}/{}", namespace, metadata.name.as_deref().unwrap_or_default());
    let (name, revision, status) = labels_of(&metadata);
    let release = match data.and_then(|mut d| d.remove("release")) {
        Some(data) => ReleaseBody::encoded(object.clone(), data.into_bytes()),
        None => ReleaseBody::decoded(Err(StorageError::MissingKey { object: object.clone() })),
    };
    StoredRevision { object, namespace, name, revision, status, release }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::source::helm::decode::encode_release;
    use crate::source::helm::driver::{latest_per_release, pick_revision};
    use k8s_openapi::ByteString;

    pub(crate) fn meta(name: &str, rev: u32, status: &str) -> ObjectMeta {
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
    fn latest_per_release_keeps_the_highest_revision_of_each() {
        let mut metas = vec![meta("shop", 2, "deployed"), meta("shop", 3, "deployed"), meta("shop", 1, "deployed")];
        let mut other = meta("cart", 1, "deployed");
        other.namespace = Some("a".into());
        metas.push(other);
        let revisions: Vec<StoredRevision> =
            metas.into_iter().map(|m| revision_from_secret(Secret { metadata: m, ..Default::default() })).collect();
        let by_decoded: Vec<String> = latest_per_release(revisions).into_iter().map(|r| r.object).collect();
        assert_eq!(by_decoded, vec!["Secret a/sh.helm.release.v1.cart.v1", "Secret shop/sh.helm.release.v1.shop.v3"]);
    }

    #[test]
    fn secret_decodes() {
        let s =
            secret(3, "deployed", RELEASE_SECRET_TYPE, Some(encode_release(release_json(3).as_bytes()).into_bytes()));
        let rev = revision_from_secret(s);
        assert_eq!(rev.object, "Secret shop/sh.helm.release.v1.shop.v3");
        assert_eq!(rev.revision, 3);
        assert_eq!(rev.release.decode().unwrap().revision, 3);
    }

    #[test]
    fn secret_of_wrong_type_is_refused_by_name() {
        let s = secret(1, "deployed", "Opaque", Some(encode_release(release_json(1).as_bytes()).into_bytes()));
        let err = revision_from_secret(s).release.decode().unwrap_err();
        assert!(matches!(err, StorageError::WrongType { .. }));
        let msg = err.to_string();
        assert!(msg.contains("Secret shop/sh.helm.release.v1.shop.v1") && msg.contains("Opaque"), "{msg}");
    }

    #[test]
    fn secret_without_release_key_is_an_error() {
        let s = secret(1, "deployed", RELEASE_SECRET_TYPE, None);
        assert!(matches!(revision_from_secret(s).release.decode(), Err(StorageError::MissingKey { .. })));
    }

    #[test]
    fn corrupt_secret_names_the_object() {
        let s = secret(2, "deployed", RELEASE_SECRET_TYPE, Some(b"%%%".to_vec()));
        let msg = revision_from_secret(s).release.decode().unwrap_err().to_string();
        assert!(msg.contains("sh.helm.release.v1.shop.v2"), "{msg}");
    }

    #[test]
    fn configmap_decodes() {
        let cm = ConfigMap {
            metadata: meta("shop", 2, "deployed"),
            data: Some([("release".to_string(), encode_release(release_json(2).as_bytes()))].into_iter().collect()),
            ..Default::default()
        };
        let rev = revision_from_configmap(cm);
        assert_eq!(rev.object, "ConfigMap shop/sh.helm.release.v1.shop.v2");
        assert_eq!(rev.release.decode().unwrap().revision, 2);
    }

    fn stored(rev: u32, status: &str) -> StoredRevision {
        revision_from_secret(secret(
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

    /// A LIST of `items` served in pages of `lp.limit` (a continue token is the next index);
    /// the first request with token `expire` answers 410 Gone, as a compacted revision does.
    fn serve_pages(
        items: &[&str],
        expire: Option<&str>,
        requests: &std::sync::Mutex<Vec<(Option<u32>, Option<String>)>>,
        lp: ListParams,
    ) -> kube::Result<ObjectList<String>> {
        let first_time = {
            let mut seen = requests.lock().unwrap();
            let first = !seen.iter().any(|r| r.1 == lp.continue_token);
            seen.push((lp.limit, lp.continue_token.clone()));
            first
        };
        if lp.continue_token.is_some() && lp.continue_token.as_deref() == expire && first_time {
            let gone = kube::core::Status::failure("the provided continue parameter is too old", "Expired");
            return Err(kube::Error::Api(gone.with_code(410).boxed()));
        }
        let start: usize = lp.continue_token.as_deref().map_or(0, |t| t.parse().unwrap());
        let end = lp.limit.map_or(items.len(), |l| (start + l as usize).min(items.len()));
        let mut list: ObjectList<String> =
            serde_json::from_value(serde_json::json!({"metadata": {}, "items": []})).unwrap();
        list.items = items[start..end].iter().map(|s| s.to_string()).collect();
        list.metadata.continue_ = (end < items.len()).then(|| end.to_string());
        Ok(list)
    }

    #[tokio::test]
    async fn a_list_is_read_page_by_page_and_whole_again_when_its_token_expires() {
        let items = ["a", "b", "c", "d", "e"];
        let requests = std::sync::Mutex::new(Vec::new());
        let lp = ListParams::default().labels("owner=helm").limit(2);
        let page = |lp| Box::pin(std::future::ready(serve_pages(&items, None, &requests, lp))) as BoxFuture<'_, _>;
        let got = all_pages(lp.clone(), page, |s: String| s.to_uppercase()).await.unwrap();
        assert_eq!(got, ["A", "B", "C", "D", "E"]);
        let asked = std::mem::take(&mut *requests.lock().unwrap());
        assert_eq!(asked, [(Some(2), None), (Some(2), Some("2".into())), (Some(2), Some("4".into()))]);

        // The second page's token expired: the pages read are dropped and the LIST read whole.
        let page = |lp| Box::pin(std::future::ready(serve_pages(&items, Some("2"), &requests, lp))) as BoxFuture<'_, _>;
        let got = all_pages(lp.clone(), page, |s: String| s).await.unwrap();
        assert_eq!(got, items);
        let asked = std::mem::take(&mut *requests.lock().unwrap());
        assert_eq!(asked, [(Some(2), None), (Some(2), Some("2".into())), (None, None)]);
    }

    #[tokio::test]
    async fn a_second_expired_token_is_an_error_not_a_loop() {
        let items = ["a", "b", "c"];
        let requests = std::sync::Mutex::new(Vec::new());
        // Every continued page expires, the whole relist too (paged here to have a token).
        let page = |lp: ListParams| {
            let lp = if lp.limit.is_none() { lp.limit(1) } else { lp };
            let token = lp.continue_token.clone();
            Box::pin(std::future::ready(match token {
                Some(_) => {
                    Err(kube::Error::Api(kube::core::Status::failure("too old", "Expired").with_code(410).boxed()))
                }
                None => serve_pages(&items, None, &requests, lp),
            })) as BoxFuture<'_, _>
        };
        let err = all_pages(ListParams::default().limit(1), page, |s: String| s).await.unwrap_err();
        assert!(matches!(err, kube::Error::Api(ref s) if s.code == 410), "{err:?}");
    }
}
