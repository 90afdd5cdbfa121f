//! The Secret and ConfigMap drivers (`HELM_DRIVER=secret`, Helm's default, and `configmap`): one
//! implementation for both kinds, release storage objects read through the Kubernetes API with
//! Helm's labels (`owner=helm,name=...,status=...,version=...`), one label-selected LIST per
//! namespace or cluster-wide, so finding every deployed release costs one request.

use std::fmt::Debug;
use std::marker::PhantomData;

use futures::future::BoxFuture;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use super::driver::{ReleaseBody, ReleaseDriver, ReleaseSummary, StorageObjects, StoredRevision, summarise_labels};
use super::error::{RELEASE_SECRET_TYPE, StorageError};

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
            let items = self.api(namespace).list(&lp).await.map_err(list_err)?.items;
            Ok(items.into_iter().map(K::into_revision).collect())
        })
    }

    /// A metadata-only list: no release record leaves the API server.
    fn summaries<'a>(&'a self, namespace: Option<&'a str>) -> BoxFuture<'a, Result<Vec<ReleaseSummary>, StorageError>> {
        Box::pin(async move {
            let (lp, list_err) = Self::params(namespace, "");
            let items = self.api(namespace).list_metadata(&lp).await.map_err(list_err)?.items;
            Ok(summarise(items.iter().map(|o| &o.metadata)))
        })
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
}
